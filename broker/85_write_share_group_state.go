package broker

// WriteShareGroupState (api key 85), versions 0–1: a share-partition's
// leader records its state at the share coordinator
// (share_coordinator.go): the start offset and the in-flight batches,
// fenced by leader epoch (FENCED_LEADER_EPOCH) and state epoch
// (FENCED_STATE_EPOCH). v1's DeliveryCompleteCount is not kept: the
// coordinator counts it from the batches when asked
// (ReadShareGroupStateSummary v1). Inter-broker: CLUSTER_ACTION on the
// cluster, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleWriteShareGroupState(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteShareGroupStateRequest)
	return b.writeShareGroupState(ctx, req, b.shareStateRefusal(r)), nil
}

// writeShareGroupState serves req at this broker's share coordinator,
// every partition answered refuse when it is not 0.
func (b *Broker) writeShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest, refuse int16) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	c := b.shareCoordinator()
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = refuse
			if refuse == 0 {
				key := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
				st := share.PartitionState{StartOffset: p.StartOffset, StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch}
				for _, sb := range p.StateBatches {
					st.Batches = append(st.Batches, share.StateBatch{First: sb.FirstOffset, Last: sb.LastOffset,
						State: share.RecordState(sb.DeliveryState), DeliveryCount: sb.DeliveryCount})
				}
				rp.ErrorCode = shareCoordinatorErrorCode(c.WriteState(ctx, key, st))
			}
			rp.ErrorMessage = shareStateMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
