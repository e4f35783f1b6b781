package logstore

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testRecord is one record for makeBatch; Timestamp is absolute.
type testRecord struct {
	Timestamp int64
	Key       []byte
	Value     []byte
}

// batchSpec describes a test batch.
type batchSpec struct {
	Codec   int8 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	Records []testRecord
}

// encodeRecord encodes one record with its length prefix.
func encodeRecord(r kmsg.Record) []byte {
	r.Length = 0
	body := r.AppendTo(nil)[1:] // a zero length is one varint byte
	r.Length = int32(len(body))
	return r.AppendTo(nil)
}

// makeBatch builds a valid v2 record batch (CRC-32C included) the way a
// producer would: base offset 0, timestamps as deltas from the first.
func makeBatch(t testing.TB, spec batchSpec) []byte {
	t.Helper()
	if len(spec.Records) == 0 {
		t.Fatal("makeBatch: no records")
	}
	base := spec.Records[0].Timestamp
	maxTs := base
	var raw []byte
	for i, r := range spec.Records {
		maxTs = max(maxTs, r.Timestamp)
		raw = append(raw, encodeRecord(kmsg.Record{
			TimestampDelta64: r.Timestamp - base,
			OffsetDelta:      int32(i),
			Key:              r.Key,
			Value:            r.Value,
		})...)
	}
	b := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(spec.Codec),
		LastOffsetDelta:      int32(len(spec.Records) - 1),
		FirstTimestamp:       base,
		MaxTimestamp:         maxTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(spec.Records)),
		Records:              compress(t, spec.Codec, raw),
	}
	b.Length = int32(minBatchLength + len(b.Records))
	out := b.AppendTo(nil)
	fixCRC(out)
	return out
}

func fixCRC(b []byte) {
	binary.BigEndian.PutUint32(b[posCRC:], crc32.Checksum(b[posAttributes:], crc32.MakeTable(crc32.Castagnoli)))
}

func compress(t testing.TB, codec int8, raw []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case 0:
		return raw
	case 1:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case 2:
		return s2.EncodeSnappy(nil, raw)
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case 4:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
		w.Close()
	}
	return buf.Bytes()
}

// simpleBatch is a batch of n uncompressed records with timestamps ts,
// ts+1, ... and small values.
func simpleBatch(t testing.TB, n int, ts int64) []byte {
	recs := make([]testRecord, n)
	for i := range recs {
		recs[i] = testRecord{Timestamp: ts + int64(i), Value: []byte("value-0123456789")}
	}
	return makeBatch(t, batchSpec{Records: recs})
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testTP = TopicPartition{Topic: "orders", Partition: 3}
var testTopicID = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// testEnv is one log directory under t.TempDir, reopenable.
type testEnv struct {
	t     testing.TB
	path  string
	clock *fakeClock
	fs    FS
	dir   *Dir
}

func newTestEnv(t testing.TB) *testEnv {
	return &testEnv{t: t, path: filepath.Join(t.TempDir(), "data"), clock: newFakeClock(), fs: OSFS{}}
}

func (e *testEnv) open() *Dir {
	e.t.Helper()
	d, err := OpenDir(e.path, Options{FS: e.fs, Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		e.t.Fatalf("OpenDir: %v", err)
	}
	e.dir = d
	return d
}

func (e *testEnv) openLog(cfg Config) *Log {
	e.t.Helper()
	if e.dir == nil {
		e.open()
	}
	l, err := e.dir.Open(testTP, testTopicID, cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	return l
}

func (e *testEnv) close() {
	e.t.Helper()
	if err := e.dir.Close(nil); err != nil {
		e.t.Fatalf("Close: %v", err)
	}
	e.dir = nil
}

func (e *testEnv) crash() {
	e.dir.Abandon()
	e.dir = nil
}

func (e *testEnv) partDir() string { return filepath.Join(e.path, testTP.String()) }

func mustAppend(t testing.TB, l *Log, batch []byte, epoch int32) AppendResult {
	t.Helper()
	res, err := l.AppendAsLeader(append([]byte(nil), batch...), epoch)
	if err != nil {
		t.Fatalf("AppendAsLeader: %v", err)
	}
	return res
}

// readAll reads every batch from offset to the end and returns the headers.
func readAll(t testing.TB, l *Log, from int64) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	for off := from; off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(r.Data) == 0 {
			t.Fatalf("Read(%d): no data below LEO %d", off, l.LogEndOffset())
		}
		for b := r.Data; len(b) > 0; {
			h := parseHeader(b)
			if batchCRC(b[:h.size()]) != h.CRC {
				t.Fatalf("read batch at %d: bad CRC", h.BaseOffset)
			}
			out = append(out, h)
			off = h.nextOffset()
			b = b[h.size():]
		}
	}
	return out
}
