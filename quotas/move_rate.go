package quotas

import (
	"sync"
	"time"
)

// MoveRate is the throttle of replica moves between one broker's log
// directories (replica.alter.log.dirs.io.max.bytes.per.second, Kafka's
// AlterLogDirsReplication quota): the bytes every move of the broker
// copies, together, measured as Kafka's ReplicationQuotaManager measures
// them, over alter.log.dirs.replication.quota.window.num samples of
// alter.log.dirs.replication.quota.window.size.seconds (the windowed rate
// of the client quotas, sensor.go). As Kafka's ReplicaAlterLogDirsThread,
// a copy checks the quota before each chunk and waits while the measured
// rate is over it, and records the chunk's bytes after. Safe for
// concurrent use.
type MoveRate struct {
	window WindowConfig

	mu    sync.Mutex
	limit int64 // bytes per second; <= 0 or Unlimited: none
	rate  windowedRate
}

// NewMoveRate returns an unlimited MoveRate measuring with window.
func NewMoveRate(window WindowConfig) *MoveRate {
	if window.Samples < 1 || window.Window <= 0 {
		window = DefaultWindow
	}
	return &MoveRate{window: window, limit: Unlimited}
}

// SetLimit changes the limit, in bytes per second (Unlimited: none).
func (m *MoveRate) SetLimit(bytesPerSecond int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limit = bytesPerSecond
}

// Limit is the limit in bytes per second.
func (m *MoveRate) Limit() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limit
}

func (m *MoveRate) limitedLocked() bool { return m.limit > 0 && m.limit != Unlimited }

// Chunk is the most a copy should take at once under the current limit:
// what the window absorbs (MaxValueInWindow), between 4 KiB and max.
func (m *MoveRate) Chunk(max int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.limitedLocked() {
		return max
	}
	n := int(min(float64(max), m.window.MaxValueInWindow(float64(m.limit))))
	return min(max, 4<<10+n)
}

// Wait is how long a copy waits at now before its next chunk: until the
// measured rate comes back to the limit, zero while it is within.
func (m *MoveRate) Wait(now time.Time) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.limitedLocked() {
		return 0
	}
	observed, span := m.rate.measure(m.window, now.UnixMilli())
	return time.Duration(throttleMs(observed, float64(m.limit), span)) * time.Millisecond
}

// Record counts n bytes copied at now.
func (m *MoveRate) Record(n int, now time.Time) {
	if n <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rate.record(m.window, float64(n), now.UnixMilli())
}
