package broker

// The follower's side of a partition: every change to a follower's log
// goes through these methods, which hold partition.mu and first check that
// the node still follows the same leader at the same leader epoch, so a
// fetch response that was in flight while the image made this node leader
// (or moved it to another leader) can never write into the log. Appends
// and truncations keep the producer table in step (producer_state.go): a
// truncation rebuilds it from the snapshot and batches that remain.

import "log/slog"

// following reports whether the partition is still followed from leader at
// leaderEpoch. Lock should be held.
func (p *partition) followingLocked(leader, leaderEpoch int32) bool {
	return p.leader == leader && p.leaderEpoch == leaderEpoch
}

// appendAsFollower appends batches fetched from leader at leaderEpoch.
func (p *partition) appendAsFollower(leader, leaderEpoch int32, records []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, leaderEpoch) {
		return nil
	}
	return p.appendAsFollowerLocked(records)
}

// truncateByEpoch truncates after the leader answered that its epoch
// divEpoch (the newest it has not above what this log last fetched) ends at
// divEnd: everything from the first offset where the two logs may differ is
// removed. That offset is the smaller of divEnd and where this log's own
// divEpoch (or the newest epoch before it) ends; when the two logs do not
// share divEpoch the next fetch, with the truncated log's latest epoch,
// narrows it further until they agree.
func (p *partition) truncateByEpoch(logger *slog.Logger, leader, leaderEpoch, divEpoch int32, divEnd int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, leaderEpoch) {
		return nil
	}
	target := divEnd
	if localEpoch, localEnd := p.log.EndOffsetForEpoch(divEpoch); localEpoch >= 0 && localEnd >= 0 && localEnd < target {
		target = localEnd
	}
	if target < 0 {
		target = 0
	}
	return p.truncateAsFollowerLocked(logger, target, "diverging epoch", "diverging_epoch", divEpoch, "diverging_end_offset", divEnd)
}

// truncateAsFollowerLocked truncates the log to offset, keeps the high
// watermark within it, and logs what was removed: which offsets, how many
// bytes, and why (from the leader at which epoch). Truncating records is
// how a follower converges on its leader's log, and it is also how an
// acknowledged record would be lost if a leader were elected without it,
// so every truncation that removes something is in the log. Lock should
// be held.
func (p *partition) truncateAsFollowerLocked(logger *slog.Logger, offset int64, why string, attrs ...any) error {
	oldEnd, oldSize, hw := p.log.LogEndOffset(), p.log.Size(), p.hw.Load()
	if err := p.truncateLocked(offset); err != nil {
		return err
	}
	p.clampHighWatermarkLocked()
	if newEnd := p.log.LogEndOffset(); newEnd < oldEnd && logger != nil {
		logger.Warn("follower truncated its log", append([]any{
			"topic", p.tp.Topic, "partition", p.tp.Partition, "reason", why,
			"leader", p.leader, "leader_epoch", p.leaderEpoch,
			"from_offset", newEnd, "old_end_offset", oldEnd, "offsets_removed", oldEnd - newEnd,
			"bytes_removed", oldSize - p.log.Size(), "high_watermark_before", hw,
		}, attrs...)...)
	}
	return nil
}

// truncateFully empties the log; the caller fetches from the leader's log
// start offset next.
func (p *partition) truncateFully(logger *slog.Logger, leader, leaderEpoch int32, why string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, leaderEpoch) {
		return nil
	}
	return p.truncateAsFollowerLocked(logger, 0, why)
}

// clampHighWatermarkLocked keeps the high watermark at or below the log end
// offset after a truncation. Lock should be held.
func (p *partition) clampHighWatermarkLocked() {
	if leo := p.log.LogEndOffset(); p.hw.Load() > leo {
		p.hw.Store(leo)
	}
}

// setFollowerHighWatermark takes the high watermark the leader reported,
// capped by what this log holds (Kafka's min(leader HW, local LEO)).
func (p *partition) setFollowerHighWatermark(leader int32, leaderHW int64) {
	if leaderHW == p.hw.Load() {
		// Nothing moved (an idle partition, every fetch round): the
		// high watermark is never above the log end offset, so the
		// capped value would be the same.
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != leader {
		return
	}
	hw := max(min(leaderHW, p.log.LogEndOffset()), p.log.LogStartOffset())
	if hw != p.hw.Load() {
		p.hw.Store(hw)
		p.wakeLocked()
	}
}
