package logstore

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkClean measures one pass over a freshly written log of about
// 16 MiB: 10,000 keys overwritten many times, 100-byte random values, batches of
// 50 records, 8 MiB segments; MB/s counts the .log bytes read. The
// codec sub-benchmarks show the cost of decompressing and recompressing.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []int8{0, 3} {
		b.Run(Compression(codec+1).String(), func(b *testing.B) {
			cfg := compactConfig()
			cfg.SegmentBytes = 8 << 20
			cfg.IndexIntervalBytes = 4096
			rng := rand.New(rand.NewSource(1))
			var size int64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				e := newTestEnv(b)
				l := e.openLog(cfg)
				var recs []testRecord
				for n := 0; l.Size() < 16<<20; n++ {
					recs = append(recs, testRecord{Timestamp: int64(n), Key: []byte(fmt.Sprintf("key-%05d", (n*7919)%10000)), Value: randomValue(rng)})
					if len(recs) == 50 {
						appendAt(b, l, makeProducerBatch(b, codec, txnSpec{ProducerID: -1, Epoch: -1, BaseSequence: -1}, recs))
						recs = recs[:0]
					}
				}
				c := newTestCleaner(b, 16<<20)
				b.StartTimer()
				st, err := c.Clean(l, CleanOptions{DeleteRetentionMs: 86_400_000})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				size = st.BytesRead
				e.close()
			}
			b.SetBytes(size)
		})
	}
}

func randomValue(rng *rand.Rand) []byte {
	v := make([]byte, 100)
	rng.Read(v)
	return v
}
