package quotas

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestMutationStrictBurstThenDebt: at 10/s with Kafka's window (11 × 1 s)
// a client starts with 110 tokens; topics are admitted while the bucket is
// not in debt, the one that takes it below zero included, and the next is
// refused with the time the debt takes to repay.
func TestMutationStrictBurstThenDebt(t *testing.T) {
	m := NewMutationRates(0, 0)
	q := Resolved{Limit: 10, User: "ANONYMOUS", ClientID: "c"}
	admitted := 0
	for range 12 {
		if _, ok := m.TakeStrict(q, 10, t0); !ok {
			t.Fatalf("topic %d of 10 partitions refused; want the first 12 admitted", admitted+1)
		}
		admitted++
	}
	if got := m.Tokens(q, t0); got != -10 {
		t.Fatalf("tokens after 120 partitions = %v, want -10", got)
	}
	wait, ok := m.TakeStrict(q, 10, t0)
	if ok || wait != time.Second {
		t.Fatalf("13th topic: ok=%v wait=%v, want refused with 1s", ok, wait)
	}
	// A refused topic costs nothing.
	if got := m.Tokens(q, t0); got != -10 {
		t.Fatalf("tokens after a refusal = %v, want -10", got)
	}
	// 400 ms later the debt is 6 partitions: 600 ms to go.
	if wait, ok := m.TakeStrict(q, 10, t0.Add(400*time.Millisecond)); ok || wait != 600*time.Millisecond {
		t.Fatalf("at +400ms: ok=%v wait=%v, want refused with 600ms", ok, wait)
	}
	// At exactly zero the bucket is not in debt: admitted.
	if _, ok := m.TakeStrict(q, 10, t0.Add(time.Second)); !ok {
		t.Fatal("at +1s (tokens 0): refused, want admitted")
	}
}

// TestMutationStrictRefusalHasThrottle: a bucket whose debt is repaid in
// less than half a millisecond still refuses a strict request, and the
// refusal carries a throttle time of at least a millisecond, never zero
// (TestControllerMutationRateRequestSplit saw "refused without a throttle
// time" once on a loaded machine).
func TestMutationStrictRefusalHasThrottle(t *testing.T) {
	m := NewMutationRates(0, 0)
	q := Resolved{Limit: 10, User: "ANONYMOUS", ClientID: "c"}
	if _, ok := m.TakeStrict(q, 111, t0); !ok {
		t.Fatal("first take with a full bucket refused")
	}
	// -1 token at 10/s: 100 ms of debt; 99.6 ms later 0.4 ms are left.
	wait, ok := m.TakeStrict(q, 1, t0.Add(99600*time.Microsecond))
	if ok || wait < time.Millisecond {
		t.Fatalf("with 0.4ms of debt left: ok=%v wait=%v, want refused with at least 1ms", ok, wait)
	}
}

// TestMutationRefillCappedAtBurst: an idle bucket saves at most the burst.
func TestMutationRefillCappedAtBurst(t *testing.T) {
	tests := []struct {
		name       string
		windowNum  int
		windowSize time.Duration
		limit      float64
		want       float64
	}{
		{"kafka defaults", 0, 0, 10, 110},
		{"window 5 x 2s", 5, 2 * time.Second, 10, 100},
		{"fractional quota", 11, time.Second, 0.5, 5.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMutationRates(tc.windowNum, tc.windowSize)
			q := Resolved{Limit: tc.limit, ClientID: "c"}
			m.TakePermissive(q, 1, t0)
			if got := m.Tokens(q, t0.Add(time.Hour)); got != tc.want {
				t.Fatalf("tokens after an idle hour = %v, want the burst %v", got, tc.want)
			}
		})
	}
}

// TestMutationPermissive charges everything and reports the debt's wait.
func TestMutationPermissive(t *testing.T) {
	m := NewMutationRates(0, 0)
	q := Resolved{Limit: 10, ClientID: "old"}
	if wait := m.TakePermissive(q, 100, t0); wait != 0 {
		t.Fatalf("100 of 110: wait %v, want 0", wait)
	}
	if wait := m.TakePermissive(q, 35, t0); wait != 2500*time.Millisecond {
		t.Fatalf("debt 25 at 10/s: wait %v, want 2.5s", wait)
	}
	if got := m.Tokens(q, t0); got != -25 {
		t.Fatalf("tokens = %v, want -25", got)
	}
}

// TestMutationBucketsPerClient: clients that resolve to different names
// have their own buckets; those sharing a Resolved share one.
func TestMutationBucketsPerClient(t *testing.T) {
	m := NewMutationRates(1, time.Second) // burst = the quota
	a := Resolved{Limit: 5, User: "ANONYMOUS", ClientID: "a"}
	b := Resolved{Limit: 5, User: "ANONYMOUS", ClientID: "b"}
	if _, ok := m.TakeStrict(a, 6, t0); !ok {
		t.Fatal("a's first topic refused")
	}
	if _, ok := m.TakeStrict(a, 1, t0); ok {
		t.Fatal("a in debt: admitted")
	}
	if _, ok := m.TakeStrict(b, 5, t0); !ok {
		t.Fatal("b refused because of a's debt")
	}
	// A quota on the user alone resolves with ClientID "": every client
	// id of the user shares it.
	u1 := Resolved{Limit: 5, User: "alice"}
	m.TakeStrict(u1, 6, t0)
	if _, ok := m.TakeStrict(u1, 1, t0); ok {
		t.Fatal("alice's shared bucket in debt: admitted")
	}
}

// TestMutationLoweredQuota: lowering the quota caps the saved tokens at
// the new burst.
func TestMutationLoweredQuota(t *testing.T) {
	m := NewMutationRates(0, 0)
	q := Resolved{Limit: 100, ClientID: "c"}
	m.TakePermissive(q, 0, t0)
	q.Limit = 1
	if got := m.Tokens(q, t0); got != 11 {
		t.Fatalf("tokens after lowering to 1/s = %v, want 11", got)
	}
}

// TestMutationZeroQuota refuses every partition, never spinning a client.
func TestMutationZeroQuota(t *testing.T) {
	m := NewMutationRates(0, 0)
	q := Resolved{Limit: 0, ClientID: "c"}
	if wait, ok := m.TakeStrict(q, 1, t0); ok || wait <= 0 {
		t.Fatalf("quota 0: ok=%v wait=%v, want refused with a wait", ok, wait)
	}
	if wait := m.TakePermissive(q, 1, t0); wait <= 0 {
		t.Fatalf("quota 0 permissive: wait %v, want > 0", wait)
	}
}

// TestMutationPruneIdle drops, once the map has grown, the buckets that
// have refilled to their burst, and keeps those still owing or refilling.
func TestMutationPruneIdle(t *testing.T) {
	m := NewMutationRates(0, 0) // burst at 1/s: 11
	for i := range 63 {
		m.TakeStrict(Resolved{Limit: 1, ClientID: string(rune('A' + i))}, 1, t0)
	}
	// Debt 989: full again only 1000 s later.
	m.TakeStrict(Resolved{Limit: 1, ClientID: "deep"}, 1000, t0)
	m.TakeStrict(Resolved{Limit: 1, ClientID: "late"}, 1, t0.Add(100*time.Second))
	m.mu.Lock()
	n := len(m.buckets)
	_, deep := m.buckets[mutationKey{"", "deep"}]
	m.mu.Unlock()
	if n != 2 || !deep {
		t.Fatalf("buckets after pruning = %d (deep kept: %v), want 2: deep and late", n, deep)
	}
}
