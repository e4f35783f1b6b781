//go:build linux

package logstore

import (
	"bytes"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot list /proc/self/fd: %v", err)
	}
	return len(entries)
}

// TestFileDescriptorBudget: however many logs and segments a Dir holds and
// whatever they do (appends, rolls, reads of every segment, an aborted
// transaction, a checkpoint, a clean reopen, crash recovery), the segment
// files it holds open stay within its FileCache's budget, and every batch
// reads back as written. Index and checkpoint files are opened only while
// read or written, so the descriptors grow by the budget plus the
// runtime's own few. Issue 22: 100,000 partitions at one descriptor a
// segment exceed any open-file limit; before the cache this test held
// 2,000, one a segment.
func TestFileDescriptorBudget(t *testing.T) {
	const logs = 1000
	const budget = 64
	const slack = 16 // the runtime's own descriptors come and go
	files := NewFileCache(budget)
	path := filepath.Join(t.TempDir(), "data")
	var dir *Dir
	open := func() {
		var err error
		if dir, err = OpenDir(path, Options{FileCache: files, Logger: slog.New(slog.DiscardHandler)}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.SegmentBytes = 300 // three one-record batches
	cfg.IndexIntervalBytes = 50
	tp := func(i int) TopicPartition { return TopicPartition{Topic: "fd", Partition: int32(i)} }

	start := time.Now()
	open()
	before := openFDs(t)
	segments := func() int {
		n := 0
		for i := 0; i < logs; i++ {
			n += len(dir.Log(tp(i)).Segments())
		}
		return n
	}
	check := func(when string) {
		t.Helper()
		segs, grown := segments(), openFDs(t)-before
		st := files.Stats()
		t.Logf("%v %s: %d logs, %d segments, %d more descriptors (cache: %+v)", time.Since(start).Round(time.Millisecond), when, logs, segs, grown, st)
		if grown > budget+slack || st.Open > budget {
			t.Fatalf("%s: %d more descriptors, %d cached, for a budget of %d (%d segments of %d logs)",
				when, grown, st.Open, budget, segs, logs)
		}
	}
	// Each log gets six batches, record j's timestamp 1000*i+j, so what
	// a read returns can be told apart from any other log's.
	verify := func(when string) {
		t.Helper()
		for i := 0; i < logs; i++ {
			l := dir.Log(tp(i))
			hs := readAll(t, l, 0)
			if len(hs) != 6 {
				t.Fatalf("%s: log %d reads %d batches, want 6", when, i, len(hs))
			}
			for j, h := range hs {
				if h.BaseOffset != int64(j) || h.MaxTimestamp != int64(1000*i+j) {
					t.Fatalf("%s: log %d batch %d: offset %d timestamp %d", when, i, j, h.BaseOffset, h.MaxTimestamp)
				}
			}
		}
	}

	for i := 0; i < logs; i++ {
		l, err := dir.Open(tp(i), [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 3; j++ {
			mustAppend(t, l, simpleBatch(t, 1, int64(1000*i+j)), 1)
		}
	}
	// A second round over every log: each append finds its active
	// segment evicted since the first.
	for i := 0; i < logs; i++ {
		l := dir.Log(tp(i))
		for j := 3; j < 6; j++ {
			mustAppend(t, l, simpleBatch(t, 1, int64(1000*i+j)), 1)
		}
		mustAbort(t, l, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2})
	}
	if segs := segments(); segs < 2*logs {
		t.Fatalf("only %d segments for %d logs", segs, logs)
	}
	check("after appends and rolls")
	verify("after appends")
	check("after reading every segment")
	if err := dir.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	check("after a checkpoint")
	if err := dir.Close(nil); err != nil {
		t.Fatal(err)
	}
	if n := openFDs(t); n > before+slack || files.Stats().Open != 0 {
		t.Fatalf("%d descriptors after Close, %d before; cache %+v", n, before, files.Stats())
	}

	open()
	for i := 0; i < logs; i++ {
		if _, err := dir.Open(tp(i), [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	check("after a clean reopen")
	verify("after a clean reopen")
	dir.Abandon()
	open()
	for i := 0; i < logs; i++ {
		if _, err := dir.Open(tp(i), [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	check("after crash recovery")
	verify("after crash recovery")
	if st := files.Stats(); st.Evictions == 0 || st.OverBudget != 0 {
		t.Fatalf("cache %+v: want evictions and never over budget", st)
	}
	if err := dir.Close(nil); err != nil {
		t.Fatal(err)
	}
}

// TestFileBudgetReadsAfterEviction: a Slice resolved before its segment's
// descriptor was evicted still reads the same bytes (the file is reopened),
// and one resolved before the segment was deleted by retention reads them
// too (a deleted segment's descriptor is pinned until it is closed).
func TestFileBudgetReadsAfterEviction(t *testing.T) {
	files := NewFileCache(minFileBudget)
	d, err := OpenDir(filepath.Join(t.TempDir(), "data"), Options{FileCache: files, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	cfg := DefaultConfig()
	cfgA := cfg
	cfgA.SegmentBytes = 150 // the second batch rolls
	l, err := d.Open(TopicPartition{Topic: "a", Partition: 0}, [16]byte{}, cfgA)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simpleBatch(t, 3, 7), 0)
	sl, err := l.ReadSlice(0, 1<<20, math.MaxInt64, true)
	if err != nil || sl.Size == 0 {
		t.Fatalf("ReadSlice: %+v %v", sl, err)
	}
	want, err := sl.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// Fill the cache with other logs' files until ours is evicted.
	for i := 1; files.Stats().Evictions == 0 || i < 3*minFileBudget; i++ {
		o, err := d.Open(TopicPartition{Topic: "a", Partition: int32(i)}, [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, o, simpleBatch(t, 1, 1), 0)
	}
	if cachedOf(l.segments[0].log).isOpen() {
		t.Fatal("segment still open after the cache turned over three times")
	}
	got, err := sl.Bytes()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read after eviction: %v, same bytes %v", err, bytes.Equal(got, want))
	}

	// Retention deletes the segment (after a roll) while the Slice is held.
	mustAppend(t, l, simpleBatch(t, 1, 8), 0)
	for i := 1; i < 3*minFileBudget; i++ {
		mustAppend(t, d.Log(TopicPartition{Topic: "a", Partition: int32(i)}), simpleBatch(t, 1, 1), 0)
	}
	if _, err := l.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments after DeleteRecordsBefore", n)
	}
	for i := 1; i < 3*minFileBudget; i++ {
		mustAppend(t, d.Log(TopicPartition{Topic: "a", Partition: int32(i)}), simpleBatch(t, 1, 1), 0)
	}
	got, err = sl.Bytes()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read of a deleted segment: %v, same bytes %v", err, bytes.Equal(got, want))
	}
}
