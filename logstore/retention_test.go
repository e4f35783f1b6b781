package logstore

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func countFiles(t *testing.T, dir, suffix string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			n++
		}
	}
	return n
}

func noHW(TopicPartition) int64 { return math.MaxInt64 }

func TestRetentionByTime(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 1, 0)
	cfg.SegmentBytes = int64(2 * len(b))
	cfg.RetentionMs = 10_000
	cfg.FileDeleteDelayMs = 1000
	l := e.openLog(cfg)
	now := e.clock.Now().UnixMilli()
	// Segments [0,1] old, [2,3] old, [4,5] recent, [6] recent (active).
	for i, ts := range []int64{now - 50_000, now - 40_000, now - 30_000, now - 20_000, now - 5_000, now - 1_000, now} {
		mustAppend(t, l, simpleBatch(t, 1, ts), 0)
		_ = i
	}
	if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 4 || l.Segments()[0].BaseOffset != 4 {
		t.Fatalf("log start %d, segments %+v", l.LogStartOffset(), l.Segments())
	}
	if _, err := l.Read(3, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 6 {
		t.Fatalf("%d .deleted files, want 6", n)
	}
	// Files stay until file.delete.delay.ms has passed.
	e.clock.Advance(500 * time.Millisecond)
	e.dir.Maintain(e.clock.Now(), noHW)
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 6 {
		t.Fatalf("%d .deleted files removed early", 6-n)
	}
	e.clock.Advance(600 * time.Millisecond)
	e.dir.Maintain(e.clock.Now(), noHW)
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 0 {
		t.Fatalf("%d .deleted files left", n)
	}
	// Everything expires: the log rolls and keeps an empty active segment.
	e.clock.Advance(time.Hour)
	e.dir.Maintain(e.clock.Now(), noHW)
	segs := l.Segments()
	if len(segs) != 1 || segs[0].BaseOffset != 7 || segs[0].Size != 0 || l.LogStartOffset() != 7 || l.LogEndOffset() != 7 {
		t.Fatalf("after full expiry: start %d segments %+v", l.LogStartOffset(), segs)
	}
	if res := mustAppend(t, l, b, 0); res.FirstOffset != 7 {
		t.Fatalf("append at %d", res.FirstOffset)
	}
	e.close()
	// The new log start survives a restart.
	e.open()
	l = e.openLog(cfg)
	if l.LogStartOffset() != 7 {
		t.Fatalf("log start after reopen %d", l.LogStartOffset())
	}
	e.close()
}

func TestRetentionByBytes(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 1, 0)
	size := int64(len(b))
	cfg.SegmentBytes = 2 * size
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 5 * size
	l := e.openLog(cfg)
	for i := 0; i < 9; i++ { // segments of 2,2,2,2,1 batches
		mustAppend(t, l, b, 0)
	}
	if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
		t.Fatal(err)
	}
	// total 9; delete while total - seg >= 5: 9-2=7 ok, 7-2=5 ok, 5-2=3 no.
	if l.LogStartOffset() != 4 || l.Size() != 5*size {
		t.Fatalf("log start %d size %d segments %+v", l.LogStartOffset(), l.Size(), l.Segments())
	}
	e.close()
}

func TestRetentionRespectsHighWatermark(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 1, 0)
	cfg.SegmentBytes = 2 * int64(len(b))
	cfg.RetentionMs = 1
	l := e.openLog(cfg)
	for i := 0; i < 6; i++ {
		mustAppend(t, l, b, 0)
	}
	e.clock.Advance(time.Hour)
	if err := e.dir.Maintain(e.clock.Now(), func(TopicPartition) int64 { return 3 }); err != nil {
		t.Fatal(err)
	}
	// Only [0,1] is wholly below HW 3; [2,3] ends at 4 > 3.
	if l.LogStartOffset() != 2 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	e.close()
}

func TestDeleteRecordsBeforePersists(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 2, 0)
	cfg.SegmentBytes = 2 * int64(len(b))
	l := e.openLog(cfg)
	for i := 0; i < 5; i++ { // offsets 0..9, segments at 0, 4, 8
		mustAppend(t, l, b, 0)
	}
	if _, err := l.DeleteRecordsBefore(11); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond LEO: %v", err)
	}
	start, err := l.DeleteRecordsBefore(5)
	if err != nil || start != 5 {
		t.Fatalf("DeleteRecordsBefore: %d %v", start, err)
	}
	if segs := l.Segments(); segs[0].BaseOffset != 4 {
		t.Fatalf("segments %+v", segs)
	}
	if _, err := l.Read(4, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below new start: %v", err)
	}
	// Offset 5 is inside batch [4,5]: the batch is returned whole.
	if r, err := l.Read(5, 100, math.MaxInt64, true); err != nil || r.FirstOffset != 4 {
		t.Fatalf("read at start: %+v %v", r.FirstOffset, err)
	}
	if start, _ := l.DeleteRecordsBefore(3); start != 5 {
		t.Fatalf("moving back: %d", start)
	}
	// Crash right away: the checkpoint was written by DeleteRecordsBefore.
	e.crash()
	data, err := os.ReadFile(filepath.Join(e.path, logStartOffsetFile))
	if err != nil || !strings.Contains(string(data), "orders 3 5\n") {
		t.Fatalf("log-start-offset-checkpoint %q %v", data, err)
	}
	e.open()
	l = e.openLog(cfg)
	if l.LogStartOffset() != 5 {
		t.Fatalf("log start after crash %d", l.LogStartOffset())
	}
	if o, _, ok := l.OffsetForTimestamp(0); !ok || o != 5 {
		t.Fatalf("OffsetForTimestamp(0) = %d %v, want 5", o, ok)
	}
	e.close()
}

func TestRemovePartition(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 1, 1), 0)
	if err := e.dir.Remove(testTP); err != nil {
		t.Fatal(err)
	}
	if e.dir.Log(testTP) != nil || len(e.dir.Partitions()) != 0 {
		t.Fatal("partition still there")
	}
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 0); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append to removed log: %v", err)
	}
	ents, _ := os.ReadDir(e.path)
	for _, en := range ents {
		if en.IsDir() {
			t.Fatalf("left behind %s", en.Name())
		}
	}
	e.close()
}

// TestRetentionSkipsCompactOnlyLogs checks that cleanup.policy=compact
// turns time and size retention off (old segments stay however old their
// records are), that DeleteRecords still moves the log start, and that
// switching the policy to compact,delete trims at the next pass.
func TestRetentionSkipsCompactOnlyLogs(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 1, 0)
	cfg.SegmentBytes = 2 * int64(len(b))
	cfg.RetentionMs = 1000
	cfg.RetentionBytes = int64(len(b))
	cfg.FileDeleteDelayMs = 0
	cfg.CleanupDelete = false
	l := e.openLog(cfg)
	day := int64(24 * time.Hour / time.Millisecond)
	old := e.clock.Now().UnixMilli() - 8*day // records 8 days old
	for i := 0; i < 7; i++ {                 // segments of 2,2,2,1 batches
		mustAppend(t, l, simpleBatch(t, 1, old+int64(i)), 0)
	}
	for i := 0; i < 3; i++ {
		e.clock.Advance(time.Hour)
		if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
			t.Fatal(err)
		}
	}
	if l.LogStartOffset() != 0 || len(l.Segments()) != 4 || len(readAll(t, l, 0)) != 7 {
		t.Fatalf("compact-only log trimmed: start %d segments %+v", l.LogStartOffset(), l.Segments())
	}
	if start, err := l.DeleteRecordsBefore(2); err != nil || start != 2 {
		t.Fatalf("DeleteRecordsBefore on a compact-only log: %d %v", start, err)
	}
	if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
		t.Fatal(err)
	}
	if segs := l.Segments(); l.LogStartOffset() != 2 || segs[0].BaseOffset != 2 {
		t.Fatalf("after DeleteRecords: start %d segments %+v", l.LogStartOffset(), segs)
	}
	cfg.CleanupDelete = true // cleanup.policy=compact,delete
	l.SetConfig(cfg)
	if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 7 {
		t.Fatalf("compact,delete log not trimmed: start %d segments %+v", l.LogStartOffset(), l.Segments())
	}
	e.close()
}
