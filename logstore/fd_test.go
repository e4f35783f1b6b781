//go:build linux

package logstore

import (
	"os"
	"testing"
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

// TestFileDescriptorsPerSegment: a segment holds one descriptor, its
// .log, however many logs are open and whatever they are doing (appends,
// rolls, flushes, a clean reopen), and Close releases them all. Index and
// checkpoint files are opened only while read or written. Issue 8: 10,000
// partitions at three descriptors a segment exceed a 20,000-file limit.
func TestFileDescriptorsPerSegment(t *testing.T) {
	const logs = 500
	const slack = 16 // the runtime's own descriptors come and go
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 300 // three one-record batches
	cfg.IndexIntervalBytes = 50
	tp := func(i int) TopicPartition { return TopicPartition{Topic: "fd", Partition: int32(i)} }

	e.open()
	before := openFDs(t)
	segments := func() int {
		n := 0
		for i := 0; i < logs; i++ {
			n += len(e.dir.Log(tp(i)).Segments())
		}
		return n
	}
	check := func(when string) {
		t.Helper()
		segs, grown := segments(), openFDs(t)-before
		t.Logf("%s: %d logs, %d segments, %d more descriptors", when, logs, segs, grown)
		if grown > segs+slack {
			t.Fatalf("%s: %d more descriptors for %d segments of %d logs", when, grown, segs, logs)
		}
	}

	for i := 0; i < logs; i++ {
		l, err := e.dir.Open(tp(i), [16]byte{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			mustAppend(t, l, simpleBatch(t, 1, int64(j)), 1)
		}
		mustAbort(t, l, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 1, LastStableOffset: 2})
	}
	if segs := segments(); segs < 3*logs {
		t.Fatalf("only %d segments for %d logs", segs, logs)
	}
	check("after appends and rolls")
	if err := e.dir.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	check("after a checkpoint")
	e.close()
	if n := openFDs(t); n > before+slack {
		t.Fatalf("%d descriptors after Close, %d before", n, before)
	}

	e.open()
	for i := 0; i < logs; i++ {
		if _, err := e.dir.Open(tp(i), [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	check("after a clean reopen")
	e.crash()
	e.open()
	for i := 0; i < logs; i++ {
		if _, err := e.dir.Open(tp(i), [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
	}
	check("after crash recovery")
	e.close()
}
