package logstore

import (
	"math"
	"sync"
	"time"
)

// Throttler holds the cleaner's I/O to log.cleaner.io.max.bytes.per.second
// (Kafka's Throttler). Kafka has one for all its cleaner threads, so the
// limit is on their sum: every byte a pass reads or writes is counted,
// and once the rate since the last check exceeds the limit the pass that
// noticed sleeps until the total is back at it — holding the throttler,
// so the other passes wait too, as Kafka's synchronized maybeThrottle
// does. A non-positive or infinite rate never sleeps. A Throttler is safe
// for concurrent use; a nil *Throttler never throttles.
type Throttler struct {
	mu       sync.Mutex
	rate     float64 // bytes per second; 0: unlimited
	now      func() time.Time
	sleep    func(time.Duration, <-chan struct{}) time.Duration
	start    time.Time
	observed int64
	slept    time.Duration // total, for stats and tests
	sleeps   int64
	bytes    int64 // total counted
}

// throttleCheckInterval is how often the rate is checked at most.
const throttleCheckInterval = 100 * time.Millisecond

// NewThrottler returns a throttler at rate bytes per second (see
// SetRate).
func NewThrottler(rate float64) *Throttler {
	t := &Throttler{now: time.Now, sleep: sleepOrStop}
	t.start = t.now()
	t.SetRate(rate)
	return t
}

// newThrottler is a throttler for one pass with the given clock (tests);
// nil when rate is unlimited.
func newThrottler(rate float64, now func() time.Time, sleep func(time.Duration)) *Throttler {
	if unlimitedRate(rate) {
		return nil
	}
	t := NewThrottler(rate)
	if now != nil {
		t.now, t.start = now, now()
	}
	if sleep != nil {
		t.sleep = func(d time.Duration, _ <-chan struct{}) time.Duration { sleep(d); return d }
	}
	return t
}

func unlimitedRate(rate float64) bool {
	return rate <= 0 || math.IsInf(rate, 1) || math.IsNaN(rate) || rate >= math.MaxFloat64
}

// SetRate changes the limit at once (a dynamic change of
// log.cleaner.io.max.bytes.per.second); a non-positive, infinite or
// Double.MAX_VALUE rate removes it.
func (t *Throttler) SetRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if unlimitedRate(rate) {
		rate = 0
	}
	t.rate = rate
}

// Rate is the current limit in bytes per second, 0 for none.
func (t *Throttler) Rate() float64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// ThrottleStats is what a throttler has done since it was made.
type ThrottleStats struct {
	Bytes  int64         // bytes counted (read and written)
	Sleeps int64         // times a pass slept to stay under the rate
	Slept  time.Duration // total time slept
}

// Stats reports the throttler's totals.
func (t *Throttler) Stats() ThrottleStats {
	if t == nil {
		return ThrottleStats{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return ThrottleStats{Bytes: t.bytes, Sleeps: t.sleeps, Slept: t.slept}
}

// sleepOrStop sleeps d or until stop is closed, and returns how long it
// slept.
func sleepOrStop(d time.Duration, stop <-chan struct{}) time.Duration {
	start := time.Now()
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-stop:
	}
	return time.Since(start)
}

// maybeThrottle counts n bytes and sleeps if the cleaners are over the
// rate; closing stop ends the sleep early. It returns how long it slept.
func (t *Throttler) maybeThrottle(n int64, stop <-chan struct{}) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bytes += n
	if t.rate == 0 {
		t.start, t.observed = t.now(), 0
		return 0
	}
	t.observed += n
	elapsed := t.now().Sub(t.start)
	if elapsed < throttleCheckInterval && float64(t.observed) < t.rate*throttleCheckInterval.Seconds() {
		return 0
	}
	var slept time.Duration
	want := time.Duration(float64(t.observed) / t.rate * float64(time.Second))
	if d := want - elapsed; d > 0 {
		slept = t.sleep(d, stop)
		t.slept += slept
		t.sleeps++
	}
	t.start, t.observed = t.now(), 0
	return slept
}
