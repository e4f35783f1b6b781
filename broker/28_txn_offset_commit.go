package broker

// TxnOffsetCommit (api key 28), versions 0–6.
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
// (KIP-890), which sluice does not produce. Before the offsets are written
// the group's __consumer_offsets partition is checked with the producer's
// transaction coordinator (txn_verify.go): from v5 (KIP-890 part 2, a
// transaction version 2 producer, which sends no AddOffsetsToTxn) the
// coordinator adds it to the transaction; before v5 it is only verified,
// while transaction.partition.verification.enable is true, and a partition
// not in the transaction is INVALID_TXN_STATE. A coordinator that cannot
// answer now is COORDINATOR_NOT_AVAILABLE (the client retries), a fenced
// producer INVALID_PRODUCER_EPOCH. v6 (KIP-1319) names topics by id (an id
// no topic has is UNKNOWN_TOPIC_ID for its partitions) and answers a group
// that does not exist GROUP_ID_NOT_FOUND and a KIP-848 member's stale
// epoch STALE_MEMBER_EPOCH, both ILLEGAL_GENERATION before. Unknown topics or partitions are
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
// The verification has no guard against a marker arriving between the
// coordinator's answer and the offsets' append (Kafka's VerificationGuard
// covers it): with transaction version 2 the marker's bumped epoch refuses
// such a late write anyway.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	switch {
	case !b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID):
		return txnOffsetCommitRefused(req, nil, kerr.TransactionalIDAuthorizationFailed.Code), nil
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group):
		return txnOffsetCommitRefused(req, nil, kerr.GroupAuthorizationFailed.Code), nil
	}
	if req.Version >= 6 {
		return b.txnOffsetCommitByID(ctx, r, req), nil
	}
	return b.txnOffsetCommitNamed(ctx, r, req), nil
}

// txnOffsetCommitNamed commits req, whose topics are named, after the
// authorization checks on the transactional id and the group.
func (b *Broker) txnOffsetCommitNamed(ctx context.Context, r *protocol.Request, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	if code := b.verifyTxnOffsets(ctx, req); code != 0 {
		return txnOffsetCommitRefused(req, nil, code)
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
	return resp
}

// txnOffsetCommitRefused answers every partition of req's topics with
// code, or only those of the topics only marks (nil: all); the others are
// left without partitions, for the caller to fill.
func txnOffsetCommitRefused(req *kmsg.TxnOffsetCommitRequest, only []bool, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for i, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
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

// verifyTxnOffsets checks (v5+: adds) the group's __consumer_offsets
// partition with the producer's transaction coordinator and returns the
// code to answer every partition with, 0 to go on. Nothing is asked when
// this node does not lead the partition: the group coordinator answers
// NOT_COORDINATOR then.
func (b *Broker) verifyTxnOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) int16 {
	add := txnVerifyAdds(28, req.Version)
	if req.Group == "" || (!add && !b.txnVerificationEnabled()) {
		return 0
	}
	t := b.metadata().Topics[offsetsTopicName]
	if t == nil || len(t.Partitions) == 0 {
		return 0
	}
	tp := txn.TopicPartition{Topic: offsetsTopicName, Partition: groups.PartitionFor(req.Group, int32(len(t.Partitions)))}
	p := b.partition(logstore.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
	if p == nil {
		return 0
	}
	if leader, _ := p.state(); leader != b.cfg.NodeID {
		return 0
	}
	check := &txnCheck{p: p, tp: tp}
	b.verifyTxnPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, add, []*txnCheck{check})
	code := errorCode(check.err)
	if code == kerr.NotEnoughReplicas.Code {
		// As Kafka's group coordinator normalizes it.
		code = kerr.CoordinatorNotAvailable.Code
	}
	return code
}

// txnOffsetCommitByID answers a v6 request, whose topics are named by id:
// ids are resolved to names and the request is served as a named one (at
// v6, whose GROUP_ID_NOT_FOUND and STALE_MEMBER_EPOCH the group
// coordinator answers, KIP-1319); an id no topic has is UNKNOWN_TOPIC_ID
// for its partitions.
func (b *Broker) txnOffsetCommitByID(ctx context.Context, r *protocol.Request, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	img := b.metadata()
	named := *req
	named.Topics = nil
	var known []int // index in req.Topics of each topic of named
	for i, rt := range req.Topics {
		t := img.TopicsByID[rt.TopicID]
		if t == nil {
			continue
		}
		nt := rt
		nt.Topic = t.Name
		named.Topics = append(named.Topics, nt)
		known = append(known, i)
	}
	answered := b.txnOffsetCommitNamed(ctx, r, &named)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.ThrottleMillis = answered.ThrottleMillis
	k := 0
	for i, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.TopicID = rt.TopicID
		if k < len(known) && known[k] == i && k < len(answered.Topics) {
			st.Partitions = answered.Topics[k].Partitions
			k++
		} else {
			for _, rp := range rt.Partitions {
				sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.UnknownTopicID.Code
				st.Partitions = append(st.Partitions, sp)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}
