package broker

// OffsetCommit (api key 8), versions 2–10 (Kafka 4.0 removed v0–1, KIP-896).
//
// Offsets are stored as OffsetCommitKey / OffsetCommitValue records in the
// group's partition of __consumer_offsets and the commit is answered once
// they are committed there (acks=-1). A member must be of the group's
// current generation (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// REBALANCE_IN_PROGRESS while assignments are handed out, checked in that
// order as Kafka's ClassicGroup.validateOffsetCommit does); a simple consumer
// (generation -1) may commit while the group has no members. A member's
// commit to a group that does not exist is ILLEGAL_GENERATION, and from v9
// GROUP_ID_NOT_FOUND (Kafka's OffsetMetadataManager). The empty group id is
// accepted like any other, as Kafka accepts it "for backwards
// compatibility". A failed write to __consumer_offsets is
// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR, never a produce error.
// v2–4's retention time is ignored (offsets.retention.minutes applies). v6+ keeps the
// leader epoch (KIP-320), v7+ checks group.instance.id (KIP-345), v10 names
// topics by id (KIP-848's topic ids). In a KIP-848 consumer group the
// generation is the member epoch (v9+): STALE_MEMBER_EPOCH when it is not
// the member's, except for partitions the member held since that epoch
// (KIP-1251). Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID at v10); metadata longer than
// offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE.
//
// READ on the group is needed, or every partition is
// GROUP_AUTHORIZATION_FAILED; READ on each topic, or its partitions are
// TOPIC_AUTHORIZATION_FAILED and the others committed; when none is left
// the coordinator is not asked (KafkaApis.handleOffsetCommitRequest,
// authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetCommit(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetCommitRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		return offsetCommitRefused(req, nil, kerr.GroupAuthorizationFailed.Code), nil
	}
	// READ on each topic, by the name the request gives or its id
	// resolves to; an unknown id is the coordinator's UNKNOWN_TOPIC_ID.
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	img := b.metadata()
	byID := req.Version >= 10
	denied := make([]bool, len(req.Topics))
	allowed := make([]kmsg.OffsetCommitRequestTopic, 0, len(req.Topics))
	for i, rt := range req.Topics {
		name := rt.Topic
		if byID {
			t := lookupTopic(img, true, "", rt.TopicID)
			if t == nil {
				allowed = append(allowed, rt)
				continue
			}
			name = t.Name
		}
		if denied[i] = !readable.allowed(name); !denied[i] {
			allowed = append(allowed, rt)
		}
	}
	if len(allowed) == len(req.Topics) {
		return b.groups.CommitOffsets(ctx, req), nil
	}
	resp := offsetCommitRefused(req, denied, kerr.TopicAuthorizationFailed.Code)
	if len(allowed) == 0 {
		return resp, nil // as Kafka, the coordinator is not asked
	}
	sub := *req
	sub.Topics = allowed
	committed := b.groups.CommitOffsets(ctx, &sub)
	for i, k := 0, 0; i < len(req.Topics) && k < len(committed.Topics); i++ {
		if !denied[i] {
			resp.Topics[i] = committed.Topics[k]
			k++
		}
	}
	return resp, nil
}

// offsetCommitRefused answers every partition of req's topics with code,
// or only those of the topics only marks (nil: all); the others are left
// without partitions, for the caller to fill.
func offsetCommitRefused(req *kmsg.OffsetCommitRequest, only []bool, code int16) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	for i, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		if only == nil || only[i] {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
