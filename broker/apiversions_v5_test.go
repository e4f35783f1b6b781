package broker_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// clusterIdentity asks the node at addr for the cluster id and node id its
// Metadata reports, as a client learns them before it names them in
// ApiVersions v5.
func clusterIdentity(t *testing.T, addr string) (string, int32) {
	t.Helper()
	var clusterID string
	var nodeID int32
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		md := kmsg.NewPtrMetadataRequest()
		md.Version = 12
		resp, err := rawRequest(t, addr, md)
		if err != nil {
			return err
		}
		m := resp.(*kmsg.MetadataResponse)
		if m.ClusterID == nil || *m.ClusterID == "" || len(m.Brokers) != 1 {
			return errNotYet
		}
		clusterID, nodeID = *m.ClusterID, m.Brokers[0].NodeID
		return nil
	})
	return clusterID, nodeID
}

type notYet struct{}

func (notYet) Error() string { return "metadata names no cluster id or broker yet" }

var errNotYet error = notYet{}

// ApiVersions v5 (KIP-1242) carries the cluster id and node id the client
// believes it is connecting to. Kafka answers REBOOTSTRAP_REQUIRED, with no
// api keys, when the client names a cluster and either id is not this
// broker's; null ids (a bootstrapping client) get the table; a node id
// without a cluster id is INVALID_REQUEST.
func TestApiVersionsV5ChecksClusterAndNode(t *testing.T) {
	n := sluicetest.Start(t)
	clusterID, nodeID := clusterIdentity(t, n.Addr())
	other := "not-" + clusterID
	tests := []struct {
		name      string
		clusterID *string
		nodeID    int32
		want      int16 // error code; 0 means the full table
	}{
		{"bootstrapping: null cluster, node -1", nil, -1, 0},
		{"right cluster and node", &clusterID, nodeID, 0},
		{"other cluster", &other, nodeID, kerr.RebootstrapRequired.Code},
		{"other node", &clusterID, nodeID + 1, kerr.RebootstrapRequired.Code},
		{"other cluster and node", &other, nodeID + 7, kerr.RebootstrapRequired.Code},
		{"node without a cluster", nil, nodeID, kerr.InvalidRequest.Code},
		{"cluster without a node", &clusterID, -1, kerr.InvalidRequest.Code},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 5
			req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
			req.ClusterID, req.NodeID = tt.clusterID, tt.nodeID
			resp, err := rawRequest(t, n.Addr(), req)
			if err != nil {
				t.Fatalf("connection closed instead of an answer: %v", err)
			}
			av := resp.(*kmsg.ApiVersionsResponse)
			if av.ErrorCode != tt.want {
				t.Fatalf("error %v with %d keys, want %v", kerr.ErrorForCode(av.ErrorCode), len(av.ApiKeys), kerr.ErrorForCode(tt.want))
			}
			if tt.want != 0 {
				if len(av.ApiKeys) != 0 {
					t.Fatalf("%v came with %d api keys, want none (Kafka lists keys only with UNSUPPORTED_VERSION)", kerr.ErrorForCode(av.ErrorCode), len(av.ApiKeys))
				}
				return
			}
			if !slices.ContainsFunc(av.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == 18 && k.MaxVersion >= 5 }) {
				t.Fatalf("table %+v does not list ApiVersions v5", av.ApiKeys)
			}
		})
	}
	// The fields do not exist below v5: a v4 request is never checked.
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
	req.ClusterID, req.NodeID = &other, nodeID+1
	resp, err := rawRequest(t, n.Addr(), req)
	if err != nil {
		t.Fatal(err)
	}
	if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		t.Fatalf("v4: error %d with %d keys", av.ErrorCode, len(av.ApiKeys))
	}
}

// franz-go sends ApiVersions v5 naming the cluster and node it learned from
// Metadata whenever it connects to a broker it discovered (not to a seed):
// a produce and a consume through such connections must work.
func TestApiVersionsV5FranzGoClient(t *testing.T) {
	n := sluicetest.Start(t)
	_, nodeID := clusterIdentity(t, n.Addr())
	cl := n.Client(kgo.DefaultProduceTopic("v5"), kgo.AllowAutoTopicCreation(), kgo.ConsumeTopics("v5"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("through a discovered broker")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		for _, e := range fs.Errors() {
			t.Logf("fetch error (retried): %v", e.Err)
		}
		if fs.NumRecords() > 0 {
			if got := string(fs.Records()[0].Value); got != "through a discovered broker" {
				t.Fatalf("consumed %q", got)
			}
			break
		}
	}
	// The discovered broker's connection was opened with v5 and both
	// ids: ask through it explicitly and check the answer is the table.
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "sluice-test", "1.0"
	resp, err := av.RequestWith(ctx, cl.Broker(int(nodeID)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("ApiVersions through broker %d: error %d, %d keys", nodeID, resp.ErrorCode, len(resp.ApiKeys))
	}
}
