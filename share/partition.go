package share

// One share-partition: the state a share group keeps for one topic
// partition on the partition's leader (Kafka's SharePartition).
//
// The in-flight window is the offsets [start, end): start is the
// share-partition start offset (SPSO), end the first offset never
// acquired (Kafka's end offset plus one). Every offset in the window has a
// record: its state, delivery count, and, while ACQUIRED, the member that
// holds it and when its acquisition lock runs out. Offsets the log does not
// hold (compacted away, transaction markers) are in the window too, acquired
// like records: the client acknowledges them as gaps.
//
//	  start (SPSO)                                   end
//	    │ ACKED? no: held   AVAILABLE  ACQUIRED ACKED  │ never fetched
//	────┼──────────┬────────┬──────────┬────────┬──────┼───────────────▶ offset
//	 done: every offset below start is ACKNOWLEDGED or ARCHIVED
//
// The start offset moves forward over the leading run of ACKNOWLEDGED and
// ARCHIVED offsets, as Kafka's maybeUpdateCachedStateAndOffsets does.
//
// Transitions (Kafka's RecordState.validateTransition):
//
//	AVAILABLE ──acquire──▶ ACQUIRED (delivery count + 1, lock until now + share.record.lock.duration.ms)
//	ACQUIRED ──ACCEPT──▶ ACKNOWLEDGED
//	ACQUIRED ──REJECT / GAP──▶ ARCHIVED
//	ACQUIRED ──RELEASE, lock expiry, member's session closed──▶ AVAILABLE,
//	                    or ARCHIVED once the delivery count reached share.delivery.count.limit
//	ACQUIRED ──RENEW (KIP-1222)──▶ ACQUIRED with a fresh lock
//
// The window is bounded: new offsets are acquired only while the window
// holds fewer than share.partition.max.record.locks offsets (Kafka's
// canAcquireRecords), a fetch may overshoot that to finish a log batch,
// and never past twice the limit, so a partition's state is at most
// 2 × 10000 (the limit's upper bound) small records.
//
// Lock expiry is applied lazily, at the next operation on the partition,
// with the time the caller passes; nothing here starts a goroutine or reads
// the clock. NextLockExpiry tells a long-polling fetch when to look again.
//
// Lock order: Partition.mu, then Manager.mu (the manager never takes a
// partition's lock while holding its own); the persister is called with
// Partition.mu held, so a durable write (a round trip to the share
// coordinator, which replicates it) holds the share-partition for its
// duration: that is what makes the write come before the change is seen.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// RecordState is the delivery state of one offset. The values are Kafka's
// (RecordState ids), which __share_group_state stores: frozen.
type RecordState int8

// Kafka's record states.
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	// Archiving: archived for the dead-letter queue (KIP-1191), until
	// the DLQ write completed; neither delivered nor past the start
	// offset meanwhile.
	Archiving RecordState = 3
	Archived  RecordState = 4
)

func (s RecordState) String() string {
	switch s {
	case Available:
		return "AVAILABLE"
	case Acquired:
		return "ACQUIRED"
	case Acknowledged:
		return "ACKNOWLEDGED"
	case Archiving:
		return "ARCHIVING"
	case Archived:
		return "ARCHIVED"
	}
	return "UNKNOWN"
}

// AckType is an acknowledgement type of ShareFetch / ShareAcknowledge
// (Kafka's AcknowledgeType, with 0 for a gap).
type AckType int8

// Kafka's acknowledgement types.
const (
	AckGap     AckType = 0 // an offset with no record: archived
	AckAccept  AckType = 1 // processed: ACKNOWLEDGED
	AckRelease AckType = 2 // give it back: AVAILABLE for redelivery
	AckReject  AckType = 3 // unprocessable: ARCHIVED
	AckRenew   AckType = 4 // KIP-1222: keep it, renew the acquisition lock
)

// Errors of acknowledgements, mapped to Kafka's codes by the broker.
var (
	// ErrInvalidRecordState: an acknowledged offset is not ACQUIRED by
	// the acknowledging member (its lock expired, someone else holds it,
	// it was acknowledged already): INVALID_RECORD_STATE.
	ErrInvalidRecordState = errors.New("share: invalid record state")
	// ErrInvalidAcknowledgement: a malformed acknowledgement batch (types
	// that do not match its offsets, an unknown type, offsets beyond the
	// acquired records): INVALID_REQUEST.
	ErrInvalidAcknowledgement = errors.New("share: invalid acknowledgement")
	// ErrStateStale: the share-partition's state could not be persisted
	// (or the outcome of the write is unknown); the change was not made
	// here and the state is read again at the next use. Wrapped with the
	// persister's error.
	ErrStateStale = errors.New("share: share-partition state not persisted")
)

// Settings are what a share-partition runs with: its group's configs
// (share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks) or the broker's group.share.* defaults.
type Settings struct {
	LockDuration       time.Duration
	DeliveryCountLimit int
	MaxRecordLocks     int
	// DeadLetters, when not nil, is given the records the group's
	// dead-letter queue gets (KIP-1191: rejected, or archived after
	// share.delivery.count.limit deliveries), ARCHIVING, once the change
	// that made them so was persisted; never for a change that was not.
	// It is called with the share-partition locked and must not block;
	// the slice is its own. It calls done (without the lock held) when
	// the DLQ write ended, whatever its outcome: the records are
	// ARCHIVED then. nil: the group has no dead-letter queue.
	DeadLetters func(key Key, letters []DeadLetter, done func())
}

// DeadLetter is a record a change archived for the group's dead-letter
// queue (KIP-1191): its offset, its delivery count, and whether a member
// rejected it (else it reached share.delivery.count.limit).
type DeadLetter struct {
	Offset        int64
	DeliveryCount int16
	Rejected      bool
}

// DefaultSettings are Kafka 4.4's defaults.
var DefaultSettings = Settings{LockDuration: 30 * time.Second, DeliveryCountLimit: 5, MaxRecordLocks: 2000}

func (s Settings) normalized() Settings {
	if s.LockDuration <= 0 {
		s.LockDuration = DefaultSettings.LockDuration
	}
	if s.DeliveryCountLimit <= 0 {
		s.DeliveryCountLimit = DefaultSettings.DeliveryCountLimit
	}
	if s.MaxRecordLocks <= 0 {
		s.MaxRecordLocks = DefaultSettings.MaxRecordLocks
	}
	return s
}

// AcquiredRun is one run of offsets a fetch acquired, all with the same
// delivery count: ShareFetch's AcquiredRecords.
type AcquiredRun struct {
	First, Last   int64
	DeliveryCount int16
}

// AckBatch is one acknowledgement batch: Types holds one type for all of
// [First, Last] or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []AckType
}

// AcquireLimit bounds one acquisition: at most MaxRecords offsets, rounded
// up to the end of the log batch that reached it unless Strict (ShareFetch
// v2's record_limit acquire mode, KIP-1206).
type AcquireLimit struct {
	MaxRecords int
	Strict     bool
}

type record struct {
	state      RecordState
	deliveries int16
	member     string
	lockUntil  int64 // unix nanoseconds; while ACQUIRED
}

// Partition is the share-partition state of one (group, topic partition).
// Its methods are safe for concurrent use.
type Partition struct {
	key       Key
	persister Persister

	mu          sync.Mutex
	initialized bool
	// stale: a write of this share-partition's state failed or has an
	// unknown outcome; it serves nothing more, and the manager loads it
	// again from the persister at its next use.
	stale       atomic.Bool
	leaderEpoch int32
	stateEpoch  int32
	settings    Settings
	start       int64
	recs        []record // recs[i] is offset start+i
	nextExpiry  int64    // earliest lock expiry, math.MaxInt64 for none
	waiters     map[chan<- struct{}]struct{}
	// dead: what the change being made archived for the dead-letter
	// queue, handed to settings.DeadLetters once it is persisted.
	dead []DeadLetter
}

func newPartition(key Key, persister Persister, leaderEpoch int32) *Partition {
	return &Partition{key: key, persister: persister, leaderEpoch: leaderEpoch, nextExpiry: math.MaxInt64, settings: DefaultSettings}
}

// NewPartition returns a share-partition starting at startOffset with no
// in-flight records and no persister, for tests and tools; the broker gets
// its partitions from a Manager.
func NewPartition(key Key, startOffset int64, settings Settings) *Partition {
	p := newPartition(key, nil, 0)
	p.initialized = true
	p.start = startOffset
	p.settings = settings.normalized()
	return p
}

// Key returns the partition's group and topic partition.
func (p *Partition) Key() Key { return p.key }

// SetSettings changes the settings, e.g. after the group's configs
// changed; records already in flight keep their locks.
func (p *Partition) SetSettings(s Settings) {
	p.mu.Lock()
	p.settings = s.normalized()
	p.mu.Unlock()
}

// StartOffset returns the share-partition start offset (SPSO).
func (p *Partition) StartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start
}

// EndOffset returns the first offset never acquired.
func (p *Partition) EndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.endLocked()
}

func (p *Partition) endLocked() int64 { return p.start + int64(len(p.recs)) }

// State returns the state and delivery count of offset, as of now (an
// expired lock counts as released). An offset below the start offset is
// reported ARCHIVED/ACKNOWLEDGED as Archived; one at or past the end as
// Available with no deliveries.
func (p *Partition) State(offset int64, now time.Time) (RecordState, int16) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	switch {
	case offset < p.start:
		return Archived, 0
	case offset >= p.endLocked():
		return Available, 0
	}
	r := p.recs[offset-p.start]
	return r.state, r.deliveries
}

// NextFetchOffset is where the next fetch reads the log from: the first
// AVAILABLE offset in the window, else its end.
func (p *Partition) NextFetchOffset(now time.Time) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	return p.nextFetchLocked()
}

func (p *Partition) nextFetchLocked() int64 {
	for i := range p.recs {
		if p.recs[i].state == Available {
			return p.start + int64(i)
		}
	}
	return p.endLocked()
}

// CanAcquire reports whether a fetch could acquire anything now below
// limit (the high watermark or last stable offset): an AVAILABLE offset in
// the window, or new offsets below limit with room in the window.
func (p *Partition) CanAcquire(limit int64, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	next := p.nextFetchLocked()
	if next < p.endLocked() {
		return true
	}
	return next < limit && len(p.recs) < p.settings.MaxRecordLocks
}

// NextLockExpiry returns when the earliest acquisition lock runs out, and
// false when no offset is acquired.
func (p *Partition) NextLockExpiry() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.nextExpiry == math.MaxInt64 {
		return time.Time{}, false
	}
	return time.Unix(0, p.nextExpiry), true
}

// LogBatch is one log batch a fetch read: its offsets [First, Last], and
// whether it belongs to an aborted transaction under read_committed
// (share.isolation.level), whose offsets are archived, not delivered.
type LogBatch struct {
	First, Last int64
	Aborted     bool
}

// Acquire acquires for member the AVAILABLE offsets of batches (the log
// batches a fetch read, in offset order), and new offsets past the window's
// end while the window has room, within limit. The offsets of aborted
// batches are archived instead. It returns the acquired runs in offset
// order; none when nothing could be acquired.
func (p *Partition) Acquire(member string, batches []LogBatch, limit AcquireLimit, now time.Time) []AcquiredRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if p.stale.Load() {
		return nil
	}
	saved := p.saveLocked()
	maxRecords := limit.MaxRecords
	if maxRecords <= 0 {
		maxRecords = math.MaxInt
	}
	lockUntil := now.Add(p.settings.LockDuration).UnixNano()
	hardWindow := 2 * p.settings.MaxRecordLocks
	newAllowed := len(p.recs) < p.settings.MaxRecordLocks
	var out []AcquiredRun
	count := 0
	aborted := false
	take := func(off int64, r *record) {
		if aborted {
			p.settle(r, Archived)
			return
		}
		r.state = Acquired
		if r.deliveries < math.MaxInt16 {
			r.deliveries++
		}
		r.member = member
		r.lockUntil = lockUntil
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].DeliveryCount == r.deliveries {
			out[n-1].Last = off
		} else {
			out = append(out, AcquiredRun{First: off, Last: off, DeliveryCount: r.deliveries})
		}
		count++
	}
	changed := false
batches:
	for _, b := range batches {
		if count >= maxRecords {
			break
		}
		aborted = b.Aborted
		for off := max(b.First, p.start); off <= b.Last; off++ {
			if count >= maxRecords && limit.Strict {
				break batches
			}
			if off < p.endLocked() {
				if r := &p.recs[off-p.start]; r.state == Available {
					take(off, r)
					changed = true
				}
				continue
			}
			// A new offset (and any gap before it, which the
			// client will acknowledge as a gap).
			if !newAllowed || len(p.recs) >= hardWindow {
				break batches
			}
			for p.endLocked() <= off && len(p.recs) < hardWindow {
				p.recs = append(p.recs, record{})
				take(p.endLocked()-1, &p.recs[len(p.recs)-1])
				changed = true
			}
		}
		if len(p.recs) >= p.settings.MaxRecordLocks {
			newAllowed = false
		}
	}
	if changed && lockUntil < p.nextExpiry {
		p.nextExpiry = lockUntil
	}
	if changed {
		p.advanceLocked()
		if err := p.persistLocked(saved); err != nil {
			return nil // nothing acquired: the records were not handed out
		}
	}
	return out
}

// Acknowledge applies member's acknowledgement batches, all or none: every
// offset must be ACQUIRED by member (ErrInvalidRecordState) and every batch
// well formed (ErrInvalidAcknowledgement). renew says whether RENEW is
// allowed (ShareFetch/ShareAcknowledge v2 with IsRenewAck, and
// share.renew.acknowledge.enable). Offsets below the start offset are
// skipped: the start offset moved past them (the log start moved).
func (p *Partition) Acknowledge(member string, batches []AckBatch, renew bool, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if p.stale.Load() {
		return ErrStateStale
	}
	end := p.endLocked()
	prevLast := int64(math.MinInt64)
	for _, b := range batches {
		if b.First > b.Last || b.First <= prevLast {
			return ErrInvalidAcknowledgement
		}
		prevLast = b.Last
		if n := int64(len(b.Types)); n != 1 && n != b.Last-b.First+1 {
			return ErrInvalidAcknowledgement
		}
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew || (t == AckRenew && !renew) {
				return ErrInvalidAcknowledgement
			}
		}
		if b.Last >= end {
			return ErrInvalidAcknowledgement
		}
		if b.Last < p.start {
			return ErrInvalidRecordState
		}
		for off := max(b.First, p.start); off <= b.Last; off++ {
			r := &p.recs[off-p.start]
			if r.state != Acquired || r.member != member {
				return ErrInvalidRecordState
			}
		}
	}
	released := false
	saved := p.saveLocked()
	lockUntil := now.Add(p.settings.LockDuration).UnixNano()
	for _, b := range batches {
		for off := max(b.First, p.start); off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.start]
			switch t {
			case AckAccept:
				p.settle(r, Acknowledged)
			case AckReject:
				p.archiveLocked(r, off, true)
			case AckGap:
				p.settle(r, Archived)
			case AckRelease:
				p.releaseLocked(r, off)
				released = true
			case AckRenew:
				r.lockUntil = lockUntil
			}
		}
	}
	p.recomputeExpiryLocked()
	before := p.start
	p.advanceLocked()
	if err := p.persistLocked(saved); err != nil {
		return err
	}
	if released || p.start != before {
		p.notifyLocked() // records to redeliver, or room in the window
	}
	return nil
}

// ReleaseMember releases every offset member holds, as when its share
// session closes or its connection drops, and returns how many.
func (p *Partition) ReleaseMember(member string, now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(now)
	if p.stale.Load() {
		return 0
	}
	saved := p.saveLocked()
	n := 0
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.member == member {
			p.releaseLocked(r, p.start+int64(i))
			n++
		}
	}
	if n > 0 {
		p.recomputeExpiryLocked()
		p.advanceLocked()
		if p.persistLocked(saved) != nil {
			return 0
		}
		p.notifyLocked()
	}
	return n
}

// MoveStartTo moves the start offset up to offset, the log start offset
// after retention or DeleteRecords: the offsets below it are gone, and
// whatever state they had with them.
func (p *Partition) MoveStartTo(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset <= p.start || p.stale.Load() {
		return
	}
	saved := p.saveLocked()
	if offset >= p.endLocked() {
		p.recs = p.recs[:0]
	} else {
		p.recs = p.recs[offset-p.start:]
	}
	p.start = offset
	p.recomputeExpiryLocked()
	p.advanceLocked()
	_ = p.persistLocked(saved)
}

// Wait registers ch to be signalled (without blocking) the next time
// offsets become AVAILABLE again (released, or their locks expired and
// were noticed) or the start offset moves, making room in a full window. A long-polling ShareFetch registers one channel with every
// partition it waits on, and calls the returned function when its wait
// ends, so that a partition holds only the waits in progress.
func (p *Partition) Wait(ch chan<- struct{}) (cancel func()) {
	p.mu.Lock()
	if p.waiters == nil {
		p.waiters = make(map[chan<- struct{}]struct{})
	}
	p.waiters[ch] = struct{}{}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.waiters, ch)
		p.mu.Unlock()
	}
}

func (p *Partition) notifyLocked() {
	for ch := range p.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	clear(p.waiters)
}

// settle moves an acquired record to a terminal state.
func (p *Partition) settle(r *record, s RecordState) {
	r.state = s
	r.member = ""
	r.lockUntil = 0
}

// releaseLocked makes an acquired record AVAILABLE, or ARCHIVED once its
// delivery count reached the limit.
func (p *Partition) releaseLocked(r *record, off int64) {
	if int(r.deliveries) >= p.settings.DeliveryCountLimit {
		p.archiveLocked(r, off, false)
		return
	}
	p.settle(r, Available)
}

// archiveLocked archives r, at offset off: ARCHIVING for the dead-letter
// queue when the group has one, else ARCHIVED.
func (p *Partition) archiveLocked(r *record, off int64, rejected bool) {
	if p.settings.DeadLetters == nil {
		p.settle(r, Archived)
		return
	}
	p.settle(r, Archiving)
	p.dead = append(p.dead, DeadLetter{Offset: off, DeliveryCount: r.deliveries, Rejected: rejected})
}

// flushDeadLettersLocked hands the ARCHIVING records of the change just
// persisted to the dead-letter queue.
func (p *Partition) flushDeadLettersLocked() {
	if len(p.dead) > 0 && p.settings.DeadLetters != nil {
		offsets := make([]int64, len(p.dead))
		for i, dl := range p.dead {
			offsets[i] = dl.Offset
		}
		p.settings.DeadLetters(p.key, p.dead, func() { p.completeDeadLetters(offsets) })
	}
	p.dead = nil
}

// completeDeadLetters makes the offsets still ARCHIVING ARCHIVED once their
// DLQ write ended (Kafka: "proceeding to ARCHIVED regardless"), and
// persists that. A share-partition gone stale meanwhile leaves them to the
// next load, which hands them to the dead-letter queue again.
func (p *Partition) completeDeadLetters(offsets []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stale.Load() || !p.initialized {
		return
	}
	saved := p.saveLocked()
	changed := false
	for _, off := range offsets {
		if off >= p.start && off < p.endLocked() && p.recs[off-p.start].state == Archiving {
			p.recs[off-p.start].state = Archived
			changed = true
		}
	}
	if !changed {
		return
	}
	before := p.start
	p.advanceLocked()
	if p.persistLocked(saved) == nil && p.start != before {
		p.notifyLocked() // room in the window
	}
}

// resumeDeadLettersLocked, after a load, hands the records persisted
// ARCHIVING to the dead-letter queue again (Kafka's
// maybeResumeDlqArchiving: rejected unless their delivery count reached
// the limit), or archives them when the group has no dead-letter queue
// any more.
func (p *Partition) resumeDeadLettersLocked() {
	p.dead = nil
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != Archiving {
			continue
		}
		if p.settings.DeadLetters == nil {
			r.state = Archived
			continue
		}
		p.dead = append(p.dead, DeadLetter{Offset: p.start + int64(i), DeliveryCount: r.deliveries, Rejected: int(r.deliveries) < p.settings.DeliveryCountLimit})
	}
	p.advanceLocked()
}

// expireLocked releases the records whose acquisition lock ran out by now.
func (p *Partition) expireLocked(now time.Time) {
	t := now.UnixNano()
	if t < p.nextExpiry || p.stale.Load() {
		return
	}
	saved := p.saveLocked()
	released := false
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.lockUntil <= t {
			p.releaseLocked(r, p.start+int64(i))
			released = true
		}
	}
	p.recomputeExpiryLocked()
	if released {
		p.advanceLocked()
		if p.persistLocked(saved) != nil {
			return
		}
		p.notifyLocked()
	}
}

func (p *Partition) recomputeExpiryLocked() {
	next := int64(math.MaxInt64)
	for i := range p.recs {
		if r := &p.recs[i]; r.state == Acquired && r.lockUntil < next {
			next = r.lockUntil
		}
	}
	p.nextExpiry = next
}

// advanceLocked moves the start offset over the leading ACKNOWLEDGED and
// ARCHIVED offsets.
func (p *Partition) advanceLocked() {
	k := 0
	for k < len(p.recs) && (p.recs[k].state == Acknowledged || p.recs[k].state == Archived) {
		k++
	}
	if k == 0 {
		return
	}
	p.start += int64(k)
	p.recs = p.recs[k:]
	// Give back the front of the array once most of it is behind us.
	if c := cap(p.recs); c > 1024 && len(p.recs) < c/4 {
		p.recs = append(make([]record, 0, 2*len(p.recs)+16), p.recs...)
	}
}

// snapshotLocked is the state to persist: the start offset and the window
// as runs of equal state and delivery count.
func (p *Partition) snapshotLocked() PartitionState {
	st := PartitionState{StartOffset: p.start, StateEpoch: p.stateEpoch, LeaderEpoch: p.leaderEpoch}
	for i := range p.recs {
		r := p.recs[i]
		off := p.start + int64(i)
		if n := len(st.Batches); n > 0 {
			last := &st.Batches[n-1]
			if last.State == r.state && last.DeliveryCount == r.deliveries && last.Last == off-1 {
				last.Last = off
				continue
			}
		}
		st.Batches = append(st.Batches, StateBatch{First: off, Last: off, State: r.state, DeliveryCount: r.deliveries})
	}
	return st
}

// savedState is what a change of the state may have to be undone to.
type savedState struct {
	start      int64
	recs       []record
	nextExpiry int64
}

// saveLocked copies the state before a change (write-before-apply: the
// change is made on the live state, under mu, and undone if it cannot be
// persisted; nothing sees it in between).
func (p *Partition) saveLocked() savedState {
	p.dead = nil
	if p.persister == nil || !p.initialized {
		return savedState{}
	}
	return savedState{start: p.start, recs: append([]record(nil), p.recs...), nextExpiry: p.nextExpiry}
}

// persistLocked writes the changed state through the persister before
// anyone sees it (Kafka's startStateTransition / completeStateTransition).
// When the write fails, or its outcome is unknown, the change is undone
// (saved is the state before it) and the share-partition turns stale: it
// serves nothing more and the manager reads the state again from the
// persister at its next use, whatever the write did. A client is thus
// never told a change succeeded that was not persisted.
func (p *Partition) persistLocked(saved savedState) error {
	if p.persister == nil || !p.initialized {
		p.flushDeadLettersLocked()
		return nil
	}
	err := p.persister.WriteState(context.Background(), p.key, p.snapshotLocked())
	if err != nil {
		p.dead = nil
		p.start, p.recs, p.nextExpiry = saved.start, saved.recs, saved.nextExpiry
		p.stale.Store(true)
		p.notifyLocked() // long polls on it look again, at a fresh one
		return fmt.Errorf("%w: %w", ErrStateStale, err)
	}
	p.flushDeadLettersLocked()
	return nil
}

// loadLocked replaces the state with st, read from the persister. Offsets
// that were ACQUIRED are AVAILABLE: their members' locks did not survive.
func (p *Partition) loadLocked(st PartitionState) {
	p.start = st.StartOffset
	p.stateEpoch = st.StateEpoch
	p.recs = p.recs[:0]
	for _, b := range st.Batches {
		if b.Last < p.start || b.First > b.Last || b.Last-b.First > int64(4*maxMaxRecordLocks) {
			continue
		}
		for off := max(b.First, p.start); off <= b.Last; off++ {
			for p.endLocked() < off {
				p.recs = append(p.recs, record{})
			}
			s := b.State
			if s == Acquired {
				s = Available
			}
			p.recs = append(p.recs, record{state: s, deliveries: b.DeliveryCount})
		}
	}
	p.advanceLocked()
	p.nextExpiry = math.MaxInt64
}

// maxMaxRecordLocks is the upper bound of group.share.partition.max.record.locks.
const maxMaxRecordLocks = 10000
