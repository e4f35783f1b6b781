package broker

// DeleteShareGroupState (api key 86), version 0: the group coordinator
// removes a share-partition's state at the share coordinator
// (share_coordinator.go), on DeleteGroups and DeleteShareGroupOffsets.
// Deleting state that does not exist succeeds. Inter-broker:
// CLUSTER_ACTION on the cluster, as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleDeleteShareGroupState(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupStateRequest)
	return b.deleteShareGroupState(ctx, req, b.shareStateRefusal(r)), nil
}

// deleteShareGroupState serves req at this broker's share coordinator,
// every partition answered refuse when it is not 0.
func (b *Broker) deleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest, refuse int16) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	c := b.shareCoordinator()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = refuse
			if refuse == 0 {
				key := share.Key{Group: req.GroupID, TopicID: t.TopicID, Partition: p.Partition}
				rp.ErrorCode = shareCoordinatorErrorCode(c.DeleteState(ctx, key))
			}
			rp.ErrorMessage = shareStateMessage(rp.ErrorCode)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
