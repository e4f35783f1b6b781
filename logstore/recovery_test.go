package logstore

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func logFile(e *testEnv, base int64) string {
	return filepath.Join(e.partDir(), segmentName(base)+logSuffix)
}

// TestRecoveryCutAtEveryByte crashes with the last batch torn at every
// possible length: recovery must end the log at the previous whole batch
// and appending must continue at the next offset.
func TestRecoveryCutAtEveryByte(t *testing.T) {
	first := simpleBatch(t, 3, 100)
	second := makeBatch(t, batchSpec{Codec: 1, Records: []testRecord{{Timestamp: 200, Value: []byte("x")}, {Timestamp: 201}}})
	last := simpleBatch(t, 2, 300)
	whole := int64(len(first) + len(second))
	for cut := whole; cut < whole+int64(len(last)); cut++ {
		e := newTestEnv(t)
		cfg := DefaultConfig()
		cfg.IndexIntervalBytes = 10 // index entries in the cut region too
		l := e.openLog(cfg)
		mustAppend(t, l, first, 1)
		mustAppend(t, l, second, 1)
		mustAppend(t, l, last, 2)
		e.crash()
		if err := os.Truncate(logFile(e, 0), cut); err != nil {
			t.Fatal(err)
		}
		d := e.open()
		if d.HadCleanShutdown() {
			t.Fatal("crash reported as clean shutdown")
		}
		l = e.openLog(cfg)
		if got := l.LogEndOffset(); got != 5 {
			t.Fatalf("cut %d: LEO %d, want 5", cut, got)
		}
		st := d.RecoveryStats()
		if st.SegmentsScanned != 1 || st.BytesTruncated != cut-whole {
			t.Fatalf("cut %d: stats %+v", cut, st)
		}
		if fi, _ := os.Stat(logFile(e, 0)); fi.Size() != whole {
			t.Fatalf("cut %d: file size %d, want %d", cut, fi.Size(), whole)
		}
		if l.LatestEpoch() != 1 {
			t.Fatalf("cut %d: latest epoch %d, want 1 (epoch 2's only batch was lost)", cut, l.LatestEpoch())
		}
		res := mustAppend(t, l, simpleBatch(t, 1, 400), 3)
		if res.FirstOffset != 5 {
			t.Fatalf("cut %d: next append at %d", cut, res.FirstOffset)
		}
		if hs := readAll(t, l, 0); len(hs) != 3 || hs[2].BaseOffset != 5 {
			t.Fatalf("cut %d: batches %+v", cut, hs)
		}
		e.close()
	}
}

func TestRecoveryCorruptByteInMiddle(t *testing.T) {
	tests := []struct {
		name   string
		offset int // byte within the third batch to flip
	}{
		{"in records", 70},
		{"in crc", posCRC},
		{"in length", posBatchLength + 3},
		{"in magic", posMagic},
		{"in base offset going backwards", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			cfg.SegmentBytes = 5 * 100
			l := e.openLog(cfg)
			b := simpleBatch(t, 1, 1) // 84 bytes
			for i := 0; i < 12; i++ {
				mustAppend(t, l, b, 0)
			}
			if n := len(l.Segments()); n < 2 {
				t.Fatalf("want several segments, have %d", n)
			}
			e.crash()
			f, err := os.OpenFile(logFile(e, 0), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			pos := int64(2*len(b) + tc.offset)
			one := []byte{0}
			f.ReadAt(one, pos)
			one[0] ^= 0x80
			f.WriteAt(one, pos)
			f.Close()

			d := e.open()
			l = e.openLog(cfg)
			if l.LogEndOffset() != 2 {
				t.Fatalf("LEO %d, want 2", l.LogEndOffset())
			}
			if n := len(l.Segments()); n != 1 {
				t.Fatalf("later segments not dropped: %+v", l.Segments())
			}
			if st := d.RecoveryStats(); st.BytesTruncated != int64(10*len(b)) {
				t.Fatalf("stats %+v, want %d bytes truncated", st, 10*len(b))
			}
			if res := mustAppend(t, l, b, 0); res.FirstOffset != 2 {
				t.Fatalf("append at %d", res.FirstOffset)
			}
		})
	}
}

func TestCleanReopenScansNothing(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 100
	l := e.openLog(cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l, simpleBatch(t, 2, int64(1000+i)), int32(i/10))
	}
	wantSegs := l.Segments()
	maxOff, maxTs := l.MaxTimestamp()
	e.close()

	d := e.open()
	if !d.HadCleanShutdown() {
		t.Fatal("clean shutdown not noticed")
	}
	if _, err := os.Stat(filepath.Join(e.path, cleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean-shutdown marker not removed: %v", err)
	}
	if ps := d.Partitions(); len(ps) != 1 || ps[0] != testTP {
		t.Fatalf("Partitions %v", ps)
	}
	l = e.openLog(cfg)
	if st := d.RecoveryStats(); st != (RecoveryStats{}) {
		t.Fatalf("clean reopen recovered: %+v", st)
	}
	gotSegs := l.Segments()
	if len(gotSegs) != len(wantSegs) {
		t.Fatalf("segments %+v, want %+v", gotSegs, wantSegs)
	}
	for i := range gotSegs {
		if gotSegs[i] != wantSegs[i] {
			t.Fatalf("segment %d: %+v, want %+v", i, gotSegs[i], wantSegs[i])
		}
	}
	if o, ts := l.MaxTimestamp(); o != maxOff || ts != maxTs {
		t.Fatalf("MaxTimestamp %d,%d want %d,%d", o, ts, maxOff, maxTs)
	}
	if l.LatestEpoch() != 3 || l.LogEndOffset() != 80 {
		t.Fatalf("epoch %d LEO %d", l.LatestEpoch(), l.LogEndOffset())
	}
	readAll(t, l, 0)
	if res := mustAppend(t, l, simpleBatch(t, 1, 5000), 3); res.FirstOffset != 80 {
		t.Fatalf("append at %d", res.FirstOffset)
	}
	e.close()
	// Second crash-free restart after the crash-free one: still nothing.
	d = e.open()
	e.openLog(cfg)
	if st := d.RecoveryStats(); st != (RecoveryStats{}) {
		t.Fatalf("second clean reopen recovered: %+v", st)
	}
	e.close()
}

// TestRecoveryStartsAtRecoveryPoint: after a checkpoint, a crash only
// rescans the segments past the recovery point.
func TestRecoveryStartsAtRecoveryPoint(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 300
	l := e.openLog(cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(i)), 0)
	}
	if err := e.dir.Checkpoint(map[TopicPartition]int64{testTP: 20}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(i)), 0)
	}
	nsegs := len(l.Segments())
	e.crash()
	d := e.open()
	l = e.openLog(cfg)
	st := d.RecoveryStats()
	if st.SegmentsScanned == 0 || st.SegmentsScanned > 2 || int(st.SegmentsScanned) >= nsegs {
		t.Fatalf("scanned %d of %d segments", st.SegmentsScanned, nsegs)
	}
	if l.LogEndOffset() != 23 {
		t.Fatalf("LEO %d: appends acknowledged before the crash were lost", l.LogEndOffset())
	}
	if hw, ok := d.CheckpointedHighWatermark(testTP); !ok || hw != 20 {
		t.Fatalf("checkpointed HW %d %v", hw, ok)
	}
	e.close()
}

func TestRecoveryRebuildsEpochCache(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 2, 1), 1)
	mustAppend(t, l, simpleBatch(t, 2, 1), 4)
	e.crash()
	os.Remove(filepath.Join(e.partDir(), epochCheckpointFile))
	e.open()
	l = e.openLog(DefaultConfig())
	if ep, off := l.EndOffsetForEpoch(1); ep != 1 || off != 2 {
		t.Fatalf("EndOffsetForEpoch(1) = %d,%d", ep, off)
	}
	if l.LatestEpoch() != 4 {
		t.Fatalf("latest %d", l.LatestEpoch())
	}
	e.close()
}

func TestCorruptIndexRebuiltOnCleanOpen(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 100
	l := e.openLog(cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(i)), 0)
	}
	e.close()
	idx := filepath.Join(e.partDir(), segmentName(0)+indexSuffix)
	if err := os.Truncate(idx, 13); err != nil { // not a whole number of entries
		t.Fatal(err)
	}
	// OpenDir loads the logs with Options.LoadConfig (the broker's
	// log.index.interval.bytes), which a rebuild of a trusted segment's
	// index follows.
	d, err := OpenDir(e.path, Options{Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler), LoadConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	e.dir = d
	l = e.openLog(cfg)
	if l.Segments()[0].IndexEntries == 0 {
		t.Fatal("index not rebuilt")
	}
	for off := int64(0); off < 20; off++ {
		if r, err := l.Read(off, 1, math.MaxInt64, true); err != nil || parseHeader(r.Data).BaseOffset != off {
			t.Fatalf("Read(%d) after rebuild: %v", off, err)
		}
	}
	e.close()
}

func TestDirLock(t *testing.T) {
	e := newTestEnv(t)
	e.open()
	if _, err := OpenDir(e.path, Options{}); !errors.Is(err, ErrDirLocked) {
		t.Fatalf("second OpenDir: %v", err)
	}
	e.close()
	d, err := OpenDir(e.path, Options{})
	if err != nil {
		t.Fatalf("OpenDir after Close: %v", err)
	}
	d.Close(nil)
}

func TestTopicIDMismatch(t *testing.T) {
	e := newTestEnv(t)
	e.openLog(DefaultConfig())
	e.close()
	e.open()
	if _, err := e.dir.Open(testTP, [16]byte{9}, DefaultConfig()); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("open with another topic id: %v", err)
	}
	l, err := e.dir.Open(testTP, [16]byte{}, DefaultConfig())
	if err != nil || l.TopicID() != testTopicID {
		t.Fatalf("open with zero id: %v %v", l, err)
	}
	e.close()
}
