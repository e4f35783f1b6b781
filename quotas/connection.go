package quotas

import "time"

// ConnectionRate is one connection creation rate sensor (KIP-612): the
// broker's, a listener's or an IP address's rate of new connections,
// measured as the client quota sensors are (windowedRate), so a first
// burst of up to limit × (samples-1) × window connections is within the
// limit, as in Kafka. The zero value is ready to use. Not safe for
// concurrent use: the caller (protocol's acceptor) holds its own lock.
type ConnectionRate struct {
	rate    windowedRate
	lastUse int64 // unix ms of the last record
}

// Record adds value connections at now; -1 takes one back, as Kafka
// un-records a connection it did not accept.
func (c *ConnectionRate) Record(w WindowConfig, value float64, now time.Time) {
	nowMs := now.UnixMilli()
	c.rate.record(w, value, nowMs)
	c.lastUse = nowMs
}

// RecordAndThrottle records one connection at now and returns how long
// the rate needs, with nothing more recorded, to come back to limit
// (Kafka's QuotaUtils.boundedThrottleTime): zero while the rate is within
// limit, at most maxThrottle.
func (c *ConnectionRate) RecordAndThrottle(w WindowConfig, limit float64, maxThrottle time.Duration, now time.Time) time.Duration {
	c.Record(w, 1, now)
	observed, span := c.rate.measure(w, now.UnixMilli())
	return min(time.Duration(throttleMs(observed, limit, span))*time.Millisecond, maxThrottle)
}

// Idle reports whether no connection was recorded for samples windows:
// every sample is obsolete, the rate measures 0, and the sensor can be
// dropped without changing any later answer.
func (c *ConnectionRate) Idle(w WindowConfig, now time.Time) bool {
	return now.UnixMilli()-c.lastUse >= int64(w.samples())*w.windowMs()
}
