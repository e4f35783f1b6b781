package broker

// InitProducerID (api key 22), versions 0–6.
//
// For an idempotent producer (no transactional id) it hands out a fresh
// producer id at epoch 0. Ids come from blocks the controller commits to the
// metadata log (KIP-730), so they are unique across the cluster and across
// restarts; a broker takes a new block of producerIDBlockSize when its block
// runs out. A v3+ request carrying its current id and epoch (KIP-360) also
// gets a new id, which resets its sequences.
//
// With a transactional id the transaction coordinator answers (txn.go,
// package txn): only the leader of the id's __transaction_state partition
// (NOT_COORDINATOR elsewhere, COORDINATOR_LOAD_IN_PROGRESS while it loads).
// A new id gets a producer id at epoch 0; a re-initialization bumps the
// epoch, fencing the previous producer; a running transaction is aborted
// first and the answer is CONCURRENT_TRANSACTIONS until its markers are
// written; the KIP-360 producer id and epoch in v3+ requests are checked
// (PRODUCER_FENCED for a stale one, INVALID_PRODUCER_EPOCH before v4,
// KIP-588); an exhausted epoch moves to a new producer id. A timeout above
// transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT. The topic is
// created here too if no FindCoordinator did it first.
//
// A transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
// an idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some
// topic (KIP-679; CLUSTER_AUTHORIZATION_FAILED), as
// KafkaApis.handleInitProducerIdRequest checks them (authorize_requests.go).
//
// v6 (KIP-939, two-phase commit) adds Enable2Pc and KeepPreparedTxn to the
// request and OngoingTxnProducerId/Epoch to the response. kmsg stops at v5,
// so v6 is decoded and encoded here (initProducerIDRequest/Response) and
// served through protocol.RegisterBeyondKmsg. Kafka 4.4 marks v6 unstable:
// a default broker neither lists nor serves it (unstable.api.versions.enable,
// an internal key, turns it on). sluice serves it always and lists it when
// transaction.two.phase.commit.enable is true, since nothing could use that
// key otherwise (the Java producer's transaction.two.phase.commit.enable
// needs v6 listed). As in Kafka 4.4:
//   - Enable2Pc also needs TWO_PHASE_COMMIT on the transactional id
//     (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked after WRITE;
//   - with transaction.two.phase.commit.enable false, Enable2Pc is
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED (the coordinator's answer);
//   - KeepPreparedTxn is UNSUPPORTED_VERSION (Kafka 4.4's coordinator has
//     not built it: no ongoing transaction is kept, and the Java 4.4
//     producer offers no public prepareTransaction/completeTransaction);
//   - a 2PC transaction runs with timeout 2147483647 (txn.TwoPhaseTimeoutMs)
//     whatever the request asked, written to __transaction_state, and the
//     timeout never aborts it; OngoingTxnProducerId/Epoch stay -1.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

const producerIDBlockSize = 1000

// producerIDs is this broker's current block of producer ids.
type producerIDs struct {
	mu   sync.Mutex
	next int64
	end  int64 // exclusive
}

// initProducerIDV6 is the first InitProducerId version kmsg cannot
// decode: Enable2Pc and KeepPreparedTxn (KIP-939).
const initProducerIDV6 = 6

// registerInitProducerID serves InitProducerId v0–6, listing v6 only with
// transaction.two.phase.commit.enable.
// It goes through q's request quota like every client API.
func (b *Broker) registerInitProducerID(q quotaRouter) {
	advertised := int16(initProducerIDV6 - 1)
	if b.cfg.TransactionTwoPhaseCommitEnable {
		advertised = initProducerIDV6
	}
	q.r.RegisterBeyondKmsg(22, 0, initProducerIDV6, advertised,
		func() kmsg.Request { return new(initProducerIDRequest) }, q.b.requestQuota(b.handleInitProducerID))
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	full := r.Body.(*initProducerIDRequest)
	req := &full.InitProducerIDRequest
	out := full.ResponseKind().(*initProducerIDResponse)
	resp := &out.InitProducerIDResponse
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && !b.authorizedTxnID(r, kmsg.ACLOperationWrite, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return out, nil
	case req.TransactionalID != nil && full.Enable2PC && !b.authorizedTxnID(r, acl.OpTwoPhaseCommit, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return out, nil
	case req.TransactionalID == nil && !b.mayWriteIdempotently(r):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return out, nil
	}
	if req.TransactionalID != nil {
		if err := b.ensureTxnStateTopic(ctx); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return out, nil
		}
		pid, epoch := req.ProducerID, req.ProducerEpoch
		if req.Version < 3 {
			pid, epoch = -1, -1
		}
		opts := txn.InitOptions{Enable2PC: full.Enable2PC, KeepPreparedTxn: full.KeepPreparedTxn}
		res := b.txn.InitProducerIDWith(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch, opts)
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		resp.ErrorCode = fencedForVersion(res.ErrorCode, req.Version, 4)
		return out, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return out, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return out, nil
}

// initProducerIDRequest is kmsg's InitProducerIDRequest with v6's fields
// (KIP-939): v0–5 are kmsg's encoding, v6 is v5's fields, Enable2Pc and
// KeepPreparedTxn (booleans), then the tagged fields.
type initProducerIDRequest struct {
	kmsg.InitProducerIDRequest
	Enable2PC       bool // v6+
	KeepPreparedTxn bool // v6+
}

func (*initProducerIDRequest) MaxVersion() int16 { return initProducerIDV6 }

func (v *initProducerIDRequest) ResponseKind() kmsg.Response {
	r := &initProducerIDResponse{InitProducerIDResponse: kmsg.NewInitProducerIDResponse()}
	r.Version = v.Version
	r.OngoingTxnProducerID, r.OngoingTxnProducerEpoch = -1, -1
	return r
}

func (v *initProducerIDRequest) ReadFrom(src []byte) error {
	if v.Version < initProducerIDV6 {
		return v.InitProducerIDRequest.ReadFrom(src)
	}
	version := v.Version
	v.InitProducerIDRequest.Default()
	v.InitProducerIDRequest.Version = version
	b := kbin.Reader{Src: src}
	v.TransactionalID = b.CompactNullableString()
	v.TransactionTimeoutMillis = b.Int32()
	v.ProducerID = b.Int64()
	v.ProducerEpoch = b.Int16()
	v.Enable2PC = b.Bool()
	v.KeepPreparedTxn = b.Bool()
	v.UnknownTags = kmsg.ReadTags(&b)
	return b.Complete()
}

func (v *initProducerIDRequest) AppendTo(dst []byte) []byte {
	if v.Version < initProducerIDV6 {
		return v.InitProducerIDRequest.AppendTo(dst)
	}
	dst = kbin.AppendCompactNullableString(dst, v.TransactionalID)
	dst = kbin.AppendInt32(dst, v.TransactionTimeoutMillis)
	dst = kbin.AppendInt64(dst, v.ProducerID)
	dst = kbin.AppendInt16(dst, v.ProducerEpoch)
	dst = kbin.AppendBool(dst, v.Enable2PC)
	dst = kbin.AppendBool(dst, v.KeepPreparedTxn)
	return appendTags(dst, &v.UnknownTags)
}

// initProducerIDResponse is kmsg's InitProducerIDResponse with v6's
// OngoingTxnProducerId and OngoingTxnProducerEpoch (default -1).
type initProducerIDResponse struct {
	kmsg.InitProducerIDResponse
	OngoingTxnProducerID    int64 // v6+
	OngoingTxnProducerEpoch int16 // v6+
}

func (*initProducerIDResponse) MaxVersion() int16 { return initProducerIDV6 }

func (v *initProducerIDResponse) AppendTo(dst []byte) []byte {
	if v.Version < initProducerIDV6 {
		return v.InitProducerIDResponse.AppendTo(dst)
	}
	dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	dst = kbin.AppendInt16(dst, v.ErrorCode)
	dst = kbin.AppendInt64(dst, v.ProducerID)
	dst = kbin.AppendInt16(dst, v.ProducerEpoch)
	dst = kbin.AppendInt64(dst, v.OngoingTxnProducerID)
	dst = kbin.AppendInt16(dst, v.OngoingTxnProducerEpoch)
	return appendTags(dst, &v.UnknownTags)
}

func (v *initProducerIDResponse) ReadFrom(src []byte) error {
	if v.Version < initProducerIDV6 {
		return v.InitProducerIDResponse.ReadFrom(src)
	}
	b := kbin.Reader{Src: src}
	v.ThrottleMillis = b.Int32()
	v.ErrorCode = b.Int16()
	v.ProducerID = b.Int64()
	v.ProducerEpoch = b.Int16()
	v.OngoingTxnProducerID = b.Int64()
	v.OngoingTxnProducerEpoch = b.Int16()
	v.UnknownTags = kmsg.ReadTags(&b)
	return b.Complete()
}

// appendTags appends a flexible message's tagged fields: their count,
// then each one.
func appendTags(dst []byte, t *kmsg.Tags) []byte {
	dst = kbin.AppendUvarint(dst, uint32(t.Len()))
	return t.AppendEach(dst)
}

// nextProducerID returns an unused producer id, taking a new block from
// the controller when the current one is used up.
func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	b.pids.mu.Lock()
	defer b.pids.mu.Unlock()
	if b.pids.next >= b.pids.end {
		first, n, err := b.allocateProducerIDs(ctx, producerIDBlockSize)
		if err != nil {
			return 0, err
		}
		b.pids.next, b.pids.end = first, first+n
	}
	id := b.pids.next
	b.pids.next++
	return id, nil
}
