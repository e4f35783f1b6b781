package broker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// This file runs the log cleaner (issue 17) over the logs of topics whose
// cleanup.policy includes compact: logstore.Dir.CleanNext chooses the
// dirtiest log (min.cleanable.dirty.ratio, min/max.compaction.lag.ms, or
// a log whose tombstones' delete horizon has passed) and runs one
// compaction pass over it, up to the partition's high watermark and last
// stable offset. Each replica cleans its own copy, as in Kafka. A pass
// keeps, of the producers, only the last batch of those still in the
// partition's producer table (activeProducersOf), so the batches of
// producers expired by producer.id.expiration.ms go with their records.
//
// The topic's delete.retention.ms, min.cleanable.dirty.ratio and
// min/max.compaction.lag.ms (and their log.cleaner.* defaults) reach the
// cleaner through logstore.Config (topicconfig.go). The cleaner's own keys
// are Kafka's cluster-wide dynamic broker configs, resolved per broker >
// cluster default > static (config.CleanerSettings) each time the metadata
// image changes:
//
//   - log.cleaner.threads goroutines, each with its own logstore.Cleaner
//     whose key map takes log.cleaner.dedupe.buffer.size / threads (capped
//     at 2 GiB) at log.cleaner.io.buffer.load.factor, allocated when its
//     first log needs cleaning; the manager never hands one log to two;
//   - one logstore.Throttler for all of them
//     (log.cleaner.io.max.bytes.per.second on their sum), whose rate a
//     change sets at once;
//   - log.cleaner.backoff.ms between looks when no log needs cleaning
//     (also before a goroutine's first look, so a starting broker settles);
//   - log.cleaner.io.buffer.size / threads / 2 as each pass's write
//     buffer.
//
// A change of any but the rate stops every cleaner goroutine (a pass in
// progress ends with nothing lost; the next redoes it) and starts them
// again with the new settings, as Kafka's LogCleaner.reconfigure does.
// AlterConfigs checks a change as Kafka's validateReconfiguration does
// (checkCleanerChange). log.cleaner.enable=false (read-only) runs none.
//
// Lock order: brokerCleaner.manualMu, then brokerCleaner.mu; neither is
// held while waiting for a goroutine.

// brokerCleaner is the broker's cleaner goroutines, their shared
// throttle and their stats.
type brokerCleaner struct {
	once     sync.Once
	throttle *logstore.Throttler

	// manualMu serializes RunCleaner's passes, which use manual.
	manualMu sync.Mutex

	mu       sync.Mutex
	settings config.CleanerSettings // of the running goroutines
	threads  []*cleanerThread       // the running goroutines'
	manual   *cleanerThread         // RunCleaner's
	lastRun  time.Time              // of the manager's last look
	dirtiest float64                // highest dirty ratio the last look saw
	totals   cleanerTotals
}

// cleanerTotals are cumulative figures, over every pass since start.
type cleanerTotals struct {
	passes                    int64
	bytesRead, bytesWritten   int64
	recordsRead, recordsKept  int64
	throttled, busy           time.Duration
	tombstoneReschedulePasses int64
}

// cleanerThread is one cleaner goroutine: its Cleaner (owned by the
// goroutine) and, under brokerCleaner.mu, its stats.
type cleanerThread struct {
	id       int
	settings config.CleanerSettings
	c        *logstore.Cleaner

	totals   cleanerTotals
	last     *CleanerPassStats
	maxDelay int64 // ms, the manager's max compaction delay at this thread's last look
	dead     bool
}

// init makes the throttle and manual thread on first use.
func (bc *brokerCleaner) init(s config.CleanerSettings) {
	bc.once.Do(func() {
		bc.throttle = logstore.NewThrottler(s.MaxBytesPerSecond)
		bc.manual = &cleanerThread{id: -1, settings: s}
		bc.lastRun = time.Now()
	})
}

// cleanerSettings is what the cleaner's keys resolve to now.
func (b *Broker) cleanerSettings() config.CleanerSettings {
	return b.cfg.CleanerSettings(b.dynamicBrokerConfigs(b.metadata()))
}

// runCleaner runs the cleaner goroutines until ctx ends, restarting them
// when their settings change.
func (b *Broker) runCleaner(ctx context.Context) {
	if !b.cfg.LogCleanerEnable {
		return
	}
	var pool *cleanerPool
	defer func() { pool.stop() }()
	for {
		b.appliedMu.Lock()
		applied := b.applied
		b.appliedMu.Unlock()
		s := b.cleanerSettings()
		b.cleaner.init(s)
		b.cleaner.throttle.SetRate(s.MaxBytesPerSecond)
		b.cleaner.mu.Lock()
		b.cleaner.settings.MaxBytesPerSecond = s.MaxBytesPerSecond
		b.cleaner.mu.Unlock()
		if pool == nil || restartsCleaner(pool.settings, s) {
			if pool != nil {
				b.logger.Info("log cleaner reconfigured; restarting its threads", "threads", s.Threads,
					"dedupe_buffer_size", s.DedupeBufferSize, "load_factor", s.LoadFactor,
					"io_buffer_size", s.IOBufferSize, "backoff_ms", s.BackoffMs)
			}
			pool.stop()
			pool = b.startCleanerPool(ctx, s)
		}
		select {
		case <-ctx.Done():
			return
		case <-applied:
		}
	}
}

// restartsCleaner reports whether going from a to b needs new cleaner
// goroutines: anything but the throttle rate, which is set in place.
func restartsCleaner(a, b config.CleanerSettings) bool {
	a.MaxBytesPerSecond, b.MaxBytesPerSecond = 0, 0
	return a != b
}

// cleanerPool is one generation of cleaner goroutines.
type cleanerPool struct {
	settings config.CleanerSettings
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func (b *Broker) startCleanerPool(parent context.Context, s config.CleanerSettings) *cleanerPool {
	ctx, cancel := context.WithCancel(parent)
	p := &cleanerPool{settings: s, cancel: cancel}
	threads := make([]*cleanerThread, s.Threads)
	for i := range threads {
		threads[i] = &cleanerThread{id: i, settings: s}
	}
	b.cleaner.mu.Lock()
	b.cleaner.settings, b.cleaner.threads = s, threads
	b.cleaner.mu.Unlock()
	for _, t := range threads {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			b.runCleanerThread(ctx, t)
		}()
	}
	return p
}

// stop ends the pool's goroutines and waits for them; nil is a no-op.
func (p *cleanerPool) stop() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}

// runCleanerThread is one cleaner goroutine (Kafka's CleanerThread): it
// cleans as long as a log needs it, then sleeps log.cleaner.backoff.ms. A
// panic in a pass ends the goroutine, which counts as dead (Kafka's
// DeadThreadCount) until the cleaners are restarted.
func (b *Broker) runCleanerThread(ctx context.Context, t *cleanerThread) {
	defer func() {
		if r := recover(); r != nil {
			b.logger.Error("log cleaner thread died", "thread", t.id, "panic", fmt.Sprint(r))
			b.cleaner.mu.Lock()
			t.dead = true
			b.cleaner.mu.Unlock()
		}
	}()
	backoff := time.Duration(t.settings.BackoffMs) * time.Millisecond
	tm := time.NewTimer(backoff)
	defer tm.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tm.C:
		}
		for ctx.Err() == nil && b.cleanerPass(t, ctx.Done()) {
		}
		tm.Reset(backoff)
	}
}

// RunCleaner runs one cleaning pass over the log that needs it most and
// reports whether there was one. Tests call it; it has its own key map
// (of one thread's size) and counts in CleanerStats as thread -1.
func (b *Broker) RunCleaner() bool {
	s := b.cleanerSettings()
	b.cleaner.init(s)
	b.cleaner.throttle.SetRate(s.MaxBytesPerSecond)
	b.cleaner.manualMu.Lock()
	defer b.cleaner.manualMu.Unlock()
	b.cleaner.mu.Lock()
	t := b.cleaner.manual
	b.cleaner.mu.Unlock()
	if t.c != nil && restartsCleaner(t.settings, s) {
		t.c = nil
		t.settings = s
	} else if t.c == nil {
		t.settings = s
	}
	return b.cleanerPass(t, nil)
}

// cleanerPass runs one pass with t's cleaner, ended early (ErrCleanStopped,
// nothing lost) when stop is closed, and reports whether a log was
// cleaned.
func (b *Broker) cleanerPass(t *cleanerThread, stop <-chan struct{}) bool {
	now := b.now()
	if t.c == nil {
		// The key map is allocated when a log first needs cleaning.
		cand, ok, err := b.dir.ChooseLogToClean(now, b.cleanBound)
		if err != nil || !ok {
			b.cleaner.mu.Lock()
			b.cleaner.lastRun = time.Now()
			b.cleaner.mu.Unlock()
			return false
		}
		b.dir.FinishCleaning(cand.TP, nil)
		c, err := logstore.NewCleaner(t.settings.MapBytesPerThread(), t.settings.LoadFactor)
		if err != nil {
			b.logger.Error("log cleaner", "thread", t.id, "err", err)
			return false
		}
		t.c = c
	}
	r, err := b.dir.CleanNext(t.c, now, b.cleanBound, logstore.CleanOptions{Stop: stop,
		Throttle: b.cleaner.throttle, WriteBufferSize: t.settings.WriteBufferPerThread(),
		ActiveProducers: b.activeProducersOf})
	b.recordPass(t, r, err)
	if !r.Chosen || errors.Is(err, logstore.ErrCleanStopped) {
		return false
	}
	tp := r.Candidate.TP.String()
	if err != nil {
		b.logger.Error("log cleaning failed; the partition is uncleanable until restart", "thread", t.id, "partition", tp, "err", err)
		return true
	}
	b.logPass(t, r)
	return true
}

// recordPass adds a pass (or a look that found nothing) to the stats.
func (b *Broker) recordPass(t *cleanerThread, r logstore.CleanResult, err error) {
	bc := &b.cleaner
	bc.mu.Lock()
	defer bc.mu.Unlock()
	bc.lastRun = time.Now()
	bc.dirtiest = r.Pre.DirtiestRatio
	t.maxDelay = r.Pre.MaxCompactionDelayMs
	if !r.Chosen || err != nil {
		return
	}
	st := r.Stats
	for _, tot := range []*cleanerTotals{&bc.totals, &t.totals} {
		tot.passes++
		tot.bytesRead += st.BytesRead
		tot.bytesWritten += st.BytesWritten
		tot.recordsRead += st.RecordsRead
		tot.recordsKept += st.RecordsRetained
		tot.throttled += st.Throttled
		tot.busy += st.Duration
		if r.Candidate.DeleteHorizonDue {
			tot.tombstoneReschedulePasses++
		}
	}
	t.last = &CleanerPassStats{Partition: r.Candidate.TP.String(), FirstDirty: st.FirstDirty, EndOffset: st.EndOffset,
		BytesRead: st.BytesRead, BytesWritten: st.BytesWritten, RecordsRead: st.RecordsRead,
		RecordsRetained: st.RecordsRetained, Duration: st.Duration, Throttled: st.Throttled,
		BufferUtilization: st.BufferUtilization, RatioBefore: r.Candidate.Ratio, RatioAfter: r.RatioAfter,
		ForExpiredTombstones: r.Candidate.DeleteHorizonDue}
}

// logPass writes the pass's summary, with what Kafka's cleaner prints
// after each log it cleans.
func (b *Broker) logPass(t *cleanerThread, r logstore.CleanResult) {
	st := r.Stats
	const mb = 1 << 20
	secs := max(st.Duration.Seconds(), 1e-9)
	reduction, fewer := 0.0, 0.0
	if st.BytesRead > 0 {
		reduction = 100 * (1 - float64(st.BytesWritten)/float64(st.BytesRead))
	}
	if st.RecordsRead > 0 {
		fewer = 100 * (1 - float64(st.RecordsRetained)/float64(st.RecordsRead))
	}
	b.logger.Info("log cleaned", "partition", r.Candidate.TP.String(), "thread", t.id,
		"dirty_section", fmt.Sprintf("[%d, %d)", st.FirstDirty, st.EndOffset),
		"mb_processed", fmt.Sprintf("%.2f", float64(st.BytesRead)/mb), "duration", st.Duration,
		"mb_per_sec", fmt.Sprintf("%.2f", float64(st.BytesRead)/mb/secs),
		"buffer_utilization_pct", fmt.Sprintf("%.1f", 100*st.BufferUtilization),
		"start_bytes", st.BytesRead, "start_records", st.RecordsRead,
		"end_bytes", st.BytesWritten, "end_records", st.RecordsRetained,
		"bytes_freed", st.BytesRead-st.BytesWritten,
		"size_reduction_pct", fmt.Sprintf("%.1f", reduction), "fewer_records_pct", fmt.Sprintf("%.1f", fewer),
		"dirty_ratio_before", fmt.Sprintf("%.3f", r.Candidate.Ratio), "dirty_ratio_after", fmt.Sprintf("%.3f", r.RatioAfter),
		"throttled", st.Throttled, "expired_tombstones_only", r.Candidate.DeleteHorizonDue)
}

// CleanerPassStats describes one cleaning pass.
type CleanerPassStats struct {
	Partition                    string
	FirstDirty, EndOffset        int64 // the dirty section mapped
	BytesRead, BytesWritten      int64 // of the segments rewritten, before and after
	RecordsRead, RecordsRetained int64
	Duration, Throttled          time.Duration
	BufferUtilization            float64 // share of the key map's slots used
	RatioBefore, RatioAfter      float64 // the log's dirty ratio
	ForExpiredTombstones         bool    // chosen only because its delete horizon passed (KIP-534)
}

// CleanerThreadStats are one cleaner goroutine's figures (ID -1:
// RunCleaner's passes).
type CleanerThreadStats struct {
	ID                           int
	Dead                         bool
	Passes                       int64
	BytesRead, BytesWritten      int64
	RecordsRead, RecordsRetained int64
	Last                         *CleanerPassStats // nil before its first pass
}

// CleanerStats are the log cleaner's cumulative figures and Kafka's
// LogCleaner / LogCleanerManager gauges, for the broker's metrics
// (issue 21): the *Percent, MaxCleanTimeSecs, MaxCompactionDelaySecs,
// DeadThreads, UncleanablePartitions, UncleanableBytes and
// TimeSinceLastRun fields are max-buffer-utilization-percent,
// cleaner-recopy-percent, max-clean-time-secs, max-compaction-delay-secs,
// DeadThreadCount, uncleanable-partitions-count, uncleanable-bytes,
// max-dirty-percent and time-since-last-run-ms.
type CleanerStats struct {
	Enabled  bool
	Settings config.CleanerSettings // of the running goroutines

	Passes                       int64
	BytesRead, BytesWritten      int64 // of the segments rewritten, before and after
	BytesFreed                   int64
	RecordsRead, RecordsRetained int64
	Throttled                    time.Duration // slept by passes to stay under the I/O limit
	CleaningTime                 time.Duration // spent in passes, throttled time included
	ExpiredTombstonePasses       int64         // passes chosen only because a delete horizon passed
	Throttle                     logstore.ThrottleStats

	MaxBufferUtilizationPercent int // over each thread's last pass
	RecopyPercent               int // bytes written / read over each thread's last pass
	MaxCleanTimeSecs            int // over each thread's last pass
	MaxCompactionDelaySecs      int
	MaxDirtyPercent             int
	DeadThreads                 int
	UncleanablePartitions       int
	UncleanableBytes            int64
	TimeSinceLastRun            time.Duration

	Threads []CleanerThreadStats
}

// CleanerStats reports what the cleaner has done.
func (b *Broker) CleanerStats() CleanerStats {
	bc := &b.cleaner
	bc.init(b.cleanerSettings())
	out := CleanerStats{Enabled: b.cfg.LogCleanerEnable, Throttle: bc.throttle.Stats()}
	bc.mu.Lock()
	out.Settings = bc.settings
	t := bc.totals
	out.Passes, out.BytesRead, out.BytesWritten = t.passes, t.bytesRead, t.bytesWritten
	out.BytesFreed = t.bytesRead - t.bytesWritten
	out.RecordsRead, out.RecordsRetained, out.Throttled = t.recordsRead, t.recordsKept, t.throttled
	out.CleaningTime = t.busy
	out.ExpiredTombstonePasses = t.tombstoneReschedulePasses
	out.MaxDirtyPercent = int(100 * bc.dirtiest)
	out.TimeSinceLastRun = time.Since(bc.lastRun)
	var lastRead, lastWritten int64
	threads := append([]*cleanerThread{bc.manual}, bc.threads...)
	for _, th := range threads {
		if th.id < 0 && th.totals.passes == 0 {
			continue
		}
		ts := CleanerThreadStats{ID: th.id, Dead: th.dead, Passes: th.totals.passes,
			BytesRead: th.totals.bytesRead, BytesWritten: th.totals.bytesWritten,
			RecordsRead: th.totals.recordsRead, RecordsRetained: th.totals.recordsKept}
		if th.dead {
			out.DeadThreads++
		}
		out.MaxCompactionDelaySecs = max(out.MaxCompactionDelaySecs, int(th.maxDelay/1000))
		if th.last != nil {
			last := *th.last
			ts.Last = &last
			out.MaxBufferUtilizationPercent = max(out.MaxBufferUtilizationPercent, int(100*last.BufferUtilization))
			out.MaxCleanTimeSecs = max(out.MaxCleanTimeSecs, int(last.Duration.Seconds()))
			lastRead += last.BytesRead
			lastWritten += last.BytesWritten
		}
		out.Threads = append(out.Threads, ts)
	}
	bc.mu.Unlock()
	out.RecopyPercent = int(100 * float64(lastWritten) / float64(max(lastRead, 1)))
	for tp := range b.dir.Uncleanable() {
		out.UncleanablePartitions++
		if l := b.dir.Log(tp); l != nil {
			out.UncleanableBytes += l.Size()
		}
	}
	return out
}

// checkCleanerChange refuses an AlterConfigs or IncrementalAlterConfigs
// of this broker's or the cluster default's cleaner keys that Kafka's
// LogCleaner.validateReconfiguration and KafkaConfig would refuse:
// threads below 1, below half or above double the running count, or
// 1 MiB or less of key map per thread. Kafka answers INVALID_REQUEST with
// the check's message (KAFKA-13609).
func (b *Broker) checkCleanerChange(img *controller.Image, res controller.ConfigResource, ops []controller.ConfigOp, incremental bool) error {
	if res.Type != resourceBroker || (res.Name != "" && res.Name != strconv.Itoa(int(b.cfg.NodeID))) {
		return nil
	}
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	target := clusterDefault
	if res.Name != "" {
		target = perBroker
	}
	next := map[string]string{}
	if incremental {
		for k, v := range target {
			next[k] = v
		}
	}
	for _, op := range ops {
		switch {
		case incremental && op.Op == controller.OpDelete:
			delete(next, op.Key)
		case op.Value != nil && (!incremental || op.Op == controller.OpSet):
			next[op.Key] = *op.Value
		}
	}
	changed := false
	for _, m := range []map[string]string{next, target} {
		for key := range m {
			v1, ok1 := next[key]
			v2, ok2 := target[key]
			if config.IsCleanerKey(key) && (v1 != v2 || ok1 != ok2) {
				changed = true
			}
		}
	}
	if !changed {
		return nil
	}
	cur := b.cfg.CleanerSettings(perBroker, clusterDefault)
	var after config.CleanerSettings
	if res.Name == "" {
		after = b.cfg.CleanerSettingsAfter(perBroker, next)
	} else {
		after = b.cfg.CleanerSettingsAfter(next, clusterDefault)
	}
	if err := config.ValidateCleanerChange(cur, after); err != nil {
		return fmt.Errorf("%w: %v", kerr.InvalidRequest, err)
	}
	return nil
}

// activeProducersOf is logstore.CleanOptions.ActiveProducers: the
// producers in tp's producer table, which producer expiry
// (producer.id.expiration.ms, checked every
// producer.id.expiration.check.interval.ms) trims, so a pass keeps the last
// batch of those only, as Kafka does; false for a partition this broker
// does not host or whose table is not rebuilt yet.
func (b *Broker) activeProducersOf(tp logstore.TopicPartition) (map[int64]logstore.ActiveProducer, bool) {
	p := b.partition(tp)
	if p == nil {
		return nil, false
	}
	return p.lastRecordsOfActiveProducers()
}

// cleanBound is the first offset of tp the cleaner may not touch: the high
// watermark, or the last stable offset when a transaction is open below
// it; 0 (nothing) for a partition this broker does not host.
func (b *Broker) cleanBound(tp logstore.TopicPartition) int64 {
	p := b.partition(tp)
	if p == nil {
		return 0
	}
	return min(p.highWatermark(), p.lastStableOffset())
}
