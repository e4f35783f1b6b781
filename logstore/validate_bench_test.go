package logstore

import (
	"math/rand/v2"
	"testing"
	"time"
)

// BenchmarkAppendValidated measures what a producer's append costs the
// leader, record validation included: batches of 16 incompressible 1 KiB
// records (about 16.5 KiB, Java's default batch.size), appended one after
// another. "none" is the hot path (records walked in place); the codec
// cases add the streaming decompression of the same records.
//
//	go test ./logstore -run '^$' -bench AppendValidated -count 5
func BenchmarkAppendValidated(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec int8
	}{{"none", 0}, {"lz4", 3}, {"zstd", 4}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			recs := make([]testRecord, 16)
			for i := range recs {
				v := make([]byte, 1024)
				for j := range v {
					v[j] = byte(rng.Uint32())
				}
				recs[i] = testRecord{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte("key"), Value: v}
			}
			batch := makeBatch(b, batchSpec{Codec: c.codec, Records: recs})
			e := newTestEnv(b)
			cfg := DefaultConfig()
			cfg.SegmentBytes = 64 << 20
			l := e.openLog(cfg)
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
		})
	}
}

// BenchmarkValidateRecords is the validation of the batch of
// BenchmarkAppendValidated (16 incompressible 1 KiB records) without the
// file write: "headers" is what the leader checked before record
// validation existed (splitBatches: headers and the CRC), the others add
// the record walk, and for compressed batches the decompression.
//
//	go test ./logstore -run '^$' -bench ValidateRecords -count 5
func BenchmarkValidateRecords(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec int8
	}{{"headers", -1}, {"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			recs := make([]testRecord, 16)
			for i := range recs {
				v := make([]byte, 1024)
				for j := range v {
					v[j] = byte(rng.Uint32())
				}
				recs[i] = testRecord{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte("key"), Value: v}
			}
			batch := makeBatch(b, batchSpec{Codec: max(c.codec, 0), Records: recs})
			cfg := DefaultConfig()
			now := time.UnixMilli(1_700_000_000_000)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				spans, err := splitBatches(batch, cfg, true)
				if err != nil {
					b.Fatal(err)
				}
				if c.codec < 0 {
					continue
				}
				if err := validateRecords(batch, spans, cfg, testTP, now); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
