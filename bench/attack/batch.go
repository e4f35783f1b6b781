package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs, as in a batch's attributes.
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// batch is a magic v2 record batch as the harness writes it: every header
// field is the case's to choose, so it can lie. records is the records
// section as it goes on the wire (already compressed when codec is set).
type batch struct {
	codec           int16
	lastOffsetDelta int32
	baseTimestamp   int64
	maxTimestamp    int64
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
	recordCount     int32
	records         []byte
}

// plainBatch is a batch of the given encoded records, no producer id, its
// header true to its content.
func plainBatch(ts int64, recs ...[]byte) batch {
	return batch{
		lastOffsetDelta: int32(len(recs) - 1),
		baseTimestamp:   ts,
		maxTimestamp:    ts,
		producerID:      -1,
		producerEpoch:   -1,
		baseSequence:    -1,
		recordCount:     int32(len(recs)),
		records:         bytes.Join(recs, nil),
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encode returns the batch's bytes with base offset 0, its length and a
// CRC that matches its (possibly lying) content.
func (b batch) encode() []byte {
	var out []byte
	out = binary.BigEndian.AppendUint64(out, 0)                         // base offset
	out = binary.BigEndian.AppendUint32(out, uint32(49+len(b.records))) // batch length
	out = binary.BigEndian.AppendUint32(out, 0xffffffff)                // partition leader epoch
	out = append(out, 2)                                                // magic
	out = binary.BigEndian.AppendUint32(out, 0)                         // crc, below
	crcFrom := len(out)
	out = binary.BigEndian.AppendUint16(out, uint16(b.codec))
	out = binary.BigEndian.AppendUint32(out, uint32(b.lastOffsetDelta))
	out = binary.BigEndian.AppendUint64(out, uint64(b.baseTimestamp))
	out = binary.BigEndian.AppendUint64(out, uint64(b.maxTimestamp))
	out = binary.BigEndian.AppendUint64(out, uint64(b.producerID))
	out = binary.BigEndian.AppendUint16(out, uint16(b.producerEpoch))
	out = binary.BigEndian.AppendUint32(out, uint32(b.baseSequence))
	out = binary.BigEndian.AppendUint32(out, uint32(b.recordCount))
	out = append(out, b.records...)
	binary.BigEndian.PutUint32(out[crcFrom-4:], crc32.Checksum(out[crcFrom:], castagnoli))
	return out
}

// record encodes one record: its body, prefixed by its varint length
// (the true length unless claimLength is not negative).
func record(offsetDelta, tsDelta int64, key, value []byte, claimLength int64) []byte {
	var body []byte
	body = append(body, 0) // attributes
	body = binary.AppendVarint(body, tsDelta)
	body = binary.AppendVarint(body, offsetDelta)
	if key == nil {
		body = binary.AppendVarint(body, -1)
	} else {
		body = binary.AppendVarint(body, int64(len(key)))
		body = append(body, key...)
	}
	if value == nil {
		body = binary.AppendVarint(body, -1)
	} else {
		body = binary.AppendVarint(body, int64(len(value)))
		body = append(body, value...)
	}
	body = binary.AppendVarint(body, 0) // no headers
	length := int64(len(body))
	if claimLength >= 0 {
		length = claimLength
	}
	return append(binary.AppendVarint(nil, length), body...)
}

// s2RepeatBlock is a snappy block that decompresses to zeros, written with
// S2's repeat-offset extension (a copy with offset 0 repeats the last
// offset, up to 16 MiB per five bytes). A strict snappy decoder refuses
// it; klauspost's snappy package, an S2 decoder, accepts it. repeats
// elements of the longest repeat follow one literal zero and one copy of
// offset 1, so the block holds 5 + repeats × 16,842,755 bytes.
func s2RepeatBlock(repeats int) []byte {
	const longest = 0xffffff + 1<<16 + 4
	n := uint64(5 + repeats*longest)
	b := binary.AppendUvarint(nil, n)
	b = append(b, 0x00, 0x00) // literal of one byte: 0
	b = append(b, 0x01, 0x01) // copy1: length 4, offset 1
	for range repeats {
		b = append(b, 0x1d, 0x00, 0xff, 0xff, 0xff) // copy1, offset 0 (repeat), length code 7: 0xffffff + 65536 + 4
	}
	return b
}

// xerialSnappy frames blocks as snappy-java's SnappyOutputStream does
// (the Java client's snappy): magic, version 1, compatible version 1, then
// each block prefixed by its int32 length.
func xerialSnappy(blocks ...[]byte) []byte {
	b := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, blk := range blocks {
		b = binary.BigEndian.AppendUint32(b, uint32(len(blk)))
		b = append(b, blk...)
	}
	return b
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// compressZeros compresses n zero bytes with codec, streaming, so the
// harness never holds the decompressed size. gzip is written as members
// of at most 64 MiB, one compressed and repeated (a gzip stream may hold
// several members; Java's GZIPInputStream and Go's reader read them all),
// at the best level: deflate cannot do better than about 1,032 to 1, and
// 1 GiB must fit under the default max.message.bytes of 1 MiB.
func compressZeros(codec int16, n int64) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	var err error
	switch codec {
	case codecGzip:
		member := min(n, 64<<20)
		gw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		if _, err := io.CopyN(gw, zeros{}, member); err != nil {
			return nil, err
		}
		if err := gw.Close(); err != nil {
			return nil, err
		}
		one := bytes.Clone(buf.Bytes())
		for left := n - member; left > 0; left -= member {
			if left < member {
				return nil, errors.New("compressZeros: gzip size must be a multiple of 64 MiB")
			}
			buf.Write(one)
		}
		return buf.Bytes(), nil
	case codecZstd:
		w, err = zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest))
	case codecLZ4:
		lw := lz4.NewWriter(&buf)
		err = lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ConcurrencyOption(1))
		w = lw
	default:
		panic("compressZeros: codec")
	}
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(w, zeros{}, n); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
