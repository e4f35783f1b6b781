package broker

// InitProducerID (api key 22), versions 0–5.
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

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

const producerIDBlockSize = 1000

// producerIDs is this broker's current block of producer ids.
type producerIDs struct {
	mu   sync.Mutex
	next int64
	end  int64 // exclusive
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case req.TransactionalID != nil && !b.authorizedTxnID(r, kmsg.ACLOperationWrite, *req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case req.TransactionalID == nil && !b.mayWriteIdempotently(r):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if err := b.ensureTxnStateTopic(ctx); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp, nil
		}
		pid, epoch := req.ProducerID, req.ProducerEpoch
		if req.Version < 3 {
			pid, epoch = -1, -1
		}
		res := b.txn.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, pid, epoch)
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		resp.ErrorCode = fencedForVersion(res.ErrorCode, req.Version, 4)
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
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
