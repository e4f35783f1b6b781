package logstore

import (
	"math"
	"testing"
)

func benchBatch(b *testing.B) []byte {
	recs := make([]testRecord, 10)
	for i := range recs {
		recs[i] = testRecord{Timestamp: int64(i), Value: make([]byte, 100)}
	}
	return makeBatch(b, batchSpec{Records: recs})
}

func BenchmarkAppend(b *testing.B) {
	e := newTestEnv(b)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	l := e.openLog(cfg)
	batch := benchBatch(b)
	buf := make([]byte, len(batch))
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, batch)
		if _, err := l.AppendAsLeader(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	e.close()
}

func BenchmarkRead(b *testing.B) {
	e := newTestEnv(b)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 8 << 20
	l := e.openLog(cfg)
	batch := benchBatch(b)
	const n = 20000
	for i := 0; i < n; i++ {
		mustAppend(b, l, batch, 0)
	}
	leo := l.LogEndOffset()
	b.SetBytes(64 << 10)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		off := int64(i*7919) % leo
		r, err := l.Read(off, 64<<10, math.MaxInt64, true)
		if err != nil || len(r.Data) == 0 {
			b.Fatalf("Read(%d): %d bytes, %v", off, len(r.Data), err)
		}
	}
	b.StopTimer()
	e.close()
}
