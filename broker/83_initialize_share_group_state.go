package broker

// InitializeShareGroupState (api key 83), version 0: the group
// coordinator sets a share-partition's start offset and state epoch at the
// share coordinator (share_coordinator.go), when a share group first uses
// a partition (start offset -1) and when its offsets are reset or
// altered. Inter-broker: CLUSTER_ACTION on the cluster, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleInitializeShareGroupState(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitializeShareGroupStateRequest)
	return b.initializeShareGroupState(ctx, req, b.shareStateRefusal(r)), nil
}

// initializeShareGroupState serves req at this broker's share coordinator,
// every partition answered refuse when it is not 0.
func (b *Broker) initializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest, refuse int16) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	c := b.shareCoordinator()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = refuse
			if refuse == 0 {
				key := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
				rp.ErrorCode = shareCoordinatorErrorCode(c.InitializeState(ctx, key, p.StateEpoch, p.StartOffset))
			}
			rp.ErrorMessage = shareStateMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
