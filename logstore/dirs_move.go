package logstore

// Moving a partition's log to another log directory of the same broker
// while it keeps serving (AlterReplicaLogDirs, KIP-113 / KIP-858), as
// Kafka's ReplicaAlterLogDirsThread does, by copying files rather than
// re-appending batches, so indexes, the aborted-transaction index, the
// leader-epoch cache and producer snapshots arrive as they are:
//
//  1. The future directory <topic>-<partition>.<32 hex>-future is made in
//     the destination, and the rolled (immutable) segments' files are
//     copied into it without any log lock, round after round until (almost)
//     no rolled segment is left to copy.
//  2. Under the log's append lock (appends wait, reads go on) the log is
//     flushed, everything not copied yet (the active segment, segments
//     rolled or rewritten by truncation since, snapshots, the epoch
//     checkpoint, partition.metadata) is copied and fsynced, and copies of
//     segments that are gone from the source (retention) are dropped.
//  3. The future directory is renamed <topic>-<partition>, opened as a log
//     (its active segment recovered from the copy), and its segments
//     replace the Log's own: the same *Log now lives in the destination,
//     so callers holding it notice nothing but a short wait of appends.
//  4. The source directory is renamed *-delete and removed, with its
//     descriptors closed, file.delete.delay.ms later (reads in flight
//     finish first), or at Close.
//
// A crash before 3 leaves a -future directory, which the next OpenDir
// removes (the broker, having noted it, starts the move again, as Kafka
// resumes it); between 3 and 4 both directories are complete, identical
// copies. The log is not cleaned while
// it moves.
//
// A MovePace (the broker's replica.alter.log.dirs.io.max.bytes.per.second)
// throttles step 1, the bulk of the copy, chunk by chunk; step 2 is not
// throttled, as it holds the log's append lock.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrMoveStopped is returned by MoveLog when its stop channel closed
// first; the log stays where it was and the copy is removed.
var ErrMoveStopped = errors.New("logstore: log move stopped")

// futureSuffix ends the name of a directory a log is being copied into.
const futureSuffix = "-future"

// movedAway is a source directory whose log moved: its segments are closed
// and its files removed once due.
type movedAway struct {
	segs []*segment
	path string
	due  time.Time
}

// MovePace throttles the copy of a MoveLog: before each chunk of at most
// Chunk(max) bytes the copy waits Wait(now), and it Records the bytes
// after.
type MovePace interface {
	Chunk(max int) int
	Wait(now time.Time) time.Duration
	Record(n int, now time.Time)
}

// MoveLog moves tp's open log from d to dest (see the file comment).
// progress, if not nil, is told the bytes and offset copied. It returns
// ErrMoveStopped when stop closes first, and any I/O error (wrapping
// ErrKafkaStorage) with the log left where it was.
func (d *Dir) MoveLog(tp TopicPartition, dest *Dir, stop <-chan struct{}, progress func(bytes, offset int64)) error {
	return d.MoveLogPaced(tp, dest, stop, progress, nil)
}

// MoveLogPaced is MoveLog with the copy of rolled segments throttled by
// pace (nil: not throttled).
func (d *Dir) MoveLogPaced(tp TopicPartition, dest *Dir, stop <-chan struct{}, progress func(bytes, offset int64), pace MovePace) error {
	if dest == d {
		return nil
	}
	if progress == nil {
		progress = func(int64, int64) {}
	}
	l := d.Log(tp)
	if l == nil {
		return fmt.Errorf("%w: %s is not open in %s", ErrLogClosed, tp, d.path)
	}
	// No cleaning pass starts while the log moves; wait for one running.
	for {
		d.mu.Lock()
		if !d.cleaning[tp] {
			if d.cleaning == nil {
				d.cleaning = make(map[TopicPartition]bool)
			}
			d.cleaning[tp] = true
			d.mu.Unlock()
			break
		}
		d.mu.Unlock()
		select {
		case <-stop:
			return ErrMoveStopped
		case <-time.After(50 * time.Millisecond):
		}
	}
	defer func() {
		d.mu.Lock()
		delete(d.cleaning, tp)
		d.mu.Unlock()
	}()

	var u [16]byte
	_, _ = rand.Read(u[:])
	future := filepath.Join(dest.path, fmt.Sprintf("%s.%s%s", tp, hex.EncodeToString(u[:]), futureSuffix))
	if err := dest.fsys.MkdirAll(future, 0o755); err != nil {
		return fmt.Errorf("%w: create %s: %v", ErrKafkaStorage, future, err)
	}
	done := false
	defer func() {
		if !done {
			dest.fsys.RemoveAll(future)
		}
	}()
	m := &mover{l: l, src: d, dest: dest, future: future, copied: map[*segment]bool{}, progress: progress, pace: pace, stop: stop}

	// 1. Rolled segments, without locks, until few are left (a writer
	// faster than the copy is caught by the last step, under the lock).
	for round := 0; ; round++ {
		select {
		case <-stop:
			return ErrMoveStopped
		default:
		}
		l.segsMu.RLock()
		if l.closed {
			l.segsMu.RUnlock()
			return ErrLogClosed
		}
		var todo []*segment
		for _, s := range l.segments[:len(l.segments)-1] {
			if !m.copied[s] {
				todo = append(todo, s)
			}
		}
		m.truncations = l.truncations
		l.segsMu.RUnlock()
		if len(todo) == 0 || (round >= 8 && len(todo) <= 4) || round >= 32 {
			break
		}
		for _, s := range todo {
			if err := m.copySegment(s); err != nil {
				if errors.Is(err, ErrMoveStopped) {
					return err
				}
				if isNotExist(err) {
					continue // deleted by retention meanwhile
				}
				return err
			}
			m.copied[s] = true
			m.bytes += s.size
			m.offset = max(m.offset, s.nextOffset)
			progress(m.bytes, m.offset)
		}
	}

	// 2-4 under the checkpoint locks (one move runs at a time per node,
	// the broker's job) and the log's append lock.
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	dest.ckMu.Lock()
	defer dest.ckMu.Unlock()
	l.appendMu.Lock()
	err := m.finish()
	l.appendMu.Unlock()
	if err != nil {
		return err
	}
	done = true
	return nil
}

// mover is the state of one MoveLog.
type mover struct {
	l           *Log
	src, dest   *Dir
	future      string
	copied      map[*segment]bool
	truncations uint64
	bytes       int64
	offset      int64
	progress    func(bytes, offset int64)
	pace        MovePace
	stop        <-chan struct{}
}

// copySegment copies a rolled segment's files into the future directory.
func (m *mover) copySegment(s *segment) error {
	for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		limit := int64(-1)
		if suffix == logSuffix {
			limit = s.size
		}
		err := copyFileBetween(m.src.fsys, m.dest.fsys, s.path(suffix), filepath.Join(m.future, segmentName(s.base)+suffix), limit, m.pace, m.stop)
		if err != nil && !(suffix != logSuffix && isNotExist(err)) {
			return err
		}
	}
	return nil
}

// finish copies what is left and swaps the copy in. Lock should be held
// (appendMu, and both Dirs' ckMu).
func (m *mover) finish() error {
	l := m.l
	if l.closed {
		return ErrLogClosed
	}
	if l.writeErr != nil {
		return l.writeErr
	}
	if err := l.flushLocked(); err != nil {
		return err
	}
	l.segsMu.RLock()
	segs := append([]*segment(nil), l.segments...)
	truncated := l.truncations != m.truncations
	srcPath := l.path
	logStart, logEnd := l.logStart, l.logEnd
	l.segsMu.RUnlock()
	if truncated {
		m.copied = map[*segment]bool{}
	}
	keep := map[string]bool{}
	for i, s := range segs {
		for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			keep[segmentName(s.base)+suffix] = true
		}
		if m.copied[s] && i < len(segs)-1 {
			continue
		}
		if err := m.copySegment(s); err != nil {
			return err
		}
	}
	// Copies of segments gone from the source.
	entries, err := m.dest.fsys.ReadDir(m.future)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	for _, e := range entries {
		if !keep[e.Name()] {
			m.dest.fsys.Remove(filepath.Join(m.future, e.Name()))
		}
	}
	// Every other file of the partition: snapshots, epoch checkpoint,
	// partition.metadata.
	entries, err = m.src.fsys.ReadDir(srcPath)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || keep[name] || strings.HasSuffix(name, deletedSuffix) || strings.HasSuffix(name, cleanedSuffix) ||
			strings.HasSuffix(name, swapSuffix) || strings.HasSuffix(name, ".tmp") {
			continue
		}
		if err := copyFileBetween(m.src.fsys, m.dest.fsys, filepath.Join(srcPath, name), filepath.Join(m.future, name), -1, nil, nil); err != nil && !isNotExist(err) {
			return err
		}
	}
	if err := syncDir(m.dest.fsys, m.future); err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	final := filepath.Join(m.dest.path, l.tp.String())
	if err := m.dest.fsys.Rename(m.future, final); err != nil {
		return fmt.Errorf("%w: rename %s: %v", ErrKafkaStorage, m.future, err)
	}
	if err := syncDir(m.dest.fsys, m.dest.path); err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	nl, _, err := openLog(logOpenParams{dir: m.dest, tp: l.tp, topicID: l.topicID, cfg: l.cfg.Value(),
		recoveryPoint: logEnd, logStart: logStart, clean: false})
	if err == nil && (nl.logEnd != logEnd || nl.logStart != logStart) {
		for _, s := range nl.segments {
			s.close()
		}
		err = fmt.Errorf("%w: the copy of %s ends at %d (start %d), the log at %d (start %d)",
			ErrKafkaStorage, l.tp, nl.logEnd, nl.logStart, logEnd, logStart)
	}
	if err != nil {
		// The source is untouched; the copy goes.
		m.dest.fsys.RemoveAll(final)
		return err
	}

	l.segsMu.Lock()
	old := l.segments
	for _, p := range l.pendingDeletes {
		old = append(old, p.seg)
	}
	l.pendingDeletes = nil
	for _, s := range old {
		retireFile(s.log, "") // pinned: their directory is renamed below
	}
	l.segments, l.path, l.epochs, l.recoveryPoint = nl.segments, nl.path, nl.epochs, nl.recoveryPoint
	l.fsys = nl.fsys
	l.segsMu.Unlock()
	l.onLogStartChange = m.dest.checkpointLogStartOffsets
	if m.dest.onStorage != nil {
		l.onStorageError.Store(&m.dest.onStorage)
	} else {
		l.onStorageError.Store(nil)
	}
	m.dest.watchDeletes(l)

	// The Dirs' bookkeeping: the log, its checkpoint values and its
	// cleaner checkpoint move to dest.
	m.src.mu.Lock()
	delete(m.src.logs, l.tp)
	hw, hwOK := m.src.highWatermarks[l.tp]
	delete(m.src.recoveryPoints, l.tp)
	delete(m.src.highWatermarks, l.tp)
	delete(m.src.logStartOffsets, l.tp)
	m.src.mu.Unlock()
	m.dest.mu.Lock()
	m.dest.logs[l.tp] = l
	m.dest.recoveryPoints[l.tp] = nl.recoveryPoint
	m.dest.logStartOffsets[l.tp] = logStart
	if hwOK {
		m.dest.highWatermarks[l.tp] = hw
	}
	m.dest.mu.Unlock()
	if cps, err := m.src.CleanerCheckpoints(); err == nil {
		if off, ok := cps[l.tp]; ok {
			m.dest.updateCleanerCheckpointLocked(l.tp, off)
		}
	}
	m.src.updateCleanerCheckpointLocked(l.tp, -1)

	// The source goes away, its descriptors closed when due.
	var u [16]byte
	_, _ = rand.Read(u[:])
	gone := filepath.Join(m.src.path, fmt.Sprintf("%s.%s-delete", l.tp, hex.EncodeToString(u[:])))
	if err := m.src.fsys.Rename(srcPath, gone); err != nil {
		m.src.logger.Warn("logstore: moved log's old directory not renamed for deletion", "dir", srcPath, "err", err)
		gone = srcPath
	}
	syncDir(m.src.fsys, m.src.path)
	m.src.delMu.Lock()
	m.src.movedAway = append(m.src.movedAway, movedAway{segs: old, path: gone, due: m.src.now().Add(time.Duration(l.cfg.Value().FileDeleteDelayMs) * time.Millisecond)})
	m.src.delMu.Unlock()
	select {
	case m.src.deletesNoticed <- struct{}{}:
	default:
	}
	m.progress(nl.Size(), logEnd)
	return nil
}

// removeMovedAway closes and removes the moved-away directories due by now
// (all if now is zero) and returns when the next one is due.
func (d *Dir) removeMovedAway(now time.Time) (next time.Time, err error) {
	d.delMu.Lock()
	var due []movedAway
	kept := d.movedAway[:0]
	for _, m := range d.movedAway {
		if now.IsZero() || !m.due.After(now) {
			due = append(due, m)
			continue
		}
		kept = append(kept, m)
		if next.IsZero() || m.due.Before(next) {
			next = m.due
		}
	}
	d.movedAway = kept
	d.delMu.Unlock()
	var errs []error
	for _, m := range due {
		for _, s := range m.segs {
			s.close()
		}
		if strings.HasSuffix(m.path, "-delete") {
			if err := d.fsys.RemoveAll(m.path); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return next, errors.Join(errs...)
}

// removeFutureDirs removes the -future directories of moves a previous
// process did not finish (OpenDir).
func removeFutureDirs(fsys FS, path string, entries []os.DirEntry) {
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), futureSuffix) {
			fsys.RemoveAll(filepath.Join(path, e.Name()))
		}
	}
}

// copyFileBetween copies src (its first limit bytes; all if limit < 0) to
// dst and fsyncs dst, chunk by chunk as pace allows (nil: at once); it
// returns ErrMoveStopped if stop closes while it waits.
func copyFileBetween(srcFS, dstFS FS, src, dst string, limit int64, pace MovePace, stop <-chan struct{}) error {
	in, err := srcFS.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if limit < 0 {
		fi, err := in.Stat()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
		limit = fi.Size()
	}
	out, err := dstFS.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	buf := make([]byte, 1<<20)
	var off int64
	for off < limit {
		n := int(min(int64(len(buf)), limit-off))
		if pace != nil {
			if err := paceWait(pace, stop); err != nil {
				out.Close()
				return err
			}
			n = max(1, min(n, pace.Chunk(n)))
		}
		r, rerr := in.ReadAt(buf[:n], off)
		if pace != nil {
			pace.Record(r, time.Now())
		}
		if r > 0 {
			if _, werr := out.WriteAt(buf[:r], off); werr != nil {
				out.Close()
				return fmt.Errorf("%w: write %s: %v", ErrKafkaStorage, dst, werr)
			}
			off += int64(r)
		}
		if rerr != nil {
			if rerr == io.EOF && off >= limit {
				break
			}
			out.Close()
			if rerr == io.EOF {
				return fmt.Errorf("%w: %s is shorter than %d bytes", ErrKafkaStorage, src, limit)
			}
			return fmt.Errorf("%w: read %s: %v", ErrKafkaStorage, src, rerr)
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	return out.Close()
}

// paceWait waits until pace lets a copy go on, or stop closes
// (ErrMoveStopped).
func paceWait(pace MovePace, stop <-chan struct{}) error {
	for {
		d := pace.Wait(time.Now())
		if d <= 0 {
			return nil
		}
		t := time.NewTimer(d)
		select {
		case <-stop:
			t.Stop()
			return ErrMoveStopped
		case <-t.C:
		}
	}
}
