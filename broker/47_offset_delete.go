package broker

// OffsetDelete (api key 47), version 0 (KIP-496).
//
// Deletes committed offsets of a group: all of them while the group is
// Empty; for a consumer group with members, those of topics no member
// subscribes to (a subscribed topic is GROUP_SUBSCRIBED_TO_TOPIC); any other
// group with members is NON_EMPTY_GROUP. The offsets are tombstoned in
// __consumer_offsets.
//
// DELETE on the group is needed (GROUP_AUTHORIZATION_FAILED), and READ on
// each topic, or its partitions are TOPIC_AUTHORIZATION_FAILED
// (KafkaApis.handleOffsetDeleteRequest, authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationDelete, req.Group) {
		resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	denied := make([]bool, len(req.Topics))
	allowed := make([]kmsg.OffsetDeleteRequestTopic, 0, len(req.Topics))
	for i, rt := range req.Topics {
		if denied[i] = !readable.allowed(rt.Topic); !denied[i] {
			allowed = append(allowed, rt)
		}
	}
	if len(allowed) == len(req.Topics) {
		return b.groups.DeleteOffsets(ctx, req), nil
	}
	// The coordinator is asked even with no topic left, as in Kafka: its
	// group-level answer (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP) stands.
	sub := *req
	sub.Topics = allowed
	deleted := b.groups.DeleteOffsets(ctx, &sub)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	resp.ErrorCode = deleted.ErrorCode
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	k := 0
	for i, rt := range req.Topics {
		if !denied[i] {
			if k < len(deleted.Topics) {
				resp.Topics = append(resp.Topics, deleted.Topics[k])
			}
			k++
			continue
		}
		st := kmsg.NewOffsetDeleteResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetDeleteResponseTopicPartition()
			sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
