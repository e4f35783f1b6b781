package broker

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// partition is this node's replica of one topic partition: its log and what
// the metadata image says about it (leader, epochs, ISR). The high watermark
// is owned here. On the leader it is the minimum log end offset over the
// ISR (replica_leader.go keeps each follower's); on a follower it is what
// the leader last reported, capped by the local log end offset
// (replica_fetcher.go). Consumers only see records below it.
type partition struct {
	tp      logstore.TopicPartition
	topicID [16]byte
	log     *logstore.Log

	// producers is the partition's producer table (producer_state.go):
	// idempotence, open transactions and the last stable offset. Its
	// mutex is taken after partition.mu when both are held, and is held
	// across an append.
	producers producerState

	mu             sync.Mutex // guards the fields below and waiters
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
	// minInsync is the topic's min.insync.replicas, refreshed from the
	// metadata image so the produce path does not resolve configs.
	minInsync int
	// hwMinISR is the ISR size below which the leader's high watermark
	// does not advance (KIP-966's strict min ISR: min.insync.replicas
	// capped by the replicas, while eligible leader replicas are
	// tracked), so a replica leaving an ISR below it holds every
	// committed record; 0 when the rule is off.
	hwMinISR int
	// waiters is closed and replaced whenever the high watermark, the log
	// start offset, the leadership or the ISR changes, waking consumers'
	// long polls and acks=-1 producers.
	waiters chan struct{}
	// appended is closed and replaced on every append on the leader: a
	// follower's long poll waits for data beyond its own log end offset,
	// which is above the high watermark.
	appended chan struct{}
	// hwWaiters and appendWaiters are the waiting fetches
	// (fetch_wait.go) signalled with waiters and appended respectively.
	hwWaiters     []*fetchWaiter
	appendWaiters []*fetchWaiter

	// Leader-only state (replica_leader.go), reset whenever this node
	// becomes leader at a new leader epoch.
	followers map[int32]*followerState
	// epochStartOffset is the log end offset when this node became leader:
	// a follower joins the ISR only once it has everything up to here, so
	// it holds every record of earlier epochs this leader kept.
	epochStartOffset int64
	// isrInFlight is set from the moment this leader proposes an ISR
	// change (at most one at a time) until its outcome is known: a
	// committed answer, an answer that proves it was not applied, or
	// metadata with a newer partition or leader epoch. pendingISR is then
	// the union of the committed and the proposed ISR (KIP-497's maximal
	// ISR), which the high watermark and acks=-1 are computed over: a
	// proposal whose answer was lost may have been committed, and a
	// replica it added may be elected leader. alterSeq numbers proposals,
	// so an answer to one that metadata already settled is ignored. A
	// proposal refused as stale (FENCED_LEADER_EPOCH,
	// INVALID_UPDATE_VERSION, …) simply stays in flight: nothing is
	// proposed again until the metadata brings the newer state.
	isrInFlight bool
	pendingISR  []int32
	alterSeq    uint64

	hw atomic.Int64
	// gen counts the wake-ups of waiters and appended: it moves whenever
	// anything a fetch answer says of the partition may have changed, so
	// a follower's fetch session skips a partition whose gen is the one it
	// last read it at (01_fetch.go).
	gen atomic.Uint64
}

func newPartition(tp logstore.TopicPartition, topicID [16]byte, log *logstore.Log) *partition {
	return &partition{
		tp:       tp,
		topicID:  topicID,
		log:      log,
		leader:   -1,
		waiters:  make(chan struct{}),
		appended: make(chan struct{}),
	}
}

// highWatermark is the offset below which records are committed.
func (p *partition) highWatermark() int64 { return p.hw.Load() }

// update applies what the metadata image says about this partition. An
// image older than what an AlterPartition answer already told this leader
// (same leader epoch, lower partition epoch) keeps the newer ISR. It
// reports whether the leader or leader epoch changed, which is what the
// replica manager's fetchers depend on.
func (p *partition) update(self int32, mp *controller.Partition, minInsync int, now time.Time) (leaderChanged bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.minInsync = minInsync
	leaderChanged = p.leader != mp.Leader || p.leaderEpoch != mp.LeaderEpoch
	if !leaderChanged && mp.PartitionEpoch < p.partitionEpoch {
		return false
	}
	if leaderChanged || mp.PartitionEpoch != p.partitionEpoch {
		// The metadata settles whatever was proposed: the ISR below
		// is the committed one.
		p.settleAlterLocked()
	}
	p.leader = mp.Leader
	p.leaderEpoch = mp.LeaderEpoch
	p.partitionEpoch = mp.PartitionEpoch
	p.replicas = append(p.replicas[:0], mp.Replicas...)
	p.isr = append(p.isr[:0], mp.ISR...)
	if p.leader != self {
		p.followers = nil
		p.settleAlterLocked()
	} else if leaderChanged {
		p.becomeLeaderLocked(self, now)
	} else {
		p.syncFollowersLocked(self, now)
	}
	if leaderChanged {
		p.wakeAppendedLocked()
	}
	// The ISR or the leadership may have changed: acks=-1 waiters recheck.
	p.wakeLocked()
	p.advanceHighWatermarkLocked(self)
	return leaderChanged
}

// state returns the leader and leader epoch under the lock.
func (p *partition) state() (leader, epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leader, p.leaderEpoch
}

// enoughInsync reports whether the ISR is at least min.insync.replicas,
// which acks=-1 requires before appending.
func (p *partition) enoughInsync() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.isr) >= p.minInsync
}

// isReplica reports whether id is in the assigned replicas.
func (p *partition) isReplica(id int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.replicas, id)
}

// appendedAsLeader is called after every leader append: it wakes waiting
// follower fetches and moves the high watermark if the ISR allows.
func (p *partition) appendedAsLeader(self int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wakeAppendedLocked()
	p.advanceHighWatermarkLocked(self)
}

// advanceHighWatermark recomputes the high watermark after an append or an
// ISR change.
func (p *partition) advanceHighWatermark(self int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advanceHighWatermarkLocked(self)
}

// stopReplica marks a replica this node no longer holds: it neither leads
// nor follows (so a fetch response in flight cannot append to it and an
// acks=-1 producer waiting on it gets NOT_LEADER_OR_FOLLOWER), and every
// waiter is woken to see that.
func (p *partition) stopReplica() {
	p.mu.Lock()
	p.leader, p.leaderEpoch = -1, -1
	p.followers = nil
	p.settleAlterLocked()
	p.wakeLocked()
	p.wakeAppendedLocked()
	p.mu.Unlock()
}

// wake wakes every fetch waiting on this partition.
func (p *partition) wake() {
	p.mu.Lock()
	p.wakeLocked()
	p.wakeAppendedLocked()
	p.mu.Unlock()
}

// wakeLocked wakes waiters. Lock should be held.
func (p *partition) wakeLocked() {
	p.gen.Add(1)
	close(p.waiters)
	p.waiters = make(chan struct{})
	p.hwWaiters = signalWaiters(p.hwWaiters)
}

// wakeAppendedLocked wakes follower fetches. Lock should be held.
func (p *partition) wakeAppendedLocked() {
	p.gen.Add(1)
	close(p.appended)
	p.appended = make(chan struct{})
	p.appendWaiters = signalWaiters(p.appendWaiters)
}

// watch returns a channel closed at the next high watermark move.
func (p *partition) watch() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters
}
