package logstore

import (
	"bytes"
	"errors"
	"math/rand"
	"testing"
	"time"
)

// noticed reports whether d signalled a deletion since the last call.
func noticed(d *Dir) bool {
	select {
	case <-d.DeletesNoticed():
		return true
	default:
		return false
	}
}

// Every path that renames segments *.deleted — retention, DeleteRecords,
// truncation, a cleaner swap — puts its log in the Dir's pending set, and
// RemoveDueDeletes removes the files file.delete.delay.ms after the rename
// without a retention check, then closes them after the grace and forgets
// the log. A second log with nothing pending is never in the set.
func TestRemoveDueDeletesEveryPath(t *testing.T) {
	const delay = 1500 * time.Millisecond
	cases := []struct {
		name   string
		cfg    func(t *testing.T) Config
		fill   func(t *testing.T, l *Log)
		delete func(t *testing.T, e *testEnv, l *Log)
	}{
		{"retention", smallSegments, fillBatches, func(t *testing.T, e *testEnv, l *Log) {
			cfg := l.Config()
			cfg.RetentionBytes = 1
			l.SetConfig(cfg)
			if err := e.dir.Maintain(e.clock.Now(), noHW); err != nil {
				t.Fatal(err)
			}
		}},
		{"delete-records", smallSegments, fillBatches, func(t *testing.T, e *testEnv, l *Log) {
			if _, err := l.DeleteRecordsBefore(4); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncation", smallSegments, fillBatches, func(t *testing.T, e *testEnv, l *Log) {
			if err := l.TruncateTo(2); err != nil {
				t.Fatal(err)
			}
		}},
		{"cleaning", func(*testing.T) Config { return compactConfig() }, func(t *testing.T, l *Log) {
			workload(t, l, rand.New(rand.NewSource(1)), 2000, 50, 10, 0, 1_700_000_000_000)
		}, func(t *testing.T, e *testEnv, l *Log) {
			c, err := NewCleaner(1<<20, 0.9)
			if err != nil {
				t.Fatal(err)
			}
			cleanFully(t, c, l, CleanOptions{FirstDirty: l.LogStartOffset()})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := tc.cfg(t)
			cfg.FileDeleteDelayMs = delay.Milliseconds()
			l := e.openLog(cfg)
			other, err := e.dir.Open(TopicPartition{Topic: "idle", Partition: 0}, [16]byte{9}, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			tc.fill(t, l)
			mustAppend(t, other, simpleBatch(t, 1, e.clock.Now().UnixMilli()), 0) // kept by retention
			if next, err := e.dir.RemoveDueDeletes(e.clock.Now()); err != nil || !next.IsZero() || noticed(e.dir) {
				t.Fatalf("before any deletion: next %v, err %v", next, err)
			}
			renamed := e.clock.Now()
			tc.delete(t, e, l)
			if !noticed(e.dir) {
				t.Fatal("no deletion noticed")
			}
			n := countFiles(t, e.partDir(), deletedSuffix)
			if n == 0 {
				t.Fatal("no .deleted files")
			}
			next, err := e.dir.RemoveDueDeletes(e.clock.Now())
			if err != nil || !next.Equal(renamed.Add(delay)) {
				t.Fatalf("next %v, want %v (err %v)", next, renamed.Add(delay), err)
			}
			if got := countFiles(t, e.partDir(), deletedSuffix); got != n {
				t.Fatalf("%d of %d .deleted files removed before file.delete.delay.ms", n-got, n)
			}
			if len(e.dir.pendingLogs) != 1 || e.dir.pendingLogs[other] {
				t.Fatalf("pending set %v, want only the deleting log", e.dir.pendingLogs)
			}
			e.clock.Advance(delay)
			next, err = e.dir.RemoveDueDeletes(e.clock.Now())
			if err != nil || !next.Equal(renamed.Add(deletedCloseGrace)) {
				t.Fatalf("next %v, want the close grace %v (err %v)", next, renamed.Add(deletedCloseGrace), err)
			}
			if got := countFiles(t, e.partDir(), deletedSuffix); got != 0 {
				t.Fatalf("%d .deleted files left after file.delete.delay.ms", got)
			}
			e.clock.Advance(deletedCloseGrace)
			if next, err := e.dir.RemoveDueDeletes(e.clock.Now()); err != nil || !next.IsZero() {
				t.Fatalf("after the grace: next %v, err %v", next, err)
			}
			if len(e.dir.pendingLogs) != 0 || len(l.pendingDeletes) != 0 {
				t.Fatalf("pending set %v, log's pending %d", e.dir.pendingLogs, len(l.pendingDeletes))
			}
			e.close()
		})
	}
}

// smallSegments holds one test batch per segment.
func smallSegments(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = int64(len(simpleBatch(t, 1, 0)))
	return cfg
}

func fillBatches(t *testing.T, l *Log) {
	for i := 0; i < 6; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(i)), 0)
	}
}

// With file.delete.delay.ms=0 the files go at once, yet a read that
// resolved to the segment just before still reads its bytes until the
// close grace has passed; only then does it fail as a deleted segment.
func TestZeroDeleteDelayKeepsInFlightReads(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallSegments(t)
	cfg.FileDeleteDelayMs = 0
	l := e.openLog(cfg)
	fillBatches(t, l)
	sl, err := l.ReadSlice(0, 1<<20, 6, true)
	if err != nil || sl.Size == 0 {
		t.Fatalf("ReadSlice: %+v %v", sl, err)
	}
	want, err := sl.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.dir.RemoveDueDeletes(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 0 {
		t.Fatalf("%d .deleted files left with file.delete.delay.ms=0", n)
	}
	got, err := sl.Bytes()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("in-flight read of the removed segment: %d bytes, %v", len(got), err)
	}
	e.clock.Advance(deletedCloseGrace)
	if next, err := e.dir.RemoveDueDeletes(e.clock.Now()); err != nil || !next.IsZero() {
		t.Fatalf("next %v, err %v", next, err)
	}
	if _, err := sl.Bytes(); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read after the grace: %v, want ErrOffsetOutOfRange", err)
	}
	e.close()
}

// A changed file.delete.delay.ms applies to the deletions already pending
// and is noticed at once, so a shortened delay does not wait for the old
// due time.
func TestDeleteDelayChangeReschedules(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallSegments(t)
	cfg.FileDeleteDelayMs = time.Hour.Milliseconds()
	l := e.openLog(cfg)
	fillBatches(t, l)
	renamed := e.clock.Now()
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	noticed(e.dir)
	if next, _ := e.dir.RemoveDueDeletes(e.clock.Now()); !next.Equal(renamed.Add(time.Hour)) {
		t.Fatalf("next %v, want in an hour", next)
	}
	e.clock.Advance(time.Second)
	cfg.FileDeleteDelayMs = 500
	l.SetConfig(cfg)
	if !noticed(e.dir) {
		t.Fatal("a changed file.delete.delay.ms with deletions pending was not noticed")
	}
	if _, err := e.dir.RemoveDueDeletes(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 0 {
		t.Fatalf("%d .deleted files left after file.delete.delay.ms was lowered", n)
	}
	cfg.FileDeleteDelayMs = 700
	l.SetConfig(cfg)
	noticed(e.dir)
	e.close()
	// Nothing pending is lost at close: the log's descriptors are closed,
	// and a reopen finds no *.deleted file.
	e.open()
	if n := countFiles(t, e.partDir(), deletedSuffix); n != 0 {
		t.Fatalf("%d .deleted files after reopen", n)
	}
	e.close()
}
