package logstore

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

func txnIndexFile(e *testEnv, base int64) string {
	return filepath.Join(e.partDir(), segmentName(base)+txnIndexSuffix)
}

// appendN appends n one-record batches and returns the log end offset.
func appendN(t *testing.T, l *Log, n int) int64 {
	t.Helper()
	for i := 0; i < n; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(100+i)), 1)
	}
	return l.LogEndOffset()
}

func mustAbort(t *testing.T, l *Log, e AbortedTxn) {
	t.Helper()
	if err := l.AppendAbortedTxn(e); err != nil {
		t.Fatalf("AppendAbortedTxn(%+v): %v", e, err)
	}
}

func TestAbortedTxnsQuery(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	appendN(t, l, 30)
	a := AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: 5, LastStableOffset: 3}  // producer 2 open from 3
	b := AbortedTxn{ProducerID: 2, FirstOffset: 3, LastOffset: 9, LastStableOffset: 10} // nothing open after it
	c := AbortedTxn{ProducerID: 1, FirstOffset: 20, LastOffset: 25, LastStableOffset: 26}
	for _, x := range []AbortedTxn{a, b, c} {
		mustAbort(t, l, x)
	}
	// Replaying an entry already there changes nothing.
	mustAbort(t, l, b)
	if fi, err := os.Stat(txnIndexFile(e, 0)); err != nil || fi.Size() != 3*txnIndexEntrySize {
		t.Fatalf("txnindex file: %v, %v", fi, err)
	}
	tests := []struct {
		name        string
		fetch, upTo int64
		want        []AbortedTxn
	}{
		{"everything", 0, 30, []AbortedTxn{a, b, c}},
		{"fetch after the first marker", 6, 30, []AbortedTxn{b, c}},
		{"range below every transaction", 0, 2, nil},
		{"range inside the first two", 4, 5, []AbortedTxn{a, b}},
		{"between transactions", 10, 20, nil},
		{"stops at the last stable offset", 0, 10, []AbortedTxn{a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.AbortedTxns(tt.fetch, tt.upTo); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("AbortedTxns(%d, %d) = %+v, want %+v", tt.fetch, tt.upTo, got, tt.want)
			}
		})
	}
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: 1, FirstOffset: 40, LastOffset: 40}); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("marker past the log end: %v", err)
	}
	// Kafka's on-disk layout: version 0, then the four int64s.
	raw, _ := os.ReadFile(txnIndexFile(e, 0))
	if v := binary.BigEndian.Uint16(raw); v != 0 || int64(binary.BigEndian.Uint64(raw[18:])) != 5 {
		t.Fatalf("first entry bytes %x", raw[:txnIndexEntrySize])
	}
	// A clean reopen reads the index back.
	e.close()
	l = e.openLog(DefaultConfig())
	if got := l.AbortedTxns(0, 30); !reflect.DeepEqual(got, []AbortedTxn{a, b, c}) {
		t.Fatalf("after reopen: %+v", got)
	}
	e.close()
}

func TestTxnIndexFollowsSegments(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3 * int64(len(simpleBatch(t, 1, 0))) // three batches per segment
	cfg.FileDeleteDelayMs = 0
	l := e.openLog(cfg)
	appendN(t, l, 9) // segments at 0, 3, 6
	if segs := l.Segments(); len(segs) != 3 {
		t.Fatalf("segments %+v", segs)
	}
	x1 := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}
	x2 := AbortedTxn{ProducerID: 1, FirstOffset: 2, LastOffset: 4, LastStableOffset: 5}
	x3 := AbortedTxn{ProducerID: 1, FirstOffset: 6, LastOffset: 7, LastStableOffset: 8}
	for _, x := range []AbortedTxn{x1, x2, x3} {
		mustAbort(t, l, x)
	}
	for _, base := range []int64{0, 3, 6} {
		if _, err := os.Stat(txnIndexFile(e, base)); err != nil {
			t.Fatalf("segment %d has no txnindex: %v", base, err)
		}
	}
	// A transaction spanning segments is found from a fetch in its first.
	if got := l.AbortedTxns(2, 3); !reflect.DeepEqual(got, []AbortedTxn{x2}) {
		t.Fatalf("spanning transaction: %+v", got)
	}
	for _, off := range []int64{3, 6, 9} {
		if err := l.WriteProducerSnapshot(off, []byte{byte(off)}); err != nil {
			t.Fatal(err)
		}
	}

	// Truncation inside segment 3 drops x2 (marker at 4) and segment 6.
	if err := l.TruncateTo(4); err != nil {
		t.Fatal(err)
	}
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, []AbortedTxn{x1}) {
		t.Fatalf("after truncation: %+v", got)
	}
	if fi, _ := os.Stat(txnIndexFile(e, 3)); fi.Size() != 0 {
		t.Fatalf("segment 3 txnindex keeps %d bytes", fi.Size())
	}
	if got := l.ProducerSnapshotOffsets(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("snapshots after truncation to 4: %v", got)
	}
	if off, data, ok, err := l.LatestProducerSnapshot(l.LogEndOffset()); err != nil || !ok || off != 3 || data[0] != 3 {
		t.Fatalf("latest snapshot %d %v %v %v", off, data, ok, err)
	}

	// Retention of segment 0 takes its txnindex and the snapshots below 3.
	if err := l.WriteProducerSnapshot(1, []byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if err := l.removeExpiredDeletes(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(txnIndexFile(e, 0)); !os.IsNotExist(err) {
		t.Fatalf("txnindex of the deleted segment: %v", err)
	}
	if got := l.ProducerSnapshotOffsets(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("snapshots after retention: %v", got)
	}
	if got := l.AbortedTxns(3, 100); len(got) != 0 {
		t.Fatalf("aborted after retention: %+v", got)
	}
	e.close()
}

func TestRecoveryResetsTxnIndexAndLaterSnapshots(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3 * int64(len(simpleBatch(t, 1, 0)))
	l := e.openLog(cfg)
	appendN(t, l, 6) // segments 0 and 3
	x1 := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2}
	x2 := AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 4, LastStableOffset: 5}
	mustAbort(t, l, x1)
	mustAbort(t, l, x2)
	if err := l.Flush(); err != nil { // recovery point 6: only the active segment is recovered
		t.Fatal(err)
	}
	if err := e.dir.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{3, 5, 6} {
		if err := l.WriteProducerSnapshot(off, []byte{1}); err != nil {
			t.Fatal(err)
		}
	}
	e.crash()
	l = e.openLog(cfg)
	if e.dir.RecoveryStats().SegmentsScanned != 1 {
		t.Fatalf("recovery stats %+v", e.dir.RecoveryStats())
	}
	// The recovered segment's entries are for the broker to replay; the
	// snapshots past its base go so that the replay starts before it.
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, []AbortedTxn{x1}) {
		t.Fatalf("after recovery: %+v", got)
	}
	if got := l.ProducerSnapshotOffsets(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("snapshots after recovery: %v", got)
	}
	mustAbort(t, l, x2)
	if got := l.AbortedTxns(0, 100); !reflect.DeepEqual(got, []AbortedTxn{x1, x2}) {
		t.Fatalf("after replay: %+v", got)
	}
	e.close()
}

func TestScanBatchesAndRoll(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2 * int64(len(simpleBatch(t, 2, 0)))
	l := e.openLog(cfg)
	var rolls []int64
	for i := 0; i < 5; i++ {
		b := simpleBatch(t, 2, int64(i))
		if i == 3 {
			binary.BigEndian.PutUint16(b[posAttributes:], attrControl|attrTransactional)
			fixCRC(b)
		}
		res := mustAppend(t, l, b, 1)
		if res.Rolled {
			rolls = append(rolls, res.FirstOffset)
		}
	}
	if !slices.Equal(rolls, []int64{4, 8}) {
		t.Fatalf("rolled at %v, want [4 8]", rolls)
	}
	var bases []int64
	var controls []int64
	err := l.ScanBatches(3, func(h BatchHeader, control []byte) error {
		bases = append(bases, h.BaseOffset)
		if control != nil {
			if int64(len(control)) != h.BatchSize() || !h.IsControl() || parseHeader(control).BaseOffset != h.BaseOffset {
				t.Fatalf("control bytes for batch %d: %d bytes", h.BaseOffset, len(control))
			}
			controls = append(controls, h.BaseOffset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(bases, []int64{2, 4, 6, 8}) || !slices.Equal(controls, []int64{6}) {
		t.Fatalf("scanned %v (control %v)", bases, controls)
	}
	stop := errors.New("stop")
	if err := l.ScanBatches(0, func(BatchHeader, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("fn error not returned: %v", err)
	}
	e.close()
}
