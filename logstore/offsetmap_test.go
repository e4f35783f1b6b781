package logstore

import (
	"fmt"
	"testing"
)

// The map keeps the latest offset per key, stays within its buffer, stops
// taking new keys at its load factor (even a factor of 1 leaves a free
// slot, so lookups of absent keys end) and still updates known keys.
func TestOffsetMap(t *testing.T) {
	for _, lf := range []float64{0.5, 0.9, 1} {
		m := newOffsetMap(100*offsetMapSlotSize, lf)
		if len(m.buf) > 100*offsetMapSlotSize {
			t.Fatalf("buffer of %d bytes over the budget", len(m.buf))
		}
		n := 0
		for i := 0; ; i++ {
			if !m.put([]byte(fmt.Sprintf("key-%d", i)), int64(i)) {
				break
			}
			n++
		}
		if n != m.maxEntries || n >= 100 || n < int(100*lf)-1 {
			t.Fatalf("load factor %v: took %d keys, max %d", lf, n, m.maxEntries)
		}
		if !m.put([]byte("key-0"), 1000) || m.get([]byte("key-0")) != 1000 {
			t.Fatal("a full map must still update a key it has")
		}
		if m.get([]byte("absent")) != -1 || m.get([]byte("key-1")) != 1 {
			t.Fatal("lookups wrong")
		}
		m.clear()
		if m.get([]byte("key-1")) != -1 || m.entries != 0 {
			t.Fatal("clear left entries")
		}
	}
	if newOffsetMap(offsetMapSlotSize, 0.9) != nil {
		t.Fatal("a one-slot budget cannot hold a key with a free slot left")
	}
}

// clear frees exactly the slots filled since the last one, whatever their
// number (none, a few, the map full), so the map answers the same after
// any sequence of passes as a new one: every slot is free again, and
// keys of an earlier pass are gone while a new pass's are found.
func TestOffsetMapClearFreesWhatWasFilled(t *testing.T) {
	m := newOffsetMap(10_000*offsetMapSlotSize, 0.9)
	allFree := func() bool {
		for i := 0; i < m.slots; i++ {
			for _, b := range m.buf[i*offsetMapSlotSize+offsetMapHashSize : (i+1)*offsetMapSlotSize] {
				if b != 0 {
					return false
				}
			}
		}
		return true
	}
	if !allFree() || m.get([]byte("k")) != -1 {
		t.Fatal("a new map is not empty")
	}
	for pass, n := range []int{0, 3, 9000, 1, 0, 500, m.maxEntries + 10} {
		for i := 0; i < n; i++ {
			m.put([]byte(fmt.Sprintf("pass-%d-key-%d", pass, i)), int64(i))
		}
		if want := min(n, m.maxEntries); m.entries != want {
			t.Fatalf("pass %d: %d entries, want %d", pass, m.entries, want)
		}
		if n > 0 && m.get([]byte(fmt.Sprintf("pass-%d-key-0", pass))) != 0 {
			t.Fatalf("pass %d: its first key not found", pass)
		}
		if pass > 0 && m.get([]byte(fmt.Sprintf("pass-%d-key-0", pass-1))) != -1 {
			t.Fatalf("pass %d: a key of the pass before found", pass)
		}
		m.clear()
		if !allFree() || m.entries != 0 || m.latestOffset != -1 {
			t.Fatalf("pass %d: clear left slots filled", pass)
		}
		for _, w := range append(append([]uint64(nil), m.used...), m.usedWords...) {
			if w != 0 {
				t.Fatalf("pass %d: clear left the bitmaps set", pass)
			}
		}
	}
}
