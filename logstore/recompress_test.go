package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
)

// recompressRecords is n records with keys, values and a header, as raw
// (uncompressed) record bytes and as the batch a producer would send.
func recompressRecords(n int, ts int64) []testRecord {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{Timestamp: ts + int64(i%7), Key: []byte(fmt.Sprintf("key-%d", i%13)),
			Value: bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 1+i%5)}
	}
	return recs
}

// storedRecords reads back the one batch at offset from l and returns its
// header and its records, decompressed.
func storedRecords(t *testing.T, l *Log, offset int64) (BatchHeader, []byte) {
	t.Helper()
	r, err := l.Read(offset, math.MaxInt32, math.MaxInt64, true)
	if err != nil || len(r.Data) == 0 {
		t.Fatalf("Read(%d): %d bytes, %v", offset, len(r.Data), err)
	}
	h := parseHeader(r.Data)
	b := r.Data[:h.size()]
	if batchCRC(b) != h.CRC {
		t.Fatalf("stored batch at %d: CRC %08x, computed %08x", offset, h.CRC, batchCRC(b))
	}
	payload := b[batchHeaderSize:]
	if h.compression() == 0 {
		return h, payload
	}
	s, err := openRecordStream(h.compression(), payload, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	raw, err := io.ReadAll(s)
	if err != nil {
		t.Fatalf("decompress stored %s batch: %v", codecName(h.compression()), err)
	}
	return h, raw
}

// TestRecompressToTopicCodec: every source codec appended to a topic of
// every compression.type is stored in the topic's codec (producer: the
// source's), with the records' bytes, the producer fields, the base and
// max timestamps unchanged and a valid CRC.
func TestRecompressToTopicCodec(t *testing.T) {
	for _, target := range []Compression{CompressionProducer, CompressionUncompressed, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd} {
		for src := int8(0); src <= 4; src++ {
			t.Run(fmt.Sprintf("%s-from-%d", target, src), func(t *testing.T) {
				env := newTestEnv(t)
				cfg := DefaultConfig()
				cfg.Compression = target
				l := env.openLog(cfg)
				ts := env.clock.Now().UnixMilli()
				recs := recompressRecords(50, ts)
				mustAppend(t, l, simpleBatch(t, 3, ts), 0) // offsets 0..2
				batch := makeBatch(t, batchSpec{Codec: src, Records: recs})
				// An idempotent producer's fields must survive the rewrite.
				binary.BigEndian.PutUint64(batch[posProducerID:], 4711)
				binary.BigEndian.PutUint16(batch[posProducerEpoch:], 3)
				binary.BigEndian.PutUint32(batch[posBaseSequence:], 17)
				fixCRC(batch)
				sent := parseHeader(batch)
				res := mustAppend(t, l, batch, 5)
				if res.FirstOffset != 3 || res.LastOffset != 52 {
					t.Fatalf("appended at %d..%d, want 3..52", res.FirstOffset, res.LastOffset)
				}
				h, raw := storedRecords(t, l, 3)
				wantCodec := int(src)
				if target != CompressionProducer {
					wantCodec = target.codec()
				}
				if h.compression() != wantCodec {
					t.Fatalf("stored codec %d, want %d", h.compression(), wantCodec)
				}
				if h.BaseOffset != 3 || h.LastOffsetDelta != 49 || h.RecordCount != 50 || h.LeaderEpoch != 5 ||
					h.ProducerID != 4711 || h.ProducerEpoch != 3 || h.BaseSequence != 17 ||
					h.BaseTimestamp != sent.BaseTimestamp || h.MaxTimestamp != sent.MaxTimestamp ||
					h.Attributes&^attrCompressionMask != sent.Attributes&^attrCompressionMask {
					t.Fatalf("stored header %+v, sent %+v", h, sent)
				}
				want := makeBatch(t, batchSpec{Records: recs})[batchHeaderSize:]
				if !bytes.Equal(raw, want) {
					t.Fatalf("stored records differ from the sent ones (%d vs %d bytes)", len(raw), len(want))
				}
				if target == CompressionProducer && src != 0 {
					if got := readAll(t, l, 3)[0].CRC; got != sent.CRC {
						t.Fatalf("producer: CRC %08x changed from %08x", got, sent.CRC)
					}
				}
				// The log stays readable after a reopen (recovery scans
				// and checks the rewritten batch).
				env.crash()
				l = env.openLog(cfg)
				if h2, _ := storedRecords(t, l, 3); h2 != h {
					t.Fatalf("after reopen: %+v, want %+v", h2, h)
				}
			})
		}
	}
}

// TestRecompressKeepsControlBatch: an uncompressed control batch (a
// transaction marker) is stored as it is on a gzip topic, as Kafka does.
func TestRecompressKeepsControlBatch(t *testing.T) {
	env := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.Compression = CompressionGzip
	l := env.openLog(cfg)
	marker := makeBatch(t, batchSpec{Records: []testRecord{{Timestamp: env.clock.Now().UnixMilli(), Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}}})
	binary.BigEndian.PutUint16(marker[posAttributes:], attrControl|attrTransactional)
	binary.BigEndian.PutUint64(marker[posProducerID:], 9)
	fixCRC(marker)
	mustAppend(t, l, marker, 0)
	if h := readAll(t, l, 0)[0]; h.compression() != 0 || h.Attributes&attrControl == 0 {
		t.Fatalf("stored control batch attributes %#x, want uncompressed control", h.Attributes)
	}
}

// TestRecompressLogAppendTime: a rewritten batch on a LogAppendTime topic
// gets the append time as its max timestamp, like any batch there.
func TestRecompressLogAppendTime(t *testing.T) {
	env := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.Compression = CompressionZstd
	cfg.LogAppendTime = true
	l := env.openLog(cfg)
	res := mustAppend(t, l, makeBatch(t, batchSpec{Codec: 2, Records: recompressRecords(10, 1000)}), 0)
	h, _ := storedRecords(t, l, 0)
	if h.compression() != 4 || !h.logAppendTime() || h.MaxTimestamp != res.LogAppendTime || res.LogAppendTime != env.clock.Now().UnixMilli() {
		t.Fatalf("stored %+v, append time %d", h, res.LogAppendTime)
	}
}

// TestRecompressTooLarge: a batch that grows past max.message.bytes when
// rewritten is refused, and nothing is appended.
func TestRecompressTooLarge(t *testing.T) {
	env := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.Compression = CompressionUncompressed
	cfg.MaxMessageBytes = 4096
	l := env.openLog(cfg)
	recs := []testRecord{{Timestamp: env.clock.Now().UnixMilli(), Value: make([]byte, 64<<10)}}
	batch := makeBatch(t, batchSpec{Codec: 4, Records: recs})
	_, err := l.AppendAsLeader(batch, 0)
	if !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("append of a %d-byte zstd batch of 64 KiB to an uncompressed topic: %v, want ErrMessageTooLarge", len(batch), err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("log end %d after a refused append", l.LogEndOffset())
	}
}

// TestParseCompression covers compression.type's values.
func TestParseCompression(t *testing.T) {
	for _, name := range []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"} {
		c, err := ParseCompression(name)
		if err != nil || c.String() != name {
			t.Errorf("ParseCompression(%q) = %v, %v", name, c, err)
		}
	}
	if _, err := ParseCompression("brotli"); err == nil {
		t.Error("ParseCompression(brotli) succeeded")
	}
}
