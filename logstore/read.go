package logstore

import (
	"errors"
	"fmt"
	"os"
)

// ReadResult is the data of a Read: whole record batches, byte for byte as
// stored. FirstOffset is the base offset of the first batch (which may be
// below the requested offset, as in Kafka: the consumer skips the records
// it did not ask for), or the requested offset when Data is empty.
type ReadResult struct {
	Data        []byte
	FirstOffset int64
}

// fileRange is a read resolved to bytes of one segment file. Reads are
// resolved to a range first and copied second so that the broker can later
// send the range with sendfile instead of copying.
type fileRange struct {
	file        File
	pos, size   int64
	firstOffset int64
	nextOffset  int64 // the offset after the range's last batch
}

// Read returns whole batches starting with the batch containing offset, at
// most maxBytes in total except that the first batch is returned whole when
// minOneBatch is set (KIP-74), and only batches whose last offset is below
// maxOffset (the high watermark for consumers; pass math.MaxInt64 for no
// limit). Data comes from one segment per call, as in Kafka. Reading at the
// log end offset or at maxOffset returns no data; below the log start
// offset or above the log end offset is ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	sl, err := l.ReadSlice(offset, maxBytes, maxOffset, minOneBatch)
	if err != nil {
		return ReadResult{FirstOffset: offset}, err
	}
	data, err := sl.Bytes()
	l.noteReadError(err)
	if err != nil || data == nil {
		return ReadResult{FirstOffset: offset}, err
	}
	return ReadResult{Data: data, FirstOffset: sl.FirstOffset}, nil
}

// noteReadError reports a read's I/O error to the Dir's OnStorageError.
func (l *Log) noteReadError(err error) {
	if err == nil || !errors.Is(err, ErrKafkaStorage) || isFileBudgetError(err) {
		return // a reopen short of descriptors is no fault of the files
	}
	if f := l.onStorageError.Load(); f != nil {
		(*f)(l.tp, err)
	}
}

// readError classifies an error from reading a segment: a file closed under
// the reader means the segment was deleted by retention or truncation; a
// reopen short of descriptors (filecache.go) stays recognizable, so that
// noteReadError does not blame the directory for it.
func readError(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("%w: segment deleted during read", ErrOffsetOutOfRange)
	}
	if errors.Is(err, ErrCorruptMessage) {
		return err
	}
	if isFileBudgetError(err) {
		return fmt.Errorf("%w: read: %w", ErrKafkaStorage, err)
	}
	return fmt.Errorf("%w: read: %v", ErrKafkaStorage, err)
}

// segmentView is what a reader copies out of a segment under segsMu.
type segmentView struct {
	seg      *segment
	size     int64
	startPos int64
}

// readRange resolves a Read to a file range without copying data.
func (l *Log) readRange(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (fileRange, error) {
	views, err := l.viewFrom(offset, maxOffset)
	if err != nil || len(views) == 0 {
		return fileRange{}, err
	}
	for _, v := range views {
		pos, h, err := v.seg.positionOf(offset, v.startPos, v.size)
		if err != nil {
			return fileRange{}, readError(err)
		}
		if pos == v.size {
			continue // nothing at or after offset here: try the next segment
		}
		var total, next int64
		for p := pos; p < v.size; {
			if p != pos {
				if h, err = v.seg.readHeader(p, v.size); err != nil {
					return fileRange{}, readError(err)
				}
			}
			if h.lastOffset() >= maxOffset {
				break
			}
			if total+h.size() > int64(maxBytes) && !(total == 0 && minOneBatch) {
				break
			}
			total += h.size()
			next = h.nextOffset()
			p += h.size()
		}
		if total == 0 {
			return fileRange{}, nil
		}
		first, err := v.seg.readHeader(pos, v.size)
		if err != nil {
			return fileRange{}, readError(err)
		}
		return fileRange{file: v.seg.log, pos: pos, size: total, firstOffset: first.BaseOffset, nextOffset: next}, nil
	}
	return fileRange{}, nil
}

// viewFrom checks offset against the log's bounds and snapshots the
// segments from the one holding offset on, with the index position to
// start scanning at in the first. An empty result means "no data".
func (l *Log) viewFrom(offset, maxOffset int64) ([]segmentView, error) {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	if l.closed {
		return nil, ErrLogClosed
	}
	if offset < l.logStart || offset > l.logEnd {
		return nil, fmt.Errorf("%w: offset %d not in [%d, %d] of %s", ErrOffsetOutOfRange, offset, l.logStart, l.logEnd, l.tp)
	}
	if offset == l.logEnd || offset >= maxOffset {
		return nil, nil
	}
	i := l.floorSegment(offset)
	views := make([]segmentView, 0, len(l.segments)-i)
	for j, s := range l.segments[i:] {
		v := segmentView{seg: s, size: s.size}
		if j == 0 {
			v.startPos = s.index.lookup(offset)
		}
		views = append(views, v)
	}
	return views, nil
}

// OffsetForTimestamp implements ListOffsets by timestamp: the offset and
// timestamp of the earliest record (at or above the log start offset) whose
// timestamp is >= ts; ok is false when there is none. The segment is found
// by its max timestamp, the starting batch through the .timeindex and
// .index, and only the one matching batch is decoded (and decompressed).
// The special timestamps -2 (earliest) and -1 (latest) return the log start
// and end offsets with timestamp -1; -3 is MaxTimestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, ok bool) {
	switch ts {
	case -2:
		return l.LogStartOffset(), -1, true
	case -1:
		return l.LogEndOffset(), -1, true
	case -3:
		o, t := l.MaxTimestamp()
		return o, t, o >= 0
	}
	l.segsMu.RLock()
	if l.closed {
		l.segsMu.RUnlock()
		return -1, -1, false
	}
	logStart := l.logStart
	// Segment max timestamps need not grow (CreateTime is the producer's
	// clock), so this is a linear search for the first candidate, as in Kafka.
	i := len(l.segments)
	for j, s := range l.segments {
		if s.maxTimestamp >= ts && s.nextOffset > logStart {
			i = j
			break
		}
	}
	var views []segmentView
	startOffset := logStart
	for j, s := range l.segments[min(i, len(l.segments)):] {
		if s.nextOffset <= logStart {
			continue
		}
		v := segmentView{seg: s, size: s.size}
		if j == 0 {
			startOffset = max(s.timeIndex.lookup(ts), logStart)
			v.startPos = s.index.lookup(startOffset)
		}
		views = append(views, v)
	}
	l.segsMu.RUnlock()

	for _, v := range views {
		for pos := v.startPos; pos < v.size; {
			h, err := v.seg.readHeader(pos, v.size)
			if err != nil {
				return -1, -1, false
			}
			if h.lastOffset() >= startOffset && h.MaxTimestamp >= ts {
				stamps, err := readStamps(v.seg, pos, h)
				if err != nil {
					return -1, -1, false
				}
				for _, r := range stamps {
					if r.Timestamp >= ts && r.Offset >= logStart {
						return r.Offset, r.Timestamp, true
					}
				}
			}
			pos += h.size()
		}
	}
	return -1, -1, false
}

// MaxTimestamp returns the offset and timestamp of the record with the
// largest timestamp (the first such record if several share it), for
// ListOffsets MAX_TIMESTAMP (KIP-734); (-1, -1) if the log has none.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) {
	l.segsMu.RLock()
	if l.closed {
		l.segsMu.RUnlock()
		return -1, -1
	}
	var best *segment
	for _, s := range l.segments {
		if s.maxTimestamp >= 0 && s.nextOffset > l.logStart && (best == nil || s.maxTimestamp > best.maxTimestamp) {
			best = s
		}
	}
	if best == nil {
		l.segsMu.RUnlock()
		return -1, -1
	}
	target, maxTs, size := best.offsetOfMaxTimestamp, best.maxTimestamp, best.size
	startPos := best.index.lookup(target)
	l.segsMu.RUnlock()

	pos, h, err := best.positionOf(target, startPos, size)
	if err != nil || pos == size {
		return target, maxTs
	}
	stamps, err := readStamps(best, pos, h)
	if err != nil {
		return target, maxTs
	}
	for _, r := range stamps {
		if r.Timestamp == maxTs {
			return r.Offset, r.Timestamp
		}
	}
	return target, maxTs
}

// readStamps reads and decodes the whole batch at pos.
func readStamps(s *segment, pos int64, h BatchHeader) ([]recordStamp, error) {
	b := make([]byte, h.size())
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return nil, err
	}
	return batchRecordStamps(b)
}
