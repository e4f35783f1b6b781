package txn

// The transaction state machine of one transactional id (KIP-98, with the
// KIP-360 epoch rules). Every function here is pure: it takes the committed
// metadata and a request and returns the metadata to persist, or a Kafka
// error code. The coordinator (coordinator.go) persists the result and only
// then makes it the committed state.
//
//	           InitProducerId                AddPartitions / AddOffsets
//	Empty ─────────────────────▶ Empty ───────────────────────────▶ Ongoing ◀─┐
//	  ▲                                                              │  │      │ more partitions
//	  │ InitProducerId (epoch bump)               EndTxn commit ─────┘  │ ─────┘
//	  │                                                 │               │ EndTxn abort, timeout,
//	CompleteCommit ◀── markers written ── PrepareCommit ◀┘               │ InitProducerId (fence)
//	CompleteAbort  ◀── markers written ── PrepareAbort  ◀────────────────┘
//
// Complete* go to Ongoing on the next AddPartitions and to Empty on the
// next InitProducerId. Dead is an expired id being removed.
// PrepareEpochFence exists in Kafka's format only as an in-memory state; it
// is never written, and sluice goes from Ongoing straight to PrepareAbort
// with the bumped epoch.

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// State is a transaction's status; the numbers are Kafka's, frozen by the
// record format.
type State int8

// Transaction states.
const (
	StateEmpty State = iota
	StateOngoing
	StatePrepareCommit
	StatePrepareAbort
	StateCompleteCommit
	StateCompleteAbort
	StateDead
	StatePrepareEpochFence
)

var stateNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

// String is Kafka's name of the state, as DescribeTransactions and
// ListTransactions show it.
func (s State) String() string {
	if int(s) >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState is the state named name, as ListTransactions filters name it.
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// noEpoch is Kafka's RecordBatch.NO_PRODUCER_EPOCH.
const noEpoch = -1

// epochExhausted reports whether no epoch bump is left for this producer
// id: Kafka keeps the last value free so a fence can still bump once.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// metadata is the persisted state of one transactional id.
type metadata struct {
	producerID     int64
	lastProducerID int64 // the producer id before the last rotation (KIP-360), or -1
	epoch          int16
	lastEpoch      int16 // the epoch before the last bump, for retried InitProducerIds; not persisted
	timeoutMs      int32
	state          State
	partitions     []TopicPartition // sorted
	startMs        int64            // start of the current transaction, -1 when none
	updateMs       int64
	// txnVersion is the client's transaction version of the running or
	// last transaction (Kafka's ClientTransactionVersion): 2 when it was
	// run with KIP-890 part 2 (AddPartitionsToTxn v4+ from a partition
	// leader, EndTxn v5), which bumps the epoch at every end and marks
	// its markers so.
	txnVersion int16
	// hasNext and nextProducerID: a transaction version 2 end whose epoch
	// bump used up the producer id's epochs moves to nextProducerID at
	// epoch 0 once its markers are written (Kafka's NextProducerId).
	hasNext        bool
	nextProducerID int64
}

// txnVersion2 is the transaction version of KIP-890 part 2.
const txnVersion2 = 2

func (m metadata) clone() metadata {
	m.partitions = append([]TopicPartition(nil), m.partitions...)
	return m
}

// hasPartitions reports whether every one of parts is in the transaction.
func (m *metadata) hasPartitions(parts []TopicPartition) bool {
	for _, p := range parts {
		if !m.hasPartition(p) {
			return false
		}
	}
	return true
}

func (m *metadata) hasPartition(p TopicPartition) bool {
	for _, q := range m.partitions {
		if q == p {
			return true
		}
	}
	return false
}

// initRequest is an InitProducerId for a transactional id.
type initRequest struct {
	timeoutMs int32
	// producerID and epoch are the producer's current ones (KIP-360), or
	// -1 / -1 for a new producer.
	producerID int64
	epoch      int16
}

func (r initRequest) hasExpected() bool { return r.producerID >= 0 || r.epoch >= 0 }

// initOutcome is what InitProducerId does next.
type initOutcome int

const (
	initFail       initOutcome = iota // answer code
	initWrite                         // persist next and answer its id and epoch
	initNeedNewID                     // allocate a producer id and decide again
	initFenceAbort                    // persist next (PrepareAbort at a bumped epoch), abort, answer CONCURRENT_TRANSACTIONS
)

// decideInit is InitProducerId for a transactional id whose committed state
// is m. newProducerID is a freshly allocated id, or -1 when none was
// allocated yet (the answer is then initNeedNewID if one is needed).
func decideInit(m metadata, req initRequest, newProducerID int64, nowMs int64) (next metadata, outcome initOutcome, code int16) {
	if req.hasExpected() && !validExpectedProducer(m, req) {
		return m, initFail, kerr.ProducerFenced.Code
	}
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort, StatePrepareEpochFence, StateDead:
		return m, initFail, kerr.ConcurrentTransactions.Code
	case StateOngoing:
		// Abort the running transaction first, fencing its producer with
		// a bumped epoch; the client retries after CONCURRENT_TRANSACTIONS
		// and then gets a second bump (or a new id if this one used the
		// last epoch).
		next = m.clone()
		next.epoch = fencedEpoch(m.epoch)
		next.lastEpoch = noEpoch
		next.state = StatePrepareAbort
		next.updateMs = nowMs
		return next, initFenceAbort, 0
	}
	// Empty, CompleteCommit, CompleteAbort.
	next = m.clone()
	next.partitions = nil
	next.state = StateEmpty
	next.startMs = -1
	next.updateMs = nowMs
	next.timeoutMs = req.timeoutMs
	if epochExhausted(m.epoch) && (!req.hasExpected() || req.epoch == m.epoch) {
		if newProducerID < 0 {
			return m, initNeedNewID, 0
		}
		next.lastProducerID = m.producerID
		next.producerID = newProducerID
		next.epoch = 0
		next.lastEpoch = noEpoch
		if req.hasExpected() {
			next.lastEpoch = m.epoch
		}
		return next, initWrite, 0
	}
	switch {
	case !req.hasExpected():
		next.epoch = m.epoch + 1
		next.lastEpoch = noEpoch
	case m.epoch == noEpoch || req.epoch == m.epoch:
		next.epoch = m.epoch + 1
		next.lastEpoch = m.epoch
	case req.epoch == m.lastEpoch:
		// A retry of a bump whose answer the producer did not get.
		next.epoch, next.lastEpoch = m.epoch, m.lastEpoch
	default:
		return m, initFail, kerr.ProducerFenced.Code
	}
	return next, initWrite, 0
}

// validExpectedProducer is KIP-360's check of the producer id and epoch an
// InitProducerId carries: the id is fresh (no epoch handed out yet), or it
// is the current id (the epoch is checked afterwards), or it is the
// previous id at an exhausted epoch (a retry of a rotation).
func validExpectedProducer(m metadata, req initRequest) bool {
	return m.epoch == noEpoch || req.producerID == m.producerID ||
		(req.producerID == m.lastProducerID && epochExhausted(req.epoch))
}

// fencedEpoch is the epoch a fence moves to: one more, unless the id's
// epochs are used up, in which case the markers carry the same epoch and
// the next InitProducerId rotates to a new id.
func fencedEpoch(epoch int16) int16 {
	if epochExhausted(epoch) {
		return epoch
	}
	return epoch + 1
}

// checkProducer is the producer check of AddPartitionsToTxn and
// AddOffsetsToTxn.
func checkProducer(m metadata, producerID int64, epoch int16) int16 {
	switch {
	case m.producerID != producerID:
		return kerr.InvalidProducerIDMapping.Code
	case m.epoch != epoch:
		return kerr.ProducerFenced.Code
	}
	return 0
}

// decideAdd is AddPartitionsToTxn: write is false when every partition is
// already in the running transaction. txnVersion is the client's
// transaction version the request implies (2 for a partition leader's add
// of KIP-890 part 2, 0 for a client's AddPartitionsToTxn or
// AddOffsetsToTxn, as Kafka's TransactionVersion rules give it); the
// transaction takes it.
func decideAdd(m metadata, producerID int64, epoch int16, parts []TopicPartition, txnVersion int16, nowMs int64) (next metadata, write bool, code int16) {
	if code := checkProducer(m, producerID, epoch); code != 0 {
		return m, false, code
	}
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort, StatePrepareEpochFence:
		return m, false, kerr.ConcurrentTransactions.Code
	case StateDead:
		return m, false, kerr.InvalidProducerIDMapping.Code
	case StateOngoing:
		if m.hasPartitions(parts) {
			return m, false, 0
		}
	}
	next = m.clone()
	next.txnVersion = txnVersion
	if m.state != StateOngoing {
		next.partitions = nil
		next.startMs = nowMs
	}
	for _, p := range parts {
		if !next.hasPartition(p) {
			next.partitions = append(next.partitions, p)
		}
	}
	sortPartitions(next.partitions)
	next.state = StateOngoing
	next.updateMs = nowMs
	return next, true, 0
}

// decideEnd is EndTxn. fromClient is false for the coordinator's own
// aborts (timeouts, fences), which carry an already bumped epoch. write is
// false for an answer without a state change (a retried EndTxn whose
// transaction is already complete answers 0).
func decideEnd(m metadata, producerID int64, epoch int16, commit, fromClient bool, nowMs int64) (next metadata, write bool, code int16) {
	if m.producerID != producerID {
		return m, false, kerr.InvalidProducerIDMapping.Code
	}
	if (fromClient && epoch != m.epoch) || epoch < m.epoch {
		return m, false, kerr.ProducerFenced.Code
	}
	switch m.state {
	case StateOngoing:
		next = m.clone()
		next.state = StatePrepareAbort
		if commit {
			next.state = StatePrepareCommit
		}
		if epoch > m.epoch {
			next.epoch, next.lastEpoch = epoch, noEpoch
		}
		if fromClient {
			// An EndTxn before v5 ends the transaction at version 0, as
			// Kafka's does: its markers carry the batches' own epoch,
			// which a version 2 marker may not.
			next.txnVersion = 0
		}
		next.updateMs = nowMs
		return next, true, 0
	case StateCompleteCommit:
		if commit {
			return m, false, 0
		}
	case StateCompleteAbort:
		if !commit {
			return m, false, 0
		}
	case StatePrepareCommit:
		if commit {
			return m, false, kerr.ConcurrentTransactions.Code
		}
	case StatePrepareAbort:
		if !commit {
			return m, false, kerr.ConcurrentTransactions.Code
		}
	case StatePrepareEpochFence, StateDead:
		return m, false, kerr.ConcurrentTransactions.Code
	}
	return m, false, kerr.InvalidTxnState.Code
}

// completed is the state after every marker of a PrepareCommit or
// PrepareAbort is written.
func completed(m metadata, nowMs int64) metadata {
	next := m.clone()
	next.state = StateCompleteAbort
	if m.state == StatePrepareCommit {
		next.state = StateCompleteCommit
	}
	next.partitions = nil
	next.updateMs = nowMs
	if m.txnVersion >= txnVersion2 && m.hasNext {
		// The bump of a transaction version 2 end used the last epoch:
		// the producer goes on with the new id, as the EndTxn answer
		// told it. lastEpoch stays the epoch the client last had.
		next.lastProducerID = m.producerID
		next.producerID = m.nextProducerID
		next.epoch = 0
	}
	next.hasNext, next.nextProducerID = false, 0
	return next
}

// verifyPartitions is AddPartitionsToTxn's verify-only form (KIP-890): a
// partition leader asks whether parts belong to the running transaction.
func verifyPartitions(m metadata, producerID int64, epoch int16, parts []TopicPartition) (code int16, each []int16) {
	if code := checkProducer(m, producerID, epoch); code != 0 {
		return code, nil
	}
	if m.state == StatePrepareCommit || m.state == StatePrepareAbort {
		return kerr.ConcurrentTransactions.Code, nil
	}
	each = make([]int16, len(parts))
	for i, p := range parts {
		if m.state != StateOngoing || !m.hasPartition(p) {
			each[i] = kerr.InvalidTxnState.Code
		}
	}
	return 0, each
}

// endOutcome is what a transaction version 2 EndTxn does next.
type endOutcome int

const (
	endFail      endOutcome = iota // answer code
	endAnswer                      // a retry of an end already done: answer the current id and epoch
	endWrite                       // persist next (Prepare*), answer the id and epoch it completes to
	endNeedNewID                   // allocate a producer id and decide again
)

// decideEndV2 is EndTxn v5 (KIP-890 part 2) from a client, Kafka's
// endTransaction for transaction version 2: every end bumps the epoch
// (PrepareCommit / PrepareAbort carry epoch+1, and so do the markers),
// the answer carries the producer id and epoch the producer goes on with,
// an end whose bump uses the id's last epoch moves to a new producer id
// (newProducerID, -1 until allocated), and an abort with no transaction
// running is allowed (it only bumps the epoch). A retry of an end already
// done is recognized by its epoch, one below the current one (or the
// previous id's last epoch after a rotation), and answered without a
// change; with the current epoch the same request is a new end, which
// waits (CONCURRENT_TRANSACTIONS) while the last one's markers are being
// written.
func decideEndV2(m metadata, producerID int64, epoch int16, commit bool, newProducerID int64, nowMs int64) (next metadata, outcome endOutcome, code int16) {
	retryOnOverflow := m.lastProducerID == producerID && m.lastProducerID >= 0 && epoch == math.MaxInt16-1 && m.epoch == 0
	retryOnBump := int32(m.epoch) == int32(epoch)+1
	if m.producerID != producerID && !retryOnOverflow {
		return m, endFail, kerr.InvalidProducerIDMapping.Code
	}
	var valid bool
	switch m.state {
	case StatePrepareCommit, StatePrepareAbort:
		if epoch == m.epoch && m.txnVersion >= txnVersion2 {
			// The producer got the bumped epoch and ends its next
			// transaction while this one's markers are still being
			// written: it retries after CONCURRENT_TRANSACTIONS. (The
			// epoch check of Kafka's coordinator as read would fence
			// it; franz-go's and Java's producers retry this answer.)
			return m, endFail, kerr.ConcurrentTransactions.Code
		}
		valid = retryOnBump
	case StateCompleteCommit, StateCompleteAbort:
		valid = retryOnBump || retryOnOverflow || epoch == m.epoch
	default:
		valid = epoch == m.epoch
	}
	if !valid {
		return m, endFail, kerr.ProducerFenced.Code
	}
	retry := retryOnBump || retryOnOverflow
	prepare := func(state State, noPartitionAdded bool) (metadata, endOutcome, int16) {
		if m.epoch == math.MaxInt16 {
			return m, endFail, kerr.ProducerFenced.Code
		}
		next := m.clone()
		next.hasNext, next.nextProducerID = false, 0
		if epochExhausted(m.epoch) {
			if newProducerID < 0 {
				return m, endNeedNewID, 0
			}
			next.hasNext, next.nextProducerID = true, newProducerID
		}
		next.epoch, next.lastEpoch = m.epoch+1, m.epoch
		next.state = state
		next.txnVersion = txnVersion2
		if noPartitionAdded {
			// Nothing was added: the transaction starts and ends now.
			next.partitions = nil
			next.startMs = nowMs
		}
		next.updateMs = nowMs
		return next, endWrite, 0
	}
	invalid := func() (metadata, endOutcome, int16) { return m, endFail, kerr.InvalidTxnState.Code }
	switch m.state {
	case StateOngoing:
		if commit {
			return prepare(StatePrepareCommit, false)
		}
		return prepare(StatePrepareAbort, false)
	case StateCompleteCommit:
		switch {
		case commit && retry:
			return m, endAnswer, 0
		case commit || retry:
			return invalid()
		}
		return prepare(StatePrepareAbort, true)
	case StateCompleteAbort:
		switch {
		case commit:
			return invalid()
		case retry:
			return m, endAnswer, 0
		}
		return prepare(StatePrepareAbort, true)
	case StatePrepareCommit:
		if commit {
			return m, endFail, kerr.ConcurrentTransactions.Code
		}
		return invalid()
	case StatePrepareAbort:
		if !commit {
			return m, endFail, kerr.ConcurrentTransactions.Code
		}
		return invalid()
	case StateEmpty:
		if commit {
			return invalid()
		}
		return prepare(StatePrepareAbort, true)
	}
	// Dead, PrepareEpochFence: being removed or fenced.
	return m, endFail, kerr.ConcurrentTransactions.Code
}

// endAnswerOf is the producer id and epoch an EndTxn v5 answers for the
// state m it wrote or found: the ones the producer goes on with once the
// markers are written.
func endAnswerOf(m metadata) (int64, int16) {
	if m.txnVersion >= txnVersion2 && m.hasNext && (m.state == StatePrepareCommit || m.state == StatePrepareAbort) {
		return m.nextProducerID, 0
	}
	return m.producerID, m.epoch
}
