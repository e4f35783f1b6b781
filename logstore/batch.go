package logstore

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Record batch v2 layout (frozen: it is Kafka's wire and disk format; see
// doc.go for the drawing). Offsets are byte positions in the batch.
const (
	posBaseOffset      = 0
	posBatchLength     = 8
	posLeaderEpoch     = 12
	posMagic           = 16
	posCRC             = 17
	posAttributes      = 21
	posLastOffsetDelta = 23
	posBaseTimestamp   = 27
	posMaxTimestamp    = 35
	posProducerID      = 43
	posProducerEpoch   = 51
	posBaseSequence    = 53
	posRecordCount     = 57

	// batchHeaderSize is the size of the v2 header up to the first record.
	batchHeaderSize = 61
	// logOverhead is baseOffset + batchLength: the bytes not counted in
	// batchLength.
	logOverhead = 12
	// minBatchLength is the smallest legal batchLength (a header with no records).
	minBatchLength = batchHeaderSize - logOverhead

	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded v2 header of one record batch. It is exported
// for the broker's idempotent-producer bookkeeping, which reads producer
// ids and sequences from the batches it appends without decoding records.
type BatchHeader struct {
	BaseOffset      int64
	Length          int32 // batchLength: bytes after the length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	BaseTimestamp   int64
	MaxTimestamp    int64
	ProducerID      int64
	ProducerEpoch   int16
	BaseSequence    int32
	RecordCount     int32
}

// parseHeader decodes a header; b must hold at least batchHeaderSize bytes.
func parseHeader(b []byte) BatchHeader {
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:      int64(be.Uint64(b[posBaseOffset:])),
		Length:          int32(be.Uint32(b[posBatchLength:])),
		LeaderEpoch:     int32(be.Uint32(b[posLeaderEpoch:])),
		Magic:           int8(b[posMagic]),
		CRC:             be.Uint32(b[posCRC:]),
		Attributes:      int16(be.Uint16(b[posAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[posLastOffsetDelta:])),
		BaseTimestamp:   int64(be.Uint64(b[posBaseTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[posMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[posProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[posProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[posBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[posRecordCount:])),
	}
}

// ParseBatchHeaders decodes the headers of the record batches in records,
// in order, without checking CRCs. It returns nil when records is not a
// whole sequence of magic v2 batches; appending such bytes fails anyway,
// with the error the append path gives.
func ParseBatchHeaders(records []byte) []BatchHeader {
	var out []BatchHeader
	for len(records) > 0 {
		if len(records) < batchHeaderSize {
			return nil
		}
		h := parseHeader(records)
		size := h.size()
		if h.Length < minBatchLength || size > int64(len(records)) || h.Magic != 2 {
			return nil
		}
		out = append(out, h)
		records = records[size:]
	}
	return out
}

// CountBatchHeaders is ParseBatchHeaders without the slice: the first
// batch's header and how many batches records holds, n = 0 where
// ParseBatchHeaders returns nil. A Produce's shape check uses it on every
// partition's records without allocating.
func CountBatchHeaders(records []byte) (first BatchHeader, n int) {
	for len(records) > 0 {
		if len(records) < batchHeaderSize {
			return BatchHeader{}, 0
		}
		h := parseHeader(records)
		size := h.size()
		if h.Length < minBatchLength || size > int64(len(records)) || h.Magic != 2 {
			return BatchHeader{}, 0
		}
		if n == 0 {
			first = h
		}
		n++
		records = records[size:]
	}
	return first, n
}

// LastOffset is the offset of the batch's last record.
func (h BatchHeader) LastOffset() int64 { return h.lastOffset() }

// size is the batch's total size in bytes on disk.
func (h BatchHeader) size() int64 { return logOverhead + int64(h.Length) }

// lastOffset is the offset of the batch's last record (compaction may have
// removed records, but never the offset range).
func (h BatchHeader) lastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// nextOffset is the offset following the batch.
func (h BatchHeader) nextOffset() int64 { return h.lastOffset() + 1 }

func (h BatchHeader) compression() int { return int(h.Attributes & attrCompressionMask) }

func (h BatchHeader) logAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// batchCRC computes the CRC-32C of a whole batch as Kafka defines it: over
// everything from attributes to the end, so baseOffset and
// partitionLeaderEpoch can be rewritten without touching it.
func batchCRC(b []byte) uint32 { return crc32.Checksum(b[posAttributes:], castagnoli) }

// batchSpan locates one validated batch inside an append buffer.
type batchSpan struct {
	pos    int // position in the buffer
	header BatchHeader
	// maxTimestamp is the largest record timestamp, found by the record
	// validator of a leader's append (validate.go); -1 when none has one.
	maxTimestamp int64
}

// checkBatchHeader checks what can be checked from the header alone and the
// number of bytes available (avail counts from the batch start). It is shared
// by produce validation and recovery.
func checkBatchHeader(h BatchHeader, avail int64) error {
	if h.Length < minBatchLength {
		return fmt.Errorf("%w: batch length %d below minimum %d", ErrCorruptMessage, h.Length, minBatchLength)
	}
	if h.size() > avail {
		return fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrCorruptMessage, h.size(), avail)
	}
	if h.Magic != 2 {
		return fmt.Errorf("%w: magic %d, only v2 record batches are supported", ErrInvalidRecord, h.Magic)
	}
	if h.LastOffsetDelta < 0 || h.RecordCount < 0 {
		return fmt.Errorf("%w: negative lastOffsetDelta %d or recordCount %d", ErrInvalidRecord, h.LastOffsetDelta, h.RecordCount)
	}
	// Compaction can drop records but never adds them, so count <= span.
	if int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("%w: recordCount %d exceeds lastOffsetDelta %d + 1", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	}
	return nil
}

// splitBatches validates every batch in buf before anything is written
// (appends are all-or-nothing) and returns their positions. leader tightens
// the checks to what a producer may send: a leader assigns offsets itself, so
// the batch must be dense (recordCount == lastOffsetDelta+1) and non-empty.
func splitBatches(buf []byte, cfg Config, leader bool) ([]batchSpan, error) {
	return splitBatchesInto(nil, buf, cfg, leader)
}

// splitBatchesInto is splitBatches appending the spans to dst[:0]: a
// leader's append passes room for the one batch a Produce carries, so
// that splitting allocates nothing.
func splitBatchesInto(dst []batchSpan, buf []byte, cfg Config, leader bool) ([]batchSpan, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: empty record set", ErrCorruptMessage)
	}
	spans := dst[:0]
	for pos := 0; pos < len(buf); {
		rest := buf[pos:]
		if len(rest) < batchHeaderSize {
			return nil, fmt.Errorf("%w: %d trailing bytes, less than a batch header", ErrCorruptMessage, len(rest))
		}
		h := parseHeader(rest)
		if err := checkBatchHeader(h, int64(len(rest))); err != nil {
			return nil, err
		}
		if cfg.MaxMessageBytes > 0 && h.size() > int64(cfg.MaxMessageBytes) {
			return nil, fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", ErrMessageTooLarge, h.size(), cfg.MaxMessageBytes)
		}
		b := rest[:h.size()]
		if got := batchCRC(b); got != h.CRC {
			return nil, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptMessage, h.CRC, got)
		}
		if leader && (h.RecordCount == 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1) {
			return nil, fmt.Errorf("%w: recordCount %d inconsistent with lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
		}
		spans = append(spans, batchSpan{pos: pos, header: h})
		pos += int(h.size())
	}
	if cfg.SegmentBytes > 0 && int64(len(buf)) > cfg.SegmentBytes {
		return nil, fmt.Errorf("%w: %d bytes exceed segment.bytes %d", ErrRecordListTooLarge, len(buf), cfg.SegmentBytes)
	}
	return spans, nil
}

// stampLeaderBatch rewrites the fields a leader owns: the base offset, the
// partition leader epoch, and for LogAppendTime topics the timestamp type and
// max timestamp (which are covered by the CRC, so it is recomputed). Only
// these bytes change; everything else stays as the producer sent it.
func stampLeaderBatch(b []byte, baseOffset int64, leaderEpoch int32, logAppendTimeMs int64) {
	be := binary.BigEndian
	be.PutUint64(b[posBaseOffset:], uint64(baseOffset))
	be.PutUint32(b[posLeaderEpoch:], uint32(leaderEpoch))
	if logAppendTimeMs >= 0 {
		attrs := be.Uint16(b[posAttributes:]) | attrLogAppendTime
		be.PutUint16(b[posAttributes:], attrs)
		be.PutUint64(b[posMaxTimestamp:], uint64(logAppendTimeMs))
		be.PutUint32(b[posCRC:], batchCRC(b))
	}
}

// fitsRelativeOffset reports whether offset can be stored in an index of a
// segment starting at base (relative offsets are int32).
func fitsRelativeOffset(offset, base int64) bool {
	d := offset - base
	return d >= 0 && d <= math.MaxInt32
}
