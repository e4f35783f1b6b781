package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unique"
)

// Lock order (take left before right, never the reverse):
//
//	Dir.ckMu → Dir.mu → Log.appendMu → Log.segsMu → epochCache.mu
//
// Log.appendMu serializes everything that changes the log: appends, rolls,
// truncation, retention, DeleteRecordsBefore, Flush, SetConfig and Close.
// Log.segsMu guards the segment list, the offsets and each segment's
// published state, including the in-memory index entries; it is held only
// for short in-memory work, never during a file write or read (index files
// are written with appendMu alone), so reads run concurrently with appends.
// The one exception is TruncateTo, which rescans the truncated segment and
// rewrites its index files with segsMu held: followers truncate rarely, and
// readers must not see the segment half rebuilt. Fields guarded by segsMu are only written with
// appendMu also held, so a holder of appendMu may read them without
// segsMu. A Log never calls back into its Dir while holding appendMu
// (see DeleteRecordsBefore), except to note a pending deletion, which
// takes only Dir.delMu, a leaf lock (delete_schedule.go).

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// Config is the per-topic log configuration, named after Kafka's topic
// configs. A zero or negative size/interval falls back to the default.
type Config struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	RetentionMs        int64 // retention.ms; -1 = unlimited
	RetentionBytes     int64 // retention.bytes; -1 = unlimited
	IndexIntervalBytes int32 // index.interval.bytes
	SegmentIndexBytes  int32 // segment.index.bytes
	FileDeleteDelayMs  int64 // file.delete.delay.ms
	MaxMessageBytes    int32 // max.message.bytes
	LogAppendTime      bool  // message.timestamp.type=LogAppendTime
	// CleanupDelete is cleanup.policy including "delete" (Kafka's default,
	// and "compact,delete"): only then do retention.ms and retention.bytes
	// trim the log. A compact-only log keeps every segment until
	// compaction bounds it, as Kafka's does; DeleteRecords still moves its
	// log start offset.
	CleanupDelete bool
	// Compact is cleanup.policy including "compact": the leader refuses
	// records without a key (INVALID_RECORD), as Kafka does.
	Compact bool
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are
	// message.timestamp.before.max.ms and message.timestamp.after.max.ms:
	// on a CreateTime topic the leader refuses a record whose timestamp is
	// further than this behind or ahead of its clock (INVALID_TIMESTAMP).
	TimestampBeforeMaxMs int64
	TimestampAfterMaxMs  int64
	// FlushMessages is flush.messages: an append that leaves this many
	// records or more above the recovery point fsyncs the log (Flush).
	// FlushMs is flush.ms: Dir.FlushDue fsyncs a log whose last flush is
	// at least this old. Both default to math.MaxInt64, never: sluice, like
	// Kafka, leaves durability to replication and the page cache, and
	// fsyncs only at checkpoints, rolls' next flush and Close.
	FlushMessages int64
	FlushMs       int64
	// Compression is compression.type: anything but producer (the zero
	// value) makes the leader rewrite every batch in another codec with
	// that codec (recompress.go). GzipLevel, LZ4Level and ZstdLevel are
	// compression.gzip.level, compression.lz4.level and
	// compression.zstd.level; zero means Kafka's default.
	Compression Compression
	GzipLevel   int
	LZ4Level    int
	ZstdLevel   int
	// The compaction settings of a Compact log (cleaner_manager.go):
	// delete.retention.ms, min.cleanable.dirty.ratio,
	// min.compaction.lag.ms and max.compaction.lag.ms (DefaultConfig has
	// Kafka's defaults: 1 day, 0.5, 0, never). A negative retention or
	// lag, a ratio outside [0, 1] and a max lag of 0 fall back to them.
	DeleteRetentionMs      int64
	MinCleanableDirtyRatio float64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:       1 << 30,
		SegmentMs:          7 * 24 * 60 * 60 * 1000,
		RetentionMs:        7 * 24 * 60 * 60 * 1000,
		RetentionBytes:     -1,
		IndexIntervalBytes: 4096,
		SegmentIndexBytes:  10 << 20,
		FileDeleteDelayMs:  60000,
		MaxMessageBytes:    1048588,
		CleanupDelete:      true,
		// Kafka 4's defaults (KIP-937, KIP-1030).
		TimestampBeforeMaxMs: math.MaxInt64,
		TimestampAfterMaxMs:  3_600_000,
		FlushMessages:        math.MaxInt64,
		FlushMs:              math.MaxInt64,
		// Kafka's compaction defaults.
		DeleteRetentionMs:      86_400_000,
		MinCleanableDirtyRatio: 0.5,
		MaxCompactionLagMs:     math.MaxInt64,
	}
}

func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.IndexIntervalBytes < 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.SegmentIndexBytes <= 0 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.FlushMs < 0 {
		c.FlushMs = d.FlushMs
	}
	if c.DeleteRetentionMs < 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio < 0 || c.MinCleanableDirtyRatio > 1 {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if c.MinCompactionLagMs < 0 {
		c.MinCompactionLagMs = 0
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	return c
}

// SegmentInfo describes one segment, oldest first in Log.Segments.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64 // offset after the segment's last batch
	Size         int64 // bytes in the .log file
	MaxTimestamp int64 // -1 if no batch has a timestamp
	IndexEntries int
}

// Log is one partition's log. It is safe for concurrent use.
type Log struct {
	tp      TopicPartition
	topicID [16]byte
	path    string
	fsys    FS
	now     func() time.Time
	logger  *slog.Logger
	epochs  *epochCache

	// onLogStartChange persists the log start offset (the Dir's
	// log-start-offset checkpoint). Called without Log locks held.
	onLogStartChange func() error
	// notePendingDelete tells the Dir that a pending deletion's due time
	// may have moved (file.delete.delay.ms changed); nil for a Log not
	// opened by a Dir. Renames to *.deleted reach the Dir through fsys.
	notePendingDelete func()
	// onStorageError is the Dir's Options.OnStorageError, called once when
	// writeErr is set and on a read's I/O error; nil for none. Set before
	// the Log is published (or, by a move, under appendMu).
	onStorageError atomic.Pointer[func(TopicPartition, error)]

	appendMu       sync.Mutex
	writeErr       error           // sticky; guarded by appendMu
	pendingDeletes []pendingDelete // guarded by appendMu
	snapshots      []int64         // producer snapshot offsets, sorted; guarded by appendMu
	// lastFlushMs is when the log was last flushed (or opened), in Unix
	// milliseconds: written under appendMu, read by Dir.FlushDue without it.
	lastFlushMs atomic.Int64
	// flushMs mirrors cfg's FlushMs (math.MaxInt64 when unset), so
	// Dir.FlushDue's walk over every log each second reads one word per
	// log, no lock.
	flushMs atomic.Int64
	// logStartA and logEndA mirror logStart and logEnd, stored with them
	// under segsMu's write lock: LogStartOffset and LogEndOffset, which
	// the replication paths ask of every partition each round, read them
	// without taking segsMu.
	logStartA, logEndA atomic.Int64

	segsMu        sync.RWMutex
	segments      []*segment // oldest first; the last is the active segment
	logStart      int64
	logEnd        int64
	recoveryPoint int64
	// cfg is the log's configuration, canonicalized: the partitions of a
	// topic share one copy instead of holding ~200 bytes each.
	cfg    unique.Handle[Config]
	closed bool
	// truncations counts TruncateTo calls that cut data: a cleaning pass
	// does not swap in segments read before one (cleaner_swap.go).
	truncations uint64
}

// pendingDelete is a segment renamed to *.deleted, removed after
// file.delete.delay.ms so in-flight reads of it can finish.
type pendingDelete struct {
	seg *segment
	at  time.Time
	// unlinked: the files are removed, the descriptor is still open for
	// reads holding it (delete_schedule.go).
	unlinked bool
}

// fail remembers a write error so every later write returns it: after a
// failed write the files may hold a partial batch, and only recovery at the
// next open can tell. Lock should be held (appendMu).
func (l *Log) fail(op string, err error) error {
	if errors.Is(err, ErrKafkaStorage) {
		return err
	}
	if isFileBudgetError(err) {
		// A segment file could not be reopened for want of descriptors
		// (filecache.go): nothing was written, the log stays writable.
		return fmt.Errorf("%w: %s %s: %w", ErrKafkaStorage, op, l.tp, err)
	}
	werr := fmt.Errorf("%w: %s %s: %v", ErrKafkaStorage, op, l.tp, err)
	if l.writeErr == nil {
		l.writeErr = werr
		l.logger.Error("logstore: write failed, partition log is read-only until reopened", "partition", l.tp.String(), "op", op, "err", err)
		if f := l.onStorageError.Load(); f != nil {
			(*f)(l.tp, werr)
		}
	}
	return werr
}

// writableLocked returns why the log cannot be written, if it cannot.
// Lock should be held (appendMu).
func (l *Log) writableLocked() error {
	if l.closed {
		return ErrLogClosed
	}
	return l.writeErr
}

func (l *Log) active() *segment { return l.segments[len(l.segments)-1] }

// floorSegment returns the index of the segment holding offset: the last
// one whose base offset is <= offset. Lock should be held (segsMu, either).
func (l *Log) floorSegment(offset int64) int {
	i := sort.Search(len(l.segments), func(i int) bool { return l.segments[i].base > offset })
	if i == 0 {
		return 0
	}
	return i - 1
}

// LogStartOffset is the first offset a consumer may read.
func (l *Log) LogStartOffset() int64 { return l.logStartA.Load() }

// LogEndOffset is the offset the next appended record gets.
func (l *Log) LogEndOffset() int64 { return l.logEndA.Load() }

// setLogStart and setLogEnd change the log's start and end offsets; the
// caller holds segsMu's write lock.
func (l *Log) setLogStart(o int64) { l.logStart = o; l.logStartA.Store(o) }
func (l *Log) setLogEnd(o int64)   { l.logEnd = o; l.logEndA.Store(o) }

// Size is the total size of the .log files.
func (l *Log) Size() int64 {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	var n int64
	for _, s := range l.segments {
		n += s.size
	}
	return n
}

// TopicID is the id written in partition.metadata.
func (l *Log) TopicID() [16]byte { return l.topicID }

// TopicPartition is the partition this log belongs to.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Config returns the current configuration.
func (l *Log) Config() Config {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	return l.cfg.Value()
}

// SetConfig changes the configuration (a topic config update). It applies
// to the next append and the next retention pass; existing segments keep
// their size.
func (l *Log) SetConfig(cfg Config) {
	cfg = cfg.normalized()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.segsMu.Lock()
	defer l.segsMu.Unlock()
	if cfg.FileDeleteDelayMs != l.cfg.Value().FileDeleteDelayMs && len(l.pendingDeletes) > 0 && l.notePendingDelete != nil {
		l.notePendingDelete() // the pending deletions fall due at another time
	}
	l.cfg = unique.Make(cfg)
	l.flushMs.Store(cfg.FlushMs)
	a := l.active()
	a.index.maxEntries = maxIndexEntries(cfg.SegmentIndexBytes, offsetIndexEntrySize)
	a.timeIndex.maxEntries = maxIndexEntries(cfg.SegmentIndexBytes, timeIndexEntrySize)
}

// Segments describes the segments, oldest first.
func (l *Log) Segments() []SegmentInfo {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	out := make([]SegmentInfo, len(l.segments))
	for i, s := range l.segments {
		out[i] = SegmentInfo{BaseOffset: s.base, NextOffset: s.nextOffset, Size: s.size,
			MaxTimestamp: s.maxTimestamp, IndexEntries: len(s.index.entries)}
	}
	return out
}

// RecoveryPoint is the offset below which everything is known to be on
// stable storage.
func (l *Log) RecoveryPoint() int64 {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	return l.recoveryPoint
}

// LatestEpoch is the newest leader epoch in the epoch cache, -1 if none.
func (l *Log) LatestEpoch() int32 { return l.epochs.latest() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch; see epochCache.endOffsetFor.
func (l *Log) EndOffsetForEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	return l.epochs.endOffsetFor(epoch, l.LogEndOffset())
}

// Flush fsyncs every segment that may hold data above the recovery point,
// writes and fsyncs their index entries, and advances the recovery point to
// the log end offset. Appends do not fsync: like Kafka, sluice relies on
// the page cache and replication, and a killed process loses nothing that
// reached the OS. Index entries are written to their files here, at a roll
// and at Close, not on every append; a crash loses the ones not written,
// and recovery rebuilds the indexes of every segment past the recovery
// point from the .log.
func (l *Log) Flush() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrLogClosed
	}
	return l.flushLocked()
}

// flushLocked syncs the segments from the one holding the recovery point
// on (when there is data past it) and moves the recovery point to the log
// end. Older segments were synced whole when the recovery point passed
// them, but an index entry may have been added to them since (an aborted
// transaction replayed after a restart): their changed index files are
// written and fsynced too, so every segment below the new recovery point
// has its indexes on stable storage. Lock should be held (appendMu).
func (l *Log) flushLocked() error {
	l.lastFlushMs.Store(l.now().UnixMilli())
	end := l.logEnd
	from := len(l.segments)
	if end != l.recoveryPoint {
		from = l.floorSegment(l.recoveryPoint)
	}
	for i, s := range l.segments {
		var err error
		switch {
		case i >= from:
			err = s.sync()
		case s.indexesDirty():
			err = s.persistIndexes(true)
		}
		if err != nil {
			return l.fail("flush", err)
		}
	}
	if end == l.recoveryPoint {
		return nil
	}
	l.segsMu.Lock()
	l.recoveryPoint = end
	l.segsMu.Unlock()
	return nil
}

// flushForMessagesLocked applies flush.messages after an append: when the
// records above the recovery point reach it, the log is flushed, as
// Kafka's UnifiedLog does after each append (leader or follower). Lock
// should be held (appendMu).
func (l *Log) flushForMessagesLocked() error {
	if l.logEnd-l.recoveryPoint < l.cfg.Value().FlushMessages {
		return nil
	}
	return l.flushLocked()
}

// flushDue reports whether flush.ms has passed since the log's last flush
// (Kafka's LogManager.flushDirtyLogs) at nowMs (Unix milliseconds). A log
// with the default flush.ms costs one load.
func (l *Log) flushDue(nowMs int64) bool {
	flushMs := l.flushMs.Load()
	return flushMs != math.MaxInt64 && nowMs-l.lastFlushMs.Load() >= flushMs
}

// Close flushes the log, writes and fsyncs every index entry, and closes
// the .log files. Later calls return ErrLogClosed. If a write had failed,
// Close closes the files without writing anything and returns that error.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrLogClosed
	}
	var errs []error
	if l.writeErr == nil {
		l.segsMu.Lock()
		l.active().finalize()
		l.segsMu.Unlock()
		// flushLocked fsyncs what is past the recovery point, so the
		// .log files are on disk; what finalize added to the time index
		// still has to reach its file. An idle log costs no fsync, which
		// at 100,000 partitions is the difference at shutdown.
		if err := l.flushLocked(); err != nil {
			errs = append(errs, err)
		} else if err := l.active().persistIndexes(true); err != nil {
			errs = append(errs, err)
		}
	}
	l.segsMu.Lock()
	l.closed = true
	l.segsMu.Unlock()
	for _, s := range l.segments {
		errs = append(errs, s.close())
	}
	for _, p := range l.pendingDeletes {
		errs = append(errs, p.seg.close())
	}
	l.pendingDeletes = nil
	// A log that failed a write must be recovered at the next open, so its
	// error fails the Dir's Close and no clean-shutdown marker is written.
	errs = append(errs, l.writeErr)
	return errors.Join(errs...)
}

// abandon closes the files without flushing, finalizing or writing index
// entries (see Dir.Abandon): what reached the files stays, the rest is
// lost, as when the process is killed.
func (l *Log) abandon() {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.segsMu.Lock()
	defer l.segsMu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, s := range l.segments {
		s.close()
	}
	for _, p := range l.pendingDeletes {
		p.seg.close()
	}
	l.pendingDeletes = nil
}

// EpochForOffset returns the leader epoch that wrote offset according to
// the epoch cache (the epoch ListOffsets reports with a found offset), or
// -1 if the cache has none.
func (l *Log) EpochForOffset(offset int64) int32 { return l.epochs.epochFor(offset) }
