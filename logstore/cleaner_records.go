package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file decodes the records of a batch for the cleaner and builds the
// batch it writes back: Kafka's MemoryRecords.filterTo for magic v2.

// attrDeleteHorizon is the batch attribute bit saying that baseTimestamp is
// the batch's delete horizon (KIP-534): the cleaner sets it on a batch that
// keeps tombstones or a removable transaction marker, and removes them from
// it once the horizon has passed.
const attrDeleteHorizon = 0x40

// Control record types (the key of a control batch's record).
const (
	controlAbort  = 0
	controlCommit = 1
)

// cleanRecord is one record of a batch being cleaned. raw is the record
// body after its length varint, rest the part of it after offsetDelta (key,
// value, headers), which is copied unchanged.
type cleanRecord struct {
	offset    int64
	timestamp int64 // absolute
	key       []byte
	hasKey    bool
	hasValue  bool
	attrs     byte
	rest      []byte
	raw       []byte
}

// batchRecords decompresses and decodes every record of batch b. The
// records alias the decompressed buffer.
func batchRecords(b []byte, h BatchHeader) ([]cleanRecord, error) {
	payload := b[batchHeaderSize:h.size()]
	data := payload
	if codec := h.compression(); codec != 0 {
		s, err := openRecordStream(codec, payload, storedDecompressedLimit(len(payload)))
		if err != nil {
			return nil, err
		}
		data, err = io.ReadAll(s)
		s.close()
		if err != nil {
			return nil, err
		}
	}
	out := make([]cleanRecord, 0, max(0, min(int(h.RecordCount), len(data)/minRecordSize)))
	for i := int32(0); i < h.RecordCount; i++ {
		size, n := binary.Varint(data)
		if n <= 0 || size < 0 || size > int64(len(data)-n) {
			return nil, fmt.Errorf("%w: batch at %d: record %d: bad length", ErrCorruptMessage, h.BaseOffset, i)
		}
		r, err := decodeCleanRecord(data[n:n+int(size)], h)
		if err != nil {
			return nil, fmt.Errorf("%w: batch at %d: record %d: %v", ErrCorruptMessage, h.BaseOffset, i, err)
		}
		out = append(out, r)
		data = data[n+int(size):]
	}
	return out, nil
}

func decodeCleanRecord(b []byte, h BatchHeader) (cleanRecord, error) {
	r := cleanRecord{raw: b}
	if len(b) < 1 {
		return r, errors.New("no attributes")
	}
	r.attrs = b[0]
	pos := 1
	tsDelta, n := binary.Varint(b[pos:])
	if n <= 0 {
		return r, errors.New("bad timestamp delta")
	}
	pos += n
	offDelta, n := binary.Varint(b[pos:])
	if n <= 0 {
		return r, errors.New("bad offset delta")
	}
	pos += n
	r.rest = b[pos:]
	r.timestamp = h.BaseTimestamp + tsDelta
	r.offset = h.BaseOffset + offDelta
	keyLen, n := binary.Varint(b[pos:])
	if n <= 0 || keyLen > int64(len(b)-pos-n) {
		return r, errors.New("bad key length")
	}
	pos += n
	if keyLen >= 0 {
		r.hasKey = true
		r.key = b[pos : pos+int(keyLen)]
		pos += int(keyLen)
	}
	valLen, n := binary.Varint(b[pos:])
	if n <= 0 || valLen > int64(len(b)-pos-n) {
		return r, errors.New("bad value length")
	}
	r.hasValue = valLen >= 0
	return r, nil
}

// controlType reads the type of a control batch's first record: ABORT or
// COMMIT (-1 if it cannot be read).
func controlType(recs []cleanRecord) int {
	if len(recs) == 0 || len(recs[0].key) < 4 {
		return -1
	}
	return int(int16(binary.BigEndian.Uint16(recs[0].key[2:])))
}

// appendFilteredBatch appends to out the batch rebuilt from h (the
// original header) with only the records kept, recompressed with the
// batch's codec. The base offset, lastOffsetDelta (so the batch keeps its
// offset range and its producer's sequence range), producer fields and
// leader epoch are kept. With horizon >= 0 the delete-horizon attribute is
// set and baseTimestamp becomes horizon, every record's timestamp delta
// being rewritten from it. maxTimestamp is the largest kept record
// timestamp (kept as it was for LogAppendTime batches). An empty kept
// list writes Kafka's empty batch header: no records, no codec.
func appendFilteredBatch(out []byte, h BatchHeader, kept []cleanRecord, horizon int64, cfg Config) ([]byte, error) {
	start := len(out)
	var hdr [batchHeaderSize]byte
	be := binary.BigEndian
	attrs := uint16(h.Attributes)
	baseTs, maxTs := h.BaseTimestamp, h.MaxTimestamp
	if horizon >= 0 {
		attrs |= attrDeleteHorizon
		baseTs = horizon
	}
	if len(kept) == 0 {
		attrs &^= attrCompressionMask | attrDeleteHorizon
		baseTs = h.MaxTimestamp
	} else if !h.logAppendTime() {
		maxTs = kept[0].timestamp
		for _, r := range kept[1:] {
			maxTs = max(maxTs, r.timestamp)
		}
	}
	be.PutUint64(hdr[posBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(hdr[posLeaderEpoch:], uint32(h.LeaderEpoch))
	hdr[posMagic] = 2
	be.PutUint16(hdr[posAttributes:], attrs)
	be.PutUint32(hdr[posLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(hdr[posBaseTimestamp:], uint64(baseTs))
	be.PutUint64(hdr[posMaxTimestamp:], uint64(maxTs))
	be.PutUint64(hdr[posProducerID:], uint64(h.ProducerID))
	be.PutUint16(hdr[posProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(hdr[posBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(hdr[posRecordCount:], uint32(len(kept)))
	out = append(out, hdr[:]...)
	if len(kept) > 0 {
		var raw []byte
		for _, r := range kept {
			raw = appendCleanRecord(raw, r, h.BaseOffset, baseTs)
		}
		codec := int(attrs & attrCompressionMask)
		if codec == 0 {
			out = append(out, raw...)
		} else {
			w := &appendWriter{buf: out}
			if err := compressTo(w, bytes.NewReader(raw), codec, cfg); err != nil {
				return nil, err
			}
			out = w.buf
		}
	}
	nb := out[start:]
	be.PutUint32(nb[posBatchLength:], uint32(len(nb)-logOverhead))
	be.PutUint32(nb[posCRC:], batchCRC(nb))
	return out, nil
}

// appendCleanRecord encodes r (length prefix included) for a batch with
// the given base offset and base timestamp.
func appendCleanRecord(dst []byte, r cleanRecord, baseOffset, baseTs int64) []byte {
	var body [1 + 2*binary.MaxVarintLen64]byte
	body[0] = r.attrs
	n := 1
	n += binary.PutVarint(body[n:], r.timestamp-baseTs)
	n += binary.PutVarint(body[n:], r.offset-baseOffset)
	dst = binary.AppendVarint(dst, int64(n+len(r.rest)))
	dst = append(dst, body[:n]...)
	return append(dst, r.rest...)
}
