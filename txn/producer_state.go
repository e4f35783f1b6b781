package txn

// One partition's producer table: validation of incoming batches, the
// bookkeeping of every appended batch, ongoing and completed transactions
// and the first unstable offset. See doc.go for the rules and where they
// come from.

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Errors of batch validation. The broker maps each to the Kafka error code
// in its comment.
var (
	// ErrBatchOutOfOrder: OUT_OF_ORDER_SEQUENCE_NUMBER.
	ErrBatchOutOfOrder = errors.New("txn: out of order sequence number")
	// ErrBatchStaleEpoch: INVALID_PRODUCER_EPOCH.
	ErrBatchStaleEpoch = errors.New("txn: producer epoch is older than the partition's")
	// ErrBatchNotTransactional: INVALID_TXN_STATE (a plain batch while the
	// producer has a transaction open on the partition).
	ErrBatchNotTransactional = errors.New("txn: non-transactional batch while a transaction is open")
	// ErrMarkerCoordinatorFenced: TRANSACTION_COORDINATOR_FENCED.
	ErrMarkerCoordinatorFenced = errors.New("txn: marker from an older coordinator epoch")
)

// MaxBatchesPerProducer is how many recent batches per producer are kept
// for duplicate detection; a producer has at most five requests in flight.
const MaxBatchesPerProducer = 5

// Origin says who appends a batch, which decides how much is checked (as
// Kafka's AppendOrigin).
type Origin int8

const (
	// OriginClient is a producer's Produce on the leader: everything is
	// checked.
	OriginClient Origin = iota
	// OriginCoordinator is a marker written by WriteTxnMarkers on the
	// leader: epochs are checked, sequences are not.
	OriginCoordinator
	// OriginReplication is a follower appending what the leader wrote, or a
	// rebuild from the log: nothing is checked.
	OriginReplication
)

// Batch is what the producer state needs to know about one record batch.
type Batch struct {
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	BaseOffset      int64 // unused by Validate, which runs before offsets are assigned
	LastOffsetDelta int32
	MaxTimestamp    int64
	Transactional   bool
	Control         bool
	// Marker is the decoded end-transaction marker of a control batch; nil
	// for data batches and for control batches that are not markers (or
	// hold no record).
	Marker *EndTxnMarker
}

// LastOffset is the offset of the batch's last record.
func (b Batch) LastOffset() int64 { return b.BaseOffset + int64(b.LastOffsetDelta) }

// lastSequence is the sequence of the batch's last record; sequences wrap
// from MaxInt32 to 0, as Kafka's do.
func (b Batch) lastSequence() int32 { return addSequence(b.BaseSequence, b.LastOffsetDelta) }

// subSequence undoes addSequence.
func subSequence(seq, delta int32) int32 {
	if seq < 0 {
		return seq
	}
	if seq < delta {
		return math.MaxInt32 - (delta - seq) + 1
	}
	return seq - delta
}

func addSequence(seq, delta int32) int32 {
	if seq < 0 {
		return seq
	}
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// BatchMeta is one remembered batch of a producer.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64
}

// ProducerEntry is what a partition knows about one producer id.
type ProducerEntry struct {
	ProducerID int64
	// Epoch is the newest epoch seen; -1 for an entry being created.
	Epoch int16
	// Batches are the most recent batches at Epoch, oldest first, at most
	// MaxBatchesPerProducer.
	Batches []BatchMeta
	// CoordinatorEpoch is the coordinator epoch of the last marker, -1 if none.
	CoordinatorEpoch int32
	// TxnFirstOffset is the first offset of the ongoing transaction, -1 if none.
	TxnFirstOffset int64
	// LastTimestamp is the max timestamp of the last batch or marker.
	LastTimestamp int64
}

// LastSequence is the last sequence written at Epoch, -1 if none.
func (e *ProducerEntry) LastSequence() int32 {
	if n := len(e.Batches); n > 0 {
		return e.Batches[n-1].LastSeq
	}
	return -1
}

func (e *ProducerEntry) clone() *ProducerEntry {
	c := *e
	c.Batches = slices.Clone(e.Batches)
	return &c
}

// setEpoch moves the entry to epoch; a new epoch forgets the batches of the
// old one, so its sequences restart.
func (e *ProducerEntry) setEpoch(epoch int16) {
	if e.Epoch != epoch {
		e.Epoch = epoch
		e.Batches = nil
	}
}

func (e *ProducerEntry) addBatch(m BatchMeta) {
	e.Batches = append(e.Batches, m)
	if len(e.Batches) > MaxBatchesPerProducer {
		e.Batches = slices.Delete(e.Batches, 0, len(e.Batches)-MaxBatchesPerProducer)
	}
	e.LastTimestamp = m.Timestamp
}

func (e *ProducerEntry) duplicateOf(b Batch) (BatchMeta, bool) {
	if e.Epoch != b.ProducerEpoch {
		return BatchMeta{}, false
	}
	last := b.lastSequence()
	for _, m := range e.Batches {
		if m.FirstSeq == b.BaseSequence && m.LastSeq == last {
			return m, true
		}
	}
	return BatchMeta{}, false
}

// CompletedTxn is a transaction a marker closed.
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the marker's offset
	Aborted     bool
	// LastStableOffset is the first offset of the next transaction of
	// another producer still open when this one completed, or LastOffset+1:
	// what Kafka writes into the aborted-transaction index, so a search can
	// stop early.
	LastStableOffset int64
}

// ProducerState is one partition's producer table. It is not safe for
// concurrent use; see doc.go.
type ProducerState struct {
	producers map[int64]*ProducerEntry
	// ongoing maps the first offset of every open transaction to its producer.
	ongoing map[int64]int64
	// unreplicated are completed transactions whose marker may not be below
	// the high watermark yet, ordered by marker offset.
	unreplicated []CompletedTxn
	// verifying are the pending checks with the transaction coordinator,
	// by producer id (verification.go); never persisted, as in Kafka.
	verifying map[int64]verification
	nextToken uint64
}

// NewProducerState returns an empty table. Its maps are made by the first
// entry (put): most partitions never see an idempotent producer, and a
// node holds a table for each of its replicas.
func NewProducerState() *ProducerState { return &ProducerState{} }

// put stores e, and the transaction it opened at firstOffset when that is
// not negative, making the maps on first use.
func (s *ProducerState) put(e *ProducerEntry, txnFirstOffset int64) {
	if s.producers == nil {
		s.producers = make(map[int64]*ProducerEntry)
	}
	s.producers[e.ProducerID] = e
	if txnFirstOffset >= 0 {
		if s.ongoing == nil {
			s.ongoing = make(map[int64]int64)
		}
		s.ongoing[txnFirstOffset] = e.ProducerID
	}
}

// Producer returns a copy of the entry of id.
func (s *ProducerState) Producer(id int64) (ProducerEntry, bool) {
	e := s.producers[id]
	if e == nil {
		return ProducerEntry{}, false
	}
	return *e.clone(), true
}

// Producers returns copies of every entry, by producer id.
func (s *ProducerState) Producers() []ProducerEntry {
	out := make([]ProducerEntry, 0, len(s.producers))
	for _, e := range s.producers {
		out = append(out, *e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// Len is the number of producers in the table.
func (s *ProducerState) Len() int { return len(s.producers) }

func (s *ProducerState) entry(id int64) *ProducerEntry {
	if e := s.producers[id]; e != nil {
		return e
	}
	return &ProducerEntry{ProducerID: id, Epoch: -1, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: -1}
}

// Duplicate is the answer to a retried batch: the offsets it was written at.
type Duplicate struct {
	FirstOffset, LastOffset int64
}

// Validate checks batches, in order, that origin is about to append, as a
// leader does before writing: it changes nothing. A batch that repeats one
// of its producer's last batches makes the whole append a duplicate (the
// caller answers with its offsets and writes nothing). txnVersion is the
// transaction version of a coordinator's markers (WriteTxnMarkers v2+;
// 0 otherwise): at 2 and above a marker must carry a newer epoch than the
// partition knows, except a retry of a marker already written.
func (s *ProducerState) Validate(batches []Batch, origin Origin, txnVersion int8) (Duplicate, bool, error) {
	if origin == OriginReplication {
		return Duplicate{}, false, nil
	}
	// Each producer's batches are checked against a copy of its entry.
	// The first producer's copy is a local with room for its batches
	// (their array the one allocation): a Produce carries one
	// producer's batch per partition, and needs no map, no copy of the
	// entry on the heap and no growth of its batches (issue 22).
	var (
		firstID    int64 = -1
		firstEntry ProducerEntry
		firstMetas [MaxBatchesPerProducer + 1]BatchMeta
		first      appendInfo
		scratch    map[int64]*appendInfo // the other producers'
	)
	for _, b := range batches {
		if b.ProducerID < 0 {
			continue
		}
		var ai *appendInfo
		switch {
		case firstID < 0:
			firstID = b.ProducerID
			cur := s.entry(b.ProducerID)
			firstEntry = *cur
			firstEntry.Batches = append(firstMetas[:0], cur.Batches...)
			first = appendInfo{entry: &firstEntry, initialEpoch: cur.Epoch}
			ai = &first
		case b.ProducerID == firstID:
			ai = &first
		default:
			other := scratch[b.ProducerID]
			if other == nil {
				cur := s.entry(b.ProducerID)
				other = &appendInfo{entry: cur.clone(), initialEpoch: cur.Epoch}
				if scratch == nil {
					scratch = make(map[int64]*appendInfo)
				}
				scratch[b.ProducerID] = other
			}
			ai = other
		}
		if origin == OriginClient && !b.Control {
			if m, ok := ai.entry.duplicateOf(b); ok {
				return Duplicate{FirstOffset: m.FirstOffset, LastOffset: m.LastOffset}, true, nil
			}
		}
		if _, err := ai.append(b, origin, txnVersion); err != nil {
			return Duplicate{}, false, err
		}
	}
	return Duplicate{}, false, nil
}

// Apply records batches that were appended, with their final offsets, and
// returns the transactions their markers completed, in log order. It
// checks nothing (Validate did, for a leader; a follower takes what the
// leader wrote).
func (s *ProducerState) Apply(batches []Batch) []CompletedTxn {
	var done []CompletedTxn
	for _, b := range batches {
		if b.ProducerID < 0 {
			continue
		}
		switch {
		case b.Control:
			s.markerVoidsVerification(b.ProducerID, b.ProducerEpoch)
		case b.Transactional:
			s.clearVerification(b.ProducerID)
		}
		e := s.entry(b.ProducerID)
		ai := appendInfo{entry: e, initialEpoch: e.Epoch}
		hadTxn := e.TxnFirstOffset
		c, _ := ai.append(b, OriginReplication, 0)
		opened := int64(-1)
		if hadTxn < 0 {
			opened = e.TxnFirstOffset
		}
		s.put(e, opened)
		if c != nil {
			delete(s.ongoing, c.FirstOffset)
			c.LastStableOffset = c.LastOffset + 1
			if first, ok := s.firstOngoing(c.ProducerID); ok {
				c.LastStableOffset = first
			}
			s.unreplicated = append(s.unreplicated, *c)
			done = append(done, *c)
		}
	}
	return done
}

// firstOngoing is the smallest first offset of an open transaction of a
// producer other than except.
func (s *ProducerState) firstOngoing(except int64) (int64, bool) {
	first, found := int64(0), false
	for off, pid := range s.ongoing {
		if pid != except && (!found || off < first) {
			first, found = off, true
		}
	}
	return first, found
}

// LastStableOffset returns min(first unstable offset, highWatermark): the
// offset read_committed consumers may read up to. Completed transactions
// whose marker is below highWatermark stop counting as unstable and are
// forgotten here.
func (s *ProducerState) LastStableOffset(highWatermark int64) int64 {
	kept := s.unreplicated[:0]
	for _, c := range s.unreplicated {
		if c.LastOffset >= highWatermark {
			kept = append(kept, c)
		}
	}
	clear(s.unreplicated[len(kept):])
	s.unreplicated = kept
	lso := highWatermark
	for _, c := range s.unreplicated {
		lso = min(lso, c.FirstOffset)
	}
	if first, ok := s.firstOngoing(-1); ok {
		lso = min(lso, first)
	}
	return lso
}

// OngoingTxns returns the first offsets of the open transactions by
// producer id.
func (s *ProducerState) OngoingTxns() map[int64]int64 {
	out := make(map[int64]int64, len(s.ongoing))
	for off, pid := range s.ongoing {
		out[pid] = off
	}
	return out
}

// RemoveExpired drops producers without an open transaction whose last
// timestamp is expirationMs or more before nowMs (producer.id.expiration.ms,
// measured on batch timestamps as Kafka does) and returns how many.
func (s *ProducerState) RemoveExpired(nowMs, expirationMs int64) int {
	s.removeExpiredVerifications(nowMs, expirationMs)
	n := 0
	for id, e := range s.producers {
		if expired(e, nowMs, expirationMs) {
			delete(s.producers, id)
			n++
		}
	}
	return n
}

func expired(e *ProducerEntry, nowMs, expirationMs int64) bool {
	return e.TxnFirstOffset < 0 && nowMs-e.LastTimestamp >= expirationMs
}

// appendInfo applies batches to one producer's entry, checking them for
// the origin (Kafka's ProducerAppendInfo).
type appendInfo struct {
	entry *ProducerEntry
	// initialEpoch is the entry's epoch before this append: -1 means the
	// partition knew nothing of the producer, and then any sequence goes.
	initialEpoch int16
}

func (a *appendInfo) append(b Batch, origin Origin, txnVersion int8) (*CompletedTxn, error) {
	if b.Control {
		if b.Marker == nil {
			return nil, nil // not a marker, or emptied by compaction
		}
		return a.appendMarker(b, origin, txnVersion)
	}
	return nil, a.appendData(b, origin)
}

func (a *appendInfo) appendData(b Batch, origin Origin) error {
	e := a.entry
	if origin != OriginReplication {
		if b.ProducerEpoch < e.Epoch {
			return fmt.Errorf("%w: producer %d epoch %d, partition has %d", ErrBatchStaleEpoch, b.ProducerID, b.ProducerEpoch, e.Epoch)
		}
		if origin == OriginClient {
			if err := a.checkSequence(b); err != nil {
				return err
			}
		}
		if e.TxnFirstOffset >= 0 && !b.Transactional {
			return fmt.Errorf("%w: producer %d", ErrBatchNotTransactional, b.ProducerID)
		}
	}
	e.setEpoch(b.ProducerEpoch)
	e.addBatch(BatchMeta{FirstSeq: b.BaseSequence, LastSeq: b.lastSequence(),
		FirstOffset: b.BaseOffset, LastOffset: b.LastOffset(), Timestamp: b.MaxTimestamp})
	if e.TxnFirstOffset < 0 && b.Transactional {
		e.TxnFirstOffset = b.BaseOffset
	}
	return nil
}

func (a *appendInfo) checkSequence(b Batch) error {
	e := a.entry
	if b.ProducerEpoch != e.Epoch {
		if b.BaseSequence != 0 && e.Epoch >= 0 {
			return fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", ErrBatchOutOfOrder, b.ProducerID, b.ProducerEpoch, b.BaseSequence)
		}
		return nil
	}
	if a.initialEpoch < 0 {
		return nil
	}
	last := e.LastSequence()
	if !(int64(b.BaseSequence) == int64(last)+1 || (b.BaseSequence == 0 && last == math.MaxInt32)) {
		return fmt.Errorf("%w: producer %d sent sequence %d, expected %d", ErrBatchOutOfOrder, b.ProducerID, b.BaseSequence, addSequence(last, 1))
	}
	return nil
}

func (a *appendInfo) appendMarker(b Batch, origin Origin, txnVersion int8) (*CompletedTxn, error) {
	e := a.entry
	if origin != OriginReplication {
		stale := b.ProducerEpoch < e.Epoch
		if txnVersion >= 2 {
			// A marker written twice (the coordinator retried after a lost
			// answer) finds the transaction already closed at its epoch.
			stale = b.ProducerEpoch < e.Epoch || (b.ProducerEpoch == e.Epoch && e.TxnFirstOffset >= 0)
		}
		if stale {
			return nil, fmt.Errorf("%w: marker for producer %d at epoch %d, partition has %d", ErrBatchStaleEpoch, b.ProducerID, b.ProducerEpoch, e.Epoch)
		}
		if e.CoordinatorEpoch > b.Marker.CoordinatorEpoch {
			return nil, fmt.Errorf("%w: coordinator epoch %d, partition has %d", ErrMarkerCoordinatorFenced, b.Marker.CoordinatorEpoch, e.CoordinatorEpoch)
		}
	}
	var done *CompletedTxn
	if e.TxnFirstOffset >= 0 {
		done = &CompletedTxn{ProducerID: b.ProducerID, FirstOffset: e.TxnFirstOffset, LastOffset: b.BaseOffset, Aborted: !b.Marker.Commit}
	}
	e.setEpoch(b.ProducerEpoch)
	e.TxnFirstOffset = -1
	e.CoordinatorEpoch = b.Marker.CoordinatorEpoch
	e.LastTimestamp = b.MaxTimestamp
	return done, nil
}
