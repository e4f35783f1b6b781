package broker

// TxnOffsetCommit (api key 28), versions 0–5.
//
// A transactional producer commits a consumer group's offsets inside its
// transaction (KIP-98); asked of the group's coordinator after
// AddOffsetsToTxn put the group's __consumer_offsets partition into the
// transaction. The offsets are written there as a transactional batch of
// the producer (its id and epoch, base sequence 0, as Kafka's coordinator
// writes them) through the partition's producer state, so a producer whose
// epoch the partition has already seen bumped is refused with
// INVALID_PRODUCER_EPOCH (which Kafka answers at every version and clients
// treat as being fenced). They stay pending, invisible to OffsetFetch,
// until the transaction's marker reaches the partition (WriteTxnMarkers):
// COMMIT applies them, ABORT drops them; OffsetFetch with RequireStable
// answers UNSTABLE_OFFSET_COMMIT meanwhile. groups/txn_offsets.go has the
// details.
//
// v2 adds the committed leader epoch (KIP-320); v3 adds the member id,
// group instance id and generation (KIP-447), checked as Kafka checks them
// (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION; a member of a
// KIP-848 consumer group sends its member epoch, and a mismatch is
// ILLEGAL_GENERATION); generation -1 without a member is accepted, and
// creates the group if it is missing. v4 only allows TRANSACTION_ABORTABLE
// (KIP-890), which sluice does not produce; v5 belongs to transaction
// version 2 (KIP-890 part 2), which sluice does not advertise, and is
// answered as v4. Unknown topics or partitions are
// UNKNOWN_TOPIC_OR_PARTITION, metadata over offset.metadata.max.bytes
// OFFSET_METADATA_TOO_LARGE. Before v2 COORDINATOR_LOAD_IN_PROGRESS is
// answered as COORDINATOR_NOT_AVAILABLE, which 0.11–2.0 clients expect.
//
// WRITE on the transactional id is needed (every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED), then READ on each topic (its partitions
// TOPIC_AUTHORIZATION_FAILED, the others committed; the coordinator is
// not asked when none is left), as KafkaApis.handleTxnOffsetCommitRequest
// checks them (authorize_requests.go).
//
// Not done: KIP-890 part 1's check with the transaction coordinator that
// the group's partition is in the producer's transaction
// (transaction.partition.verification.enable); a client that commits
// offsets without AddOffsetsToTxn leaves them pending until a marker of
// its producer id reaches the partition.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	switch {
	case !b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID):
		return txnOffsetCommitRefused(req, nil, kerr.TransactionalIDAuthorizationFailed.Code), nil
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		return txnOffsetCommitRefused(req, nil, kerr.GroupAuthorizationFailed.Code), nil
	}
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	denied := make([]bool, len(req.Topics))
	allowed := make([]kmsg.TxnOffsetCommitRequestTopic, 0, len(req.Topics))
	for i, rt := range req.Topics {
		if denied[i] = !readable.allowed(rt.Topic); !denied[i] {
			allowed = append(allowed, rt)
		}
	}
	var resp *kmsg.TxnOffsetCommitResponse
	switch {
	case len(allowed) == len(req.Topics):
		resp = b.groups.CommitTxnOffsets(ctx, req)
	default:
		resp = txnOffsetCommitRefused(req, denied, kerr.TopicAuthorizationFailed.Code)
		if len(allowed) > 0 {
			sub := *req
			sub.Topics = allowed
			committed := b.groups.CommitTxnOffsets(ctx, &sub)
			for i, k := 0, 0; i < len(req.Topics) && k < len(committed.Topics); i++ {
				if !denied[i] {
					resp.Topics[i] = committed.Topics[k]
					k++
				}
			}
		}
	}
	if req.Version < 2 {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == kerr.CoordinatorLoadInProgress.Code {
					p.ErrorCode = kerr.CoordinatorNotAvailable.Code
				}
			}
		}
	}
	return resp, nil
}

// txnOffsetCommitRefused answers every partition of req's topics with
// code, or only those of the topics only marks (nil: all); the others are
// left without partitions, for the caller to fill.
func txnOffsetCommitRefused(req *kmsg.TxnOffsetCommitRequest, only []bool, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for i, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		if only == nil || only[i] {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
