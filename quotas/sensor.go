package quotas

import (
	"math"
	"sync"
	"time"
)

// This file measures client byte rates and request time as Kafka's quota
// sensors do (KIP-13, KIP-124, KIP-219): a rate over quota.window.num
// samples of quota.window.size.seconds each, recorded first and checked
// after, so a request that takes a client over its quota is still served
// and the excess is paid for with a throttle time.
//
// A windowedRate keeps samples+1 samples in a ring, each the sum of the
// values recorded while it was current. A sample is current until it is
// a window old; the next record then recycles the oldest slot. A sample
// with no event for samples windows is obsolete and emptied before every
// measure. The rate is the sum of the samples over the time since the
// oldest sample began, but never over less than samples-1 whole windows
// plus the time into the oldest: a client's first bytes are measured as
// if it had been idle for the rest of the window, not as a burst over a
// few milliseconds. Throttle time is what it takes, with nothing more
// recorded, for that measure to come back to the limit:
//
//	observed × window / (window + throttle) = limit
//	throttle = (observed − limit) / limit × window
//
// rounded to the millisecond. Times are Unix milliseconds, as Kafka
// counts them, so the arithmetic (and the rounding) is the same.

// WindowConfig is how rates are measured: Samples samples of Window
// each (quota.window.num, quota.window.size.seconds; Kafka's defaults
// are 11 and 1 s).
type WindowConfig struct {
	Samples int
	Window  time.Duration
}

// DefaultWindow is Kafka's quota.window.num=11, quota.window.size.seconds=1.
var DefaultWindow = WindowConfig{Samples: 11, Window: time.Second}

func (w WindowConfig) windowMs() int64 { return max(1, w.Window.Milliseconds()) }
func (w WindowConfig) samples() int    { return max(1, w.Samples) }

// MaxValueInWindow is the most that may be recorded at once without being
// throttled for certain, even by a client with nothing else recorded:
// limit over samples-1 windows. A consumer's fetch is sized by it
// (Kafka's getMaxValueInQuotaWindow), so one answer never overshoots the
// quota by more than the window can absorb and the consumer converges on
// its rate instead of alternating floods and long throttles.
func (w WindowConfig) MaxValueInWindow(limit float64) float64 {
	return limit * float64(w.samples()-1) * w.Window.Seconds()
}

type rateSample struct {
	startMs, lastEventMs int64
	value                float64
}

func (s *rateSample) reset(nowMs int64) { *s = rateSample{startMs: nowMs, lastEventMs: nowMs} }

// windowedRate is one sensor's samples. Not safe for concurrent use.
type windowedRate struct {
	ring    []rateSample // grows to samples+1
	current int
}

func (r *windowedRate) currentSample(nowMs int64) *rateSample {
	if len(r.ring) == 0 {
		r.ring = append(r.ring, rateSample{startMs: nowMs, lastEventMs: nowMs})
		r.current = 0
	}
	return &r.ring[r.current]
}

func (r *windowedRate) record(w WindowConfig, value float64, nowMs int64) {
	s := r.currentSample(nowMs)
	if nowMs-s.startMs >= w.windowMs() {
		// One slot more than samples: the oldest may still overlap the
		// measured span (purge keeps samples with recent events).
		r.current = (r.current + 1) % (w.samples() + 1)
		if r.current >= len(r.ring) {
			r.ring = append(r.ring, rateSample{})
		}
		s = &r.ring[r.current]
		s.reset(nowMs)
	}
	s.value += value
	s.lastEventMs = nowMs
}

// purge empties the samples with no event for samples windows.
func (r *windowedRate) purge(w WindowConfig, nowMs int64) {
	expire := int64(w.samples()) * w.windowMs()
	for i := range r.ring {
		if nowMs-r.ring[i].lastEventMs >= expire {
			r.ring[i].reset(nowMs)
		}
	}
}

// spanMs is the time the rate is measured over (Kafka's Rate.windowSize):
// since the oldest sample began, padded to samples-1 whole windows.
func (r *windowedRate) spanMs(w WindowConfig, nowMs int64) int64 {
	r.purge(w, nowMs)
	oldest := r.currentSample(nowMs).startMs
	for i := range r.ring {
		oldest = min(oldest, r.ring[i].startMs)
	}
	elapsed := nowMs - oldest
	if full, need := elapsed/w.windowMs(), int64(w.samples()-1); full < need {
		elapsed += (need - full) * w.windowMs()
	}
	return max(elapsed, 1)
}

// measure is the rate per second now.
func (r *windowedRate) measure(w WindowConfig, nowMs int64) (rate float64, spanMs int64) {
	spanMs = r.spanMs(w, nowMs)
	var sum float64
	for i := range r.ring {
		sum += r.ring[i].value
	}
	return sum / (float64(spanMs) / 1000), spanMs
}

// throttleMs is Kafka's QuotaUtils.throttleTime: how long, recording
// nothing more, until a rate measured over spanMs comes back to limit.
func throttleMs(observed, limit float64, spanMs int64) int64 {
	if observed <= limit || limit <= 0 {
		if limit <= 0 && observed > 0 {
			// A zero quota: hold the client for the whole span.
			return spanMs
		}
		return 0
	}
	return int64(math.Round((observed - limit) / limit * float64(spanMs)))
}

// SensorExpiry is how long a client's sensor outlives its last record,
// Kafka's one hour of inactivity.
const SensorExpiry = time.Hour

// sensorKey names one sensor: a quota key and the client names that share
// the rate (Resolved.User, Resolved.ClientID).
type sensorKey struct{ key, user, clientID string }

type rateSensor struct {
	mu      sync.Mutex
	rate    windowedRate
	lastUse int64 // unix ms of the last record, guarded by mu
	// The throttle time the last throttling record called for and when
	// (unix ms), guarded by mu; read only by Snapshot.
	throttleMs, throttledAt int64
}

// Sensors are the rates of the clients of one broker, one per quota key
// and set of clients sharing a quota (Resolved.User, Resolved.ClientID):
// clients that share a quota entity share one rate, as they share one
// sensor in Kafka. A sensor not recorded to for SensorExpiry is dropped,
// so memory is bounded by the clients active in the last hour. Safe for
// concurrent use; each sensor has its own lock, the map another, taken
// briefly (lock order: Sensors.mu, then rateSensor.mu, only in expire).
type Sensors struct {
	window WindowConfig

	mu        sync.RWMutex
	sensors   map[sensorKey]*rateSensor
	nextSweep int64 // unix ms of the next expiry sweep
}

// NewSensors returns sensors measuring with window.
func NewSensors(window WindowConfig) *Sensors {
	if window.Samples < 1 || window.Window <= 0 {
		window = DefaultWindow
	}
	return &Sensors{window: window, sensors: make(map[sensorKey]*rateSensor)}
}

// Window is how the sensors measure.
func (s *Sensors) Window() WindowConfig { return s.window }

func (s *Sensors) sensor(key string, q Resolved, nowMs int64) *rateSensor {
	k := sensorKey{key: key, user: q.User, clientID: q.ClientID}
	s.mu.RLock()
	sn := s.sensors[k]
	sweep := nowMs >= s.nextSweep
	s.mu.RUnlock()
	if sn != nil && !sweep {
		return sn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if nowMs >= s.nextSweep {
		s.expireLocked(nowMs)
	}
	if sn = s.sensors[k]; sn == nil {
		sn = &rateSensor{lastUse: nowMs}
		s.sensors[k] = sn
	}
	return sn
}

// expireLocked drops the sensors idle for SensorExpiry. It runs at most
// once a minute, so its cost is spread over many records. s.mu is held.
func (s *Sensors) expireLocked(nowMs int64) {
	s.nextSweep = nowMs + time.Minute.Milliseconds()
	for k, sn := range s.sensors {
		sn.mu.Lock()
		idle := nowMs-sn.lastUse >= SensorExpiry.Milliseconds()
		sn.mu.Unlock()
		if idle {
			delete(s.sensors, k)
		}
	}
}

// Record adds value (bytes, or request time) to the rate of the clients
// sharing q for key at now, and returns how long they are to be throttled
// for it: zero while the measured rate is within q.Limit. The value is
// recorded whatever the answer, as Kafka records it.
func (s *Sensors) Record(key string, q Resolved, value float64, now time.Time) time.Duration {
	nowMs := now.UnixMilli()
	sn := s.sensor(key, q, nowMs)
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.lastUse = nowMs
	sn.rate.record(s.window, value, nowMs)
	observed, span := sn.rate.measure(s.window, nowMs)
	ms := throttleMs(observed, q.Limit, span)
	if ms > 0 {
		sn.throttleMs, sn.throttledAt = ms, nowMs
	}
	return time.Duration(ms) * time.Millisecond
}

// Unrecord takes back value recorded at now: a throttled fetch is
// answered empty, so its bytes are not the client's.
func (s *Sensors) Unrecord(key string, q Resolved, value float64, now time.Time) {
	nowMs := now.UnixMilli()
	sn := s.sensor(key, q, nowMs)
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.rate.record(s.window, -value, nowMs)
}

// Rate is the rate of the clients sharing q for key measured at now, and
// whether they have a sensor at all.
func (s *Sensors) Rate(key string, q Resolved, now time.Time) (float64, bool) {
	s.mu.RLock()
	sn := s.sensors[sensorKey{key: key, user: q.User, clientID: q.ClientID}]
	s.mu.RUnlock()
	if sn == nil {
		return 0, false
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	r, _ := sn.rate.measure(s.window, now.UnixMilli())
	return r, true
}

// SensorStat is one sensor's figures at a moment (Snapshot).
type SensorStat struct {
	Key            string  // the quota key, ProducerByteRate ...
	User, ClientID string  // the clients sharing the sensor (Resolved.User, Resolved.ClientID)
	Rate           float64 // the windowed rate per second
	// ThrottleMs is the throttle time the last throttling record called
	// for, in milliseconds; 0 when none did within the measured span
	// (quota.window.num windows), as Kafka's throttle-time average is
	// empty once its samples expire.
	ThrottleMs int64
}

// Snapshot is the figures of every sensor held, measured at now, in no
// particular order. It only reads: the metrics listener calls it at
// scrape time, never the request path.
func (s *Sensors) Snapshot(now time.Time) []SensorStat {
	nowMs := now.UnixMilli()
	s.mu.RLock()
	keys := make([]sensorKey, 0, len(s.sensors))
	sns := make([]*rateSensor, 0, len(s.sensors))
	for k, sn := range s.sensors {
		keys = append(keys, k)
		sns = append(sns, sn)
	}
	s.mu.RUnlock()
	span := int64(s.window.samples()) * s.window.windowMs()
	out := make([]SensorStat, len(keys))
	for i, sn := range sns {
		sn.mu.Lock()
		rate, _ := sn.rate.measure(s.window, nowMs)
		st := SensorStat{Key: keys[i].key, User: keys[i].user, ClientID: keys[i].clientID, Rate: rate}
		if sn.throttleMs > 0 && nowMs-sn.throttledAt < span {
			st.ThrottleMs = sn.throttleMs
		}
		sn.mu.Unlock()
		out[i] = st
	}
	return out
}

// Len is the number of sensors held.
func (s *Sensors) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.sensors)
}
