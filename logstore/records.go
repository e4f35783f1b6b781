package logstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file decodes the records inside one batch. Only the timestamp
// lookups (ListOffsets by timestamp, MAX_TIMESTAMP) need it: produce and
// fetch move whole batches as bytes.

// maxDecompressedBatch bounds decompression of a single stored batch so a
// hostile or corrupt batch cannot make the broker allocate without limit.
const maxDecompressedBatch = 256 << 20

// recordStamp is the part of a record the timestamp lookups need.
type recordStamp struct {
	Offset    int64
	Timestamp int64
}

var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressedBatch))
})

// xerialHeader starts snappy data framed the way the Java client writes it
// (snappy-java's SnappyOutputStream); other clients send raw snappy blocks.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressRecords returns the uncompressed record bytes of a batch.
func decompressRecords(codec int, data []byte) ([]byte, error) {
	switch codec {
	case 0:
		return data, nil
	case 1:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return readLimited(zr)
	case 2:
		if bytes.HasPrefix(data, xerialHeader) && len(data) >= 16 {
			var out []byte
			for rest := data[16:]; len(rest) > 0; {
				if len(rest) < 4 {
					return nil, io.ErrUnexpectedEOF
				}
				n := int(binary.BigEndian.Uint32(rest))
				if n > len(rest)-4 {
					return nil, io.ErrUnexpectedEOF
				}
				chunk, err := snappy.Decode(nil, rest[4:4+n])
				if err != nil {
					return nil, err
				}
				out = append(out, chunk...)
				if len(out) > maxDecompressedBatch {
					return nil, fmt.Errorf("decompressed batch over %d bytes", maxDecompressedBatch)
				}
				rest = rest[4+n:]
			}
			return out, nil
		}
		if n, err := snappy.DecodedLen(data); err != nil || n > maxDecompressedBatch {
			return nil, fmt.Errorf("bad snappy block (len %d): %v", n, err)
		}
		return snappy.Decode(nil, data)
	case 3:
		return readLimited(lz4.NewReader(bytes.NewReader(data)))
	case 4:
		d, err := zstdDecoder()
		if err != nil {
			return nil, err
		}
		return d.DecodeAll(data, nil)
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressedBatch+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecompressedBatch {
		return nil, fmt.Errorf("decompressed batch over %d bytes", maxDecompressedBatch)
	}
	return out, nil
}

// batchRecordStamps decodes the offset and timestamp of every record of a
// whole batch b. For LogAppendTime batches every record carries the batch's
// max timestamp, as Kafka defines it.
func batchRecordStamps(b []byte) ([]recordStamp, error) {
	h := parseHeader(b)
	if int64(len(b)) < h.size() || h.size() < batchHeaderSize {
		return nil, fmt.Errorf("%w: short batch", ErrCorruptMessage)
	}
	data, err := decompressRecords(h.compression(), b[batchHeaderSize:h.size()])
	if err != nil {
		return nil, fmt.Errorf("%w: decompress batch at offset %d: %v", ErrCorruptMessage, h.BaseOffset, err)
	}
	stamps := make([]recordStamp, 0, h.RecordCount)
	for i := int32(0); i < h.RecordCount; i++ {
		length, n := binary.Varint(data)
		if n <= 0 || length < 0 || int64(len(data)-n) < length {
			return nil, fmt.Errorf("%w: bad record length in batch at offset %d", ErrCorruptMessage, h.BaseOffset)
		}
		rec := data[n : n+int(length)]
		data = data[n+int(length):]
		if len(rec) < 1 {
			return nil, fmt.Errorf("%w: empty record in batch at offset %d", ErrCorruptMessage, h.BaseOffset)
		}
		rec = rec[1:] // attributes (unused)
		tsDelta, n1 := binary.Varint(rec)
		if n1 <= 0 {
			return nil, fmt.Errorf("%w: bad timestamp delta in batch at offset %d", ErrCorruptMessage, h.BaseOffset)
		}
		offDelta, n2 := binary.Varint(rec[n1:])
		if n2 <= 0 {
			return nil, fmt.Errorf("%w: bad offset delta in batch at offset %d", ErrCorruptMessage, h.BaseOffset)
		}
		ts := h.BaseTimestamp + tsDelta
		if h.logAppendTime() {
			ts = h.MaxTimestamp
		}
		stamps = append(stamps, recordStamp{Offset: h.BaseOffset + offDelta, Timestamp: ts})
	}
	return stamps, nil
}
