package broker

// DeleteShareGroupOffsets (api key 92), version 0 (KIP-932, Kafka 4.4),
// served by the group coordinator of the group.
//
// Deletes the share-partition state of the named topics' partitions
// (share.Persister.DeleteState), so that a share-partition of them starts
// afresh at share.auto.offset.reset the next time the group consumes it.
// The share group must exist (GROUP_ID_NOT_FOUND, also for a group of
// another type) and have no members (NON_EMPTY_GROUP); a topic that does
// not exist, or whose state the group never initialized, is
// UNKNOWN_TOPIC_OR_PARTITION (groups.DeleteShareOffsets). This broker's
// loaded share-partitions of the deleted keys are dropped
// (share.Manager.Forget); a partition leader elsewhere drops its own when
// the next member opens its share session (share.Manager.Revalidate).
//
// Authorization as Kafka's KafkaApis: DELETE on the group
// (GROUP_AUTHORIZATION_FAILED for the whole request), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for the topic). share.version below 1 is
// UNSUPPORTED_VERSION (share.go). Top-level errors carry no topics.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleDeleteShareGroupOffsets(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	topLevel := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, shareOffsetsTopLevelMessage(code, msg)
		return resp, nil
	}
	img, code := b.shareOffsetsGate(r, kmsg.ACLOperationDelete, req.GroupID)
	if code != 0 {
		return topLevel(code, "")
	}
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	var refused, unknown []kmsg.DeleteShareGroupOffsetsResponseTopic
	var topics []groups.TopicInfo
	seen := make(map[string]bool)
	for _, rt := range req.Topics {
		if seen[rt.Topic] {
			continue
		}
		seen[rt.Topic] = true
		t := img.Topics[rt.Topic]
		switch {
		case !readable.allowed(rt.Topic):
			refused = append(refused, deleteShareOffsetsTopic(rt.Topic, [16]byte{}, kerr.TopicAuthorizationFailed.Code, errorMessage(kerr.TopicAuthorizationFailed)))
		case t == nil:
			unknown = append(unknown, deleteShareOffsetsTopic(rt.Topic, [16]byte{}, kerr.UnknownTopicOrPartition.Code, errorMessage(kerr.UnknownTopicOrPartition)))
		default:
			topics = append(topics, groups.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
		}
	}

	results, code, msg := b.groups.DeleteShareOffsets(ctx, req.GroupID, topics, func(ctx context.Context, parts groups.SharePartitions) map[[16]byte]error {
		out := make(map[[16]byte]error)
		for key, err := range b.deleteShareStates(ctx, req.GroupID, parts) {
			if out[key.TopicID] == nil {
				out[key.TopicID] = fmt.Errorf("%w: %v", kerr.ErrorForCode(shareErrorCode(err)), err)
			}
		}
		return out
	})
	if code != 0 {
		return topLevel(code, msg)
	}
	resp.Topics = refused
	var failed []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range topics {
		res := results[t.ID]
		if res.Code == 0 {
			resp.Topics = append(resp.Topics, deleteShareOffsetsTopic(t.Name, t.ID, 0, nil))
			continue
		}
		m := res.Message
		failed = append(failed, deleteShareOffsetsTopic(t.Name, [16]byte{}, res.Code, &m))
	}
	resp.Topics = append(append(resp.Topics, failed...), unknown...)
	return resp, nil
}

func deleteShareOffsetsTopic(name string, id [16]byte, code int16, msg *string) kmsg.DeleteShareGroupOffsetsResponseTopic {
	out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
	out.Topic, out.TopicID, out.ErrorCode, out.ErrorMessage = name, id, code, msg
	return out
}

// deleteGroupShareState is DeleteGroups' first step for a share group, as
// Kafka's GroupCoordinatorService chains it: the share-partition state of
// every partition the group initialized is deleted
// (DeleteShareGroupState per partition) before the group itself. It
// returns NON_EMPTY_GROUP for a share group with members, the error of a
// failed deletion, or 0 (also for a group that is not a share group, which
// the general deletion answers).
func (b *Broker) deleteGroupShareState(ctx context.Context, group string) int16 {
	img := b.metadata()
	if img == nil {
		return 0
	}
	counts := make(map[[16]byte]int32, len(img.TopicsByID))
	for id, t := range img.TopicsByID {
		counts[id] = int32(len(t.Partitions))
	}
	parts, isShare, code := b.groups.ShareStateForDeletion(group, counts)
	if !isShare || code != 0 {
		return code
	}
	var failed error
	for _, err := range b.deleteShareStates(ctx, group, parts) {
		failed = err
		break
	}
	return shareErrorCode(failed)
}

// deleteShareStates deletes the share-partition state of group's parts
// (share.Persister.DeleteState) and drops this broker's loaded
// share-partition of each key (share.Manager.Forget), whether or not its
// deletion succeeded. It returns the keys whose deletion failed, with
// their errors.
func (b *Broker) deleteShareStates(ctx context.Context, group string, parts groups.SharePartitions) map[share.Key]error {
	mgr := b.shareState().mgr
	failed := make(map[share.Key]error)
	for _, key := range sharePartitionsOf(group, parts) {
		if err := mgr.Persister().DeleteState(ctx, key); err != nil {
			failed[key] = err
		}
		mgr.Forget(key)
	}
	return failed
}
