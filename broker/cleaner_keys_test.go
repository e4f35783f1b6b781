package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// produceRounds writes rounds of one record per key to topic, each value
// padded to pad bytes; keys below tombstones get a tombstone in round
// tombRound and nothing after. It returns each key's latest value (nil
// for a deleted key).
func produceRounds(t *testing.T, cl *kgo.Client, topic string, rounds, keys, pad, tombstones, tombRound int) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	latest := map[string][]byte{}
	for round := 0; round < rounds; round++ {
		var recs []*kgo.Record
		for k := 0; k < keys; k++ {
			key := fmt.Sprintf("key-%03d", k)
			if k < tombstones && round > tombRound {
				continue
			}
			val := []byte(fmt.Sprintf("%s-round-%d-%0*d", key, round, pad, 0))
			if k < tombstones && round == tombRound {
				val = nil
			}
			latest[key] = val
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: val})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	return latest
}

// pollFor polls cond every 100 ms for up to 60 s (the machine may be
// loaded; the condition decides, not the clock).
func pollFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 60s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// alterClusterDefault sets broker configs on the cluster default entity
// (kafka-configs.sh --entity-type brokers --entity-default) with
// IncrementalAlterConfigs and returns the resource's error.
func alterClusterDefault(t *testing.T, n *sluicetest.Node, kv ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var cfgs []kadm.AlterConfig
	for i := 0; i < len(kv); i += 2 {
		cfgs = append(cfgs, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[i], Value: ptr(kv[i+1])})
	}
	res, err := n.Admin().AlterBrokerConfigs(ctx, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d resources answered", len(res))
	}
	return res[0].Err
}

// KIP-534's rescheduling: a compacted topic whose first clean kept its
// tombstones (giving them a delete horizon of delete.retention.ms) and
// that gets no new writes afterwards is cleaned again once the horizon
// has passed, so a consumer reading from the beginning no longer sees the
// deleted keys; every live key keeps its latest value. Before, such a log
// was never dirty again and kept its tombstones forever.
func TestTombstonesGoWithoutNewWrites(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "quiet", 1, map[string]*string{"cleanup.policy": ptr("compact"),
		"segment.bytes": ptr("16384"), "delete.retention.ms": ptr("1000")})
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()))
	// The tombstones are in round 10 of 30: the rounds after them roll
	// their segment, so the first clean covers them; then nothing more is
	// written.
	latest := produceRounds(t, cl, "quiet", 30, 40, 40, 8, 10)
	count := func() (live, tombstones int, last map[string][]byte) {
		last = map[string][]byte{}
		for _, r := range consumeToEnd(t, n, "quiet") {
			if r.Value == nil {
				tombstones++
			} else {
				live++
			}
			last[string(r.Key)] = r.Value
		}
		return live, tombstones, last
	}
	// The first clean (RunCleaner's, or the cleaner goroutine's on a
	// machine slow enough for its back-off to pass).
	pollFor(t, "the first clean", func() bool {
		n.Broker.RunCleaner()
		live, _, _ := count()
		return live < 30*32/2
	})
	pollFor(t, "tombstones removed after delete.retention.ms", func() bool {
		n.Broker.RunCleaner()
		_, tombstones, _ := count()
		return tombstones == 0
	})
	_, _, last := count()
	for k, v := range latest {
		if v == nil {
			if _, ok := last[k]; ok {
				t.Fatalf("deleted key %s still read", k)
			}
		} else if string(last[k]) != string(v) {
			t.Fatalf("key %s: %q, want %q", k, last[k], v)
		}
	}
	if st := n.Broker.CleanerStats(); st.ExpiredTombstonePasses == 0 {
		t.Fatalf("no pass counted as rescheduled for expired tombstones: %+v", st)
	}
}

// log.cleaner.threads is a cluster-wide dynamic config: raised at run
// time through IncrementalAlterConfigs on the cluster default, the broker
// runs that many cleaner goroutines, and they clean two compacted topics.
// Kafka's checks on a change answer INVALID_REQUEST: more than double the
// running threads, fewer than 1, or 1 MiB or less of key map per thread.
func TestCleanerThreadsDynamic(t *testing.T) {
	n := sluicetest.Start(t, "log.cleaner.backoff.ms=50", "log.cleaner.dedupe.buffer.size=8388608")
	pollFor(t, "one cleaner thread at start", func() bool {
		st := n.Broker.CleanerStats()
		return st.Settings.Threads == 1 && len(st.Threads) == 1
	})
	if err := alterClusterDefault(t, n, "log.cleaner.threads", "2"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "two cleaner threads", func() bool {
		st := n.Broker.CleanerStats()
		return st.Settings.Threads == 2 && len(st.Threads) == 2 && st.Settings.DedupeBufferSize == 8388608
	})
	for _, bad := range []struct{ key, value, why string }{
		{"log.cleaner.threads", "5", "more than double the running 2"},
		{"log.cleaner.threads", "0", "fewer than 1"},
		{"log.cleaner.dedupe.buffer.size", "2097152", "1 MiB per thread with 2 threads"},
		{"log.cleaner.io.buffer.load.factor", "1.5", "a load factor above 1"},
	} {
		err := alterClusterDefault(t, n, bad.key, bad.value)
		if !errors.Is(err, kerr.InvalidRequest) {
			t.Fatalf("%s=%s (%s): %v, want INVALID_REQUEST", bad.key, bad.value, bad.why, err)
		}
	}
	if got := n.Broker.CleanerStats().Settings.Threads; got != 2 {
		t.Fatalf("a refused change altered the cleaner: %d threads", got)
	}
	for _, topic := range []string{"first", "second"} {
		createTopic(t, n, topic, 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384")})
		produceRounds(t, n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())), topic, 30, 40, 40, 0, -1)
	}
	// A pass's stats are recorded after its cleaned segments are swapped
	// in, so a consumer can see a topic cleaned a moment before the
	// stats count the pass: the poll waits for both.
	pollFor(t, "both topics cleaned by the cleaner threads, and the passes counted", func() bool {
		for _, topic := range []string{"first", "second"} {
			if got := len(consumeToEnd(t, n, topic)); got >= 30*40/2 {
				return false
			}
		}
		return n.Broker.CleanerStats().Passes >= 2
	})
	st := n.Broker.CleanerStats()
	cleaned := map[string]bool{}
	for _, th := range st.Threads {
		if th.ID < 0 {
			t.Fatalf("RunCleaner ran: %+v", th)
		}
		if th.Last != nil {
			cleaned[th.Last.Partition] = true
		}
	}
	if st.Passes < 2 || len(st.Threads) != 2 {
		t.Fatalf("stats %+v: want passes by the two threads", st)
	}
	t.Logf("%d passes by %d threads; last partitions %v", st.Passes, len(st.Threads), cleaned)
}

// log.cleaner.io.max.bytes.per.second set at run time throttles the
// cleaner: a pass over more bytes than the rate allows in its check
// interval sleeps (the shared throttler counts its sleeps and every byte
// read and written). Asserted on the throttler's counts, not wall time.
func TestCleanerThrottleDynamic(t *testing.T) {
	// The cleaner goroutine stays off (RunCleaner's passes are counted).
	n := sluicetest.Start(t, "log.cleaner.backoff.ms=3600000")
	createTopic(t, n, "throttled", 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384")})
	produceRounds(t, n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())), "throttled", 25, 40, 40, 0, -1)
	if err := alterClusterDefault(t, n, "log.cleaner.io.max.bytes.per.second", "100000"); err != nil {
		t.Fatal(err)
	}
	pollFor(t, "the rate in force", func() bool {
		return n.Broker.CleanerStats().Settings.MaxBytesPerSecond == 100000
	})
	for n.Broker.RunCleaner() {
	}
	st := n.Broker.CleanerStats()
	if st.Passes == 0 || st.BytesRead == 0 {
		t.Fatalf("nothing cleaned: %+v", st)
	}
	if st.Throttle.Sleeps == 0 || st.Throttle.Slept <= 0 || st.Throttled <= 0 {
		t.Fatalf("%d bytes of cleaner I/O at 100000 B/s never slept: %+v", st.Throttle.Bytes, st.Throttle)
	}
	if st.Throttle.Bytes < st.BytesRead+st.BytesWritten {
		t.Fatalf("throttler counted %d bytes, the passes read %d and wrote %d", st.Throttle.Bytes, st.BytesRead, st.BytesWritten)
	}
}

// The cleaner's work is visible in CleanerStats after a topic is cleaned:
// cumulative bytes and records before and after, and Kafka's gauges.
func TestCleanerStats(t *testing.T) {
	n := sluicetest.Start(t, "log.cleaner.dedupe.buffer.size=2097152", "log.cleaner.backoff.ms=3600000")
	createTopic(t, n, "counted", 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384")})
	produceRounds(t, n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())), "counted", 30, 40, 40, 4, 20)
	if st := n.Broker.CleanerStats(); st.Passes != 0 || !st.Enabled || st.Settings.DedupeBufferSize != 2097152 {
		t.Fatalf("before cleaning: %+v", st)
	}
	for n.Broker.RunCleaner() {
	}
	st := n.Broker.CleanerStats()
	switch {
	case st.Passes == 0:
		t.Fatalf("no pass: %+v", st)
	case st.BytesWritten <= 0 || st.BytesWritten >= st.BytesRead || st.BytesFreed != st.BytesRead-st.BytesWritten:
		t.Fatalf("bytes %d -> %d, freed %d", st.BytesRead, st.BytesWritten, st.BytesFreed)
	case st.RecordsRetained <= 0 || st.RecordsRetained >= st.RecordsRead:
		t.Fatalf("records %d -> %d", st.RecordsRead, st.RecordsRetained)
	case st.RecopyPercent <= 0 || st.RecopyPercent >= 100:
		t.Fatalf("recopy %d%%", st.RecopyPercent)
	case st.UncleanablePartitions != 0 || st.DeadThreads != 0:
		t.Fatalf("uncleanable %d, dead %d", st.UncleanablePartitions, st.DeadThreads)
	case st.TimeSinceLastRun < 0:
		t.Fatalf("time since last run %v", st.TimeSinceLastRun)
	}
	found := false
	for _, th := range st.Threads {
		if th.ID == -1 && th.Last != nil {
			found = true
			if th.Last.Partition != "counted-0" || th.Last.BufferUtilization <= 0 || th.Last.RatioBefore <= 0 ||
				th.Last.RatioAfter >= th.Last.RatioBefore {
				t.Fatalf("last pass %+v", th.Last)
			}
		}
	}
	if !found {
		t.Fatalf("no per-thread figures for RunCleaner's passes: %+v", st.Threads)
	}
	t.Logf("%d passes: %d -> %d bytes, %d -> %d records, recopy %d%%", st.Passes, st.BytesRead, st.BytesWritten,
		st.RecordsRead, st.RecordsRetained, st.RecopyPercent)
}

// log.cleaner.enable=false (read-only) runs no cleaner goroutine: a
// compacted topic is left as written, and the key cannot be altered.
func TestCleanerDisabled(t *testing.T) {
	n := sluicetest.Start(t, "log.cleaner.enable=false", "log.cleaner.backoff.ms=10")
	createTopic(t, n, "kept", 1, map[string]*string{"cleanup.policy": ptr("compact"), "segment.bytes": ptr("16384")})
	produceRounds(t, n.Client(kgo.ProducerBatchCompression(kgo.NoCompression())), "kept", 20, 40, 40, 0, -1)
	// Every record is still read after the metadata the cleaner would
	// have reacted to was applied.
	if got := len(consumeToEnd(t, n, "kept")); got != 20*40 {
		t.Fatalf("read %d of %d records", got, 20*40)
	}
	st := n.Broker.CleanerStats()
	if st.Enabled || len(st.Threads) != 0 || st.Passes != 0 || st.Settings.Threads != 0 {
		t.Fatalf("a disabled cleaner: %+v", st)
	}
	if err := alterClusterDefault(t, n, "log.cleaner.enable", "true"); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("altering the read-only log.cleaner.enable: %v, want INVALID_REQUEST", err)
	}
}
