package txn

// The coordinator's requests: InitProducerId, AddPartitionsToTxn (and
// AddOffsetsToTxn through it), EndTxn, and the coordinator's own aborts.
// Each decides under the entry's lock (coordinator_state.go), writes the
// new state while the entry is pending, and answers with a Kafka code.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TwoPhaseTimeoutMs is the timeout a two-phase commit transaction runs
// with (KIP-939): Kafka 4.4's coordinator gives a producer that asked
// for Enable2Pc this timeout in place of its own, writes it to
// __transaction_state like any other, and never aborts a transaction
// that has it (TransactionMetadata.isDistributedTwoPhaseCommitTxn), since
// an external coordinator decides when it ends. Being in the record, it
// survives a coordinator failover.
const TwoPhaseTimeoutMs = math.MaxInt32

// InitOptions are InitProducerId v6's two-phase commit fields (KIP-939).
type InitOptions struct {
	// Enable2PC asks for a two-phase commit transaction: it needs
	// Config.TwoPhaseCommit (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
	// without it, as Kafka answers) and gets TwoPhaseTimeoutMs, the
	// requested timeout being neither checked nor kept.
	Enable2PC bool
	// KeepPreparedTxn asks to keep the ongoing transaction instead of
	// aborting it; Kafka 4.4 answers UNSUPPORTED_VERSION ("not
	// implemented yet" in its TransactionCoordinator), and so do we.
	KeepPreparedTxn bool
}

// InitResult is the answer to InitProducerId.
type InitResult struct {
	ProducerID int64
	Epoch      int16
	ErrorCode  int16
}

// InitProducerID hands transactionalID's producer its producer id and a
// new epoch, fencing every older producer of the same id. A running
// transaction is aborted first (its markers carry a bumped epoch) and the
// answer is CONCURRENT_TRANSACTIONS until that is done. producerID and
// epoch are the producer's current ones for KIP-360, or -1 and -1.
func (c *Coordinator) InitProducerID(ctx context.Context, transactionalID string, timeoutMs int32, producerID int64, epoch int16) InitResult {
	return c.InitProducerIDWith(ctx, transactionalID, timeoutMs, producerID, epoch, InitOptions{})
}

// InitProducerIDWith is InitProducerID with v6's two-phase commit options,
// checked in the order of Kafka 4.4's TransactionCoordinator: an empty id,
// then Enable2Pc without transaction.two.phase.commit.enable, then
// KeepPreparedTxn, then the timeout (not for a two-phase commit).
func (c *Coordinator) InitProducerIDWith(ctx context.Context, transactionalID string, timeoutMs int32, producerID int64, epoch int16, opts InitOptions) InitResult {
	fail := func(code int16) InitResult { return InitResult{ProducerID: -1, Epoch: -1, ErrorCode: code} }
	switch {
	case transactionalID == "" || (producerID < 0) != (epoch < 0):
		return fail(kerr.InvalidRequest.Code)
	case opts.Enable2PC && !c.cfg.TwoPhaseCommit:
		return fail(kerr.TransactionalIDAuthorizationFailed.Code)
	case opts.KeepPreparedTxn:
		return fail(kerr.UnsupportedVersion.Code)
	case opts.Enable2PC:
		timeoutMs = TwoPhaseTimeoutMs
	case timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds():
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	s, e, code := c.lookup(transactionalID)
	if code != 0 {
		return fail(code)
	}
	if e == nil {
		id, err := c.cfg.NewProducerID(ctx)
		if err != nil {
			return fail(kerr.CoordinatorNotAvailable.Code)
		}
		now := c.cfg.Now().UnixMilli()
		fresh := metadata{producerID: id, lastProducerID: -1, epoch: noEpoch, lastEpoch: noEpoch, timeoutMs: timeoutMs, startMs: -1, updateMs: now}
		if e, code = c.putIfAbsent(s, transactionalID, fresh); code != 0 {
			return fail(code)
		}
	}
	req := initRequest{timeoutMs: timeoutMs, producerID: producerID, epoch: epoch}
	newID := int64(-1)
	for {
		e.mu.Lock()
		if e.unloaded {
			e.mu.Unlock()
			return fail(kerr.NotCoordinator.Code)
		}
		if e.pending || e.completing {
			e.mu.Unlock()
			return fail(kerr.ConcurrentTransactions.Code)
		}
		next, outcome, code := decideInit(e.meta, req, newID, c.cfg.Now().UnixMilli())
		switch outcome {
		case initFail:
			e.mu.Unlock()
			return fail(code)
		case initNeedNewID:
			e.mu.Unlock()
			id, err := c.cfg.NewProducerID(ctx)
			if err != nil {
				return fail(kerr.CoordinatorNotAvailable.Code)
			}
			newID = id
			continue
		case initFenceAbort:
			code := c.writeLocked(ctx, e, next)
			if code == 0 {
				c.cfg.Logger.Info("aborting the running transaction of a re-initialized transactional id", "transactional_id", transactionalID, "producer_id", next.producerID, "epoch", next.epoch)
				c.startCompletionLocked(e)
				code = kerr.ConcurrentTransactions.Code
			}
			e.mu.Unlock()
			return fail(code)
		}
		code = c.writeLocked(ctx, e, next)
		e.mu.Unlock()
		if code != 0 {
			return fail(code)
		}
		return InitResult{ProducerID: next.producerID, Epoch: next.epoch}
	}
}

// existing finds the entry of a transactional id a request needs to exist:
// an unknown id is INVALID_PRODUCER_ID_MAPPING.
func (c *Coordinator) existing(transactionalID string) (*entry, int16) {
	if transactionalID == "" {
		return nil, kerr.InvalidRequest.Code
	}
	_, e, code := c.lookup(transactionalID)
	if code != 0 {
		return nil, code
	}
	if e == nil {
		return nil, kerr.InvalidProducerIDMapping.Code
	}
	return e, 0
}

// AddPartitions adds partitions to transactionalID's transaction, starting
// it if none is running (AddPartitionsToTxn and AddOffsetsToTxn). The code
// applies to every partition. txnVersion is the client's transaction
// version the request implies: 2 for the add a partition leader asks for
// a KIP-890 part 2 producer (AddPartitionsToTxn v4+ without VerifyOnly),
// 0 for a client's own AddPartitionsToTxn or AddOffsetsToTxn.
func (c *Coordinator) AddPartitions(ctx context.Context, transactionalID string, producerID int64, epoch int16, parts []TopicPartition, txnVersion int16) int16 {
	e, code := c.existing(transactionalID)
	if code != 0 {
		return code
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unloaded {
		return kerr.NotCoordinator.Code
	}
	if code := checkProducer(e.meta, producerID, epoch); code != 0 {
		return code
	}
	if e.pending || e.completing {
		return kerr.ConcurrentTransactions.Code
	}
	next, write, code := decideAdd(e.meta, producerID, epoch, parts, txnVersion, c.cfg.Now().UnixMilli())
	if code != 0 || !write {
		return code
	}
	return c.writeLocked(ctx, e, next)
}

// VerifyPartitions answers AddPartitionsToTxn's verify-only form: code is
// for the whole transaction, each (when code is 0) for each partition.
func (c *Coordinator) VerifyPartitions(transactionalID string, producerID int64, epoch int16, parts []TopicPartition) (code int16, each []int16) {
	e, code := c.existing(transactionalID)
	if code != 0 {
		return code, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unloaded {
		return kerr.NotCoordinator.Code, nil
	}
	return verifyPartitions(e.meta, producerID, epoch, parts)
}

// EndResult is the answer to EndTxn: from v5 (transaction version 2)
// the producer id and epoch the producer goes on with, -1 and -1 on an
// error and before v5.
type EndResult struct {
	ProducerID int64
	Epoch      int16
	ErrorCode  int16
}

// EndTxn commits or aborts transactionalID's transaction: it writes
// PrepareCommit or PrepareAbort, answers, and writes the markers and the
// Complete* state in the background. Requests arriving meanwhile are
// answered CONCURRENT_TRANSACTIONS. v2 is an EndTxn v5 (KIP-890 part 2):
// the epoch is bumped (decideEndV2) and the answer carries the new
// producer id and epoch.
func (c *Coordinator) EndTxn(ctx context.Context, transactionalID string, producerID int64, epoch int16, commit, v2 bool) EndResult {
	fail := func(code int16) EndResult { return EndResult{ProducerID: -1, Epoch: -1, ErrorCode: code} }
	e, code := c.existing(transactionalID)
	if code != 0 {
		return fail(code)
	}
	if !v2 {
		e.mu.Lock()
		defer e.mu.Unlock()
		return fail(c.endLocked(ctx, e, producerID, epoch, commit, true))
	}
	newID := int64(-1)
	for {
		e.mu.Lock()
		if e.unloaded {
			e.mu.Unlock()
			return fail(kerr.NotCoordinator.Code)
		}
		next, outcome, code := decideEndV2(e.meta, producerID, epoch, commit, newID, c.cfg.Now().UnixMilli())
		if code == 0 && e.pending {
			// Checked after the producer, as Kafka does: a fenced
			// producer hears so even while a record is being written.
			outcome, code = endFail, kerr.ConcurrentTransactions.Code
		}
		switch outcome {
		case endFail:
			e.mu.Unlock()
			return fail(code)
		case endAnswer:
			pid, ep := endAnswerOf(e.meta)
			e.mu.Unlock()
			return EndResult{ProducerID: pid, Epoch: ep}
		case endNeedNewID:
			e.mu.Unlock()
			id, err := c.cfg.NewProducerID(ctx)
			if err != nil {
				return fail(kerr.CoordinatorNotAvailable.Code)
			}
			newID = id
			continue
		}
		if code := c.writeLocked(ctx, e, next); code != 0 {
			e.mu.Unlock()
			return fail(code)
		}
		c.startCompletionLocked(e)
		pid, ep := endAnswerOf(next)
		e.mu.Unlock()
		return EndResult{ProducerID: pid, Epoch: ep}
	}
}

// endLocked is EndTxn on a found entry, e.mu held.
func (c *Coordinator) endLocked(ctx context.Context, e *entry, producerID int64, epoch int16, commit, fromClient bool) int16 {
	if e.unloaded {
		return kerr.NotCoordinator.Code
	}
	if e.meta.producerID != producerID {
		return kerr.InvalidProducerIDMapping.Code
	}
	if (fromClient && epoch != e.meta.epoch) || epoch < e.meta.epoch {
		return kerr.ProducerFenced.Code
	}
	if e.pending {
		return kerr.ConcurrentTransactions.Code
	}
	next, write, code := decideEnd(e.meta, producerID, epoch, commit, fromClient, c.cfg.Now().UnixMilli())
	if code != 0 || !write {
		return code
	}
	if code := c.writeLocked(ctx, e, next); code != 0 {
		return code
	}
	c.startCompletionLocked(e)
	return 0
}
