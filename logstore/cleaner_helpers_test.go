package logstore

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// compactConfig is a compact-only topic with small segments and dense
// indexes, so a few thousand records make many segments and index entries.
func compactConfig() Config {
	cfg := DefaultConfig()
	cfg.CleanupDelete = false
	cfg.Compact = true
	cfg.SegmentBytes = 4096
	cfg.IndexIntervalBytes = 256
	return cfg
}

// keyedRecord is what a test reads back.
type keyedRecord struct {
	Offset    int64
	Key       string
	Value     string
	Tombstone bool
}

// txnSpec describes the producer fields of a test batch.
type txnSpec struct {
	ProducerID    int64
	Epoch         int16
	BaseSequence  int32
	Transactional bool
	Control       bool
}

// makeProducerBatch builds a batch with producer fields; a nil Value is a
// tombstone.
func makeProducerBatch(t testing.TB, codec int8, p txnSpec, recs []testRecord) []byte {
	t.Helper()
	base := recs[0].Timestamp
	maxTs := base
	var raw []byte
	for i, r := range recs {
		maxTs = max(maxTs, r.Timestamp)
		raw = append(raw, encodeRecord(kmsg.Record{TimestampDelta64: r.Timestamp - base, OffsetDelta: int32(i),
			Key: r.Key, Value: r.Value})...)
	}
	attrs := int16(codec)
	if p.Transactional {
		attrs |= attrTransactional
	}
	if p.Control {
		attrs |= attrControl
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: base, MaxTimestamp: maxTs,
		ProducerID: p.ProducerID, ProducerEpoch: p.Epoch, FirstSequence: p.BaseSequence,
		NumRecords: int32(len(recs)), Records: compress(t, codec, raw)}
	b.Length = int32(minBatchLength + len(b.Records))
	out := b.AppendTo(nil)
	fixCRC(out)
	return out
}

// markerBatch is a COMMIT or ABORT control batch of producer pid.
func markerBatch(t testing.TB, pid int64, typ int16, ts int64) []byte {
	key := make([]byte, 4)
	binary.BigEndian.PutUint16(key[2:], uint16(typ))
	val := make([]byte, 6)
	return makeProducerBatch(t, 0, txnSpec{ProducerID: pid, BaseSequence: -1, Transactional: true, Control: true},
		[]testRecord{{Timestamp: ts, Key: key, Value: val}})
}

// appendAt appends batch b at the log end offset as a follower does (so
// control batches and producer fields are stored as given) and returns its
// base offset.
func appendAt(t testing.TB, l *Log, b []byte) int64 {
	t.Helper()
	b = append([]byte(nil), b...)
	off := l.LogEndOffset()
	binary.BigEndian.PutUint64(b[posBaseOffset:], uint64(off))
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatalf("AppendAsFollower: %v", err)
	}
	return off
}

// readRecords reads the whole log and decodes every record, checking
// CRCs and that offsets strictly increase.
func readRecords(t testing.TB, l *Log) []keyedRecord {
	t.Helper()
	var out []keyedRecord
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		if len(r.Data) == 0 {
			break
		}
		for b := r.Data; len(b) > 0; {
			h := parseHeader(b)
			if batchCRC(b[:h.size()]) != h.CRC {
				t.Fatalf("batch at %d: bad CRC", h.BaseOffset)
			}
			recs, err := batchRecords(b[:h.size()], h)
			if err != nil {
				t.Fatalf("batch at %d: %v", h.BaseOffset, err)
			}
			if h.Attributes&attrControl == 0 {
				for _, rec := range recs {
					if rec.offset <= last {
						t.Fatalf("offset %d after %d", rec.offset, last)
					}
					if rec.offset < h.BaseOffset || rec.offset > h.lastOffset() {
						t.Fatalf("record offset %d outside batch [%d, %d]", rec.offset, h.BaseOffset, h.lastOffset())
					}
					last = rec.offset
					out = append(out, keyedRecord{Offset: rec.offset, Key: string(rec.key), Value: recordValue(t, rec),
						Tombstone: !rec.hasValue})
				}
			}
			off = h.nextOffset()
			b = b[h.size():]
		}
	}
	return out
}

func recordValue(t testing.TB, r cleanRecord) string {
	var rec kmsg.Record
	full := binary.AppendVarint(nil, int64(len(r.raw)))
	full = append(full, r.raw...)
	if err := rec.ReadFrom(full); err != nil {
		t.Fatalf("decode record: %v", err)
	}
	return string(rec.Value)
}

// workload appends n records over keys keys in batches of batchSize, one
// in ten a tombstone, with codec, and returns the latest record of every
// key (by key) in append order.
func workload(t testing.TB, l *Log, rng *rand.Rand, n, keys, batchSize int, codec int8, ts int64) map[string]keyedRecord {
	latest := map[string]keyedRecord{}
	for i := 0; i < n; i += batchSize {
		var recs []testRecord
		for j := 0; j < batchSize && i+j < n; j++ {
			k := fmt.Sprintf("key-%04d", rng.Intn(keys))
			r := testRecord{Timestamp: ts + int64(i+j), Key: []byte(k)}
			if rng.Intn(10) != 0 {
				r.Value = []byte(fmt.Sprintf("v%d-%s", i+j, k))
			}
			recs = append(recs, r)
		}
		base := appendAt(t, l, makeProducerBatch(t, codec, txnSpec{ProducerID: -1, Epoch: -1, BaseSequence: -1}, recs))
		for j, r := range recs {
			latest[string(r.Key)] = keyedRecord{Offset: base + int64(j), Key: string(r.Key), Value: string(r.Value), Tombstone: r.Value == nil}
		}
	}
	return latest
}

// checkCompacted checks that below end every key appears at most once and
// as its latest record below end, per the records read before cleaning.
func checkCompacted(t testing.TB, before, after []keyedRecord, end int64, tombstonesGone bool) {
	t.Helper()
	latest := map[string]keyedRecord{}
	for _, r := range before {
		if r.Offset < end {
			latest[r.Key] = r
		}
	}
	seen := map[string]bool{}
	for _, r := range after {
		if r.Offset >= end {
			continue
		}
		if seen[r.Key] {
			t.Fatalf("key %s twice below %d (again at %d)", r.Key, end, r.Offset)
		}
		seen[r.Key] = true
		if want := latest[r.Key]; want != r {
			t.Fatalf("key %s: got %+v, want latest %+v", r.Key, r, want)
		}
		if tombstonesGone && r.Tombstone {
			t.Fatalf("tombstone of %s at %d kept after delete.retention.ms", r.Key, r.Offset)
		}
	}
	for k, r := range latest {
		if !seen[k] && !(r.Tombstone && tombstonesGone) {
			t.Fatalf("key %s (latest %+v) lost", k, r)
		}
	}
	// Everything at or past end is untouched.
	var tailBefore, tailAfter []keyedRecord
	for _, r := range before {
		if r.Offset >= end {
			tailBefore = append(tailBefore, r)
		}
	}
	for _, r := range after {
		if r.Offset >= end {
			tailAfter = append(tailAfter, r)
		}
	}
	if fmt.Sprint(tailBefore) != fmt.Sprint(tailAfter) {
		t.Fatalf("records at or past %d changed", end)
	}
}

// cleanFully runs passes until the whole cleanable section is clean and
// returns the last end offset and the number of passes.
func cleanFully(t testing.TB, c *Cleaner, l *Log, opts CleanOptions) (int64, int) {
	t.Helper()
	passes := 0
	for {
		st, err := c.Clean(l, opts)
		if err != nil {
			t.Fatalf("Clean: %v", err)
		}
		if st.EndOffset == opts.FirstDirty {
			return st.EndOffset, passes
		}
		passes++
		opts.FirstDirty = st.EndOffset
	}
}

// checkIndexFiles reads every segment's .index and .timeindex from disk
// and checks that every offset-index entry points at the start of the
// batch holding its offset, and every time-index offset lies in the
// segment.
func checkIndexFiles(t testing.TB, l *Log) {
	t.Helper()
	for _, si := range l.Segments() {
		name := filepath.Join(l.path, segmentName(si.BaseOffset))
		logData, err := os.ReadFile(name + logSuffix)
		if err != nil {
			t.Fatal(err)
		}
		starts := map[int64]BatchHeader{}
		for pos := int64(0); pos < int64(len(logData)); {
			h := parseHeader(logData[pos:])
			starts[pos] = h
			pos += h.size()
		}
		idx, err := os.ReadFile(name + indexSuffix)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+8 <= len(idx); i += 8 {
			rel := int64(binary.BigEndian.Uint32(idx[i:]))
			pos := int64(binary.BigEndian.Uint32(idx[i+4:]))
			h, ok := starts[pos]
			if !ok {
				t.Fatalf("segment %d: index entry %d points at %d, not a batch start", si.BaseOffset, i/8, pos)
			}
			if h.lastOffset() != si.BaseOffset+rel {
				t.Fatalf("segment %d: index entry offset %d, batch at %d ends at %d", si.BaseOffset, si.BaseOffset+rel, pos, h.lastOffset())
			}
		}
		tidx, err := os.ReadFile(name + timeIndexSuffix)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+12 <= len(tidx); i += 12 {
			off := si.BaseOffset + int64(binary.BigEndian.Uint32(tidx[i+8:]))
			if off < si.BaseOffset || (si.NextOffset > si.BaseOffset && off >= si.NextOffset) {
				t.Fatalf("segment %d: time index offset %d outside [%d, %d)", si.BaseOffset, off, si.BaseOffset, si.NextOffset)
			}
		}
	}
}

// copyDir copies a log directory tree as it is at this moment: what a
// kill -9 would leave on disk (the page cache survives a process kill).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(p, lockFileName) {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// leftovers lists cleaner temporary files in a partition directory.
func leftovers(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), cleanedSuffix) || strings.HasSuffix(e.Name(), swapSuffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

func readFileT(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int64) string { return fmt.Sprint(n) }
