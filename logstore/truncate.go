package logstore

import (
	"fmt"
)

// TruncateTo removes everything at and after offset; followers call it
// after OffsetForLeaderEpoch tells them where their log diverges from the
// leader's. Truncation happens at batch boundaries: the batch containing
// offset is removed whole, so the log end offset afterwards is the base
// offset of that batch (equal to offset in the normal case, where offset
// came from an epoch boundary). If offset is below the first segment, the
// log is emptied and restarts at offset. The epoch cache is trimmed to the
// new end. Offsets at or past the log end offset change nothing.
func (l *Log) TruncateTo(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrOffsetOutOfRange, offset)
	}
	if offset >= l.logEnd {
		return nil
	}
	now := l.now()
	if offset < l.segments[0].base || offset < l.logStart {
		return l.truncateFullyLocked(offset)
	}
	i := l.floorSegment(offset)
	gone := l.segments[i+1:]
	seg := l.segments[i]

	l.segsMu.Lock()
	defer l.segsMu.Unlock()
	pos, _, err := seg.positionOf(offset, seg.index.lookup(offset), seg.size)
	if err != nil {
		return l.fail("truncate", err)
	}
	if err := seg.log.Truncate(pos); err != nil {
		return l.fail("truncate", err)
	}
	seg.size = pos
	// Rebuild the segment's indexes and max timestamp from its headers:
	// exact, and truncation is rare enough that one segment scan is cheap.
	// The rebuilt entries are written to the emptied files right away (the
	// next flush fsyncs them).
	if _, err := seg.rebuild(l.cfg.Value(), false); err != nil {
		return l.fail("truncate", err)
	}
	if err := seg.txnIndex.truncateFrom(seg.nextOffset); err != nil {
		return l.fail("truncate", err)
	}
	if err := seg.persistIndexes(false); err != nil {
		return l.fail("truncate", err)
	}
	l.segments = l.segments[:i+1]
	l.truncations++
	l.setLogEnd(seg.nextOffset)
	l.recoveryPoint = min(l.recoveryPoint, l.logEnd)
	for _, s := range gone {
		if err := s.renameDeleted(l.fsys); err != nil {
			return l.fail("truncate", err)
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, at: now})
	}
	if err := l.epochs.truncateFromEnd(l.logEnd); err != nil {
		return l.fail("leader epoch checkpoint", err)
	}
	end := l.logEnd
	if err := l.deleteSnapshotsLocked(func(o int64) bool { return o > end }); err != nil {
		return l.fail("truncate", err)
	}
	return nil
}

// truncateFullyLocked deletes every segment and restarts the log, empty,
// at offset (which becomes both log start and log end offset).
// Lock should be held (appendMu).
func (l *Log) truncateFullyLocked(offset int64) error {
	now := l.now()
	gone := l.segments
	for _, s := range gone {
		if err := s.renameDeleted(l.fsys); err != nil {
			return l.fail("truncate", err)
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: s, at: now})
	}
	seg, err := newSegment(l.fsys, l.path, offset, l.cfg.Value(), now)
	if err != nil {
		return l.fail("truncate", err)
	}
	l.segsMu.Lock()
	l.segments = []*segment{seg}
	l.truncations++
	l.setLogStart(offset)
	l.setLogEnd(offset)
	l.recoveryPoint = offset
	l.segsMu.Unlock()
	if err := l.epochs.truncateFromEnd(-1); err != nil {
		return l.fail("leader epoch checkpoint", err)
	}
	if err := l.deleteSnapshotsLocked(func(int64) bool { return true }); err != nil {
		return l.fail("truncate", err)
	}
	return nil
}
