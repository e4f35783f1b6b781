package quotas

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Unlimited is the replication throttle rate that means no limit, Kafka's
// default for leader.replication.throttled.rate and
// follower.replication.throttled.rate (Long.MAX_VALUE).
const Unlimited int64 = math.MaxInt64

// Rate limits bytes per second as a token bucket with debt: it holds at
// most one second's worth of tokens, a recorded transfer may take it below
// zero, and it is exceeded until refilling brings it back to zero. The
// zero Rate is unlimited. A Rate is safe for concurrent use.
type Rate struct {
	mu     sync.Mutex
	rate   int64 // bytes per second; <= 0 or Unlimited means no limit
	tokens float64
	last   time.Time
}

// SetRate changes the limit at now. A new limit starts with a full second
// of tokens, so a throttle set on an idle broker lets the first fetch
// through; an unchanged limit keeps its bucket.
func (r *Rate) SetRate(bytesPerSecond int64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if bytesPerSecond == r.rate {
		return
	}
	r.rate = bytesPerSecond
	r.tokens = float64(bytesPerSecond)
	r.last = now
}

// Limit returns the current limit in bytes per second.
func (r *Rate) Limit() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rate
}

func (r *Rate) limitedLocked() bool { return r.rate > 0 && r.rate != Unlimited }

// refillLocked adds the tokens earned since the last call. Lock should be
// held.
func (r *Rate) refillLocked(now time.Time) {
	if elapsed := now.Sub(r.last); elapsed > 0 {
		r.tokens = min(r.tokens+elapsed.Seconds()*float64(r.rate), float64(r.rate))
		r.last = now
	}
}

// Exceeded reports whether transfers must wait at now.
func (r *Rate) Exceeded(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.limitedLocked() {
		return false
	}
	r.refillLocked(now)
	return r.tokens < 0
}

// Record charges n bytes transferred at now.
func (r *Rate) Record(n int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.limitedLocked() || n <= 0 {
		return
	}
	r.refillLocked(now)
	r.tokens -= float64(n)
}

// ParseRate reads a throttle rate config value; anything unparsable or
// negative is Unlimited, the config's default.
func ParseRate(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return Unlimited
	}
	return n
}

// ThrottledReplicas reports whether a *.replication.throttled.replicas
// value (a comma list of partition:broker, or "*") names the replica of
// partition on broker. An empty value names nothing.
func ThrottledReplicas(value string, partition, broker int32) bool {
	value = strings.TrimSpace(value)
	if value == "" {
		return false
	}
	if value == "*" {
		return true
	}
	for _, entry := range strings.Split(value, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok {
			continue
		}
		pn, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bn, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pn) == partition && int32(bn) == broker {
			return true
		}
	}
	return false
}
