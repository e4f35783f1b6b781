package logstore

import (
	"math/rand"
	"testing"
	"time"
)

const testDeleteRetentionMs = 86_400_000

func newTestCleaner(t testing.TB, memory int64) *Cleaner {
	t.Helper()
	c, err := NewCleaner(memory, 0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Many keys with overwrites and tombstones: one pass leaves one record per
// key below the cleaned end, its latest, tombstones included; after
// delete.retention.ms a recheck removes the tombstones.
func TestCleanKeepsLatestPerKey(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	rng := rand.New(rand.NewSource(1))
	workload(t, l, rng, 3000, 200, 7, 0, 1_700_000_000_000)
	before := readRecords(t, l)
	segsBefore := len(l.Segments())

	c := newTestCleaner(t, 1<<20)
	st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		t.Fatal(err)
	}
	active := l.Segments()[len(l.Segments())-1].BaseOffset
	if st.EndOffset != active {
		t.Fatalf("EndOffset %d, want the active segment's base %d", st.EndOffset, active)
	}
	after := readRecords(t, l)
	checkCompacted(t, before, after, st.EndOffset, false)
	if st.BytesWritten*2 >= st.BytesRead {
		t.Fatalf("segments %d -> %d, bytes %d -> %d: nothing was compacted", segsBefore, len(l.Segments()), st.BytesRead, st.BytesWritten)
	}
	checkIndexFiles(t, l)
	t.Logf("%d records -> %d; %d segments -> %d; %d bytes -> %d", len(before), len(after), segsBefore, len(l.Segments()), st.BytesRead, st.BytesWritten)

	// Before the horizon a recheck keeps the tombstones.
	env.clock.Advance(time.Hour)
	if _, err := c.Clean(l, CleanOptions{FirstDirty: st.EndOffset, DeleteRetentionMs: testDeleteRetentionMs, Recheck: true}); err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, before, readRecords(t, l), st.EndOffset, false)
	// Segments were grouped by their size before cleaning, so only a
	// second pass over the now small segments merges them (as in Kafka).
	if n := len(l.Segments()); n >= segsBefore/2 {
		t.Fatalf("%d segments after two passes, want the small cleaned ones merged", n)
	}

	env.clock.Advance(testDeleteRetentionMs * time.Millisecond)
	if _, err := c.Clean(l, CleanOptions{FirstDirty: st.EndOffset, DeleteRetentionMs: testDeleteRetentionMs, Recheck: true}); err != nil {
		t.Fatal(err)
	}
	final := readRecords(t, l)
	checkCompacted(t, before, final, st.EndOffset, true)
	checkIndexFiles(t, l)

	// What the log holds survives a restart.
	env.close()
	l = env.openLog(compactConfig())
	if got := readRecords(t, l); len(got) != len(final) {
		t.Fatalf("after reopen %d records, want %d", len(got), len(final))
	}
	checkIndexFiles(t, l)
}

// A map budget far below the number of keys cleans in several passes and
// ends as one pass with a big map would, without allocating past it.
func TestCleanMultiPassSmallMap(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	rng := rand.New(rand.NewSource(2))
	workload(t, l, rng, 3000, 200, 5, 0, 1_700_000_000_000)
	before := readRecords(t, l)
	const budget = 40 * offsetMapSlotSize // 36 keys at the 0.9 load factor
	c := newTestCleaner(t, budget)
	if c.MapBytes() > budget {
		t.Fatalf("map holds %d bytes, budget %d", c.MapBytes(), budget)
	}
	end, passes := cleanFully(t, c, l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if passes < 3 {
		t.Fatalf("%d passes with a map of 36 keys for 200 keys", passes)
	}
	if active := l.Segments()[len(l.Segments())-1].BaseOffset; end != active {
		t.Fatalf("cleaned up to %d, want %d", end, active)
	}
	checkCompacted(t, before, readRecords(t, l), end, false)
	checkIndexFiles(t, l)
	t.Logf("%d passes", passes)
}

// Compressed batches are rewritten with their own codec and stay readable.
func TestCleanKeepsCodec(t *testing.T) {
	for codec := int8(0); codec <= 4; codec++ {
		t.Run(Compression(codec+1).String(), func(t *testing.T) {
			env := newTestEnv(t)
			l := env.openLog(compactConfig())
			rng := rand.New(rand.NewSource(3))
			workload(t, l, rng, 1500, 50, 10, codec, 1_700_000_000_000)
			before := readRecords(t, l)
			c := newTestCleaner(t, 1<<20)
			st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, before, readRecords(t, l), st.EndOffset, false)
			for _, h := range readAll(t, l, 0) {
				if h.RecordCount > 0 && h.compression() != int(codec) {
					t.Fatalf("batch at %d has codec %d, want %d", h.BaseOffset, h.compression(), codec)
				}
			}
			checkIndexFiles(t, l)
		})
	}
}

// Aborted transactional data goes; its ABORT marker stays (with a new
// .txnindex entry) while the transaction still has a batch in the log,
// here the producer's last one, kept empty; committed data stays.
func TestCleanTransactions(t *testing.T) {
	env := newTestEnv(t)
	cfg := compactConfig()
	l := env.openLog(cfg)
	ts := int64(1_700_000_000_000)
	rec := func(k, v string) testRecord { return testRecord{Timestamp: ts, Key: []byte(k), Value: []byte(v)} }
	const pidA, pidB = 7, 8
	// Producer A: an aborted transaction, then a committed one.
	abortedFirst := appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: pidA, BaseSequence: 0, Transactional: true},
		[]testRecord{rec("a1", "aborted"), rec("a2", "aborted")}))
	abortMarker := appendAt(t, l, markerBatch(t, pidA, controlAbort, ts))
	if err := l.AppendAbortedTxn(AbortedTxn{ProducerID: pidA, FirstOffset: abortedFirst, LastOffset: abortMarker, LastStableOffset: abortMarker + 1}); err != nil {
		t.Fatal(err)
	}
	appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: pidA, BaseSequence: 2, Transactional: true},
		[]testRecord{rec("c1", "committed")}))
	appendAt(t, l, markerBatch(t, pidA, controlCommit, ts))
	// Producer B, idempotent: its only batch is overwritten later by
	// non-producer records, but stays (empty) as B's last batch.
	bBatch := appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: pidB, Epoch: 3, BaseSequence: 41},
		[]testRecord{rec("b1", "old")}))
	rng := rand.New(rand.NewSource(4))
	workload(t, l, rng, 400, 20, 5, 0, ts)
	appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: -1, Epoch: -1, BaseSequence: -1}, []testRecord{rec("b1", "new")}))
	workload(t, l, rng, 400, 20, 5, 0, ts)

	c := newTestCleaner(t, 1<<20)
	st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		t.Fatal(err)
	}
	if st.EndOffset <= bBatch {
		t.Fatalf("cleaned only up to %d", st.EndOffset)
	}
	got := readRecords(t, l)
	vals := map[string]string{}
	for _, r := range got {
		if r.Value == "aborted" {
			t.Fatalf("aborted record %+v survived", r)
		}
		vals[r.Key] = r.Value
	}
	if vals["c1"] != "committed" || vals["b1"] != "new" {
		t.Fatalf("c1=%q b1=%q", vals["c1"], vals["b1"])
	}
	var sawB, sawAbort, sawCommit bool
	for _, h := range readAll(t, l, 0) {
		switch {
		case h.BaseOffset == bBatch:
			sawB = true
			if h.RecordCount != 0 || h.ProducerID != pidB || h.ProducerEpoch != 3 || h.BaseSequence != 41 {
				t.Fatalf("B's last batch: %+v, want it empty with its producer fields", h)
			}
		case h.BaseOffset == abortMarker:
			sawAbort = true
		case h.Attributes&attrControl != 0:
			sawCommit = true
		}
	}
	if !sawB || !sawAbort || !sawCommit {
		t.Fatalf("B's batch %v, abort marker %v, commit marker %v: want all kept", sawB, sawAbort, sawCommit)
	}
	// The aborted transaction is still answered for read_committed.
	if ab := l.AbortedTxns(0, l.LogEndOffset()); len(ab) != 1 || ab[0].ProducerID != pidA || ab[0].LastOffset != abortMarker {
		t.Fatalf("AbortedTxns = %+v", ab)
	}
	checkIndexFiles(t, l)

	// The next pass finds no data left of the aborted transaction: its
	// marker gets a delete horizon, no .txnindex entry, and goes once the
	// horizon has passed. The commit marker stays: c1 is still there.
	markers := func() (abort, commit bool) {
		for _, h := range readAll(t, l, 0) {
			if h.Attributes&attrControl != 0 {
				if h.BaseOffset == abortMarker {
					abort = true
					if h.Attributes&attrDeleteHorizon == 0 || h.BaseTimestamp != env.clock.Now().UnixMilli()+testDeleteRetentionMs {
						t.Fatalf("abort marker %+v without the expected delete horizon", h)
					}
				} else {
					commit = true
				}
			}
		}
		return abort, commit
	}
	recheck := CleanOptions{FirstDirty: st.EndOffset, DeleteRetentionMs: testDeleteRetentionMs, Recheck: true}
	if _, err := c.Clean(l, recheck); err != nil {
		t.Fatal(err)
	}
	if abort, commit := markers(); !abort || !commit {
		t.Fatalf("after the second pass: abort marker %v, commit marker %v; want both", abort, commit)
	}
	if ab := l.AbortedTxns(0, l.LogEndOffset()); len(ab) != 0 {
		t.Fatalf("AbortedTxns = %+v, want none: the transaction has no data left", ab)
	}
	env.clock.Advance(testDeleteRetentionMs * time.Millisecond)
	if _, err := c.Clean(l, recheck); err != nil {
		t.Fatal(err)
	}
	for _, h := range readAll(t, l, 0) {
		if h.BaseOffset == abortMarker {
			t.Fatalf("abort marker kept after its delete horizon: %+v", h)
		}
	}
	if vals := readRecords(t, l); len(vals) == 0 {
		t.Fatal("log empty")
	}
	checkIndexFiles(t, l)
}

// A read from an offset that fell into a gap returns the next batch.
func TestCleanReadFromGap(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	rng := rand.New(rand.NewSource(5))
	workload(t, l, rng, 2000, 10, 4, 0, 1_700_000_000_000)
	before := readRecords(t, l)
	c := newTestCleaner(t, 1<<20)
	st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		t.Fatal(err)
	}
	after := readRecords(t, l)
	kept := map[int64]bool{}
	for _, r := range after {
		kept[r.Offset] = true
	}
	for _, r := range before {
		if r.Offset >= st.EndOffset || kept[r.Offset] {
			continue
		}
		res, err := l.Read(r.Offset, 1<<20, 1<<62, true)
		if err != nil {
			t.Fatalf("Read(%d) in a gap: %v", r.Offset, err)
		}
		if len(res.Data) == 0 {
			t.Fatalf("Read(%d) in a gap returned nothing", r.Offset)
		}
		if h := parseHeader(res.Data); h.lastOffset() < r.Offset {
			t.Fatalf("Read(%d) returned a batch ending at %d", r.Offset, h.lastOffset())
		}
	}
}

// Reads running while passes swap segments always see whole, ordered
// logs with every live key.
func TestCleanConcurrentReads(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	rng := rand.New(rand.NewSource(6))
	workload(t, l, rng, 3000, 100, 5, 0, 1_700_000_000_000)
	done := make(chan struct{})
	errs := make(chan string, 1)
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			recs := readRecordsNoFatal(l)
			if recs == "" {
				continue
			}
			select {
			case errs <- recs:
			default:
			}
			return
		}
	}()
	c := newTestCleaner(t, 30*offsetMapSlotSize)
	cleanFully(t, c, l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	<-done
	select {
	case e := <-errs:
		t.Fatal(e)
	default:
	}
}

// readRecordsNoFatal reads the log from a goroutine, returning a problem.
func readRecordsNoFatal(l *Log) string {
	last := int64(-1)
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		r, err := l.Read(off, 1<<16, 1<<62, true)
		if err != nil {
			return "read: " + err.Error()
		}
		if len(r.Data) == 0 {
			return "no data below the log end"
		}
		for b := r.Data; len(b) > 0; {
			h := parseHeader(b)
			if batchCRC(b[:h.size()]) != h.CRC {
				return "bad crc"
			}
			if h.BaseOffset <= last {
				return "offsets not increasing"
			}
			last = h.lastOffset()
			off = h.nextOffset()
			b = b[h.size():]
		}
	}
	return ""
}

// Dir.CleanLog starts from and writes cleaner-offset-checkpoint, in
// Kafka's format.
func TestCleanerOffsetCheckpoint(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	rng := rand.New(rand.NewSource(7))
	workload(t, l, rng, 1000, 50, 5, 0, 1_700_000_000_000)
	c := newTestCleaner(t, 1<<20)
	st, err := env.dir.CleanLog(c, testTP, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		t.Fatal(err)
	}
	data := readFileT(t, env.path+"/"+cleanerCheckpointFile)
	want := "0\n1\norders 3 " + itoa(st.EndOffset) + "\n"
	if data != want {
		t.Fatalf("cleaner-offset-checkpoint = %q, want %q", data, want)
	}
	env.close()
	l = env.openLog(compactConfig())
	workload(t, l, rng, 1000, 50, 5, 0, 1_700_000_000_000)
	st2, err := env.dir.CleanLog(c, testTP, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		t.Fatal(err)
	}
	if st2.FirstDirty != st.EndOffset || st2.EndOffset <= st.EndOffset {
		t.Fatalf("second pass mapped [%d, %d), want from %d", st2.FirstDirty, st2.EndOffset, st.EndOffset)
	}
	if err := env.dir.Remove(testTP); err != nil {
		t.Fatal(err)
	}
	if data := readFileT(t, env.path+"/"+cleanerCheckpointFile); data != "0\n0\n" {
		t.Fatalf("after Remove: %q", data)
	}
}

// log.cleaner.io.max.bytes.per.second: a pass sleeps so that what it
// read and wrote over its (fake) duration stays at the limit.
func TestCleanThrottled(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	workload(t, l, rand.New(rand.NewSource(11)), 3000, 100, 5, 0, 1_700_000_000_000)
	c := newTestCleaner(t, 1<<20)
	clock := newFakeClock()
	start := clock.Now()
	c.now, c.sleep = clock.Now, clock.Advance
	const rate = 10_000 // bytes per second
	st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs, MaxBytesPerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	io := st.BytesRead*2 + st.BytesWritten // read for the map, read and written for the rewrite
	elapsed := clock.Now().Sub(start)
	if want := time.Duration(float64(io-rate) / rate * float64(time.Second)); elapsed < want {
		t.Fatalf("%d bytes of I/O took %v of throttled time, want at least %v", io, elapsed, want)
	}
	if st.Throttled != elapsed {
		t.Fatalf("Throttled = %v, slept %v", st.Throttled, elapsed)
	}
	// Without a limit nothing sleeps.
	st, err = c.Clean(l, CleanOptions{FirstDirty: 0, DeleteRetentionMs: testDeleteRetentionMs, Recheck: true})
	if err != nil || st.Throttled != 0 {
		t.Fatalf("unthrottled pass: %+v, %v", st, err)
	}
}
