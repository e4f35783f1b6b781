package logstore

import (
	"encoding/binary"
	"math"
	"sync"
	"testing"
)

// TestDirConcurrentUse runs appends, reads, checkpoints and retention on
// several logs at once; run with -race.
func TestDirConcurrentUse(t *testing.T) {
	e := newTestEnv(t)
	d := e.open()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1500
	cfg.RetentionBytes = 3000
	cfg.FileDeleteDelayMs = 0
	var logs []*Log
	for p := int32(0); p < 3; p++ {
		l, err := d.Open(TopicPartition{Topic: "t", Partition: p}, [16]byte{byte(p + 1)}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, l)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := d.Checkpoint(nil); err != nil {
				t.Error(err)
				return
			}
			if err := d.Maintain(e.clock.Now(), func(tp TopicPartition) int64 { return logs[tp.Partition].LogEndOffset() }); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, l := range logs {
				start := l.LogStartOffset()
				if _, err := l.Read(start, 500, math.MaxInt64, true); err != nil {
					// Retention may move the start between the two calls.
					if start >= l.LogStartOffset() {
						t.Errorf("Read(%d): %v", start, err)
						return
					}
				}
			}
		}
	}()
	var aw sync.WaitGroup
	for _, l := range logs {
		aw.Add(1)
		go func(l *Log) {
			defer aw.Done()
			for i := 0; i < 150; i++ {
				if _, err := l.AppendAsLeader(simpleBatch(t, 2, int64(i)), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}(l)
	}
	aw.Wait()
	close(stop)
	wg.Wait()
	if err := d.Maintain(e.clock.Now(), func(TopicPartition) int64 { return math.MaxInt64 }); err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if l.LogEndOffset() != 300 || l.Size() > cfg.RetentionBytes+cfg.SegmentBytes {
			t.Fatalf("%v: LEO %d size %d", l.TopicPartition(), l.LogEndOffset(), l.Size())
		}
	}
	e.close()
	d = e.open()
	if got := len(d.Partitions()); got != 3 {
		t.Fatalf("%d partitions", got)
	}
	for _, tp := range d.Partitions() {
		l, err := d.Open(tp, [16]byte{}, cfg)
		if err != nil || l.LogEndOffset() != 300 {
			t.Fatalf("%v: %v", tp, err)
		}
		readAll(t, l, l.LogStartOffset())
	}
	if st := d.RecoveryStats(); st != (RecoveryStats{}) {
		t.Fatalf("recovery after clean close: %+v", st)
	}
	e.close()
}

// TestRollOnRelativeOffsetOverflow: a follower batch whose offset does not
// fit the active segment's 32-bit relative offsets starts a new segment.
func TestRollOnRelativeOffsetOverflow(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	b := simpleBatch(t, 1, 1)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	far := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(far[posBaseOffset:], uint64(math.MaxInt32)+10)
	if _, err := l.AppendAsFollower(far); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != math.MaxInt32+10 {
		t.Fatalf("segments %+v", segs)
	}
	if l.LogEndOffset() != math.MaxInt32+11 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	e.close()
	e.open()
	l = e.openLog(DefaultConfig())
	if r, err := l.Read(math.MaxInt32+10, 100, math.MaxInt64, true); err != nil || len(r.Data) != len(b) {
		t.Fatalf("read: %v", err)
	}
	e.close()
}
