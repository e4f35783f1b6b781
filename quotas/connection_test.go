package quotas

import (
	"testing"
	"time"
)

// TestConnectionRateBurstAndUnrecord: a first burst of limit ×
// (samples-1) × window connections is within the limit and the next one
// is throttled, for the time the rate needs to come back (bounded); a
// connection taken back frees its place; a sensor with nothing recorded
// for samples windows is idle.
func TestConnectionRateBurstAndUnrecord(t *testing.T) {
	w := DefaultWindow // 11 × 1 s
	t0 := time.UnixMilli(1_000_000)
	var c ConnectionRate
	for i := range 50 { // 5/s × 10 s
		if d := c.RecordAndThrottle(w, 5, time.Second, t0); d != 0 {
			t.Fatalf("connection %d throttled %v", i+1, d)
		}
	}
	// 51 over 10 s is 5.1/s: (5.1-5)/5 × 10 s = 200 ms.
	if d := c.RecordAndThrottle(w, 5, time.Second, t0); d != 200*time.Millisecond {
		t.Fatalf("51st throttled %v, want 200ms", d)
	}
	c.Record(w, -1, t0)
	if d := c.RecordAndThrottle(w, 5, 100*time.Millisecond, t0); d != 100*time.Millisecond {
		t.Fatalf("throttle %v, want the bound 100ms", d)
	}
	if c.Idle(w, t0.Add(10*time.Second)) {
		t.Fatal("idle after 10 s")
	}
	if !c.Idle(w, t0.Add(11*time.Second)) {
		t.Fatal("not idle after 11 s")
	}
	// After 11 s everything has expired: a new burst passes.
	t1 := t0.Add(11 * time.Second)
	for i := range 50 {
		if d := c.RecordAndThrottle(w, 5, time.Second, t1); d != 0 {
			t.Fatalf("second burst: connection %d throttled %v", i+1, d)
		}
	}
}
