package txn

import (
	"context"
	"time"
)

// AbortTimedOut aborts every transaction that has run for longer than its
// transaction.timeout.ms, as Kafka's coordinator does every
// transaction.abort.timed.out.transaction.cleanup.interval.ms: the epoch
// is bumped first, so the producer that left it open (a zombie) is fenced
// and its later writes are refused. A two-phase commit transaction
// (timeout TwoPhaseTimeoutMs, KIP-939) is never aborted here: it ends
// when its external coordinator says so, however long that takes.
func (c *Coordinator) AbortTimedOut(ctx context.Context) {
	now := c.cfg.Now().UnixMilli()
	for _, e := range c.loadedEntries() {
		e.mu.Lock()
		m := e.meta
		twoPhase := m.timeoutMs == TwoPhaseTimeoutMs
		if !e.unloaded && !e.pending && !e.completing && !twoPhase && m.state == StateOngoing && m.startMs >= 0 && now-m.startMs > int64(m.timeoutMs) {
			epoch := fencedEpoch(m.epoch)
			c.cfg.Logger.Info("aborting timed-out transaction", "transactional_id", e.id, "producer_id", m.producerID, "epoch", epoch, "timeout_ms", m.timeoutMs)
			c.endLocked(ctx, e, m.producerID, epoch, false, false)
		}
		e.mu.Unlock()
	}
}

// ExpireIDs forgets transactional ids without a running transaction that
// have not been used for transactional.id.expiration.ms: a tombstone is
// written and the id is gone (a later InitProducerId starts afresh).
func (c *Coordinator) ExpireIDs(ctx context.Context) {
	now := c.cfg.Now()
	cutoff := now.Add(-c.cfg.IDExpiration).UnixMilli()
	for _, e := range c.loadedEntries() {
		e.mu.Lock()
		m := e.meta
		idle := m.state == StateEmpty || m.state == StateCompleteCommit || m.state == StateCompleteAbort
		if e.unloaded || e.pending || e.completing || !idle || m.updateMs > cutoff {
			e.mu.Unlock()
			continue
		}
		dead := m.clone()
		dead.state = StateDead
		dead.updateMs = now.UnixMilli()
		code := c.writeLocked(ctx, e, dead)
		e.mu.Unlock()
		if code != 0 {
			continue
		}
		c.mu.Lock()
		if e.shard.txns[e.id] == e {
			delete(e.shard.txns, e.id)
		}
		c.mu.Unlock()
		c.cfg.Logger.Info("expired transactional id", "transactional_id", e.id, "idle", time.Duration(now.UnixMilli()-m.updateMs)*time.Millisecond)
	}
}

// loadedEntries lists the entries of every loaded partition.
func (c *Coordinator) loadedEntries() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*entry
	for _, s := range c.shards {
		if !s.loaded {
			continue
		}
		for _, e := range s.txns {
			out = append(out, e)
		}
	}
	return out
}
