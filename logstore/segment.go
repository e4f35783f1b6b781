package logstore

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"
)

// File name suffixes (frozen: Kafka's names).
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted"
)

// segmentName is the 20-digit zero-padded base offset Kafka names files by.
func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one .log file with its .index, .timeindex and (when a
// transaction was aborted in it) .txnindex. Only the .log is held open,
// and only while the Dir's FileCache keeps it (log is then a cachedFile,
// which reopens it when used); the index entries live in memory and reach
// their files as indexFile describes, so a segment costs at most one file
// descriptor.
//
// Concurrency: the fields below the files are written only by the Log's
// writer (appendMu held) and, for readers, under segsMu held for writing; a
// reader takes segsMu for reading, copies what it needs (size, index
// position) and then reads the file without any lock: bytes below a
// published size never change until the segment is truncated or deleted.
type segment struct {
	base      int64
	dir       string
	fsys      FS
	log       File
	index     *offsetIndex
	timeIndex *timeIndex
	txnIndex  *txnIndex

	size                 int64 // committed bytes of the .log file
	nextOffset           int64 // offset after the last batch; base when empty
	maxTimestamp         int64 // largest batch max timestamp, -1 if none
	offsetOfMaxTimestamp int64 // last offset of the batch holding maxTimestamp
	rollTimestamp        int64 // max timestamp of the first batch, -1 if none (segment.ms)
	created              time.Time
	lastModified         time.Time
	bytesSinceIndexEntry int64
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

// openSegment opens (creating if needed) the .log file of a segment and
// reads its .txnindex if there is one. It does not read the .log, .index or
// .timeindex; see loadClean and rebuild.
func openSegment(fsys FS, dir string, base int64, cfg Config, now time.Time) (*segment, error) {
	s := &segment{base: base, dir: dir, fsys: fsys, nextOffset: base, maxTimestamp: -1, offsetOfMaxTimestamp: -1,
		rollTimestamp: -1, created: now, lastModified: now}
	s.index = newOffsetIndex(dir, base, cfg.SegmentIndexBytes)
	s.timeIndex = newTimeIndex(dir, base, cfg.SegmentIndexBytes)
	var err error
	if s.log, err = fsys.OpenFile(s.path(logSuffix), os.O_RDWR|os.O_CREATE, 0o644); err != nil {
		return nil, err
	}
	if s.txnIndex, err = openTxnIndex(fsys, dir, base); err != nil {
		s.log.Close()
		return nil, err
	}
	st, err := s.log.Stat()
	if err != nil {
		s.log.Close()
		return nil, err
	}
	s.size = st.Size()
	s.lastModified = st.ModTime()
	return s, nil
}

// newSegment creates an empty segment at base: its .log, .index and
// .timeindex files exist and are empty afterwards. Files left over from an
// earlier incarnation of this offset range (a truncation, say) are
// emptied, including a .txnindex, so they cannot leak into the new segment.
func newSegment(fsys FS, dir string, base int64, cfg Config, now time.Time) (*segment, error) {
	s, err := openSegment(fsys, dir, base, cfg, now)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(s.log.Truncate(0), s.index.reset(fsys), s.timeIndex.reset(fsys), s.txnIndex.reset()); err != nil {
		s.close()
		return nil, err
	}
	s.size = 0
	s.created, s.lastModified = now, now
	return s, nil
}

// readHeader reads the batch header at pos. Fewer than a header's bytes
// before limit is a torn write and reported as ErrCorruptMessage.
func (s *segment) readHeader(pos, limit int64) (BatchHeader, error) {
	if limit-pos < batchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d bytes at position %d, less than a batch header", ErrCorruptMessage, limit-pos, pos)
	}
	var buf [batchHeaderSize]byte
	if _, err := s.log.ReadAt(buf[:], pos); err != nil {
		if errors.Is(err, io.EOF) {
			return BatchHeader{}, fmt.Errorf("%w: short header at position %d", ErrCorruptMessage, pos)
		}
		return BatchHeader{}, err
	}
	return parseHeader(buf[:]), nil
}

// indexBatch updates the in-memory state and the indexes (in memory; see
// indexFile for when they reach the files) for a batch that was written at
// pos. Indexing follows Kafka: an offset-index entry (the batch's last
// offset, its position) once more than index.interval.bytes were written
// since the previous entry, with a time-index entry for the max timestamp
// so far at the same moment. Callers hold segsMu for writing
// (or own the segment exclusively, during load).
func (s *segment) indexBatch(pos int64, h BatchHeader, cfg Config) error {
	if pos == 0 {
		s.rollTimestamp = h.MaxTimestamp
	}
	if h.MaxTimestamp > s.maxTimestamp {
		s.maxTimestamp = h.MaxTimestamp
		s.offsetOfMaxTimestamp = h.lastOffset()
	}
	if s.bytesSinceIndexEntry > int64(cfg.IndexIntervalBytes) {
		if err := s.index.append(h.lastOffset(), pos); err != nil {
			return err
		}
		s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp)
		s.bytesSinceIndexEntry = 0
	}
	s.bytesSinceIndexEntry += h.size()
	s.nextOffset = h.nextOffset()
	s.size = pos + h.size()
	return nil
}

// loadClean trusts a segment that was flushed before a clean shutdown (or
// lies below the recovery point): indexes are read as they are, and only
// the batches after the last index entry are read (headers only) to find the
// next offset. An index that fails its sanity check is rebuilt, and the
// rebuilt files are written and fsynced at once: the recovery point is
// already past the segment, so no later flush is due to write them.
func (s *segment) loadClean(cfg Config) error {
	okIndex, err := s.index.load(s.fsys, s.size)
	if err != nil {
		return err
	}
	okTime, err := s.timeIndex.load(s.fsys, math.MaxInt64) // checked against nextOffset below
	if err != nil {
		return err
	}
	if !okIndex || !okTime {
		return s.rebuildClean(cfg)
	}
	if s.size > 0 {
		h, err := s.readHeader(0, s.size)
		if err != nil {
			return err
		}
		s.rollTimestamp = h.MaxTimestamp
	}
	s.maxTimestamp, s.offsetOfMaxTimestamp, _ = s.timeIndex.last()
	pos := int64(0)
	if n := len(s.index.entries); n > 0 {
		pos = int64(s.index.entries[n-1].position)
	}
	for pos < s.size {
		h, err := s.readHeader(pos, s.size)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTimestamp {
			s.maxTimestamp, s.offsetOfMaxTimestamp = h.MaxTimestamp, h.lastOffset()
		}
		s.nextOffset = h.nextOffset()
		pos += h.size()
		s.bytesSinceIndexEntry += h.size()
	}
	if _, off, ok := s.timeIndex.last(); ok && off >= s.nextOffset {
		return s.rebuildClean(cfg)
	}
	return nil
}

// rebuildClean rebuilds the indexes of a trusted segment whose index files
// failed their checks, and writes and fsyncs them.
func (s *segment) rebuildClean(cfg Config) error {
	if _, err := s.rebuild(cfg, false); err != nil {
		return err
	}
	return s.persistIndexes(true)
}

// rebuild recreates both indexes by reading every batch from the start of
// the segment: the index files are emptied at once and the entries rebuilt
// in memory (persistIndexes writes them). With check set (crash recovery)
// each batch is read whole and its length, magic, CRC and offset order are
// verified; the .log is truncated at the first batch that fails, and the
// number of bytes cut is returned. onBatch, if set, sees every good batch (recovery uses it to
// rebuild the leader-epoch cache).
func (s *segment) rebuild(cfg Config, check bool, onBatch ...func(BatchHeader)) (truncated int64, err error) {
	if err := s.index.reset(s.fsys); err != nil {
		return 0, err
	}
	if err := s.timeIndex.reset(s.fsys); err != nil {
		return 0, err
	}
	limit := s.size
	s.size, s.nextOffset, s.maxTimestamp, s.offsetOfMaxTimestamp, s.rollTimestamp, s.bytesSinceIndexEntry = 0, s.base, -1, -1, -1, 0
	var buf []byte
	pos := int64(0)
	for pos < limit {
		h, err := s.readHeader(pos, limit)
		if err == nil && check {
			err = s.checkBatchAt(pos, limit, h, &buf)
		}
		if err != nil {
			if !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrInvalidRecord) {
				return 0, err
			}
			if !check {
				return 0, err
			}
			if err := s.log.Truncate(pos); err != nil {
				return 0, err
			}
			return limit - pos, nil
		}
		if err := s.indexBatch(pos, h, cfg); err != nil {
			return 0, err
		}
		for _, fn := range onBatch {
			fn(h)
		}
		pos += h.size()
	}
	return 0, nil
}

// checkBatchAt verifies one whole batch during recovery.
func (s *segment) checkBatchAt(pos, limit int64, h BatchHeader, buf *[]byte) error {
	if err := checkBatchHeader(h, limit-pos); err != nil {
		return err
	}
	if h.BaseOffset < s.nextOffset {
		return fmt.Errorf("%w: batch offset %d below expected %d", ErrCorruptMessage, h.BaseOffset, s.nextOffset)
	}
	if !fitsRelativeOffset(h.lastOffset(), s.base) {
		return fmt.Errorf("%w: batch offset %d outside segment %d", ErrCorruptMessage, h.lastOffset(), s.base)
	}
	if int64(cap(*buf)) < h.size() {
		*buf = make([]byte, h.size())
	}
	b := (*buf)[:h.size()]
	if _, err := s.log.ReadAt(b, pos); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: short batch at %d", ErrCorruptMessage, pos)
		}
		return err
	}
	if got := batchCRC(b); got != h.CRC {
		return fmt.Errorf("%w: crc mismatch at position %d", ErrCorruptMessage, pos)
	}
	return nil
}

// positionOf returns the position of the first batch whose last offset is
// >= offset, scanning forward from the offset index, or s.size if none.
// limit is the committed size the caller saw.
func (s *segment) positionOf(offset, startPos, limit int64) (int64, BatchHeader, error) {
	for pos := startPos; pos < limit; {
		h, err := s.readHeader(pos, limit)
		if err != nil {
			return 0, BatchHeader{}, err
		}
		if h.lastOffset() >= offset {
			return pos, h, nil
		}
		pos += h.size()
	}
	return limit, BatchHeader{}, nil
}

// finalize adds the last time-index entry for the segment's max
// timestamp, so a later load finds it without reading the log (Kafka does
// the same when a segment is rolled or closed). Callers hold segsMu for
// writing.
func (s *segment) finalize() {
	if s.maxTimestamp >= 0 {
		s.timeIndex.maybeAppend(s.maxTimestamp, s.offsetOfMaxTimestamp)
	}
}

// persistIndexes writes the index entries not yet in their files and,
// with sync set, fsyncs every index file that changed since its last
// fsync. Lock should be held (appendMu), or the segment owned.
func (s *segment) persistIndexes(sync bool) error {
	return errors.Join(s.index.persist(s.fsys, sync), s.timeIndex.persist(s.fsys, sync), s.txnIndex.persist(sync))
}

// indexesDirty reports whether persistIndexes(true) has work to do.
func (s *segment) indexesDirty() bool {
	return s.index.file.dirty(len(s.index.entries)) || s.timeIndex.file.dirty(len(s.timeIndex.entries)) ||
		s.txnIndex.file.dirty(len(s.txnIndex.entries))
}

// sync fsyncs the .log and writes and fsyncs the indexes: afterwards the
// segment's files hold everything it has in memory, which is what lets the
// recovery point pass it. Lock should be held (appendMu).
func (s *segment) sync() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	return s.persistIndexes(true)
}

// close closes the .log, the one file a segment opens (for good: a
// cachedFile is not reopened after it). It writes
// nothing: index entries not yet persisted are lost, as in a crash.
func (s *segment) close() error { return s.log.Close() }

// renameDeleted renames the files to *.deleted; the .log descriptor is
// pinned open (filecache.go) and stays valid so in-flight reads finish. Kafka does the same and removes
// them later. Index files that do not exist (a .txnindex is created with
// its first entry) are skipped. Callers take the segment out of the log's
// segment list, so its indexes are never written again.
func (s *segment) renameDeleted(fsys FS) error {
	if h := cachedOf(s.log); h != nil {
		h.pin() // before the rename: the descriptor must be this file's
	}
	if err := fsys.Rename(s.path(logSuffix), s.path(logSuffix)+deletedSuffix); err != nil {
		return err
	}
	retireFile(s.log, s.path(logSuffix)+deletedSuffix)
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fsys.Rename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !isNotExist(err) {
			return err
		}
	}
	return nil
}

func (s *segment) removeDeleted(fsys FS) error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := fsys.Remove(s.path(suf) + deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
