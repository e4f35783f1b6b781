package broker

import (
	"testing"
	"time"
)

// TestFetchSessionCacheEviction steps the session cache's eviction rules
// with an explicit clock: a stale session goes first, a follower's session
// evicts a client's, a larger session evicts a smaller one only once that
// one is older than fetchSessionEvictAfter, and ties keep the incumbent.
func TestFetchSessionCacheEviction(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	newSession := func(privileged bool, size int) *fetchSession {
		s := &fetchSession{privileged: privileged, parts: map[sessionKey]*sessionPartition{}}
		for i := range size {
			s.parts[sessionKey{topic: "t", partition: int32(i)}] = &sessionPartition{}
		}
		return s
	}
	type existing struct {
		privileged bool
		size       int
		created    time.Duration // after t0
		used       time.Duration // after t0
	}
	for _, tc := range []struct {
		name       string
		cache      []existing
		privileged bool
		size       int
		at         time.Duration
		evicted    int // index into cache, -1 for none
	}{
		{"free slot", nil, false, 1, 0, -1},
		{"recent sessions stay", []existing{{false, 1, 0, 0}, {false, 2, 0, 0}}, false, 5, time.Second, -1},
		{"stale goes first", []existing{{false, 5, 0, 10 * time.Second}, {false, 1, 0, 0}}, false, 1, 121 * time.Second, 1},
		{"follower evicts the smallest client", []existing{{false, 3, 0, 0}, {false, 2, 0, 0}}, true, 1, time.Second, 1},
		{"follower spares followers", []existing{{true, 1, 0, 0}, {true, 1, 0, 0}}, true, 5, time.Second, -1},
		{"larger evicts an old smaller", []existing{{false, 3, 0, 100 * time.Second}, {false, 2, 0, 100 * time.Second}}, false, 3, 121 * time.Second, 1},
		{"equal size keeps the incumbent", []existing{{false, 2, 0, 100 * time.Second}, {false, 2, 0, 100 * time.Second}}, false, 2, 121 * time.Second, -1},
		{"client never evicts a follower", []existing{{true, 1, 0, 100 * time.Second}, {true, 1, 0, 100 * time.Second}}, false, 9, 121 * time.Second, -1},
		{"old follower session yields to a larger follower", []existing{{true, 1, 0, 100 * time.Second}, {true, 4, 0, 100 * time.Second}}, true, 2, 121 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fetchSessionCache{}
			slots := max(1, len(tc.cache))
			var ids []int32
			for _, e := range tc.cache {
				s := newSession(e.privileged, e.size)
				if c.create(slots, s, t0.Add(e.created)) == 0 {
					t.Fatal("setting up: no room")
				}
				c.mu.Lock()
				s.lastUsed = t0.Add(e.used)
				c.mu.Unlock()
				ids = append(ids, s.id)
			}
			id := c.create(slots, newSession(tc.privileged, tc.size), t0.Add(tc.at))
			if tc.evicted < 0 && len(tc.cache) > 0 {
				if id != 0 {
					t.Fatalf("new session %d opened over a full cache", id)
				}
				return
			}
			if id == 0 {
				t.Fatal("no session opened")
			}
			for i, old := range ids {
				if gone := c.get(slots, old) == nil; gone != (i == tc.evicted) {
					t.Fatalf("session %d (%d): evicted %v, want only %d evicted", i, old, gone, tc.evicted)
				}
			}
			if n, _, evictions := c.stats(); n != slots || evictions != int64(min(1, len(tc.cache))) {
				t.Fatalf("%d sessions cached, %d evictions; want %d and one eviction", n, evictions, slots)
			}
		})
	}
}
