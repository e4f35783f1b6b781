package logstore

import (
	"math/rand"
	"testing"
	"time"
)

// KIP-534's rescheduling: after a pass gives the tombstones a delete
// horizon, a log that gets no new writes is not cleanable by ratio, yet
// once the horizon has passed the manager chooses it (DeleteHorizonDue)
// and the pass removes them; then nothing is due any more.
func TestRescheduleForExpiredTombstones(t *testing.T) {
	env := newTestEnv(t)
	d := env.open()
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	l, err := d.Open(TopicPartition{Topic: "quiet"}, [16]byte{7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	workload(t, l, rand.New(rand.NewSource(3)), 2000, 40, 5, 0, env.clock.Now().UnixMilli()-3_600_000)
	c := newTestCleaner(t, 1<<20)
	for {
		r, err := d.CleanNext(c, env.clock.Now(), nil, CleanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Chosen {
			break
		}
		if r.Candidate.DeleteHorizonDue {
			t.Fatalf("pass %+v chosen for its delete horizon before it passed", r.Candidate)
		}
	}
	// Tombstones in the cleaned section (the active segment is never
	// cleaned).
	activeBase := func() int64 {
		l.segsMu.RLock()
		defer l.segsMu.RUnlock()
		return l.active().base
	}
	tombstones := func() int {
		n := 0
		for _, r := range readRecords(t, l) {
			if r.Tombstone && r.Offset < activeBase() {
				n++
			}
		}
		return n
	}
	if tombstones() == 0 {
		t.Fatal("the first passes removed the tombstones before delete.retention.ms")
	}
	env.clock.Advance(61 * time.Second)
	if cand, ok, _ := d.ChooseLogToClean(env.clock.Now(), func(TopicPartition) int64 { return 0 }); ok {
		t.Fatalf("chose %+v, a log its caller bounds at 0", cand)
	}
	r, err := d.CleanNext(c, env.clock.Now(), nil, CleanOptions{})
	if err != nil || !r.Chosen || !r.Candidate.DeleteHorizonDue {
		t.Fatalf("after the horizon: %+v, %v; want the log chosen for its expired tombstones", r, err)
	}
	if n := tombstones(); n != 0 {
		t.Fatalf("%d tombstones left after the rescheduled pass", n)
	}
	if r, err := d.CleanNext(c, env.clock.Now(), nil, CleanOptions{}); err != nil || r.Chosen {
		t.Fatalf("chose %+v again with no horizon left (%v)", r.Candidate, err)
	}
}

// With a write buffer, cleaned batches go to the new segment in chunks;
// the result reads the same as without one.
func TestCleanWriteBuffer(t *testing.T) {
	for _, size := range []int{0, 100, 1 << 20} {
		env := newTestEnv(t)
		l := env.openLog(compactConfig())
		workload(t, l, rand.New(rand.NewSource(5)), 2000, 50, 5, 0, 1_700_000_000_000)
		before := readRecords(t, l)
		c := newTestCleaner(t, 1<<20)
		st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs, WriteBufferSize: size})
		if err != nil {
			t.Fatal(err)
		}
		checkCompacted(t, before, readRecords(t, l), st.EndOffset, false)
		checkIndexFiles(t, l)
		if st.BufferUtilization <= 0 || st.BufferUtilization > 1 {
			t.Fatalf("buffer utilisation %v", st.BufferUtilization)
		}
	}
}

// Cleaner threads share a Dir and a Throttler: passes run at once on
// different logs, never two on one log, and every log ends compacted.
func TestConcurrentCleanersShareDir(t *testing.T) {
	env := newTestEnv(t)
	d := env.open()
	var logs []*Log
	for i := 0; i < 4; i++ {
		l, err := d.Open(TopicPartition{Topic: "t", Partition: int32(i)}, [16]byte{byte(i + 1)}, compactConfig())
		if err != nil {
			t.Fatal(err)
		}
		workload(t, l, rand.New(rand.NewSource(int64(i))), 1500, 30, 5, 0, 1_700_000_000_000)
		logs = append(logs, l)
	}
	before := make([][]keyedRecord, len(logs))
	for i, l := range logs {
		before[i] = readRecords(t, l)
	}
	thr := NewThrottler(0)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		c := newTestCleaner(t, 1<<20)
		go func() {
			for {
				r, err := d.CleanNext(c, env.clock.Now(), nil, CleanOptions{Throttle: thr, WriteBufferSize: 512})
				if err != nil || !r.Chosen {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	cks, err := d.CleanerCheckpoints()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		end, ok := cks[TopicPartition{Topic: "t", Partition: int32(i)}]
		if !ok || end == 0 {
			t.Fatalf("log %d not cleaned (checkpoint %d, %v)", i, end, ok)
		}
		checkCompacted(t, before[i], readRecords(t, l), end, false)
	}
	if st := thr.Stats(); st.Bytes == 0 || st.Sleeps != 0 {
		t.Fatalf("shared unlimited throttler: %+v", st)
	}
}
