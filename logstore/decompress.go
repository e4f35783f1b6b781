package logstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file turns the records of a compressed batch into a stream that the
// record walk (records.go) reads a few bytes at a time, so that no buffer
// ever holds a whole decompressed batch:
//
//	batch payload ─▶ codec reader ─▶ capReader (bytes left under the cap)
//	                                    ─▶ bufio.Reader ─▶ record walk
//
// Memory per batch being decompressed is the codec's own state — gzip's
// 32 KiB window, one lz4 block (at most 4 MiB), one zstd window (at most
// zstdMaxWindow), one snappy block (at most 64/3 times its compressed
// size) — plus a 4 KiB read buffer; skipped keys and values are read
// through and dropped. At most decompressSlots batches are decompressed at
// once, so together they stay within a fixed budget (about 2 × 16 MiB per
// slot in the worst case) however many produce requests arrive together.
//
// Codecs are Kafka's: 1 gzip, 2 snappy (a raw block, or snappy-java's
// xerial framing as the Java producer writes it), 3 lz4 (frame format),
// 4 zstd. Snappy is decoded with snappy.DecodeStrict, which accepts only
// the Snappy format: klauspost's snappy.Decode delegates to S2 and would
// accept S2's extensions, which Kafka's snappy decoders refuse.

const (
	// minDecompressedLimit and decompressedLimitRatio bound the bytes the
	// batches of one append may decompress to: 64 times max.message.bytes,
	// at least 64 MiB (64 MiB with the default max.message.bytes). Real
	// producer batches compress JSON, logs and Avro at ratios of 2 to 20;
	// only synthetic data (long runs of one byte) goes past 64:1, and a
	// batch of zeros small enough to pass max.message.bytes can otherwise
	// expand a thousandfold (gzip) or without bound (zstd, S2). The memory
	// a batch costs no longer depends on the cap (decompression streams);
	// the cap bounds the CPU one request can cost: 64 MiB of gzip is
	// about a quarter of a second. An append past it is MESSAGE_TOO_LARGE,
	// which makes the Java producer split the batch and retry.
	minDecompressedLimit   = 64 << 20
	decompressedLimitRatio = 64

	// storedDecompressedRatio bounds the decompressed size of a batch read
	// back from a log (timestamp lookups): gzip's own maximum ratio (about
	// 1032:1), so no batch a producer could have appended is refused, at
	// least minDecompressedLimit.
	storedDecompressedRatio = 1032

	// zstdMaxWindow is the largest zstd window accepted. A zstd frame
	// declares its window and a decoder allocates it when decoding starts,
	// so a 20-byte frame can otherwise cost gigabytes. zstd levels 1–19
	// use windows of at most 8 MiB (level 3, the Java producer's default,
	// 2 MiB); frames of the ultra levels 20–22 are refused as corrupt.
	zstdMaxWindow = 8 << 20

	// snappyMaxRatio: the Snappy format cannot decode to more than 64
	// bytes per 3 input bytes (a 3-byte copy of 64 bytes), so a block
	// whose header claims more is corrupt, and is refused before its
	// buffer is allocated.
	snappyMaxRatioNum, snappyMaxRatioDen = 64, 3
)

// decompressedLimit is the cap on the decompressed bytes of one append.
func decompressedLimit(cfg Config) int64 {
	return max(minDecompressedLimit, decompressedLimitRatio*int64(cfg.MaxMessageBytes))
}

// The per-request cap. minRequestDecompressed and
// requestDecompressedRatio bound the decompressed bytes of all the
// batches one Produce request appends, across its partitions: the larger
// of 256 MiB and 32 times the request's record bytes, and never below the
// per-batch cap of the partition being appended (so a request of one
// partition is never refused by it). Kafka has no such cap, so it must not
// refuse what a real producer sends: a producer's request is at most
// max.request.size (1 MiB by default), which the 256 MiB floor lets
// decompress 256-fold, beyond any real data; a larger request would have
// to average more than 32:1 over all its batches, twice what JSON or logs
// reach with zstd, and half the per-batch ratio that already refuses a full
// batch past 64:1. What it stops is amplification across partitions: 1000
// zstd batches of 7 KiB each (64 MiB of zeros, under the per-batch cap)
// used to make the broker decompress 64 GiB for one 7 MiB request; now
// 256 MiB. A partition past it is MESSAGE_TOO_LARGE, as for the per-batch
// cap; the producer splits the batch and retries in a later request.
const (
	minRequestDecompressed   = 256 << 20
	requestDecompressedRatio = 32
)

// RequestDecompressBudget is what is left of the per-request cap on
// decompressed bytes for the appends of one Produce request (see
// minRequestDecompressed): each append charges it with what its compressed
// batches actually decompressed (uncompressed batches cost nothing), and a
// batch that would go past it is refused with ErrMessageTooLarge. It is
// not safe for concurrent use: a request's partitions are appended one
// after another.
type RequestDecompressBudget struct {
	limit int64
	used  int64
}

// NewRequestDecompressBudget returns the budget of a request carrying
// recordBytes bytes of record batches (all its partitions together).
func NewRequestDecompressBudget(recordBytes int64) *RequestDecompressBudget {
	return &RequestDecompressBudget{limit: max(minRequestDecompressed, requestDecompressedRatio*recordBytes)}
}

// left is what a batch appended with the per-batch cap batchLimit may
// still decompress: the request's cap is never below the batch's own.
func (r *RequestDecompressBudget) left(batchLimit int64) int64 {
	return max(r.limit, batchLimit) - r.used
}

// storedDecompressedLimit is the cap for reading back a stored batch of
// size bytes.
func storedDecompressedLimit(size int) int64 {
	return max(minDecompressedLimit, storedDecompressedRatio*int64(size))
}

// decompressSlots bounds how many batches are decompressed at once.
var decompressSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderSize is the magic, a version and a compatible version.
const xerialHeaderSize = 16

// errOverLimit builds the error for a batch past its cap.
func errOverLimit(limit int64) error {
	return fmt.Errorf("%w: records decompress to more than %d bytes", ErrMessageTooLarge, limit)
}

// codecError classifies an error of a codec's decoder: the payload is not
// valid data for the codec the batch names.
func codecError(codec int, err error) error {
	if errors.Is(err, ErrMessageTooLarge) || errors.Is(err, ErrCorruptMessage) {
		return err
	}
	return fmt.Errorf("%w: %s data: %v", ErrCorruptMessage, codecName(codec), err)
}

func codecName(codec int) string {
	switch codec {
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return fmt.Sprintf("codec %d", codec)
}

var (
	gzipReaders = sync.Pool{}
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdReaders = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return err
		}
		return d
	}}
	snappyReaders = sync.Pool{New: func() any { return new(snappyReader) }}
	bufReaders    = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4096) }}
)

// recordStream is the decompressed records of one batch, read through a
// bufio.Reader. Errors it returns are already classified: the codec's
// (ErrCorruptMessage), the cap's (ErrMessageTooLarge), or io.EOF at the
// end of the records.
type recordStream struct {
	*bufio.Reader
	codec int
	cr    capReader
	gz    *gzip.Reader
	lz    *lz4.Reader
	zd    *zstd.Decoder
	sn    *snappyReader
}

// openRecordStream starts decompressing payload (the bytes after a batch
// header) with codec, allowing at most limit decompressed bytes. It waits
// for a decompression slot; close gives it back.
func openRecordStream(codec int, payload []byte, limit int64) (*recordStream, error) {
	decompressSlots <- struct{}{}
	s := &recordStream{codec: codec}
	var src io.Reader
	var err error
	switch codec {
	case 1:
		if v, ok := gzipReaders.Get().(*gzip.Reader); ok {
			s.gz = v
			err = s.gz.Reset(bytes.NewReader(payload))
		} else {
			s.gz, err = gzip.NewReader(bytes.NewReader(payload))
		}
		src = s.gz
	case 2:
		s.sn = snappyReaders.Get().(*snappyReader)
		err = s.sn.reset(payload, limit)
		src = s.sn
	case 3:
		s.lz = lz4Readers.Get().(*lz4.Reader)
		s.lz.Reset(bytes.NewReader(payload))
		src = s.lz
	case 4:
		switch v := zstdReaders.Get().(type) {
		case *zstd.Decoder:
			s.zd = v
			err = s.zd.Reset(bytes.NewReader(payload))
		case error:
			err = v
		}
		src = s.zd
	default:
		err = fmt.Errorf("%w: unknown compression codec %d", ErrCorruptMessage, codec)
	}
	if err != nil {
		s.close()
		return nil, codecError(codec, err)
	}
	s.cr = capReader{r: src, codec: codec, left: limit, limit: limit}
	s.Reader = bufReaders.Get().(*bufio.Reader)
	s.Reader.Reset(&s.cr)
	return s, nil
}

// decompressed is how many bytes the stream has produced so far.
func (s *recordStream) decompressed() int64 { return s.cr.limit - s.cr.left }

// close returns the decoders to their pools and the slot.
func (s *recordStream) close() {
	if s.Reader != nil {
		s.Reader.Reset(nil)
		bufReaders.Put(s.Reader)
		s.Reader = nil
	}
	if s.gz != nil {
		gzipReaders.Put(s.gz)
	}
	if s.lz != nil {
		s.lz.Reset(nil)
		lz4Readers.Put(s.lz)
	}
	if s.zd != nil {
		_ = s.zd.Reset(nil)
		zstdReaders.Put(s.zd)
	}
	if s.sn != nil {
		s.sn.src, s.sn.out = nil, s.sn.out[:0]
		snappyReaders.Put(s.sn)
	}
	s.gz, s.lz, s.zd, s.sn = nil, nil, nil, nil
	<-decompressSlots
}

// capReader passes through at most left bytes of r; one byte more is
// errOverLimit. Errors of r other than io.EOF are codec errors.
type capReader struct {
	r           io.Reader
	codec       int
	left, limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// At the cap: only the end of the data is acceptable.
		var one [1]byte
		for range 100 {
			n, err := c.r.Read(one[:])
			if n > 0 {
				return 0, errOverLimit(c.limit)
			}
			if err != nil {
				return 0, c.classify(err)
			}
		}
		return 0, io.ErrNoProgress
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if err != nil {
		err = c.classify(err)
	}
	return n, err
}

func (c *capReader) classify(err error) error {
	if err == io.EOF {
		return err
	}
	return codecError(c.codec, err)
}

// snappyReader decodes Kafka's snappy payloads one block at a time: a raw
// Snappy block, or snappy-java's xerial framing (a 16-byte header, then
// blocks each prefixed with their big-endian int32 length). Every block's
// decoded length is checked before its buffer is allocated: against what
// the block's size can decode to at all, and against the bytes left under
// the cap.
type snappyReader struct {
	src    []byte // blocks not decoded yet
	xerial bool
	left   int64  // decoded bytes still allowed
	limit  int64  // the cap, for the error
	out    []byte // the current block, decoded
	pos    int    // read position in out
}

func (r *snappyReader) reset(payload []byte, limit int64) error {
	r.src, r.xerial, r.left, r.limit, r.out, r.pos = payload, false, limit, limit, r.out[:0], 0
	if len(payload) >= xerialHeaderSize && bytes.HasPrefix(payload, xerialHeader) {
		r.src, r.xerial = payload[xerialHeaderSize:], true
	}
	return nil
}

func (r *snappyReader) Read(p []byte) (int, error) {
	for r.pos == len(r.out) {
		if len(r.src) == 0 {
			return 0, io.EOF
		}
		if err := r.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.out[r.pos:])
	r.pos += n
	return n, nil
}

// next decodes the next block into out.
func (r *snappyReader) next() error {
	block := r.src
	if r.xerial {
		if len(r.src) < 4 {
			return fmt.Errorf("%w: snappy data: xerial block length cut short", ErrCorruptMessage)
		}
		n := binary.BigEndian.Uint32(r.src)
		if uint64(n) > uint64(len(r.src)-4) {
			return fmt.Errorf("%w: snappy data: xerial block of %d bytes, %d left", ErrCorruptMessage, n, len(r.src)-4)
		}
		block, r.src = r.src[4:4+n], r.src[4+n:]
	} else {
		r.src = nil
	}
	dLen, err := snappy.DecodedLen(block)
	if err != nil {
		return fmt.Errorf("%w: snappy data: %v", ErrCorruptMessage, err)
	}
	if int64(dLen)*snappyMaxRatioDen > int64(len(block))*snappyMaxRatioNum+snappyMaxRatioNum {
		return fmt.Errorf("%w: snappy data: a block of %d bytes claims to decode to %d (S2 or corrupt)", ErrCorruptMessage, len(block), dLen)
	}
	if int64(dLen) > r.left {
		return errOverLimit(r.limit)
	}
	out, err := snappy.DecodeStrict(r.out[:0], block)
	if err != nil {
		return fmt.Errorf("%w: snappy data (Kafka's snappy has no S2 extensions): %v", ErrCorruptMessage, err)
	}
	r.left -= int64(len(out))
	r.out, r.pos = out, 0
	return nil
}
