package logstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// This file rewrites one group of segments and swaps the result in, with
// Kafka's crash-safe protocol (LocalLog.replaceSegments):
//
//  1. the cleaned segment is written as <base>.log.cleaned with
//     .index.cleaned, .timeindex.cleaned and .txnindex.cleaned (always all
//     three, the .txnindex possibly empty), and every file is fsynced;
//  2. the index files are renamed to *.swap, then the .log: a
//     <base>.log.swap is the commit point, and the directory is fsynced;
//  3. the replaced segments' files are renamed *.deleted (removed
//     file.delete.delay.ms later, so reads holding them finish);
//  4. the *.swap files are renamed to their final names, the .log last,
//     and the directory is fsynced.
//
// Opening the log (recoverCleanerFiles, called before the directory is
// read) deletes *.cleaned files — a pass that had not committed — and
// completes every swap whose <base>.log.swap exists: its index files
// replace whatever has their name, the segments whose base is in
// [base, the swap's next offset) are deleted, and the .log.swap is
// renamed. So a crash anywhere leaves the old segments or the new one,
// never both and never neither.

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// errCleanAbandoned: the log changed between reading a group and swapping
// it in; the cleaned files are removed and the group is left as it was.
var errCleanAbandoned = errors.New("logstore: log changed during cleaning")

// cleanHooks lets tests fail or stop a swap at each step (the steps are
// listed in cleaner_crash_test.go's cleanSteps). nil in production; a
// binary built with -tags sluice_failpoints sets it from SLUICE_FAILPOINT
// (failpoint_on.go).
var cleanHooks func(step string) error

func cleanHook(step string) error {
	if cleanHooks == nil {
		return nil
	}
	return cleanHooks(step)
}

// cleanPass holds what one Cleaner.Clean call uses across its groups.
type cleanPass struct {
	l                 *Log
	m                 *offsetMap
	cfg               Config
	mapEnd            int64
	nowMs             int64
	deleteRetentionMs int64
	active            map[int64]ActiveProducer // CleanOptions.ActiveProducers' answer, when activeKnown
	activeKnown       bool
	lastData          map[int64]int64 // lastProducerBatches, when !activeKnown
	txns              *txnTracker
	truncations       uint64 // Log.truncations when the pass read the segment list
	thr               *passThrottle
	stop              <-chan struct{}
	writeBuffer       int   // CleanOptions.WriteBufferSize
	latestHorizon     int64 // latest delete horizon of a batch written, -1 if none
}

// cleanGroup rewrites the segments of g into one and swaps it in.
func (p *cleanPass) cleanGroup(g []cleanSegment, stats *CleanStats) error {
	l := p.l
	base := g[0].seg.base
	ns, err := newCleanedSegment(l.fsys, l.path, base, p.cfg)
	if err != nil {
		return fmt.Errorf("%w: clean %s: %v", ErrKafkaStorage, l.tp, err)
	}
	// Until the swap starts replacing files, a failure removes the new
	// files; after that, the log has failed (read-only until reopened) and
	// the next open completes the swap from the *.swap files.
	ok, keepFiles := false, false
	defer func() {
		if !ok {
			ns.close()
			if !keepFiles {
				removeSegmentFiles(l.fsys, l.path, base, cleanedSuffix)
				removeSegmentFiles(l.fsys, l.path, base, swapSuffix)
			}
		}
	}()
	p.txns.cleanedIndex = nil
	var buf, out, pending []byte
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		err := ns.appendCleaned(pending, p.cfg)
		pending = pending[:0]
		if err != nil {
			return fmt.Errorf("%w: clean %s: %v", ErrKafkaStorage, l.tp, err)
		}
		return nil
	}
	var read, records, retained int64
	lastModified := g[0].seg.lastModified
	for _, s := range g {
		read += s.size
		lastModified = later(lastModified, s.seg.lastModified)
		for pos := int64(0); pos < s.size; {
			b, h, err := readBatchAt(s.seg, pos, s.size, &buf)
			if err != nil {
				if closed, truncated := l.cleanState(p.truncations); closed {
					return ErrLogClosed
				} else if truncated {
					return errCleanAbandoned
				}
				return fmt.Errorf("clean %s segment %d at %d: %w", l.tp, s.seg.base, pos, err)
			}
			pos += h.size()
			var n, kept int
			out, n, kept, err = p.filterBatch(out[:0], b, h)
			if err != nil {
				return fmt.Errorf("clean %s segment %d batch %d: %w", l.tp, s.seg.base, h.BaseOffset, err)
			}
			records += int64(n)
			retained += int64(kept)
			p.thr.count(h.size() + int64(len(out)))
			if stopped(p.stop) {
				return ErrCleanStopped
			}
			if len(out) == 0 {
				continue
			}
			// Cleaned batches gather in the write buffer; one that would
			// overflow it goes out first (a batch larger than the whole
			// buffer is written alone).
			if len(pending) > 0 && len(pending)+len(out) > p.writeBuffer {
				if err := flush(); err != nil {
					return err
				}
			}
			if len(pending) == 0 && len(out) >= p.writeBuffer {
				if err := ns.appendCleaned(out, p.cfg); err != nil {
					return fmt.Errorf("%w: clean %s: %v", ErrKafkaStorage, l.tp, err)
				}
				continue
			}
			pending = append(pending, out...)
		}
	}
	if err := flush(); err != nil {
		return err
	}
	ns.lastModified = lastModified
	ns.txnIndex.entries = append(ns.txnIndex.entries, p.txns.cleanedIndex...)
	if err := ns.commitCleaned(); err != nil {
		return fmt.Errorf("%w: clean %s: %v", ErrKafkaStorage, l.tp, err)
	}
	if err := l.swapIn(g, ns, p.truncations); err != nil {
		// A closed log keeps its committed *.swap files too: the next
		// open completes the swap (removing them here could race with
		// that open's recovery).
		keepFiles = !errors.Is(err, errCleanAbandoned)
		if errors.Is(err, ErrLogClosed) {
			removeSegmentFiles(l.fsys, l.path, base, cleanedSuffix)
		}
		return err
	}
	ok = true
	stats.SegmentsBefore += len(g)
	stats.SegmentsAfter++
	stats.BytesRead += read
	stats.BytesWritten += ns.size
	stats.RecordsRead += records
	stats.RecordsRetained += retained
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// filterBatch appends to out what is left of batch b (header h): nothing,
// the batch as it was, or the batch rebuilt (appendFilteredBatch). It
// returns the number of records read and kept. The rules are Kafka's
// (LogCleaner's checkBatchRetention and shouldRetainRecord, magic v2):
//
//   - aborted transactional data goes;
//   - a data record stays when it has a key and is the latest for it (its
//     offset at or above the map's) or lies past the mapped section; a
//     tombstone stays until its batch's delete horizon has passed, and a
//     batch keeping a tombstone gets a horizon (now + delete.retention.ms)
//     when it has none;
//   - a transaction marker stays while its transaction has data in the
//     log; then it gets a horizon and goes once that has passed;
//   - the last batch of each active producer stays, emptied if need be,
//     so its producer state survives (lastOfProducer); other batches left
//     empty go.
func (p *cleanPass) filterBatch(out, b []byte, h BatchHeader) ([]byte, int, int, error) {
	control := h.Attributes&attrControl != 0
	hasHorizon := h.Attributes&attrDeleteHorizon != 0
	horizonPassed := hasHorizon && h.BaseTimestamp <= p.nowMs
	recs, err := batchRecords(b, h)
	if err != nil {
		return nil, 0, 0, err
	}
	var discardable bool
	if control {
		discardable = p.txns.onControl(h, controlType(recs))
	} else {
		discardable = p.txns.onBatch(h)
	}
	discardRecords := discardable
	if control {
		discardRecords = discardable && horizonPassed
	}
	retainEmpty := p.lastOfProducer(h, control)

	kept := recs[:0:0]
	tombstones := false
	if !discardRecords {
		if control {
			kept = recs
		} else {
			kept = make([]cleanRecord, 0, len(recs))
			for _, r := range recs {
				if !r.hasKey {
					continue
				}
				if r.offset < p.mapEnd && r.offset < p.m.get(r.key) {
					continue // a later record of the key is in the map
				}
				if !r.hasValue {
					if horizonPassed {
						continue
					}
					tombstones = true
				}
				kept = append(kept, r)
			}
		}
	}
	horizon := int64(-1)
	if !hasHorizon && (tombstones || (control && discardable)) {
		horizon = p.nowMs + p.deleteRetentionMs
	}
	// A batch left holding tombstones or a removable marker until its
	// delete horizon (given now, or given earlier and not passed yet):
	// the manager reschedules the log once the latest such horizon has
	// passed (KIP-534). A kept batch whose horizon has already passed
	// does not count, as another pass would not remove anything of it.
	if len(kept) > 0 && (tombstones || control) {
		if horizon >= 0 {
			p.latestHorizon = max(p.latestHorizon, horizon)
		} else if hasHorizon && !horizonPassed {
			p.latestHorizon = max(p.latestHorizon, h.BaseTimestamp)
		}
	}
	switch {
	case len(kept) == len(recs) && len(recs) > 0 && horizon < 0:
		return append(out, b...), len(recs), len(kept), nil
	case len(kept) == 0 && !retainEmpty:
		return out, len(recs), 0, nil
	}
	if hasHorizon && len(kept) > 0 {
		// Keep the horizon the batch already has.
		out, err = appendFilteredBatch(out, h, kept, h.BaseTimestamp, p.cfg)
	} else {
		out, err = appendFilteredBatch(out, h, kept, horizon, p.cfg)
	}
	return out, len(recs), len(kept), err
}

// newCleanedSegment creates the <base>.*.cleaned files of a new segment.
func newCleanedSegment(fsys FS, dir string, base int64, cfg Config) (*segment, error) {
	name := filepath.Join(dir, segmentName(base))
	s := &segment{base: base, dir: dir, fsys: fsys, nextOffset: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1,
		rollTimestamp: -1, created: time.Now(), lastModified: time.Now()}
	s.index = newOffsetIndex(dir, base, cfg.SegmentIndexBytes)
	s.index.file.suffix = indexSuffix + cleanedSuffix
	s.timeIndex = newTimeIndex(dir, base, cfg.SegmentIndexBytes)
	s.timeIndex.file.suffix = timeIndexSuffix + cleanedSuffix
	s.txnIndex = &txnIndex{fsys: fsys, file: indexFile{dir: dir, base: base, suffix: txnIndexSuffix + cleanedSuffix, entrySize: txnIndexEntrySize}}
	var err error
	if s.log, err = fsys.OpenFile(name+logSuffix+cleanedSuffix, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
		return nil, err
	}
	if err := errors.Join(s.index.reset(fsys), s.timeIndex.reset(fsys), s.txnIndex.file.reset(fsys)); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// appendCleaned writes batches to the end of a segment being built and
// indexes them.
func (s *segment) appendCleaned(batches []byte, cfg Config) error {
	if _, err := s.log.WriteAt(batches, s.size); err != nil {
		return err
	}
	for b := batches; len(b) > 0; {
		h := parseHeader(b)
		if err := s.indexBatch(s.size, h, cfg); err != nil {
			return err
		}
		b = b[h.size():]
	}
	return nil
}

// commitCleaned finishes a cleaned segment: its last time-index entry,
// every file written and fsynced (step 1), then renamed to *.swap, the
// .log last, and the directory fsynced (step 2).
func (s *segment) commitCleaned() error {
	s.finalize()
	if err := s.log.Sync(); err != nil {
		return err
	}
	if err := s.persistIndexes(true); err != nil {
		return err
	}
	if err := cleanHook("cleaned"); err != nil {
		return err
	}
	name := filepath.Join(s.dir, segmentName(s.base))
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
		if err := s.fsys.Rename(name+suf+cleanedSuffix, name+suf+swapSuffix); err != nil {
			return err
		}
		if suf == timeIndexSuffix {
			if err := cleanHook("swap-partial"); err != nil {
				return err
			}
		}
	}
	fileRenamed(s.log, name+logSuffix+swapSuffix)
	s.index.file.suffix = indexSuffix + swapSuffix
	s.timeIndex.file.suffix = timeIndexSuffix + swapSuffix
	s.txnIndex.file.suffix = txnIndexSuffix + swapSuffix
	return syncDir(s.fsys, s.dir)
}

// swapIn replaces the segments of g by ns (steps 3 and 4), unless the log
// changed since g was read.
func (l *Log) swapIn(g []cleanSegment, ns *segment, truncations uint64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.truncations != truncations {
		return errCleanAbandoned
	}
	first := -1
	for i, s := range l.segments {
		if s == g[0].seg {
			first = i
			break
		}
	}
	if first < 0 || first+len(g) >= len(l.segments) {
		return errCleanAbandoned
	}
	for j, c := range g {
		s := l.segments[first+j]
		if s != c.seg || s.size != c.size || len(s.txnIndex.entries) != c.txnCount {
			return errCleanAbandoned
		}
	}
	if err := cleanHook("swap"); err != nil {
		return l.fail("clean swap", err)
	}
	now := l.now()
	for j, c := range g {
		if err := c.seg.renameDeleted(l.fsys); err != nil {
			return l.fail("clean swap", err)
		}
		l.pendingDeletes = append(l.pendingDeletes, pendingDelete{seg: c.seg, at: now})
		if j == 0 {
			if err := cleanHook("deleted-partial"); err != nil {
				return l.fail("clean swap", err)
			}
		}
	}
	if err := cleanHook("deleted"); err != nil {
		return l.fail("clean swap", err)
	}
	name := filepath.Join(l.path, segmentName(ns.base))
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix, logSuffix} {
		if err := l.fsys.Rename(name+suf+swapSuffix, name+suf); err != nil {
			return l.fail("clean swap", err)
		}
		if suf == txnIndexSuffix {
			if err := cleanHook("final-partial"); err != nil {
				return l.fail("clean swap", err)
			}
		}
	}
	fileRenamed(ns.log, name+logSuffix)
	ns.index.file.suffix = indexSuffix
	ns.timeIndex.file.suffix = timeIndexSuffix
	ns.txnIndex.file.suffix = txnIndexSuffix
	if err := syncDir(l.fsys, l.path); err != nil {
		return l.fail("clean swap", err)
	}
	l.segsMu.Lock()
	segs := make([]*segment, 0, len(l.segments)-len(g)+1)
	segs = append(segs, l.segments[:first]...)
	segs = append(segs, ns)
	segs = append(segs, l.segments[first+len(g):]...)
	l.segments = segs
	l.segsMu.Unlock()
	_ = cleanHook("done")
	return nil
}

// cleanState reports whether the log was closed, and whether it was
// truncated since Log.truncations was n: a read error of a pass is then
// no fault of the log's files.
func (l *Log) cleanState(n uint64) (closed, truncated bool) {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	return l.closed, l.truncations != n
}

// removeSegmentFiles removes the files of segment base with the given
// suffix after their usual one (.cleaned or .swap).
func removeSegmentFiles(fsys FS, dir string, base int64, suffix string) {
	name := filepath.Join(dir, segmentName(base))
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		_ = fsys.Remove(name + suf + suffix)
	}
}
