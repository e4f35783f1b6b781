package broker

// The fast path of a follower's incremental fetch (issue 22): a partition
// with nothing new costs the leader next to nothing. A follower's session
// fetches every partition it follows from this leader, and at rest nearly
// all of them are idle; reading each one every round — the leader's
// replica lookup, the partition's lock to record the follower's position,
// the last stable offset, a wake-up registration — made an idle follower
// of 10,000 partitions cost its leader O(partitions) of locked work twice a
// second.
//
// A read that finds a follower at the leader's log end offset with nothing
// to send and no error (idleRead) is remembered in the session with the
// partition's gen (partition.go), which moves on every wake-up: an append,
// a high watermark move, a change of leadership, ISR or replicas, a
// DeleteRecords, the replica's removal. Until gen moves, the request names
// the partition again, or the follower was not told what that read
// answered, the partition is skipped: nothing is read, locked or
// allocated. The follower's position is unchanged (it asks for the same
// offset) and still the log end, so it is still caught up: the skip
// writes the round's time into the follower's state without the lock
// (followerState.idleFetch), which the ISR check and the next full read
// fold in, so replica.lag.time.max.ms never shrinks an idle caught-up
// follower out of the ISR, and a follower that stops fetching stops
// writing it.
//
// The long poll: the session's one waiter (fetchSession.waiter) is
// registered with each partition when it is first read idle and stays
// registered for the session's life, so a round that skips partitions
// waits on it instead of registering with each; a wake-up of any of them
// ends the wait. It is drained at the start of every round: a wake-up
// after that either moved a gen the round then sees, or wakes the wait.
// The log start offset is compared directly too, since retention may move
// it without a wake-up.

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// skipIdle reports whether c, a partition of this follower session named
// by no request since it was read idle, is still idle; if so it records the
// fetch at now (Unix nanoseconds) as the follower's.
func (sf *sessionFetch) skipIdle(c *sessionPartition, now int64) bool {
	r := c.idle
	if r == nil || r.p.gen.Load() != r.gen ||
		c.highWatermark != r.highWatermark || c.lastStable != r.lastStable || c.logStart != r.logStart ||
		r.p.log.LogStartOffset() != r.logStart {
		return false
	}
	r.follower.idleFetch.Store(now)
	sf.skipped++
	return true
}

// noteIdle remembers the read of c as idle when it was one (r set by
// fetchPartition, nothing returned, no error, no diverging epoch) and
// registers the session's waiter with the partition; otherwise it forgets
// any earlier idle read.
func (sf *sessionFetch) noteIdle(c *sessionPartition, r *idleRead, sp *kmsg.FetchResponseTopicPartition, records int) {
	if c == nil {
		return
	}
	c.idle = nil
	if r.p == nil || r.follower == nil || records > 0 || sp.ErrorCode != 0 ||
		sp.DivergingEpoch.Epoch != -1 || sp.DivergingEpoch.EndOffset != -1 || sf.s.waiter == nil {
		return
	}
	r.highWatermark, r.lastStable, r.logStart = sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset
	idle := *r
	c.idle = &idle
	if c.waitingOn != r.p {
		r.p.addSessionWaiter(sf.s.waiter, r.gen)
		c.waitingOn = r.p
	}
}

// sessionWait is the channel a round that skipped partitions waits on, nil
// if it skipped none.
func (sf *sessionFetch) sessionWait() <-chan struct{} {
	if sf == nil || sf.skipped == 0 || sf.s == nil || sf.s.waiter == nil {
		return nil
	}
	return sf.s.waiter.ch
}

// drainWait forgets wake-ups of the session's waiter from before a round.
func (sf *sessionFetch) drainWait() {
	if sf == nil || sf.s == nil || sf.s.waiter == nil {
		return
	}
	select {
	case <-sf.s.waiter.ch:
	default:
	}
}

// addSessionWaiter registers a session's waiter with the partition for
// good (until the session ends), signalling it at once if the partition
// woke since gen.
func (p *partition) addSessionWaiter(w *fetchWaiter, gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.appendWaiters = append(dropDone(p.appendWaiters), w)
	if p.gen.Load() != gen {
		w.signal()
	}
}
