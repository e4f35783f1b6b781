package broker

// AlterPartition (api key 56), versions 0–3 (KIP-497, KIP-841, KIP-903).
//
// A partition leader proposes a new ISR to the active controller, which
// checks it against the broker's epoch, the leader epoch and the partition
// epoch before committing it (controller.AlterPartition). Leaders on other
// nodes send it through forward.go (Broker.alterPartition). As in Kafka it
// is served only on the controller listener, to brokers
// (control_listener.go); a client that sends it to the client listener has
// its connection closed. v0–1 name
// topics, v2+ give topic ids; v3 lists the new ISR with broker epochs
// (NewEpochISR), of which sluice uses the ids: the controller refuses
// fenced or shutting-down members (INELIGIBLE_REPLICA) itself.
//
// All partitions of a request are decided together and committed in one
// metadata command (controller.AlterPartitions), so a leader that batches
// thousands of proposals, as sluice's own leaders do (replica_isr.go), costs
// one raft round trip. NOT_CONTROLLER (this node does not lead the
// metadata log) and STALE_BROKER_EPOCH are request-level errors, as in
// Kafka; every other error belongs to its partition. LeaderRecoveryState is
// always 0 (recovered): sluice does not elect uncleanly into a recovering
// state.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterPartition(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	var aps []controller.AlterPartitionRequest
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			ap := controller.AlterPartitionRequest{
				BrokerID:       req.BrokerID,
				BrokerEpoch:    req.BrokerEpoch,
				Partition:      rp.Partition,
				LeaderEpoch:    rp.LeaderEpoch,
				PartitionEpoch: rp.PartitionEpoch,
				NewISR:         rp.NewISR,
			}
			if req.Version >= 2 {
				ap.TopicID = rt.TopicID
			} else {
				ap.Topic = rt.Topic
			}
			if req.Version >= 3 {
				ap.NewISR = make([]int32, 0, len(rp.NewEpochISR))
				for _, e := range rp.NewEpochISR {
					ap.NewISR = append(ap.NewISR, e.BrokerID)
				}
			}
			aps = append(aps, ap)
		}
	}
	// Every partition is decided in one step and committed in one
	// metadata command (controller.AlterPartitions).
	results, err := b.ctrl.AlterPartitions(ctx, aps)
	if err == nil {
		for _, res := range results {
			if errors.Is(res.Err, kerr.StaleBrokerEpoch) {
				err = res.Err // the same broker epoch for every partition
				break
			}
		}
	}
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	i := 0
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionResponseTopic()
		st.Topic, st.TopidID = rt.Topic, rt.TopicID // kmsg spells it TopidID
		for _, rp := range rt.Partitions {
			res := results[i]
			i++
			sp := kmsg.NewAlterPartitionResponseTopicPartition()
			sp.Partition = rp.Partition
			if res.Err != nil {
				sp.ErrorCode = errorCode(res.Err)
			} else {
				p := res.Partition
				sp.LeaderID, sp.LeaderEpoch, sp.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
				sp.ISR = p.ISR
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
