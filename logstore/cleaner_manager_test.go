package logstore

import (
	"math/rand"
	"testing"
	"time"
)

// The manager picks the compacted log with the highest dirty ratio,
// skips logs below min.cleanable.dirty.ratio, inside
// min.compaction.lag.ms or not compacted, takes a log past
// max.compaction.lag.ms whatever its ratio, and after a pass the log's
// checkpoint makes it clean.
func TestChooseLogToClean(t *testing.T) {
	env := newTestEnv(t)
	d := env.open()
	ts := env.clock.Now().UnixMilli() - 3_600_000 // records written an hour ago
	open := func(name string, cfg Config) *Log {
		l, err := d.Open(TopicPartition{Topic: name}, [16]byte{byte(len(name)), 1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	rng := rand.New(rand.NewSource(10))
	dirty := open("dirty", compactConfig())
	workload(t, dirty, rng, 2000, 20, 5, 0, ts)
	plain := compactConfig()
	plain.Compact, plain.CleanupDelete = false, true
	workload(t, open("plain", plain), rng, 2000, 20, 5, 0, ts)
	lagged := compactConfig()
	lagged.MinCompactionLagMs = 2 * 3_600_000
	workload(t, open("lagged", lagged), rng, 2000, 20, 5, 0, ts)

	c := newTestCleaner(t, 1<<20)
	st, tp, ok, err := d.CleanOnce(c, env.clock.Now(), nil, CleanOptions{})
	if err != nil || !ok || tp.Topic != "dirty" || st.SegmentsBefore == 0 {
		t.Fatalf("CleanOnce = %+v, %v, %v, %v; want a pass over dirty", st, tp, ok, err)
	}
	// dirty is clean now; lagged is within its lag, plain is not compacted.
	if _, tp, ok, err := d.CleanOnce(c, env.clock.Now(), nil, CleanOptions{}); ok || err != nil {
		t.Fatalf("second CleanOnce chose %v (%v)", tp, err)
	}
	// New dirty data below the log's ratio is left alone ...
	workload(t, dirty, rng, 200, 20, 5, 0, ts)
	cfg := compactConfig()
	cfg.MinCleanableDirtyRatio = 0.99
	dirty.SetConfig(cfg)
	if cand, ok, _ := d.ChooseLogToClean(env.clock.Now(), nil); ok {
		t.Fatalf("chose %+v below min.cleanable.dirty.ratio", cand)
	}
	// ... until max.compaction.lag.ms makes it due.
	cfg.MaxCompactionLagMs = 60_000
	dirty.SetConfig(cfg)
	cand, ok, _ := d.ChooseLogToClean(env.clock.Now(), nil)
	if !ok || cand.TP.Topic != "dirty" || !cand.MustClean {
		t.Fatalf("ChooseLogToClean = %+v, %v; want dirty, past its max lag", cand, ok)
	}
	// In progress: not chosen twice.
	if again, ok, _ := d.ChooseLogToClean(env.clock.Now(), nil); ok {
		t.Fatalf("chose %+v while it is being cleaned", again)
	}
	d.FinishCleaning(cand.TP, nil)
	// Once min.compaction.lag.ms has passed, lagged is cleanable.
	env.clock.Advance(2 * time.Hour)
	var topics []string
	for {
		_, tp, ok, err := d.CleanOnce(c, env.clock.Now(), nil, CleanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		topics = append(topics, tp.Topic)
	}
	if len(topics) != 2 {
		t.Fatalf("cleaned %v, want dirty and lagged once each", topics)
	}
	// A failed pass makes its log uncleanable; the others go on.
	workload(t, dirty, rng, 2000, 20, 5, 0, ts)
	cand, ok, _ = d.ChooseLogToClean(env.clock.Now(), nil)
	if !ok {
		t.Fatal("nothing to clean after new data")
	}
	d.FinishCleaning(cand.TP, errInjected)
	if u := d.Uncleanable(); u[cand.TP] == nil {
		t.Fatalf("Uncleanable = %v", u)
	}
	if again, ok, _ := d.ChooseLogToClean(env.clock.Now(), nil); ok {
		t.Fatalf("chose uncleanable %+v", again)
	}
}

// The caller's bound (high watermark, last stable offset) caps what is
// cleanable: a bound of 0 leaves the log alone.
func TestChooseLogToCleanBound(t *testing.T) {
	env := newTestEnv(t)
	l := env.openLog(compactConfig())
	workload(t, l, rand.New(rand.NewSource(12)), 2000, 20, 5, 0, env.clock.Now().UnixMilli())
	if cand, ok, _ := env.dir.ChooseLogToClean(env.clock.Now(), func(TopicPartition) int64 { return 0 }); ok {
		t.Fatalf("chose %+v with a bound of 0", cand)
	}
	segs := l.Segments()
	bound := segs[2].BaseOffset + 1
	cand, ok, _ := env.dir.ChooseLogToClean(env.clock.Now(), func(TopicPartition) int64 { return bound })
	if !ok || cand.FirstUncleanable != bound {
		t.Fatalf("ChooseLogToClean = %+v, %v; want it bounded at %d", cand, ok, bound)
	}
}
