package logstore

import (
	"fmt"
	"time"
)

// Retention follows Kafka's UnifiedLog.deleteOldSegments. Three rules each
// select a prefix of the segments (oldest first, stopping at the first
// segment a rule keeps), and the longest prefix is deleted:
//
//   - retention.ms: the segment's largest timestamp (or, without
//     timestamps, its last-modified time) is older than now - retention.ms;
//   - retention.bytes: deleting it leaves at least retention.bytes;
//   - log start offset: the next segment starts at or below it (after
//     DeleteRecords).
//
// The first two apply only when cleanup.policy includes delete
// (Config.CleanupDelete): a compact-only log, such as __consumer_offsets
// or a Kafka Streams changelog, is never trimmed by age or size, whatever
// its retention.ms says. The third applies to every log, as in Kafka.
//
// Only segments wholly below the high watermark go, and an empty active
// segment never does. If every segment must go the log first rolls, so the
// log always keeps an (empty) active segment at the log end offset.
// Deleted segments are renamed *.deleted and removed file.delete.delay.ms
// later, so that reads already holding them finish; the Dir removes them
// when due, not at the next retention check (delete_schedule.go).

// retain applies retention once and returns how many segments it deleted.
func (l *Log) retain(now time.Time, highWatermark int64) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	cfg, segs := l.cfg.Value(), l.segments
	nowMs := now.UnixMilli()

	prefix := func(keep func(i int, s *segment) bool) int {
		for i, s := range segs {
			if keep(i, s) {
				return i
			}
		}
		return len(segs)
	}
	n := 0
	if cfg.CleanupDelete && cfg.RetentionMs >= 0 {
		n = max(n, prefix(func(_ int, s *segment) bool {
			ts := s.maxTimestamp
			if ts < 0 {
				ts = s.lastModified.UnixMilli()
			}
			return nowMs-ts <= cfg.RetentionMs
		}))
	}
	if cfg.CleanupDelete && cfg.RetentionBytes >= 0 {
		var total int64
		for _, s := range segs {
			total += s.size
		}
		diff := total - cfg.RetentionBytes
		n = max(n, prefix(func(_ int, s *segment) bool {
			if diff-s.size < 0 {
				return true
			}
			diff -= s.size
			return false
		}))
	}
	n = max(n, prefix(func(i int, s *segment) bool {
		return i+1 >= len(segs) || segs[i+1].base > l.logStart
	}))
	// Cap: wholly below the high watermark, and never the empty active segment.
	for i := 0; i < n; i++ {
		upper := l.logEnd
		if i+1 < len(segs) {
			upper = segs[i+1].base
		}
		if upper > highWatermark || (i == len(segs)-1 && segs[i].size == 0) {
			n = i
			break
		}
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		if _, err := l.rollLocked(l.logEnd, now); err != nil {
			return 0, err
		}
	}
	return n, l.deleteSegmentsLocked(n, now)
}

// deleteSegmentsLocked removes the n oldest segments (never the active
// one) and moves the log start offset up to the new first segment.
// Lock should be held (appendMu).
func (l *Log) deleteSegmentsLocked(n int, now time.Time) error {
	if n >= len(l.segments) {
		n = len(l.segments) - 1
	}
	if n <= 0 {
		return nil
	}
	gone := l.segments[:n]
	l.segsMu.Lock()
	l.segments = append([]*segment(nil), l.segments[n:]...)
	l.setLogStart(max(l.logStart, l.segments[0].base))
	l.recoveryPoint = max(l.recoveryPoint, l.segments[0].base)
	l.segsMu.Unlock()
	for _, s := range gone {
		if err := s.renameDeleted(l.fsys); err != nil {
			return l.fail("delete segment", err)
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, at: now})
		l.logger.Info("logstore: deleted segment", "partition", l.tp.String(), "base_offset", s.base, "size", s.size)
	}
	if err := l.epochs.truncateFromStart(l.logStart); err != nil {
		return l.fail("leader epoch checkpoint", err)
	}
	first := l.segments[0].base
	if err := l.deleteSnapshotsLocked(func(o int64) bool { return o < first }); err != nil {
		return l.fail("delete segment", err)
	}
	return nil
}

// removeExpiredDeletes removes the *.deleted files older than
// file.delete.delay.ms (see removeDueDeletes).
func (l *Log) removeExpiredDeletes(now time.Time) error {
	_, err := l.removeDueDeletes(now)
	return err
}

// removeDueDeletes unlinks the files of each pending deletion whose
// file.delete.delay.ms (the current value) has passed since its rename, and
// closes its descriptor once deletedCloseGrace has passed too, so reads
// already holding it finish (delete_schedule.go). It returns when the next
// step is due, or the zero time when nothing is pending.
func (l *Log) removeDueDeletes(now time.Time) (next time.Time, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	delay := time.Duration(l.cfg.Value().FileDeleteDelayMs) * time.Millisecond
	kept := l.pendingDeletes[:0]
	var firstErr error
	for _, p := range l.pendingDeletes {
		at := p.at.Add(delay)
		if !p.unlinked && now.Before(at) {
			kept = append(kept, p)
			next = earliest(next, at)
			continue
		}
		if !p.unlinked {
			p.unlinked = true
			if err := p.seg.removeDeleted(l.fsys); err != nil && firstErr == nil {
				firstErr = fmt.Errorf("%w: remove deleted segment: %v", ErrKafkaStorage, err)
			}
		}
		if closeAt := p.at.Add(max(delay, deletedCloseGrace)); now.Before(closeAt) {
			kept = append(kept, p)
			next = earliest(next, closeAt)
			continue
		}
		p.seg.close()
	}
	clear(l.pendingDeletes[len(kept):])
	l.pendingDeletes = kept
	return next, firstErr
}

// earliest is the earlier of next and t, where a zero next means none yet.
func earliest(next, t time.Time) time.Time {
	if next.IsZero() || t.Before(next) {
		return t
	}
	return next
}

// DeleteRecordsBefore implements DeleteRecords: it moves the log start
// offset up to offset and deletes the segments wholly below it. The new log
// start offset is checkpointed before returning, so it survives a crash.
// The broker must not pass an offset above the high watermark; above the
// log end offset is ErrOffsetOutOfRange. Offsets at or below the current
// log start offset change nothing.
func (l *Log) DeleteRecordsBefore(offset int64) (newLogStart int64, err error) {
	newLogStart, changed, err := l.deleteRecordsBefore(offset)
	if err != nil || !changed || l.onLogStartChange == nil {
		return newLogStart, err
	}
	// Outside appendMu: the callback takes Dir locks (see the lock order).
	if err := l.onLogStartChange(); err != nil {
		return newLogStart, fmt.Errorf("%w: checkpoint log start offset: %v", ErrKafkaStorage, err)
	}
	return newLogStart, nil
}

func (l *Log) deleteRecordsBefore(offset int64) (int64, bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, false, err
	}
	if offset > l.logEnd || offset < 0 {
		return l.logStart, false, fmt.Errorf("%w: delete records before %d, log end offset %d", ErrOffsetOutOfRange, offset, l.logEnd)
	}
	if offset <= l.logStart {
		return l.logStart, false, nil
	}
	l.segsMu.Lock()
	l.setLogStart(offset)
	l.segsMu.Unlock()
	n := 0
	for i := 0; i+1 < len(l.segments) && l.segments[i+1].base <= offset; i++ {
		n = i + 1
	}
	if err := l.deleteSegmentsLocked(n, l.now()); err != nil {
		return l.logStart, true, err
	}
	if n == 0 {
		if err := l.epochs.truncateFromStart(l.logStart); err != nil {
			return l.logStart, true, l.fail("leader epoch checkpoint", err)
		}
	}
	return l.logStart, true, nil
}
