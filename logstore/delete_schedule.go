package logstore

import (
	"errors"
	"strings"
	"time"
)

// Segment files renamed *.deleted — by retention and DeleteRecords, by
// truncation, by a cleaner swap — are removed file.delete.delay.ms after
// the rename, as Kafka's scheduler does, not at the next retention check
// (log.retention.check.interval.ms, 5 minutes by default), which would
// leave a cleaned or trimmed partition's old bytes on disk that long.
//
// The Dir keeps the set of logs with a pending deletion, so the work is
// proportional to the pending deletions, never to the partitions:
//
//   - every Log a Dir opens writes through a deleteNoticeFS, so whichever
//     path renames a segment's .log to *.deleted puts the log in the set
//     and signals DeletesNoticed (a changed file.delete.delay.ms does the
//     same, so a shorter delay takes effect at once);
//   - RemoveDueDeletes, which the broker calls when DeletesNoticed fires
//     and when the time it last returned comes, visits only the logs in
//     the set, removes what is due and reports when the next removal is.
//
// Reads resolve to a segment's open descriptor and read it without a lock
// (read.go, sendfile.go); closing it under a read turns the read into
// OFFSET_OUT_OF_RANGE, which is wrong when a cleaner swap replaced the
// segment by one holding the same offsets. Unlinking does not disturb an
// open descriptor, so the files are unlinked when due, and the descriptor
// is closed (freeing the blocks) no sooner than deletedCloseGrace after the
// rename: with file.delete.delay.ms=0 the files vanish at once and reads
// already holding them still finish.
//
// Pending deletions at Close (or a crash) leave their *.deleted files,
// which the next open removes (scanPartitionDir), as Kafka's log loader
// does.

// deletedCloseGrace is the least time between renaming a segment *.deleted
// and closing its descriptor, for reads that resolved to it just before.
const deletedCloseGrace = 5 * time.Second

// deleteNoticeFS is the FS of a Log opened by a Dir: a successful rename
// of a .log to *.deleted calls notice. It is called with the Log's
// appendMu held, so it takes only Dir.delMu.
type deleteNoticeFS struct {
	FS
	notice func()
}

func (f deleteNoticeFS) Rename(oldpath, newpath string) error {
	err := f.FS.Rename(oldpath, newpath)
	if err == nil && strings.HasSuffix(newpath, logSuffix+deletedSuffix) {
		f.notice()
	}
	return err
}

// watchDeletes makes l report its pending deletions to d. Called by Open
// before l is published.
func (d *Dir) watchDeletes(l *Log) {
	note := func() { d.notePendingDelete(l) }
	l.fsys = deleteNoticeFS{FS: l.fsys, notice: note}
	l.notePendingDelete = note
}

// notePendingDelete puts l in the set of logs with pending deletions and
// wakes the caller of RemoveDueDeletes. Lock order: Dir.delMu is a leaf.
func (d *Dir) notePendingDelete(l *Log) {
	d.delMu.Lock()
	if d.pendingLogs == nil {
		d.pendingLogs = make(map[*Log]bool)
	}
	d.pendingLogs[l] = true
	d.delMu.Unlock()
	select {
	case d.deletesNoticed <- struct{}{}:
	default:
	}
}

// DeletesNoticed receives when a segment was renamed *.deleted or a log
// with pending deletions changed its file.delete.delay.ms since the last
// receive: the caller should call RemoveDueDeletes.
func (d *Dir) DeletesNoticed() <-chan struct{} { return d.deletesNoticed }

// RemoveDueDeletes removes the *.deleted files whose file.delete.delay.ms
// (the log's current value) has passed since their rename, closing their
// descriptors once deletedCloseGrace has passed too. It visits only the
// logs with pending deletions and returns when the next one falls due, or
// the zero time if none is pending. A removal that fails is reported and
// not retried: the next open removes the file.
func (d *Dir) RemoveDueDeletes(now time.Time) (next time.Time, err error) {
	d.delMu.Lock()
	logs := make([]*Log, 0, len(d.pendingLogs))
	for l := range d.pendingLogs {
		logs = append(logs, l)
		d.pendingLogs[l] = false // set again by a rename from now on
	}
	d.delMu.Unlock()
	var errs []error
	for _, l := range logs {
		due, err := l.removeDueDeletes(now)
		if err != nil {
			errs = append(errs, err)
		}
		d.delMu.Lock()
		if due.IsZero() && !d.pendingLogs[l] {
			delete(d.pendingLogs, l)
		}
		d.delMu.Unlock()
		if !due.IsZero() && (next.IsZero() || due.Before(next)) {
			next = due
		}
	}
	if due, err := d.removeMovedAway(now); err != nil {
		errs = append(errs, err)
	} else if !due.IsZero() && (next.IsZero() || due.Before(next)) {
		next = due
	}
	return next, errors.Join(errs...)
}
