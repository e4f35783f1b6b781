package broker

// ReadShareGroupStateSummary (api key 87), versions 0–1: the group
// coordinator reads a share-partition's start offset and epochs from the
// share coordinator (share_coordinator.go), for
// DescribeShareGroupOffsets; v1 adds DeliveryCompleteCount, the offsets
// at or past the start offset whose delivery is complete. A partition
// without state is UNKNOWN_TOPIC_OR_PARTITION. Inter-broker:
// CLUSTER_ACTION on the cluster, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleReadShareGroupStateSummary(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ReadShareGroupStateSummaryRequest)
	return b.readShareGroupStateSummary(ctx, req, b.shareStateRefusal(r)), nil
}

// readShareGroupStateSummary serves req at this broker's share
// coordinator, every partition answered refuse when it is not 0.
func (b *Broker) readShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest, refuse int16) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	c := b.shareCoordinator()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = -1, -1, -1
			rp.ErrorCode = refuse
			if refuse == 0 {
				key := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
				sum, err := c.ReadSummary(ctx, key)
				rp.ErrorCode = shareCoordinatorErrorCode(err)
				if err == nil {
					rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = sum.StateEpoch, sum.LeaderEpoch, sum.StartOffset
					rp.DeliveryCompleteCount = sum.DeliveryComplete
				}
			}
			rp.ErrorMessage = shareStateMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
