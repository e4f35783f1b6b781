package logstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
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
func openLog(p logOpenParams) (*Log, RecoveryStats, error) {
	d := p.dir
	var stats RecoveryStats
	path := filepath.Join(d.path, p.tp.String())
	if err := d.fsys.MkdirAll(path, 0o755); err != nil {
		return nil, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	if err := ensureTopicID(d.fsys, path, &p.topicID); err != nil {
		return nil, stats, err
	}
	bases, err := scanPartitionDir(d.fsys, path)
	if err != nil {
		return nil, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	epochs, err := openEpochCache(d.fsys, path)
	if err != nil {
		return nil, stats, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	cfg := p.cfg.normalized()
	now := d.now()
	l := &Log{tp: p.tp, topicID: p.topicID, path: path, fsys: d.fsys, now: d.now, logger: d.logger,
		epochs: epochs, cfg: cfg}

	recoveredFrom := int64(-1) // base of the first segment crash recovery rebuilt
	fail := func(err error) (*Log, RecoveryStats, error) {
		for _, s := range l.segments {
			s.close()
		}
		return nil, stats, fmt.Errorf("%w: open %s: %v", ErrKafkaStorage, p.tp, err)
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
	l.logEnd = l.active().nextOffset
	l.logStart = max(p.logStart, l.segments[0].base)
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
	if l.snapshots, err = listSnapshots(d.fsys, path); err != nil {
		return fail(err)
	}
	if err := l.deleteSnapshotsLocked(func(o int64) bool {
		return o > l.logEnd || (recoveredFrom >= 0 && o > recoveredFrom)
	}); err != nil {
		return fail(err)
	}
	if !p.clean && len(epochs.snapshot()) > 0 {
		epochs.mu.Lock()
		err := epochs.persistLocked()
		epochs.mu.Unlock()
		if err != nil {
			return fail(err)
		}
	}
	return l, stats, nil
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
// directory, oldest first. It also cleans up what an interrupted operation
// left behind: *.deleted files (their deletion was already decided),
// *.tmp files (unfinished checkpoint writes), index files without a log,
// and the files of an interrupted cleaner swap (recoverCleanerFiles).
func scanPartitionDir(fsys FS, path string) ([]int64, error) {
	if err := recoverCleanerFiles(fsys, path); err != nil {
		return nil, err
	}
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return nil, err
	}
	logs := make(map[int64]bool)
	var indexes []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, ".tmp"):
			if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
				return nil, err
			}
		case strings.HasSuffix(name, logSuffix):
			if base, ok := parseSegmentName(strings.TrimSuffix(name, logSuffix)); ok {
				logs[base] = true
			}
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix), strings.HasSuffix(name, txnIndexSuffix):
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, indexSuffix), timeIndexSuffix), txnIndexSuffix)
		if base, ok := parseSegmentName(stem); ok && !logs[base] {
			if err := fsys.Remove(filepath.Join(path, name)); err != nil && !isNotExist(err) {
				return nil, err
			}
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
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
