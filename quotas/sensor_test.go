package quotas

import (
	"testing"
	"time"
)

var epoch = time.UnixMilli(1_700_000_000_000)

func at(ms int64) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }

func TestSensorThrottleTime(t *testing.T) {
	q := Resolved{Limit: 1000, ClientID: "c"}
	for _, tc := range []struct {
		name   string
		record []struct{ atMs, bytes int64 }
		want   time.Duration
	}{
		// 11 samples of 1 s: a first record is measured over 10 s.
		{"within the quota over the padded span", []struct{ atMs, bytes int64 }{{0, 10_000}}, 0},
		// 20,000 bytes over 10 s is 2,000/s: (2000-1000)/1000 × 10 s.
		{"first burst over the quota", []struct{ atMs, bytes int64 }{{0, 20_000}}, 10 * time.Second},
		// 5 s in: 15,000 over 10 s padded (5 s elapsed is under 10
		// whole windows, so 5 are added) → 1,500/s, throttle 5 s.
		{"span padded to samples-1 windows", []struct{ atMs, bytes int64 }{{0, 10_000}, {5_000, 5_000}}, 5 * time.Second},
		// 10.9 s in, the first sample (started at 0, last event at 0)
		// is not yet obsolete: span 10.9 s, 30,000 bytes →
		// 2,752.3/s → (2752.3-1000)/1000 × 10.9 s = 19.1 s.
		{"span since the oldest sample", []struct{ atMs, bytes int64 }{{0, 10_000}, {10_500, 10_000}, {10_900, 10_000}}, 19_100 * time.Millisecond},
		// An idle gap of samples windows empties the old samples.
		{"old samples purged", []struct{ atMs, bytes int64 }{{0, 100_000}, {11_000, 5_000}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSensors(DefaultWindow)
			var got time.Duration
			for _, r := range tc.record {
				got = s.Record(ProducerByteRate, q, float64(r.bytes), at(r.atMs))
			}
			if got != tc.want {
				t.Fatalf("throttle %v, want %v", got, tc.want)
			}
		})
	}
}

// A client that waits out each throttle it is given, as KIP-219 muting
// makes it, converges on its quota.
func TestSensorConvergesOnQuota(t *testing.T) {
	s := NewSensors(DefaultWindow)
	q := Resolved{Limit: 1 << 20, ClientID: "perf"}
	var now, sent int64
	const batch = 256 << 10
	for now < 120_000 {
		sent += batch
		d := s.Record(ProducerByteRate, q, batch, at(now))
		now += 5 + d.Milliseconds() // 5 ms to serve each request
	}
	rate := float64(sent) / (float64(now) / 1000)
	if rate < 0.9*(1<<20) || rate > 1.1*(1<<20) {
		t.Fatalf("rate %.0f B/s over %d ms, want about %d", rate, now, 1<<20)
	}
}

// Clients share a rate exactly when they resolve to the same names.
func TestSensorSharing(t *testing.T) {
	s := NewSensors(WindowConfig{Samples: 2, Window: time.Second})
	a := Resolved{Limit: 100, User: "u"}
	if d := s.Record(ConsumerByteRate, a, 100, at(0)); d != 0 {
		t.Fatalf("first client throttled %v", d)
	}
	if d := s.Record(ConsumerByteRate, a, 100, at(0)); d == 0 {
		t.Fatal("second client of the same user not throttled by the shared rate")
	}
	if d := s.Record(ConsumerByteRate, Resolved{Limit: 100, User: "v"}, 100, at(0)); d != 0 {
		t.Fatalf("another user throttled %v", d)
	}
	if d := s.Record(ProducerByteRate, a, 100, at(0)); d != 0 {
		t.Fatalf("another quota key throttled %v", d)
	}
	// Unrecording brings the shared rate back.
	s.Unrecord(ConsumerByteRate, a, 100, at(0))
	if r, _ := s.Rate(ConsumerByteRate, a, at(0)); r != 100 {
		t.Fatalf("rate after unrecord %v, want 100", r)
	}
}

func TestSensorExpiry(t *testing.T) {
	s := NewSensors(DefaultWindow)
	for i := range 1000 {
		s.Record(ProducerByteRate, Resolved{Limit: 1, ClientID: string(rune('a'+i%26)) + string(rune(i))}, 1, at(0))
	}
	if s.Len() != 1000 {
		t.Fatalf("%d sensors", s.Len())
	}
	live := Resolved{Limit: 1, ClientID: "live"}
	s.Record(ProducerByteRate, live, 1, at(SensorExpiry.Milliseconds()-1))
	s.Record(ProducerByteRate, live, 1, at(SensorExpiry.Milliseconds()+time.Minute.Milliseconds()))
	if s.Len() != 1 {
		t.Fatalf("%d sensors after an hour idle, want the live one", s.Len())
	}
}

func TestMaxValueInWindow(t *testing.T) {
	if got := DefaultWindow.MaxValueInWindow(1 << 20); got != 10<<20 {
		t.Fatalf("got %v", got)
	}
	if got := (WindowConfig{Samples: 3, Window: 2 * time.Second}).MaxValueInWindow(100); got != 400 {
		t.Fatalf("got %v", got)
	}
}

// TestSensorsSnapshot: a snapshot reads each sensor's rate and the last
// throttle time, which lapses once the measured span has passed.
func TestSensorsSnapshot(t *testing.T) {
	s := NewSensors(DefaultWindow)
	s.Record(ProducerByteRate, Resolved{Limit: 1000, ClientID: "c"}, 20_000, at(0))
	s.Record(ConsumerByteRate, Resolved{Limit: 1e9, User: "u"}, 5_000, at(0))
	got := map[string]SensorStat{}
	for _, st := range s.Snapshot(at(5_000)) {
		got[st.Key] = st
	}
	// 20,000 bytes over the padded 10 s: 2,000/s, throttled 10 s.
	if p := got[ProducerByteRate]; p.ClientID != "c" || p.User != "" || p.Rate != 2000 || p.ThrottleMs != 10_000 {
		t.Fatalf("producer sensor %+v", p)
	}
	if c := got[ConsumerByteRate]; c.User != "u" || c.Rate != 500 || c.ThrottleMs != 0 {
		t.Fatalf("consumer sensor %+v", c)
	}
	for _, st := range s.Snapshot(at(11_000)) {
		if st.Rate != 0 || st.ThrottleMs != 0 {
			t.Fatalf("after the span: %+v", st)
		}
	}
}
