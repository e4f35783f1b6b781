package broker_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/sluicetest"
	"github.com/sluicedev/sluice/sluicetest/certs"
)

func gossipKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

// clusterSecurityLines are what an operator writes to secure a cluster's
// own traffic: the controller listener over SSL (mutual TLS, PKCS12
// keystore and truststore) and an encrypted gossip.
func clusterSecurityLines(set *certs.Set, id *certs.Identity, key string) []string {
	lines := []string{
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:SSL",
		"gossip.encryption.key=" + key,
	}
	lines = append(lines, id.KeystoreP12("listener.name.controller.")...)
	return append(lines, set.TruststoreP12Lines("listener.name.controller.")...)
}

// controllerListener is node id's controller listener address, from its
// controller.quorum.voters.
func controllerListener(t *testing.T, c *sluicetest.Cluster, id int) string {
	t.Helper()
	for _, o := range c.Node(id).Overrides {
		if v, ok := strings.CutPrefix(o, "controller.quorum.voters="); ok {
			for _, voter := range strings.Split(v, ",") {
				if vid, a, _ := strings.Cut(voter, "@"); vid == strconv.Itoa(id) {
					return a
				}
			}
		}
	}
	t.Fatalf("no controller listener for node %d", id)
	return ""
}

// channelClient is a franz-go client of node id's controller channel,
// dialled by dial.
func channelClient(t *testing.T, addr string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.Dialer(func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dial(ctx, network, addr)
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// brokerIDs is the cluster's brokers as DescribeCluster answers them.
func brokerIDs(ctx context.Context, cl *kgo.Client) ([]int32, int32, error) {
	resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, -1, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, resp.ControllerID, nil
}

// A cluster whose raft port speaks mutual TLS and whose gossip is
// encrypted forms and replicates; a fourth node with a certificate of
// another CA, with the wrong gossip key, or with a plaintext controller
// listener is refused (counted by the cluster's nodes), never appears in
// DescribeCluster, never gets a vote, and the cluster goes on.
func TestClusterTrafficSecured(t *testing.T) {
	set := sluicetest.NewCerts(t)
	key := gossipKey(t)
	c := sluicetest.StartCluster(t, 3, clusterSecurityLines(set, set.Server, key)...)
	c.WaitForBrokers(3)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "secured"); err != nil {
		t.Fatal(err)
	}
	c.WaitForISR("secured", 0, 3)
	produce := func(value string) {
		t.Helper()
		cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("secured"))
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", value, err)
		}
	}
	produce("before")

	// The controller channel speaks TLS only: a plaintext client of it,
	// or one without a certificate, is answered nothing.
	addr := controllerListener(t, c, 1)
	for name, dial := range map[string]func(ctx context.Context, network, addr string) (net.Conn, error){
		"plaintext": func(ctx context.Context, network, addr string) (net.Conn, error) {
			return controller.DialController(ctx, nil, network, addr)
		},
		"no certificate": func(ctx context.Context, network, addr string) (net.Conn, error) {
			return controller.DialControllerTLS(ctx, nil, network, addr, set.ClientConfig(nil))
		},
	} {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, channelClient(t, addr, dial))
		rcancel()
		if err == nil {
			t.Errorf("a %s client of the controller channel was answered", name)
		}
	}

	other := certs.New(t)
	for _, tc := range []struct {
		name  string
		voter bool
		ovr   []string
		// refused reads the cluster's count of what it refused of
		// this outsider.
		refused func(raft, gossip uint64) uint64
	}{
		{"certificate of another CA", true, clusterSecurityLines(other, other.Server, key),
			func(raft, _ uint64) uint64 { return raft }},
		{"wrong gossip key", false, clusterSecurityLines(set, set.Server, gossipKey(t)),
			func(_, gossip uint64) uint64 { return gossip }},
		{"plaintext controller listener", true, []string{"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			func(raft, _ uint64) uint64 { return raft }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused := func() uint64 {
				var n uint64
				for id := 1; id <= 3; id++ {
					n += tc.refused(c.Node(id).Broker.RefusedPeers())
				}
				return n
			}
			before := refused()
			// With the cluster's gossip key, a would-be voter: it
			// names itself in its voters and asks the cluster's
			// voters for votes.
			o := c.StartOutsider(4, tc.voter, tc.ovr...)
			// Wait for evidence that it tried and was refused, then
			// that the cluster still knows only its three brokers.
			sluicetest.WaitFor(t, 30*time.Second, func() error {
				if n := refused() - before; n < 5 {
					return fmt.Errorf("the cluster refused the outsider %d times so far", n)
				}
				return nil
			})
			ids, controller, err := brokerIDs(ctx, c.Client())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, []int32{1, 2, 3}) || controller < 1 || controller > 3 {
				t.Fatalf("DescribeCluster: brokers %v, controller %d", ids, controller)
			}
			details, err := adm.ListBrokers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got := details.NodeIDs(); len(got) != 3 {
				t.Fatalf("Metadata brokers %v", got)
			}
			if o.Admitted() {
				t.Fatal("the outsider was admitted")
			}
			o.Stop()
			produce("after " + tc.name)
		})
	}
	// Everything produced is there, replicated.
	c.WaitForISR("secured", 0, 3)
	offsets, err := adm.ListEndOffsets(ctx, "secured")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offsets.Lookup("secured", 0); o.Offset != 4 {
		t.Fatalf("end offset %d, want 4", o.Offset)
	}
}
