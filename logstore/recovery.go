package logstore

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unique"
)

// RecoveryStats counts the work done by crash recovery since OpenDir.
type RecoveryStats struct {
	SegmentsScanned int64 // segments whose batches were read and checked
	BytesTruncated  int64 // bytes cut from torn or corrupt tails, including dropped segments
}

// logOpenParams is what a Dir knows about a partition when opening it.
type logOpenParams struct {
	dir           *Dir
	tp            TopicPartition
	topicID       [16]byte
	cfg           Config
	recoveryPoint int64 // from recovery-point-offset-checkpoint, 0 if absent
	logStart      int64 // from log-start-offset-checkpoint, 0 if absent
	clean         bool  // the directory was shut down cleanly
	preload       bool  // loadLogs: load from disk even if a loaded log waits
}

// loadLogs opens every partition directory of d with threads goroutines
// (num.recovery.threads.per.data.dir; at least one), as Kafka's
// LogManager.loadLogs does at start: after a clean shutdown each log is
// loaded as it is; after a crash the segments past each log's recovery
// point are recovered (see openLog). It runs in OpenDir, before anything
// else can reach d. The logs wait in d.loaded, with cfg, until Dir.Open
// adopts them (openLog). A log that fails is offline, exactly as if
// Dir.Open had failed to open it; a directory without partition.metadata
// is left for Dir.Open, which knows the topic id to write.
func (d *Dir) loadLogs(entries []os.DirEntry, threads int, cfg Config) {
	if !loadAtOpenDir {
		return
	}
	var tps []TopicPartition
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if tp, ok := parsePartitionDir(e.Name()); ok {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return
	}
	threads = max(1, min(threads, len(tps)))
	// Each goroutine takes the next partition by index and keeps what it
	// loads to itself; the results are merged under the lock once.
	type result struct {
		loaded  map[TopicPartition]loadedLog
		offline map[TopicPartition]error
		stats   RecoveryStats
	}
	results := make([]result, threads)
	var next atomic.Int64
	var wg sync.WaitGroup
	norm := cfg.normalized()
	for w := range results {
		wg.Add(1)
		go func(r *result) {
			defer wg.Done()
			r.loaded = make(map[TopicPartition]loadedLog, len(tps)/threads+1)
			for i := next.Add(1) - 1; i < int64(len(tps)); i = next.Add(1) - 1 {
				tp := tps[i]
				l, from, stats, err := loadLog(logOpenParams{dir: d, tp: tp, cfg: cfg, preload: true,
					recoveryPoint: d.recoveryPoints[tp], logStart: d.logStartOffsets[tp], clean: d.hadClean})
				r.stats.SegmentsScanned += stats.SegmentsScanned
				r.stats.BytesTruncated += stats.BytesTruncated
				switch {
				case err != nil:
					if r.offline == nil {
						r.offline = make(map[TopicPartition]error)
					}
					r.offline[tp] = err
				case l != nil:
					r.loaded[tp] = loadedLog{log: l, cfg: norm, recoveredFrom: from}
				}
			}
		}(&results[w])
	}
	wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loaded = make(map[TopicPartition]loadedLog, len(tps))
	for _, r := range results {
		d.stats.SegmentsScanned += r.stats.SegmentsScanned
		d.stats.BytesTruncated += r.stats.BytesTruncated
		maps.Copy(d.loaded, r.loaded)
		for tp, err := range r.offline {
			d.takeOffline(tp, err)
		}
	}
}

// loadAtOpenDir is turned off only by TestReopenManyLogsTimed, to
// measure in the same run the start-up before loadLogs: every log loaded by
// its Dir.Open, one at a time.
var loadAtOpenDir = true

// takeOffline notes that tp's log failed to open with err and logs it
// once. Lock should be held (mu).
func (d *Dir) takeOffline(tp TopicPartition, err error) error {
	path := filepath.Join(d.path, tp.String())
	err = fmt.Errorf("%w: %s: %w", ErrLogOffline, path, err)
	d.offline[tp] = err
	d.logger.Error("logstore: partition log failed to open; it is offline and its files are kept as they are until the next start",
		"partition", tp.String(), "dir", path, "err", err)
	return err
}

// loadedLog is a log loadLogs loaded: the configuration it was loaded
// with and the base of the first segment crash recovery rebuilt (-1:
// none).
type loadedLog struct {
	log           *Log
	cfg           Config
	recoveredFrom int64
}

// adoptLoaded hands the log loadLogs opened to Dir.Open: the topic id
// asked for is checked against the stored one as ensureTopicID does, and
// the configuration asked for replaces the one it was loaded with. If
// crash recovery rebuilt indexes with another index.interval.bytes than
// the log's own, the indexes of those segments are built again with it, so
// the log is indexed as if Dir.Open had recovered it. Lock should be held
// (mu).
func (d *Dir) adoptLoaded(ll loadedLog, p logOpenParams) (*Log, RecoveryStats, error) {
	l := ll.log
	var zero [16]byte
	if p.topicID != zero && l.topicID != p.topicID {
		return nil, RecoveryStats{}, fmt.Errorf("%w: %s holds topic id %s, not %s", ErrInconsistentTopicID,
			l.path, formatTopicID(l.topicID), formatTopicID(p.topicID))
	}
	delete(d.loaded, p.tp)
	cfg := p.cfg.normalized()
	if ll.recoveredFrom >= 0 && cfg.IndexIntervalBytes != ll.cfg.IndexIntervalBytes {
		for _, s := range l.segments {
			if s.base < ll.recoveredFrom {
				continue
			}
			if _, err := s.rebuild(cfg, false); err != nil {
				l.abandon()
				return nil, RecoveryStats{}, fmt.Errorf("%w: reindex %s: %v", ErrKafkaStorage, p.tp, err)
			}
			if err := s.persistIndexes(true); err != nil {
				l.abandon()
				return nil, RecoveryStats{}, fmt.Errorf("%w: reindex %s: %v", ErrKafkaStorage, p.tp, err)
			}
		}
	}
	if l.Config() != cfg {
		l.SetConfig(cfg)
	}
	return l, RecoveryStats{}, nil
}

// loadedLog returns the log loadLogs loaded for p.tp, for Dir.Open to
// adopt; nil for loadLogs itself. Lock should be held (mu).
func (d *Dir) loadedLog(p logOpenParams) (loadedLog, bool) {
	if p.preload {
		return loadedLog{}, false // loadLogs' goroutines run without the lock
	}
	ll, ok := d.loaded[p.tp]
	return ll, ok
}

// dropLoaded takes tp's loaded log, if any, out of d.loaded and returns
// it. Lock should be held (mu).
func (d *Dir) dropLoaded(tp TopicPartition) *Log {
	ll := d.loaded[tp]
	delete(d.loaded, tp)
	return ll.log
}

// closeLoaded closes the logs loadLogs opened that Dir.Open never
// adopted (abandon: as a killed process would), for Dir.Close and
// Abandon.
func (d *Dir) closeLoaded(abandon bool) error {
	d.mu.Lock()
	loaded := d.loaded
	d.loaded = nil
	d.mu.Unlock()
	var errs []error
	for _, ll := range loaded {
		l := ll.log
		if abandon {
			l.abandon()
		} else if err := l.Close(); err != nil && !errors.Is(err, ErrLogClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// openLog loads a partition directory, creating it if needed.
//
// After a clean shutdown every segment is trusted: its indexes are read as
// they are and only the batches after the last offset-index entry of each
// segment are read (headers only) to find the end. After a crash the
// segments that may hold data past the recovery point (the one containing
// it and all later ones) are recovered: every batch is read and checked
// (length, magic, CRC, increasing offsets); the first batch that fails ends
// the log — the file is truncated there and later segments are dropped —
// and the indexes and leader-epoch cache are rebuilt from the good batches.
// Kafka does the same; a torn tail can only hold appends that were never
// flushed, which acks=all replication covers.
//
// Trusting the index files of a segment below the recovery point relies on
// their entries reaching the files, fsynced, before the recovery point
// passes the segment (Log.Flush) and before the clean-shutdown marker is
// written (Log.Close, then Dir.Close). Entries added after the last flush
// exist only in memory until the next one, so a crash loses them; but they
// belong to segments past the recovery point, which are rebuilt here from
// the .log.
//
// A log loadLogs already opened is adopted instead (adoptLoaded). With
// p.preload set (loadLogs), a directory without partition.metadata returns
// a nil log and no error: Dir.Open opens it once it knows the topic id.
func openLog(p logOpenParams) (*Log, RecoveryStats, error) {
	if ll, ok := p.dir.loadedLog(p); ok {
		return p.dir.adoptLoaded(ll, p)
	}
	l, _, stats, err := loadLog(p)
	return l, stats, err
}

// loadLog is openLog without adoption; it also returns the base of the
// first segment crash recovery rebuilt (-1: none).
func loadLog(p logOpenParams) (*Log, int64, RecoveryStats, error) {
	d := p.dir
	var stats RecoveryStats
	path := filepath.Join(d.path, p.tp.String())
	if !p.preload {
		if err := d.fsys.MkdirAll(path, 0o755); err != nil {
			return nil, -1, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
		}
	}
	if err := ensureTopicID(d.fsys, path, &p.topicID); err != nil {
		return nil, -1, stats, err
	}
	var zero [16]byte
	if p.preload && p.topicID == zero {
		return nil, -1, stats, nil
	}
	bases, snapshots, err := scanPartitionDir(d.fsys, path)
	if err != nil {
		return nil, -1, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	epochs, err := openEpochCache(d.fsys, path)
	if err != nil {
		return nil, -1, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	loadedEpochs := epochs.snapshot()
	cfg := p.cfg.normalized()
	now := d.now()
	l := &Log{tp: p.tp, topicID: p.topicID, path: path, fsys: d.fsys, now: d.now, logger: d.logger,
		epochs: epochs, cfg: unique.Make(cfg)}
	l.flushMs.Store(cfg.FlushMs)

	recoveredFrom := int64(-1) // base of the first segment crash recovery rebuilt
	fail := func(err error) (*Log, int64, RecoveryStats, error) {
		for _, s := range l.segments {
			s.close()
		}
		return nil, -1, stats, fmt.Errorf("%w: open %s: %v", ErrKafkaStorage, p.tp, err)
	}
	for i, base := range bases {
		s, err := openSegment(d.fsys, path, base, cfg, now)
		if err != nil {
			return fail(err)
		}
		l.segments = append(l.segments, s)
		needsRecovery := !p.clean && (i+1 == len(bases) || bases[i+1] > p.recoveryPoint)
		if !needsRecovery {
			if err := s.loadClean(cfg); err != nil {
				return fail(err)
			}
			continue
		}
		stats.SegmentsScanned++
		if recoveredFrom < 0 {
			recoveredFrom = base
		}
		// The broker rebuilds the aborted-transaction index of recovered
		// segments by replaying their markers (see snapshot.go).
		if err := s.txnIndex.reset(); err != nil {
			return fail(err)
		}
		truncated, err := s.rebuild(cfg, true, func(h BatchHeader) {
			if h.LeaderEpoch >= 0 {
				_ = epochs.assign(h.LeaderEpoch, h.BaseOffset) // persisted again below
			}
		})
		if err != nil {
			return fail(err)
		}
		if err := s.sync(); err != nil {
			return fail(err)
		}
		if truncated > 0 {
			stats.BytesTruncated += truncated
			d.logger.Warn("logstore: truncated corrupt or torn log tail", "partition", p.tp.String(),
				"segment", base, "position", s.size, "bytes", truncated)
			// Everything after the first bad batch is gone, including
			// later segments.
			for _, b := range bases[i+1:] {
				st, err := d.fsys.Stat(filepath.Join(path, segmentName(b)+logSuffix))
				if err == nil {
					stats.BytesTruncated += st.Size()
				}
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
					if err := d.fsys.Remove(filepath.Join(path, segmentName(b)+suf)); err != nil && !isNotExist(err) {
						return fail(err)
					}
				}
			}
			break
		}
	}
	if len(l.segments) == 0 {
		s, err := newSegment(d.fsys, path, max(p.logStart, 0), cfg, now)
		if err != nil {
			return fail(err)
		}
		l.segments = []*segment{s}
	}
	l.setLogEnd(l.active().nextOffset)
	l.setLogStart(max(p.logStart, l.segments[0].base))
	if l.logStart > l.logEnd {
		// DeleteRecords moved the start past data that a crash then lost.
		if err := l.truncateFullyLocked(l.logStart); err != nil {
			return fail(err)
		}
	}
	// Clean: everything was flushed at shutdown. Unclean: the segments
	// past the old recovery point were just recovered and fsynced.
	l.recoveryPoint = l.logEnd
	if err := errors.Join(epochs.truncateFromEnd(l.logEnd), epochs.truncateFromStart(l.logStart)); err != nil {
		return fail(err)
	}
	l.snapshots = snapshots
	if err := l.deleteSnapshotsLocked(func(o int64) bool {
		return o > l.logEnd || (recoveredFrom >= 0 && o > recoveredFrom)
	}); err != nil {
		return fail(err)
	}
	if !p.clean && len(epochs.snapshot()) > 0 && !slices.Equal(epochs.snapshot(), loadedEpochs) {
		// Recovery changed the cache: write it again. Unchanged, the file
		// already holds it (it is written atomically and fsynced).
		epochs.mu.Lock()
		err := epochs.persistLocked()
		epochs.mu.Unlock()
		if err != nil {
			return fail(err)
		}
	}
	return l, recoveredFrom, stats, nil
}

// ensureTopicID reconciles the topic id asked for with partition.metadata:
// a zero id adopts the stored one; a different non-zero id is an error
// (Kafka's InconsistentTopicIdException: the directory belongs to an older
// topic of the same name); a missing file is written.
func ensureTopicID(fsys FS, path string, id *[16]byte) error {
	stored, ok, err := readPartitionMetadata(fsys, path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	var zero [16]byte
	switch {
	case ok && *id == zero:
		*id = stored
		return nil
	case ok && stored == *id:
		return nil
	case ok:
		return fmt.Errorf("%w: %s holds topic id %s, not %s", ErrInconsistentTopicID, path, formatTopicID(stored), formatTopicID(*id))
	case *id == zero:
		return nil // nothing to write yet
	}
	if err := writeFileAtomic(fsys, filepath.Join(path, partitionMetadataFile), partitionMetadata(*id)); err != nil {
		return fmt.Errorf("%w: write partition.metadata: %v", ErrKafkaStorage, err)
	}
	return nil
}

// ErrInconsistentTopicID: INCONSISTENT_TOPIC_ID.
var ErrInconsistentTopicID = errors.New("logstore: inconsistent topic id")

// scanPartitionDir lists the base offsets of the segments in a partition
// directory, oldest first, and the offsets of its producer snapshots
// (listSnapshots), from one read of the directory. It also cleans up what
// an interrupted operation left behind: *.deleted files (their deletion was
// already decided), *.tmp files (unfinished checkpoint writes), index files
// without a log, and the files of an interrupted cleaner swap
// (recoverCleanerFiles, run only when the listing shows such files).
func scanPartitionDir(fsys FS, path string) (bases, snapshots []int64, err error) {
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
			if err := recoverCleanerFiles(fsys, path); err != nil {
				return nil, nil, err
			}
			if entries, err = fsys.ReadDir(path); err != nil {
				return nil, nil, err
			}
			break
		}
	}
	logs := make(map[int64]bool)
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, ".tmp"):
			if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
				return nil, nil, err
			}
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, logSuffix)); ok {
				logs[base] = true
			}
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix), strings.HasSuffix(name, txnIndexSuffix):
			indexes = append(indexes, name)
		case strings.HasSuffix(name, snapshotSuffix):
			if off, ok := parseSegmentName(strings.TrimSuffix(name, snapshotSuffix)); ok {
				snapshots = append(snapshots, off)
			}
		}
	}
	for _, name := range indexes {
		stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, indexSuffix), timeIndexSuffix), txnIndexSuffix)
		if base, ok := parseSegmentName(stem); ok && !logs[base] {
			if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
				return nil, nil, err
			}
		}
	}
	bases = make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	slices.Sort(snapshots)
	return bases, snapshots, nil
}

func parseSegmentName(s string) (int64, bool) {
	if len(s) != 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= 0
}

// nowOrDefault returns f, or time.Now when f is nil.
func nowOrDefault(f func() time.Time) func() time.Time {
	if f == nil {
		return time.Now
	}
	return f
}
