package broker

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// TestListenerViewLeavesOutBrokersWithoutTheListener: as Kafka's metadata
// cache answers per listener, a broker registered without an endpoint of
// the client's listener is left out of Metadata, DescribeCluster and
// Produce's leader hints; a partition it leads answers LISTENER_NOT_FOUND
// (LEADER_NOT_AVAILABLE before Metadata v6) with no leader and counts it
// offline; a coordinator it is answers COORDINATOR_NOT_AVAILABLE. The
// others are named by their endpoint of that listener, and a broker
// registered before listeners were named by its one Host and Port.
func TestListenerViewLeavesOutBrokersWithoutTheListener(t *testing.T) {
	ep := func(listener, host string, port int32) controller.Endpoint {
		return controller.Endpoint{Listener: listener, Host: host, Port: port, SecurityProtocol: "PLAINTEXT"}
	}
	img := &controller.Image{Brokers: map[int32]*controller.Broker{
		1: {ID: 1, Host: "in1", Port: 1, Endpoints: []controller.Endpoint{ep("INTERNAL", "in1", 1), ep("EXTERNAL", "ex1", 11)}},
		2: {ID: 2, Host: "in2", Port: 2, Endpoints: []controller.Endpoint{ep("INTERNAL", "in2", 2)}},
		3: {ID: 3, Host: "old3", Port: 3}, // registered before listeners were named
	}}
	b := &Broker{interBroker: "INTERNAL", listeners: []*kafkaListener{
		{cfg: config.Listener{Name: "INTERNAL"}}, {cfg: config.Listener{Name: "EXTERNAL"}},
	}}
	b.image.Store(img)

	brokers := func(ids ...int32) []kmsg.MetadataResponseBroker {
		var out []kmsg.MetadataResponseBroker
		for _, id := range ids {
			br := img.Brokers[id]
			out = append(out, kmsg.MetadataResponseBroker{NodeID: id, Host: br.Host, Port: br.Port})
		}
		return out
	}
	metadata := func(version int16) *kmsg.MetadataResponse {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = version
		resp.Brokers = brokers(1, 2, 3)
		mt := kmsg.NewMetadataResponseTopic()
		for leader := int32(1); leader <= 3; leader++ {
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Partition, p.Leader, p.Replicas, p.ISR = leader-1, leader, []int32{1, 2, 3}, []int32{1, 2, 3}
			mt.Partitions = append(mt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, mt)
		return resp
	}
	serve := func(listener string, version int16, resp kmsg.Response) kmsg.Response {
		h := b.forListener(func(context.Context, *protocol.Request) (kmsg.Response, error) { return resp, nil })
		r := &protocol.Request{Header: protocol.Header{APIVersion: version}, Conn: &protocol.ConnInfo{Listener: listener}}
		out, err := h(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	// The inter-broker listener's clients get the answer as it is.
	if got := serve("INTERNAL", 12, metadata(12)).(*kmsg.MetadataResponse); !reflect.DeepEqual(got.Brokers, brokers(1, 2, 3)) {
		t.Errorf("INTERNAL brokers %+v", got.Brokers)
	}

	for _, version := range []int16{5, 12} {
		got := serve("EXTERNAL", version, metadata(version)).(*kmsg.MetadataResponse)
		want := []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "ex1", Port: 11}, {NodeID: 3, Host: "old3", Port: 3}}
		if !reflect.DeepEqual(got.Brokers, want) {
			t.Errorf("v%d EXTERNAL brokers %+v, want %+v", version, got.Brokers, want)
		}
		code := kerr.ListenerNotFound.Code
		if version < 6 {
			code = kerr.LeaderNotAvailable.Code
		}
		for _, p := range got.Topics[0].Partitions {
			wantLeader, wantCode := p.Partition+1, int16(0)
			if p.Partition == 1 { // led by broker 2
				wantLeader, wantCode = -1, code
			}
			if p.Leader != wantLeader || p.ErrorCode != wantCode || !slices.Equal(p.OfflineReplicas, []int32{2}) {
				t.Errorf("v%d partition %d: leader %d error %d offline %v, want leader %d error %d offline [2]",
					version, p.Partition, p.Leader, p.ErrorCode, p.OfflineReplicas, wantLeader, wantCode)
			}
		}
	}

	fc := kmsg.NewPtrFindCoordinatorResponse()
	for id := int32(1); id <= 3; id++ {
		br := img.Brokers[id]
		fc.Coordinators = append(fc.Coordinators, kmsg.FindCoordinatorResponseCoordinator{Key: "g", NodeID: id, Host: br.Host, Port: br.Port})
	}
	gotFC := serve("EXTERNAL", 4, fc).(*kmsg.FindCoordinatorResponse).Coordinators
	if c := gotFC[0]; c.NodeID != 1 || c.Host != "ex1" || c.Port != 11 || c.ErrorCode != 0 {
		t.Errorf("coordinator 1: %+v", c)
	}
	if c := gotFC[1]; c.NodeID != -1 || c.Port != -1 || c.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("coordinator 2, without EXTERNAL: %+v, want COORDINATOR_NOT_AVAILABLE", c)
	}
	if c := gotFC[2]; c.NodeID != 3 || c.Host != "old3" {
		t.Errorf("coordinator 3: %+v", c)
	}

	dc := kmsg.NewPtrDescribeClusterResponse()
	for id := int32(1); id <= 3; id++ {
		dc.Brokers = append(dc.Brokers, kmsg.DescribeClusterResponseBroker{NodeID: id, Host: img.Brokers[id].Host, Port: img.Brokers[id].Port})
	}
	var ids []int32
	for _, br := range serve("EXTERNAL", 0, dc).(*kmsg.DescribeClusterResponse).Brokers {
		ids = append(ids, br.NodeID)
	}
	if !slices.Equal(ids, []int32{1, 3}) {
		t.Errorf("DescribeCluster brokers %v, want [1 3]", ids)
	}

	pr := kmsg.NewPtrProduceResponse()
	pr.Brokers = []kmsg.ProduceResponseBroker{{NodeID: 2, Host: "in2", Port: 2}, {NodeID: 1, Host: "in1", Port: 1}}
	if got := serve("EXTERNAL", 12, pr).(*kmsg.ProduceResponse).Brokers; len(got) != 1 || got[0].Host != "ex1" || got[0].Port != 11 {
		t.Errorf("Produce leader hints %+v, want broker 1 at ex1:11 only", got)
	}
}
