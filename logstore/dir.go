package logstore

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures a Dir. The zero value uses the OS filesystem, the
// wall clock and slog.Default().
type Options struct {
	FS     FS
	Now    func() time.Time
	Logger *slog.Logger
	// OnStorageError, if set, is called when a write to a log of the Dir
	// fails and the log turns read-only (once per log, with the log's
	// append lock held), or a read of one fails with an I/O error (each
	// time, without locks). It must not block or call into the log: the
	// broker takes the directory offline (JBOD, KIP-858).
	OnStorageError func(tp TopicPartition, err error)
	// RecoveryThreads is how many goroutines OpenDir loads and recovers
	// the directory's logs with (num.recovery.threads.per.data.dir);
	// less than 1 is 1. LoadConfig is the configuration they are loaded
	// with until Dir.Open hands each its own (zero: DefaultConfig).
	RecoveryThreads int
	LoadConfig      Config
	// FileCache bounds the segment .log files held open (filecache.go);
	// nil is DefaultFileCache, the process's, sized from RLIMIT_NOFILE.
	FileCache *FileCache
}

// Dir is one log directory (Kafka's log.dirs entry): the partition
// directories in it plus the per-directory checkpoint files. While open it
// holds an flock on .lock so two brokers cannot share it.
type Dir struct {
	path      string
	fsys      FS
	now       func() time.Time
	logger    *slog.Logger
	lock      io.Closer
	hadClean  bool
	onStorage func(TopicPartition, error)
	files     *FileCache // opens the segment .log files; fsys goes through it

	ckMu sync.Mutex // serializes checkpoint writes; first in the lock order

	mu     sync.Mutex
	logs   map[TopicPartition]*Log
	closed bool
	// offline holds the partitions whose log failed to open, with the
	// error (wrapping ErrLogOffline); they stay offline until the next
	// OpenDir, as a Kafka log dir does until the broker restarts.
	offline map[TopicPartition]error
	stats   RecoveryStats
	// loaded holds the logs OpenDir loaded (loadLogs) that Dir.Open has
	// not adopted yet.
	loaded map[TopicPartition]loadedLog
	// cleaning holds the logs a cleaner goroutine is cleaning, uncleanable
	// those a cleaning pass failed on (cleaner_manager.go).
	cleaning    map[TopicPartition]bool
	uncleanable map[TopicPartition]error
	// deleteHorizons holds each log's latest delete horizon (ms) left by
	// its last pass, for the manager's tombstone rescheduling (KIP-534);
	// in memory only, as Kafka keeps it.
	deleteHorizons map[TopicPartition]int64
	// delMu guards pendingLogs, the logs with segment files renamed
	// *.deleted and not yet removed (true: noted since RemoveDueDeletes
	// last looked); a leaf lock, taken under Log.appendMu. deletesNoticed
	// wakes the caller of RemoveDueDeletes (delete_schedule.go).
	delMu          sync.Mutex
	pendingLogs    map[*Log]bool
	deletesNoticed chan struct{}
	// movedAway holds the old directories of logs moved to another Dir
	// (dirs_move.go), removed when due; guarded by delMu.
	movedAway []movedAway
	// opening coalesces the log directory flushes of new partitions'
	// directories (open_prepare.go).
	opening openSync
	// Last known checkpoint values, including partitions not opened yet,
	// so a checkpoint written before they are opened does not lose them.
	recoveryPoints  map[TopicPartition]int64
	highWatermarks  map[TopicPartition]int64
	logStartOffsets map[TopicPartition]int64
}

// OpenDir opens (creating if needed) a log directory: it checks that it is
// writable, locks it, reads the three checkpoint files, notes whether the
// last shutdown was clean and removes the marker (so a crash from now on is
// seen as unclean), removes partition directories whose deletion was
// interrupted, and loads every partition's log with
// Options.RecoveryThreads goroutines, recovering them after a crash
// (loadLogs); Dir.Open then hands each out.
func OpenDir(path string, opts Options) (*Dir, error) {
	d := &Dir{path: path, fsys: opts.FS, now: nowOrDefault(opts.Now), logger: opts.Logger, onStorage: opts.OnStorageError,
		logs: make(map[TopicPartition]*Log), offline: make(map[TopicPartition]error),
		deletesNoticed: make(chan struct{}, 1)}
	if d.fsys == nil {
		d.fsys = OSFS{}
	}
	if d.files = opts.FileCache; d.files == nil {
		d.files = DefaultFileCache()
	}
	d.fsys = cachingFS{FS: d.fsys, files: d.files}
	if d.logger == nil {
		d.logger = slog.Default()
	}
	if err := d.fsys.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("%w: create log dir: %v", ErrKafkaStorage, err)
	}
	probe := filepath.Join(path, ".sluice-write-probe")
	f, err := d.fsys.OpenFile(probe, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: log dir %s not writable: %v", ErrKafkaStorage, path, err)
	}
	f.Close()
	d.fsys.Remove(probe)
	if d.lock, err = d.fsys.Lock(filepath.Join(path, lockFileName)); err != nil {
		if errors.Is(err, ErrDirLocked) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: lock %s: %v", ErrKafkaStorage, path, err)
	}
	fail := func(err error) (*Dir, error) {
		d.lock.Close()
		return nil, fmt.Errorf("%w: open log dir %s: %v", ErrKafkaStorage, path, err)
	}
	if d.recoveryPoints, err = readOffsetCheckpoint(d.fsys, filepath.Join(path, recoveryPointFile)); err != nil {
		return fail(err)
	}
	if d.highWatermarks, err = readOffsetCheckpoint(d.fsys, filepath.Join(path, replicationFile)); err != nil {
		return fail(err)
	}
	if d.logStartOffsets, err = readOffsetCheckpoint(d.fsys, filepath.Join(path, logStartOffsetFile)); err != nil {
		return fail(err)
	}
	marker := filepath.Join(path, cleanShutdownFile)
	if _, err := d.fsys.Stat(marker); err == nil {
		d.hadClean = true
		if err := d.fsys.Remove(marker); err != nil {
			return fail(err)
		}
		if err := syncDir(d.fsys, path); err != nil {
			return fail(err)
		}
	}
	entries, err := d.fsys.ReadDir(path)
	if err != nil {
		return fail(err)
	}
	removeFutureDirs(d.fsys, path, entries)
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), "-delete") {
			if err := d.fsys.RemoveAll(filepath.Join(path, e.Name())); err != nil {
				d.logger.Warn("logstore: cannot remove deleted partition dir", "dir", e.Name(), "err", err)
			}
		}
	}
	cfg := opts.LoadConfig
	if cfg == (Config{}) {
		cfg = DefaultConfig()
	}
	d.loadLogs(entries, opts.RecoveryThreads, cfg)
	return d, nil
}

// Path is the directory's path.
func (d *Dir) Path() string { return d.path }

// HadCleanShutdown reports whether the previous process closed the
// directory with Close (the .kafka_cleanshutdown marker was present).
func (d *Dir) HadCleanShutdown() bool { return d.hadClean }

// RecoveryStats returns the recovery work done by Open since OpenDir.
func (d *Dir) RecoveryStats() RecoveryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// parsePartitionDir parses "<topic>-<partition>". Names that do not parse
// (including "<tp>.<uuid>-delete", "-future" and "-stray" directories) and
// the controller's __cluster_metadata-0 are not partitions of this package.
func parsePartitionDir(name string) (TopicPartition, bool) {
	if name == clusterMetadataDirTP {
		return TopicPartition{}, false
	}
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return TopicPartition{}, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil || p < 0 || strconv.FormatInt(p, 10) != name[i+1:] {
		return TopicPartition{}, false
	}
	topic := name[:i]
	for _, c := range topic {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return TopicPartition{}, false
		}
	}
	return TopicPartition{Topic: topic, Partition: int32(p)}, true
}

// Partitions lists the partition directories on disk, sorted.
func (d *Dir) Partitions() []TopicPartition {
	entries, err := d.fsys.ReadDir(d.path)
	if err != nil {
		d.logger.Error("logstore: list log dir", "dir", d.path, "err", err)
		return nil
	}
	var out []TopicPartition
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if tp, ok := parsePartitionDir(e.Name()); ok {
			out = append(out, tp)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Open opens the log of tp, creating it if it does not exist; opening an
// open log returns it. If the previous shutdown was not clean the log is
// recovered first (see openLog). Opening an open log does not change its
// configuration; use Log.SetConfig. A zero topicID adopts the id stored in
// partition.metadata; a different stored id is ErrInconsistentTopicID.
// Recovery runs under the Dir's lock, so Opens are serialized, but a new
// partition's directory and partition.metadata are written and fsynced
// before the lock is taken (prepareMetadata), so concurrent Opens of new
// partitions flush the disk together rather than one after the other.
//
// Any other failure takes the partition offline: the error, which wraps
// ErrLogOffline and the cause, is logged once with the partition's
// directory, and every later Open of tp returns it without touching the
// files, so a log that could not be read is never recreated empty.
func (d *Dir) Open(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	if _, ok := parsePartitionDir(tp.String()); !ok {
		return nil, fmt.Errorf("logstore: invalid partition name %q", tp.String())
	}
	if topicID != ([16]byte{}) && d.needsMetadata(tp) {
		d.prepareMetadata(tp, topicID)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrLogClosed
	}
	if err := d.offline[tp]; err != nil {
		return nil, err
	}
	var zero [16]byte
	if l := d.logs[tp]; l != nil {
		if topicID != zero && topicID != l.topicID {
			return nil, fmt.Errorf("%w: %s is open with topic id %s", ErrInconsistentTopicID, tp, formatTopicID(l.topicID))
		}
		return l, nil
	}
	l, stats, err := openLog(logOpenParams{dir: d, tp: tp, topicID: topicID, cfg: cfg,
		recoveryPoint: d.recoveryPoints[tp], logStart: d.logStartOffsets[tp], clean: d.hadClean})
	d.stats.SegmentsScanned += stats.SegmentsScanned
	d.stats.BytesTruncated += stats.BytesTruncated
	if errors.Is(err, ErrInconsistentTopicID) {
		return nil, err
	}
	if err != nil {
		path := filepath.Join(d.path, tp.String())
		err = fmt.Errorf("%w: %s: %w", ErrLogOffline, path, err)
		d.offline[tp] = err
		d.logger.Error("logstore: partition log failed to open; it is offline and its files are kept as they are until the next start",
			"partition", tp.String(), "dir", path, "err", err)
		return nil, err
	}
	l.onLogStartChange = d.checkpointLogStartOffsets
	if d.onStorage != nil {
		l.onStorageError.Store(&d.onStorage)
	}
	d.watchDeletes(l)
	l.lastFlushMs.Store(d.now().UnixMilli())
	d.logs[tp] = l
	return l, nil
}

// Offline returns the error that took tp offline (wrapping ErrLogOffline),
// or nil if tp is not offline.
func (d *Dir) Offline(tp TopicPartition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offline[tp]
}

// OfflinePartitions returns every offline partition with its error. The
// map is the caller's.
func (d *Dir) OfflinePartitions() map[TopicPartition]error {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[TopicPartition]error, len(d.offline))
	for tp, err := range d.offline {
		out[tp] = err
	}
	return out
}

// Log returns the open log of tp, or nil.
func (d *Dir) Log(tp TopicPartition) *Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs[tp]
}

func (d *Dir) openLogs() map[TopicPartition]*Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(d.logs))
	for tp, l := range d.logs {
		out[tp] = l
	}
	return out
}

// Remove deletes a partition: its log is closed, its directory renamed to
// "<topic>-<partition>.<uuid>-delete" (so a crash mid-removal cannot leave
// a half-deleted partition that looks alive) and then removed. An offline
// partition is not touched: Remove returns its ErrLogOffline error.
func (d *Dir) Remove(tp TopicPartition) error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	d.mu.Lock()
	if err := d.offline[tp]; err != nil {
		d.mu.Unlock()
		return err
	}
	l := d.logs[tp]
	delete(d.logs, tp)
	if loaded := d.dropLoaded(tp); l == nil {
		l = loaded
	}
	delete(d.recoveryPoints, tp)
	delete(d.highWatermarks, tp)
	delete(d.logStartOffsets, tp)
	d.mu.Unlock()
	if err := d.updateCleanerCheckpointLocked(tp, -1); err != nil {
		d.logger.Warn("logstore: drop cleaner checkpoint", "partition", tp.String(), "err", err)
	}
	if l != nil {
		if err := l.Close(); err != nil && !errors.Is(err, ErrLogClosed) {
			d.logger.Warn("logstore: close before delete", "partition", tp.String(), "err", err)
		}
	}
	src := filepath.Join(d.path, tp.String())
	if _, err := d.fsys.Stat(src); err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	dst := filepath.Join(d.path, fmt.Sprintf("%s.%s-delete", tp, hex.EncodeToString(u[:])))
	if err := d.fsys.Rename(src, dst); err != nil {
		return fmt.Errorf("%w: rename for delete: %v", ErrKafkaStorage, err)
	}
	if err := syncDir(d.fsys, d.path); err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	if err := d.fsys.RemoveAll(dst); err != nil {
		return fmt.Errorf("%w: remove %s: %v", ErrKafkaStorage, dst, err)
	}
	return nil
}

// Checkpoint flushes every open log (advancing its recovery point) and
// writes the three checkpoint files: recovery points, the given high
// watermarks (partitions missing from the map keep their last
// checkpointed value) and log start offsets.
func (d *Dir) Checkpoint(highWatermarks map[TopicPartition]int64) error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	return d.checkpointLocked(highWatermarks)
}

// checkpointLocked: Lock should be held (ckMu).
func (d *Dir) checkpointLocked(highWatermarks map[TopicPartition]int64) error {
	logs := d.openLogs()
	var errs []error
	for _, l := range logs {
		if err := l.Flush(); err != nil && !errors.Is(err, ErrLogClosed) {
			errs = append(errs, err)
		}
	}
	d.mu.Lock()
	for tp, l := range logs {
		d.recoveryPoints[tp] = l.RecoveryPoint()
		d.logStartOffsets[tp] = l.LogStartOffset()
		if hw, ok := highWatermarks[tp]; ok {
			d.highWatermarks[tp] = hw
		}
	}
	rp, hw, ls := cloneOffsets(d.recoveryPoints), cloneOffsets(d.highWatermarks), cloneOffsets(d.logStartOffsets)
	d.mu.Unlock()
	errs = append(errs,
		writeOffsetCheckpoint(d.fsys, filepath.Join(d.path, recoveryPointFile), rp),
		writeOffsetCheckpoint(d.fsys, filepath.Join(d.path, replicationFile), hw),
		writeOffsetCheckpoint(d.fsys, filepath.Join(d.path, logStartOffsetFile), ls))
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, ErrKafkaStorage) {
			return err
		}
		return fmt.Errorf("%w: checkpoint: %v", ErrKafkaStorage, err)
	}
	return nil
}

// checkpointLogStartOffsets writes log-start-offset-checkpoint alone; Logs
// call it after DeleteRecordsBefore so the new start survives a crash.
func (d *Dir) checkpointLogStartOffsets() error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	logs := d.openLogs()
	d.mu.Lock()
	for tp, l := range logs {
		d.logStartOffsets[tp] = l.LogStartOffset()
	}
	ls := cloneOffsets(d.logStartOffsets)
	d.mu.Unlock()
	return writeOffsetCheckpoint(d.fsys, filepath.Join(d.path, logStartOffsetFile), ls)
}

func cloneOffsets(m map[TopicPartition]int64) map[TopicPartition]int64 {
	out := make(map[TopicPartition]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// CheckpointedHighWatermark returns the high watermark last checkpointed
// for tp (read at OpenDir or written by Checkpoint).
func (d *Dir) CheckpointedHighWatermark(tp TopicPartition) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	hw, ok := d.highWatermarks[tp]
	return hw, ok
}

// FlushDue fsyncs every open log whose last flush is at least its
// flush.ms old (Kafka's log flusher). The broker calls it every
// log.flush.scheduler.interval.ms, at least once a second; logs with the
// default flush.ms (never) cost one atomic load each and are skipped.
func (d *Dir) FlushDue(now time.Time) error {
	nowMs := now.UnixMilli()
	var due []*Log
	d.mu.Lock()
	for _, l := range d.logs {
		if l.flushDue(nowMs) {
			due = append(due, l)
		}
	}
	d.mu.Unlock()
	var errs []error
	for _, l := range due {
		if err := l.Flush(); err != nil && !errors.Is(err, ErrLogClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Maintain runs retention on every open log (highWatermark gives each
// log's high watermark; segments at or above it are kept), removes
// *.deleted files older than file.delete.delay.ms, and checkpoints log
// start offsets if retention moved any. The broker calls it periodically
// (log.retention.check.interval.ms); the segments it deletes are removed
// when due by RemoveDueDeletes, not at its next run.
func (d *Dir) Maintain(now time.Time, highWatermark func(TopicPartition) int64) error {
	var errs []error
	moved := false
	for tp, l := range d.openLogs() {
		n, err := l.retain(now, highWatermark(tp))
		if err != nil && !errors.Is(err, ErrLogClosed) {
			errs = append(errs, err)
		}
		moved = moved || n > 0
		if err := l.removeExpiredDeletes(now); err != nil {
			errs = append(errs, err)
		}
	}
	if moved {
		if err := d.checkpointLogStartOffsets(); err != nil {
			errs = append(errs, fmt.Errorf("%w: %v", ErrKafkaStorage, err))
		}
	}
	return errors.Join(errs...)
}

// Close flushes and closes every log, writes the checkpoints and the
// clean-shutdown marker (only if all of that succeeded, so the next start
// recovers otherwise) and releases the lock. After an unclean start with
// partitions offline no marker is written either: those logs were never
// recovered, and the next start must not trust them as cleanly closed.
func (d *Dir) Close(highWatermarks map[TopicPartition]int64) error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return ErrLogClosed
	}
	d.closed = true
	d.mu.Unlock()
	err := errors.Join(d.checkpointLocked(highWatermarks), d.closeLoaded(false))
	for _, l := range d.openLogs() {
		if cerr := l.Close(); cerr != nil && !errors.Is(cerr, ErrLogClosed) {
			err = errors.Join(err, cerr)
		}
	}
	d.mu.Lock()
	unrecovered := !d.hadClean && len(d.offline) > 0
	d.mu.Unlock()
	if _, merr := d.removeMovedAway(time.Time{}); merr != nil {
		d.logger.Warn("logstore: removing the old directory of a moved log", "err", merr)
	}
	if err == nil && !unrecovered {
		err = writeFileAtomic(d.fsys, filepath.Join(d.path, cleanShutdownFile), nil)
	}
	return errors.Join(err, d.lock.Close())
}

// Abandon releases the directory the way a killed process would: every
// file is closed and the lock released, but nothing is flushed or
// checkpointed and no clean-shutdown marker is written, so the next
// OpenDir sees an unclean shutdown and recovers. Data already handed to the
// OS stays, exactly as after kill -9. It exists for in-process tests that
// kill and restart a broker; later calls on the Dir or its logs return
// ErrLogClosed.
func (d *Dir) Abandon() {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	logs := d.logs
	d.mu.Unlock()
	for _, l := range logs {
		l.abandon()
	}
	d.closeLoaded(true)
	d.delMu.Lock()
	for _, m := range d.movedAway {
		for _, s := range m.segs {
			s.close()
		}
	}
	d.movedAway = nil
	d.delMu.Unlock()
	d.lock.Close()
}
