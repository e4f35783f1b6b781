package broker

// The leader's side of replication: what it knows about each follower, the
// high watermark computed from it, and the ISR changes it proposes. Every
// function here runs with partition.mu held and takes the time as an
// argument, so the decisions are deterministic and testable without
// goroutines or a wall clock (STYLE item 5); the ISR goroutine in
// replica_isr.go and the fetch handler are the only callers that supply
// real time.

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
)

// followerState is the leader's record of one follower.
type followerState struct {
	// logEnd is the follower's log end offset: the FetchOffset of its
	// latest fetch. A leader that has not heard from it yet assumes the
	// high watermark, which every ISR member is known to have.
	logEnd int64
	// lastCaughtUp is the last time the follower was known to have
	// everything the leader had: a fetch at the leader's log end offset,
	// or a fetch that reached the leader's log end offset as of the
	// previous fetch (then it was caught up at the previous fetch's time).
	// This is Kafka's definition: a follower that keeps up with a busy
	// leader is never "caught up" at one instant, yet never lags by more
	// than one fetch round trip.
	lastCaughtUp time.Time
	// lastFetch and lastFetchLeaderEnd are the time of the previous fetch
	// and the leader's log end offset at that time.
	lastFetch          time.Time
	lastFetchLeaderEnd int64
	// brokerEpoch is the ReplicaState epoch of the follower's latest fetch
	// (-1 before v15); a follower whose epoch is not the registered one is
	// a stale process and is not added to the ISR (KIP-903).
	brokerEpoch int64
	// idleFetch is the time (Unix nanoseconds) of the latest fetch the
	// leader answered from its fetch session's fast path (01_fetch.go):
	// the follower asked at the log end offset it was known to hold, and
	// nothing had changed since. It is written without the partition's
	// lock and folded into lastFetch and lastCaughtUp when they are read
	// (foldIdleLocked), so an idle caught-up follower stays caught up
	// without the leader touching every partition's lock each round.
	idleFetch atomic.Int64
}

// foldIdleLocked applies the fast path's latest fetch time: such a fetch
// was at the leader's log end offset, which has not moved since
// (lastFetchLeaderEnd), so the follower was caught up then. Lock should be
// held.
func (f *followerState) foldIdleLocked() {
	t := f.idleFetch.Load()
	if t == 0 {
		return
	}
	if at := time.Unix(0, t); at.After(f.lastFetch) {
		f.lastFetch = at
		if at.After(f.lastCaughtUp) {
			f.lastCaughtUp = at
		}
	}
}

// becomeLeaderLocked resets follower tracking when this node becomes leader
// at a new leader epoch. The high watermark is kept as this replica knew it
// (a former follower's may lag the old leader's; it advances as soon as the
// ISR's followers fetch). ISR members are assumed to be at the high
// watermark and caught up now, so they get a full replica.lag.time.max.ms to
// show up before being removed. Lock should be held.
func (p *partition) becomeLeaderLocked(self int32, now time.Time) {
	leo := p.log.LogEndOffset()
	if p.hw.Load() > leo {
		p.hw.Store(leo)
	}
	p.epochStartOffset = leo
	p.followers = make(map[int32]*followerState, len(p.replicas))
	p.settleAlterLocked()
	p.syncFollowersLocked(self, now)
}

// syncFollowersLocked adds tracking for assigned replicas not yet tracked
// and drops replicas no longer assigned. Lock should be held.
func (p *partition) syncFollowersLocked(self int32, now time.Time) {
	if p.followers == nil {
		p.followers = make(map[int32]*followerState, len(p.replicas))
	}
	for id := range p.followers {
		if !slices.Contains(p.replicas, id) {
			delete(p.followers, id)
		}
	}
	hw := p.hw.Load()
	for _, id := range p.replicas {
		if id == self || p.followers[id] != nil {
			continue
		}
		f := &followerState{logEnd: -1, lastFetchLeaderEnd: -1, brokerEpoch: -1}
		if slices.Contains(p.isr, id) {
			f.logEnd = hw
			f.lastCaughtUp = now
		}
		p.followers[id] = f
	}
}

// maximalISRLocked is the ISR the high watermark is computed over: the
// committed ISR, or while a proposal's outcome is unknown its union with
// the proposed one. Lock should be held.
func (p *partition) maximalISRLocked() []int32 {
	if p.pendingISR != nil {
		return p.pendingISR
	}
	return p.isr
}

// advanceHighWatermarkLocked moves the leader's high watermark to the
// minimum log end offset over the maximal ISR (the committed ISR plus a
// pending expansion), never backwards, and wakes waiters when it moves.
// Lock should be held.
func (p *partition) advanceHighWatermarkLocked(self int32) {
	if p.leader != self || len(p.isr) < p.hwMinISR {
		return
	}
	hw := p.log.LogEndOffset()
	for _, id := range p.maximalISRLocked() {
		if id == self {
			continue
		}
		f := p.followers[id]
		if f == nil {
			return
		}
		hw = min(hw, f.logEnd)
	}
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		p.wakeLocked()
	}
}

// setHighWatermarkMinISR sets the ISR size below which the high
// watermark stays put (partition.hwMinISR), advancing it at once when the
// rule is relaxed.
func (p *partition) setHighWatermarkMinISR(self int32, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hwMinISR == n {
		return
	}
	p.hwMinISR = n
	p.advanceHighWatermarkLocked(self)
}

// recordFollowerFetch notes a fetch by follower id at fetchOffset. It
// reports whether id is an assigned replica (a fetch from anything else is
// NOT_LEADER_OR_FOLLOWER, as in Kafka) and whether the follower now
// qualifies to join the ISR, so the caller can wake the ISR goroutine
// instead of waiting for its next tick.
func (p *partition) recordFollowerFetch(self, id int32, brokerEpoch int64, fetchOffset int64, now time.Time) (known, expand bool) {
	_, _, known, expand = p.recordFollowerFetchState(self, id, brokerEpoch, fetchOffset, now)
	return known, expand
}

// recordFollowerFetchState is recordFollowerFetch that also returns the
// follower's state and whether the fetch was at the log end offset, for
// the fetch session's fast path (01_fetch.go).
func (p *partition) recordFollowerFetchState(self, id int32, brokerEpoch int64, fetchOffset int64, now time.Time) (f *followerState, caughtUp, known, expand bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != self || !slices.Contains(p.replicas, id) || id == self {
		return nil, false, false, false
	}
	f = p.followers[id]
	if f == nil {
		// update and alterDone keep the tracking in step with the
		// replicas; this only covers a replica tracked nowhere yet.
		p.syncFollowersLocked(self, now)
		f = p.followers[id]
	}
	f.foldIdleLocked()
	leo := p.log.LogEndOffset()
	if fetchOffset > leo {
		// Diverged or out of range: answered without records, and not
		// evidence of anything.
		return f, false, true, false
	}
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = now
	case !f.lastFetch.IsZero() && fetchOffset >= f.lastFetchLeaderEnd && f.lastFetch.After(f.lastCaughtUp):
		f.lastCaughtUp = f.lastFetch
	}
	f.logEnd = fetchOffset
	f.lastFetch = now
	f.lastFetchLeaderEnd = leo
	f.brokerEpoch = brokerEpoch
	p.advanceHighWatermarkLocked(self)
	expand = !slices.Contains(p.isr, id) && p.canJoinLocked(f)
	return f, fetchOffset == leo, true, expand
}

// canJoinLocked reports whether a follower has caught up enough to join the
// ISR: it holds everything below the high watermark and everything this
// leader inherited from earlier epochs. Lock should be held.
func (p *partition) canJoinLocked(f *followerState) bool {
	return f.logEnd >= p.hw.Load() && f.logEnd >= p.epochStartOffset
}

// proposeISRLocked decides the ISR this leader should ask for at now: ISR
// followers that have not caught up within lagMax leave, caught-up
// out-of-sync followers whose broker is registered, unfenced and at the
// epoch they fetched with join. It returns nil when nothing changes or a
// proposal is still in flight (its outcome unknown). Lock should be held.
func (p *partition) proposeISRLocked(self int32, img *controller.Image, now time.Time, lagMax time.Duration) []int32 {
	if p.leader != self || p.isrInFlight || p.followers == nil {
		return nil
	}
	next := make([]int32, 0, len(p.replicas))
	changed := false
	for _, f := range p.followers {
		f.foldIdleLocked()
	}
	for _, id := range p.isr {
		if id != self {
			if f := p.followers[id]; f == nil || now.Sub(f.lastCaughtUp) > lagMax {
				changed = true
				continue
			}
		}
		next = append(next, id)
	}
	for _, id := range p.replicas {
		if id == self || slices.Contains(p.isr, id) {
			continue
		}
		f := p.followers[id]
		if f == nil || !p.canJoinLocked(f) || now.Sub(f.lastCaughtUp) > lagMax {
			continue
		}
		br := img.Brokers[id]
		if br == nil || br.Fenced || (f.brokerEpoch >= 0 && f.brokerEpoch != br.Epoch) {
			continue
		}
		next = append(next, id)
		changed = true
	}
	if !changed {
		return nil
	}
	return next
}

// beginAlterLocked marks a proposal of next as in flight and returns its
// sequence number, which its answer is matched against. Lock should be
// held.
func (p *partition) beginAlterLocked(next []int32) uint64 {
	p.isrInFlight = true
	p.alterSeq++
	p.pendingISR = slices.Clone(p.isr)
	for _, id := range next {
		if !slices.Contains(p.pendingISR, id) {
			p.pendingISR = append(p.pendingISR, id)
		}
	}
	return p.alterSeq
}

// settleAlterLocked ends the proposal in flight, if any: its outcome is
// known (committed, proven not applied, or superseded by metadata), so the
// high watermark goes back to the committed ISR and an answer still on its
// way is ignored. Lock should be held.
func (p *partition) settleAlterLocked() {
	if p.isrInFlight || p.pendingISR != nil {
		p.alterSeq++
	}
	p.isrInFlight = false
	p.pendingISR = nil
}

// alterOutcome is what a leader does with the answer to an ISR proposal.
type alterOutcome int

const (
	// alterSettled: the answer is final (committed, proven not applied,
	// or superseded); nothing more to send.
	alterSettled alterOutcome = iota
	// alterRetry: the outcome is unknown (no answer, NOT_CONTROLLER, a
	// timeout, an internal error): the proposal stays pending and the
	// same request is sent again, as Kafka's AlterPartitionManager does.
	alterRetry
	// alterWaitMetadata: the controller knows a newer state of the
	// partition (or this leader's); the proposal stays pending until the
	// metadata image brings it.
	alterWaitMetadata
)

// alterDone applies the controller's answer to proposal seq, made at
// leaderEpoch, and says what to do next. Kafka's rule (KIP-497, the KRaft
// partition state machine): the leader keeps the maximal ISR for the high
// watermark until it knows the outcome, and falls back to the committed
// ISR only on an answer that proves the change was not applied —
// OPERATION_NOT_ATTEMPTED, or INELIGIBLE_REPLICA, which the controller
// checks only after the leader and partition epochs, so the proposal was
// current and refused. Every other error leaves the outcome open: a timed
// out or lost answer may belong to a committed change, and a stale-epoch
// refusal of a retry may mean an earlier attempt was committed.
func (p *partition) alterDone(self int32, seq uint64, leaderEpoch int32, mp controller.Partition, err error) alterOutcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.alterSeq != seq || !p.isrInFlight || p.leader != self || p.leaderEpoch != leaderEpoch {
		// Settled already: by metadata, or this node no longer
		// leads at that epoch.
		return alterSettled
	}
	switch {
	case err == nil:
		p.settleAlterLocked()
		if mp.LeaderEpoch == p.leaderEpoch && mp.PartitionEpoch >= p.partitionEpoch {
			p.partitionEpoch = mp.PartitionEpoch
			p.isr = append(p.isr[:0], mp.ISR...)
			p.syncFollowersLocked(self, time.Time{})
			p.wakeLocked()
		}
		p.advanceHighWatermarkLocked(self)
		return alterSettled
	case kerrIs(err, kerr.OperationNotAttempted, kerr.IneligibleReplica):
		p.settleAlterLocked()
		p.advanceHighWatermarkLocked(self)
		return alterSettled
	case kerrIs(err, kerr.FencedLeaderEpoch, kerr.InvalidUpdateVersion, kerr.InvalidRequest,
		kerr.UnknownTopicOrPartition, kerr.UnknownTopicID):
		// Still in flight: the metadata settles it.
		return alterWaitMetadata
	default:
		return alterRetry
	}
}

// ackResult tells an acks=-1 producer waiting for offset next at leader
// epoch whether it is done: kerr code 0 when the high watermark passed it
// with at least min.insync.replicas in the ISR, NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when it passed with fewer (Kafka's check), NOT_LEADER_OR_FOLLOWER when
// this node lost the leadership; done is false while it must keep waiting.
func (p *partition) ackResult(self int32, leaderEpoch int32, next int64) (code int16, done bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != self || p.leaderEpoch != leaderEpoch {
		return kerr.NotLeaderForPartition.Code, true
	}
	if p.hw.Load() < next {
		return 0, false
	}
	if len(p.maximalISRLocked()) < p.minInsync {
		return kerr.NotEnoughReplicasAfterAppend.Code, true
	}
	return 0, true
}
