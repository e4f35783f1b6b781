package broker

// ReadShareGroupState (api key 84), version 0: a share-partition's new
// leader reads its state from the share coordinator
// (share_coordinator.go); a newer leader epoch is recorded, fencing the
// old leader. A partition without state is UNKNOWN_TOPIC_OR_PARTITION.
// Inter-broker: CLUSTER_ACTION on the cluster, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleReadShareGroupState(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ReadShareGroupStateRequest)
	return b.readShareGroupState(ctx, req, b.shareStateRefusal(r)), nil
}

// readShareGroupState serves req at this broker's share coordinator,
// every partition answered refuse when it is not 0.
func (b *Broker) readShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest, refuse int16) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	c := b.shareCoordinator()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.StateEpoch, rp.StartOffset = -1, -1
			rp.ErrorCode = refuse
			if refuse == 0 {
				key := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
				st, err := c.ReadState(ctx, key, p.LeaderEpoch)
				rp.ErrorCode = shareCoordinatorErrorCode(err)
				if err == nil {
					rp.StateEpoch, rp.StartOffset = st.StateEpoch, st.StartOffset
					for _, sb := range st.Batches {
						rb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						rb.FirstOffset, rb.LastOffset = sb.First, sb.Last
						rb.DeliveryState, rb.DeliveryCount = int8(sb.State), sb.DeliveryCount
						rp.StateBatches = append(rp.StateBatches, rb)
					}
				}
			}
			rp.ErrorMessage = shareStateMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
