package broker

import (
	"sync"
	"sync/atomic"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// partition is this node's replica of one topic partition: its log and what
// the metadata image says about it (leader, epoch, ISR). The high watermark
// is owned here: it is the minimum log end offset over the ISR, and consumers
// only see records below it.
type partition struct {
	tp      logstore.TopicPartition
	topicID [16]byte
	log     *logstore.Log

	mu          sync.Mutex // guards the fields below and waiters
	leader      int32
	leaderEpoch int32
	replicas    []int32
	isr         []int32
	// minInsync is the topic's min.insync.replicas, refreshed from the
	// metadata image so the produce path does not resolve configs.
	minInsync int
	// waiters is closed and replaced whenever the high watermark or the
	// log start offset moves, waking long-polling fetches.
	waiters chan struct{}

	hw atomic.Int64
}

func newPartition(tp logstore.TopicPartition, topicID [16]byte, log *logstore.Log) *partition {
	return &partition{
		tp:      tp,
		topicID: topicID,
		log:     log,
		leader:  -1,
		waiters: make(chan struct{}),
	}
}

// highWatermark is the offset below which records are committed.
func (p *partition) highWatermark() int64 { return p.hw.Load() }

// update applies what the metadata image says about this partition.
func (p *partition) update(self int32, mp *controller.Partition, minInsync int) {
	p.mu.Lock()
	p.minInsync = minInsync
	p.leader = mp.Leader
	p.leaderEpoch = mp.LeaderEpoch
	p.replicas = append(p.replicas[:0], mp.Replicas...)
	p.isr = append(p.isr[:0], mp.ISR...)
	p.mu.Unlock()
	p.advanceHighWatermark(self)
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

// advanceHighWatermark recomputes the high watermark after an append or an
// ISR change. On a leader whose ISR is only itself, the high watermark is the
// log end offset; replication from followers (tracked per follower) joins
// this computation when the cluster grows beyond one node.
func (p *partition) advanceHighWatermark(self int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != self {
		return
	}
	leo := p.log.LogEndOffset()
	if len(p.isr) == 1 && p.isr[0] == self {
		if leo > p.hw.Load() {
			p.hw.Store(leo)
			p.wakeLocked()
		}
	}
}

// wake wakes every fetch waiting on this partition.
func (p *partition) wake() {
	p.mu.Lock()
	p.wakeLocked()
	p.mu.Unlock()
}

// wakeLocked wakes waiters. Lock should be held.
func (p *partition) wakeLocked() {
	close(p.waiters)
	p.waiters = make(chan struct{})
}

// watch returns a channel closed at the next high watermark move.
func (p *partition) watch() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiters
}
