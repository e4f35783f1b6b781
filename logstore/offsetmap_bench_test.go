package logstore

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkOffsetMapClear measures emptying the default 128 MiB key map
// (log.cleaner.dedupe.buffer.size for one thread), as every pass does
// first, after a pass that mapped the given number of keys (0: a pass
// that only rechecked expired tombstones). The puts are not timed.
func BenchmarkOffsetMapClear(b *testing.B) {
	for _, keys := range []int{0, 1000, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			m := newOffsetMap(DefaultDedupeBufferSize, DefaultDedupeLoadFactor)
			key := make([]byte, 8)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for k := 0; k < keys; k++ {
					binary.BigEndian.PutUint64(key, uint64(k))
					m.put(key, int64(k))
				}
				b.StartTimer()
				m.clear()
			}
		})
	}
}

// BenchmarkCleanRecheckPass measures a whole pass of a cleaner with the
// default 128 MiB key map over a small cleaned log with nothing dirty
// (CleanOptions.Recheck, as for expired tombstones): the pass maps no key,
// so what it costs beyond rewriting the segments left is the map's clear.
func BenchmarkCleanRecheckPass(b *testing.B) {
	e := newTestEnv(b)
	l := e.openLog(compactConfig())
	workload(b, l, rand.New(rand.NewSource(1)), 2000, 100, 10, 0, 1_700_000_000_000)
	c := newTestCleaner(b, DefaultDedupeBufferSize)
	st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	if err != nil {
		b.Fatal(err)
	}
	opts := CleanOptions{FirstDirty: st.EndOffset, DeleteRetentionMs: testDeleteRetentionMs, Recheck: true}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Clean(l, opts); err != nil {
			b.Fatal(err)
		}
	}
}
