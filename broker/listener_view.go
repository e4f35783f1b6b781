package broker

// What a client is told about brokers depends on the listener it is
// connected to (issue 19): every broker, and every partition leader and
// coordinator, is named by its endpoint of that listener, as Kafka's
// metadata cache answers per listener name (KRaftMetadataCache). A
// broker without an endpoint for the listener is left out:
//
//   - Metadata: out of the broker list; a partition it leads answers
//     LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before) with leader
//     -1, and it counts among the offline replicas.
//   - FindCoordinator: a coordinator it is answers COORDINATOR_NOT_AVAILABLE.
//   - DescribeCluster: out of the broker list.
//   - Produce: out of the leader hints (node endpoints, KIP-951).
//   - DescribeTopicPartitions: a partition it leads has leader -1.
//
// The handlers answer with the registration's Host and Port, the
// inter-broker listener's endpoint; forListener rewrites the answer for
// any other listener. A client of the inter-broker listener (and a peer
// on the controller channel) gets the answer as it is, so the common
// case of a single listener costs nothing.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// endpointOf is broker br's endpoint of listener: ok is false when br
// registered listeners without that one. A broker registered before
// listeners were named has only Host and Port, its one listener.
func endpointOf(br *controller.Broker, listener string) (host string, port int32, ok bool) {
	if len(br.Endpoints) == 0 {
		return br.Host, br.Port, true
	}
	for _, e := range br.Endpoints {
		if e.Listener == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// forListener wraps h so its answer names brokers by the endpoints of the
// listener r arrived on.
func (b *Broker) forListener(h protocol.Handler) protocol.Handler {
	return func(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
		resp, err := h(ctx, r)
		if err != nil || resp == nil || r.Conn == nil {
			return resp, err
		}
		listener := r.Conn.Listener
		if listener == "" || listener == b.interBroker || b.listener(listener) == nil {
			return resp, nil
		}
		b.viewFrom(listener, r.Header.APIVersion, resp)
		return resp, nil
	}
}

// viewFrom rewrites resp for a client of listener.
func (b *Broker) viewFrom(listener string, version int16, resp kmsg.Response) {
	img := b.metadata()
	if img == nil {
		return
	}
	// lacks reports whether broker id is registered without an endpoint
	// of the listener (an unregistered one is left as the handler said).
	lacks := func(id int32) bool {
		br := img.Brokers[id]
		if br == nil {
			return false
		}
		_, _, ok := endpointOf(br, listener)
		return !ok
	}
	rewrite := func(id int32, host *string, port *int32) bool {
		br := img.Brokers[id]
		if br == nil {
			return true
		}
		h, p, ok := endpointOf(br, listener)
		if ok {
			*host, *port = h, p
		}
		return ok
	}
	switch resp := resp.(type) {
	case *kmsg.MetadataResponse:
		resp.Brokers = slices.DeleteFunc(resp.Brokers, func(br kmsg.MetadataResponseBroker) bool { return lacks(br.NodeID) })
		for i := range resp.Brokers {
			rewrite(resp.Brokers[i].NodeID, &resp.Brokers[i].Host, &resp.Brokers[i].Port)
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				p := &resp.Topics[i].Partitions[j]
				for _, r := range p.Replicas {
					if lacks(r) && !slices.Contains(p.OfflineReplicas, r) {
						p.OfflineReplicas = append(p.OfflineReplicas, r)
					}
				}
				if p.Leader >= 0 && lacks(p.Leader) {
					p.Leader = -1
					p.ErrorCode = kerr.LeaderNotAvailable.Code
					if version >= 6 {
						p.ErrorCode = kerr.ListenerNotFound.Code
					}
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		unavailable := func(id *int32, host *string, port *int32, code *int16, msg **string) {
			if *code != 0 || *id < 0 || rewrite(*id, host, port) {
				return
			}
			*id, *host, *port = -1, "", -1
			*code = kerr.CoordinatorNotAvailable.Code
			*msg = errorMessage(kerr.CoordinatorNotAvailable)
		}
		if version < 4 {
			unavailable(&resp.NodeID, &resp.Host, &resp.Port, &resp.ErrorCode, &resp.ErrorMessage)
		}
		for i := range resp.Coordinators {
			c := &resp.Coordinators[i]
			unavailable(&c.NodeID, &c.Host, &c.Port, &c.ErrorCode, &c.ErrorMessage)
		}
	case *kmsg.DescribeClusterResponse:
		resp.Brokers = slices.DeleteFunc(resp.Brokers, func(br kmsg.DescribeClusterResponseBroker) bool { return lacks(br.NodeID) })
		for i := range resp.Brokers {
			rewrite(resp.Brokers[i].NodeID, &resp.Brokers[i].Host, &resp.Brokers[i].Port)
		}
	case *kmsg.ProduceResponse:
		resp.Brokers = slices.DeleteFunc(resp.Brokers, func(br kmsg.ProduceResponseBroker) bool { return lacks(br.NodeID) })
		for i := range resp.Brokers {
			rewrite(resp.Brokers[i].NodeID, &resp.Brokers[i].Host, &resp.Brokers[i].Port)
		}
	case *kmsg.DescribeTopicPartitionsResponse:
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				p := &resp.Topics[i].Partitions[j]
				for _, r := range p.Replicas {
					if lacks(r) && !slices.Contains(p.OfflineReplicas, r) {
						p.OfflineReplicas = append(p.OfflineReplicas, r)
					}
				}
				if p.LeaderID >= 0 && lacks(p.LeaderID) {
					p.LeaderID = -1
				}
			}
		}
	}
}
