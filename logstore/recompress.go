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

// This file owns broker-side recompression: a topic's compression.type
// other than producer makes the leader store every batch with that codec,
// as Kafka's LogValidator does.
//
// A batch whose codec differs from the topic's is rewritten before it is
// stamped: its records are decompressed and compressed again with the
// topic's codec (or written as they are for uncompressed), and its header
// gets the new codec in its attributes, the new batch length and, after
// stamping, a new CRC. Everything else stays: the records' bytes (offset
// deltas 0..n-1, which validation checks, timestamps, keys, values,
// headers), the base timestamp, max timestamp, producer id, epoch and base
// sequence, and the transactional and control bits; offsets, the leader
// epoch and LogAppendTime are stamped afterwards as for any batch. Kafka
// rebuilds the records too, with the same field values (its base timestamp
// is the first record's, as every producer writes it), so a consumer sees
// the same records either way. A batch already in the topic's codec is kept
// as it is, and so is an uncompressed control batch (a transaction marker):
// Kafka does not compress control records that were written uncompressed.
// After rewriting, a batch larger than max.message.bytes is
// MESSAGE_TOO_LARGE and an append larger than segment.bytes
// RECORD_LIST_TOO_LARGE, the checks Kafka repeats after recompression.
//
// The records are streamed from the decoder (decompress.go) into the
// encoder, so no buffer holds the decompressed batch unless the target is
// uncompressed. Followers append the leader's bytes as they are. The
// default, producer, costs one comparison per append.
//
// Encodings are the ones Kafka's own compressors write: gzip with
// compression.gzip.level; snappy in snappy-java's xerial framing (32 KiB
// blocks), which Java, librdkafka and franz-go consumers read; lz4 frames
// with 64 KiB independent blocks and no content checksum (Kafka's
// KafkaLZ4BlockOutputStream), compression.lz4.level 1 the fast compressor
// and 2..17 lz4's high-compression levels, capped at pierrec/lz4's
// highest, 9; zstd frames at compression.zstd.level (klauspost/compress
// maps levels to four speeds) with a window of at most 2 MiB, below the
// zstdMaxWindow this package and Kafka's consumers accept.

// Compression is a topic's compression.type as the log applies it. The
// zero value is producer: batches are stored as the producer sent them.
type Compression int8

const (
	CompressionProducer Compression = iota
	CompressionUncompressed
	CompressionGzip
	CompressionSnappy
	CompressionLZ4
	CompressionZstd
)

var compressionNames = [...]string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

// ParseCompression parses a compression.type value.
func ParseCompression(name string) (Compression, error) {
	for i, n := range compressionNames {
		if n == name {
			return Compression(i), nil
		}
	}
	return CompressionProducer, fmt.Errorf("logstore: unknown compression.type %q", name)
}

func (c Compression) String() string {
	if c >= 0 && int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

// codec is the batch attribute codec of a compression other than producer.
func (c Compression) codec() int { return int(c) - 1 }

// Kafka's default levels (compression.*.level); a zero level in a Config
// means the default.
const (
	defaultGzipLevel = -1
	defaultLZ4Level  = 9
	defaultZstdLevel = 3

	// snappyBlockSize is snappy-java's block size in the xerial framing.
	snappyBlockSize = 32 << 10
	// recompressZstdWindow is the window of the zstd frames the leader writes.
	recompressZstdWindow = 2 << 20
)

// keepsBatch reports whether a batch is stored as it is under target.
func keepsBatch(h BatchHeader, target int) bool {
	src := h.compression()
	return src == target || (src == 0 && h.Attributes&attrControl != 0)
}

// recompressBatches rewrites the batches of records whose codec is not
// cfg.Compression's (see the file comment) and returns the new buffer and
// spans. records and spans are returned unchanged when every batch is
// kept. It runs after validation, so a decoding error means the batch
// changed under it; it is returned as it is.
func recompressBatches(records []byte, spans []batchSpan, cfg Config) ([]byte, []batchSpan, error) {
	target := cfg.Compression.codec()
	rewrite := false
	for _, sp := range spans {
		if !keepsBatch(sp.header, target) {
			rewrite = true
			break
		}
	}
	if !rewrite {
		return records, spans, nil
	}
	out := make([]byte, 0, len(records))
	outSpans := make([]batchSpan, len(spans))
	for i, sp := range spans {
		b := records[sp.pos : sp.pos+int(sp.header.size())]
		pos := len(out)
		if keepsBatch(sp.header, target) {
			out = append(out, b...)
		} else {
			var err error
			if out, err = appendRecompressed(out, b, sp.header, target, cfg); err != nil {
				return nil, nil, err
			}
			if size := len(out) - pos; size > int(cfg.MaxMessageBytes) {
				return nil, nil, fmt.Errorf("%w: batch of %d bytes after recompression to %s exceeds max.message.bytes %d",
					ErrMessageTooLarge, size, cfg.Compression, cfg.MaxMessageBytes)
			}
		}
		outSpans[i] = batchSpan{pos: pos, header: parseHeader(out[pos:]), maxTimestamp: sp.maxTimestamp}
	}
	if cfg.SegmentBytes > 0 && int64(len(out)) > cfg.SegmentBytes {
		return nil, nil, fmt.Errorf("%w: %d bytes after recompression exceed segment.bytes %d", ErrRecordListTooLarge, len(out), cfg.SegmentBytes)
	}
	return out, outSpans, nil
}

// appendRecompressed appends batch b (header h) rewritten with codec
// target to out. The CRC is recomputed; stamping recomputes it again only
// for LogAppendTime topics.
func appendRecompressed(out, b []byte, h BatchHeader, target int, cfg Config) ([]byte, error) {
	start := len(out)
	out = append(out, b[:batchHeaderSize]...)
	payload := b[batchHeaderSize:]
	var src io.Reader = bytes.NewReader(payload)
	if codec := h.compression(); codec != 0 {
		s, err := openRecordStream(codec, payload, decompressedLimit(cfg))
		if err != nil {
			return nil, err
		}
		defer s.close()
		src = s
	}
	w := &appendWriter{buf: out}
	if err := compressTo(w, src, target, cfg); err != nil {
		return nil, err
	}
	out = w.buf
	nb := out[start:]
	be := binary.BigEndian
	attrs := be.Uint16(nb[posAttributes:])&^attrCompressionMask | uint16(target)
	be.PutUint16(nb[posAttributes:], attrs)
	be.PutUint32(nb[posBatchLength:], uint32(len(nb)-logOverhead))
	be.PutUint32(nb[posCRC:], batchCRC(nb))
	return out, nil
}

// appendWriter is an io.Writer appending to buf.
type appendWriter struct{ buf []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// compressTo writes everything src yields to w, compressed with codec.
func compressTo(w io.Writer, src io.Reader, codec int, cfg Config) error {
	switch codec {
	case 0:
		_, err := io.Copy(w, src)
		return err
	case 1:
		return compressGzip(w, src, cfg.GzipLevel)
	case 2:
		return compressSnappy(w, src)
	case 3:
		return compressLZ4(w, src, cfg.LZ4Level)
	case 4:
		return compressZstd(w, src, cfg.ZstdLevel)
	}
	return fmt.Errorf("logstore: cannot compress with codec %d", codec)
}

// encoderPools keeps encoders per level: an encoder's state (gzip's
// window, zstd's tables) is costly to build for every batch.
type encoderPools struct {
	mu    sync.Mutex
	pools map[int]*sync.Pool
}

func (e *encoderPools) get(level int) *sync.Pool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pools == nil {
		e.pools = make(map[int]*sync.Pool)
	}
	p := e.pools[level]
	if p == nil {
		p = new(sync.Pool)
		e.pools[level] = p
	}
	return p
}

var gzipWriters, lz4Writers, zstdWriters encoderPools

func compressGzip(w io.Writer, src io.Reader, level int) error {
	if level == 0 {
		level = defaultGzipLevel
	}
	pool := gzipWriters.get(level)
	gw, ok := pool.Get().(*gzip.Writer)
	if ok {
		gw.Reset(w)
	} else {
		var err error
		if gw, err = gzip.NewWriterLevel(w, level); err != nil {
			return err
		}
	}
	defer pool.Put(gw)
	if _, err := io.Copy(gw, src); err != nil {
		return err
	}
	return gw.Close()
}

func compressLZ4(w io.Writer, src io.Reader, level int) error {
	if level == 0 {
		level = defaultLZ4Level
	}
	pool := lz4Writers.get(level)
	lw, ok := pool.Get().(*lz4.Writer)
	if ok {
		lw.Reset(w)
	} else {
		lw = lz4.NewWriter(w)
		lz4Level := lz4.Fast
		if level > 1 {
			lz4Level = lz4.Level1 << (min(level, 9) - 1)
		}
		err := lw.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false),
			lz4.ConcurrencyOption(1), lz4.CompressionLevelOption(lz4Level))
		if err != nil {
			return err
		}
	}
	defer pool.Put(lw)
	if _, err := io.Copy(lw, src); err != nil {
		return err
	}
	return lw.Close()
}

func compressZstd(w io.Writer, src io.Reader, level int) error {
	if level == 0 {
		level = defaultZstdLevel
	}
	pool := zstdWriters.get(level)
	zw, ok := pool.Get().(*zstd.Encoder)
	if ok {
		zw.Reset(w)
	} else {
		var err error
		zw, err = zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)),
			zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(recompressZstdWindow))
		if err != nil {
			return err
		}
	}
	defer pool.Put(zw)
	if _, err := io.Copy(zw, src); err != nil {
		return err
	}
	return zw.Close()
}

// compressSnappy writes snappy-java's xerial framing: the 16-byte header
// (magic, version 1, compatible version 1), then each block of at most
// snappyBlockSize input bytes as a big-endian int32 length and a raw
// Snappy block.
func compressSnappy(w io.Writer, src io.Reader) error {
	var hdr [xerialHeaderSize]byte
	copy(hdr[:], xerialHeader)
	binary.BigEndian.PutUint32(hdr[8:], 1)
	binary.BigEndian.PutUint32(hdr[12:], 1)
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	in := make([]byte, snappyBlockSize)
	var enc []byte
	for {
		n, err := io.ReadFull(src, in)
		if n > 0 {
			enc = snappy.Encode(enc[:cap(enc)], in[:n])
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(enc)))
			if _, werr := w.Write(l[:]); werr != nil {
				return werr
			}
			if _, werr := w.Write(enc); werr != nil {
				return werr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
