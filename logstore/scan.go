package logstore

// ScanBatches walks batch headers from an offset to the log end: the
// broker replays them into its producer state after loading a snapshot
// (on open and after a truncation). Only headers are read, except for
// control batches (transaction markers), which are small and whose record
// says COMMIT or ABORT.

import (
	"errors"
	"fmt"
	"io"
)

// IsControl reports whether the batch is a control batch (a transaction
// marker).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsTransactional reports whether the batch belongs to a transaction.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// BatchSize is the batch's total size in bytes, header included.
func (h BatchHeader) BatchSize() int64 { return h.size() }

// ScanBatches calls fn for every batch from the one holding offset from
// (or the first batch, when from is below it) to the log end offset as of
// the call, in order. For control batches control holds the whole batch,
// valid only during the call; it is nil otherwise. An error from fn stops
// the scan and is returned. Appends running concurrently are not seen;
// the caller normally holds off its own appends while it replays.
func (l *Log) ScanBatches(from int64, fn func(h BatchHeader, control []byte) error) error {
	l.segsMu.RLock()
	if l.closed {
		l.segsMu.RUnlock()
		return ErrLogClosed
	}
	from = max(from, l.segments[0].base)
	if from >= l.logEnd {
		l.segsMu.RUnlock()
		return nil
	}
	i := l.floorSegment(from)
	views := make([]segmentView, 0, len(l.segments)-i)
	for j, s := range l.segments[i:] {
		v := segmentView{seg: s, size: s.size}
		if j == 0 {
			v.startPos = s.index.lookup(from)
		}
		views = append(views, v)
	}
	l.segsMu.RUnlock()

	var buf []byte
	for _, v := range views {
		for pos := v.startPos; pos < v.size; {
			h, err := v.seg.readHeader(pos, v.size)
			if err != nil {
				return readError(err)
			}
			if h.size() < batchHeaderSize || pos+h.size() > v.size {
				return fmt.Errorf("%w: batch of %d bytes at position %d of segment %d", ErrCorruptMessage, h.size(), pos, v.seg.base)
			}
			if h.lastOffset() >= from {
				var control []byte
				if h.IsControl() {
					if int64(cap(buf)) < h.size() {
						buf = make([]byte, h.size())
					}
					control = buf[:h.size()]
					if _, err := v.seg.log.ReadAt(control, pos); err != nil && !errors.Is(err, io.EOF) {
						return readError(err)
					}
				}
				if err := fn(h, control); err != nil {
					return err
				}
			}
			pos += h.size()
		}
	}
	return nil
}
