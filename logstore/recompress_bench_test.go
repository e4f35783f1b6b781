package logstore

import (
	"fmt"
	"testing"
)

// BenchmarkAppendRecompress measures what compression.type costs an
// append: a snappy batch of 200 JSON-like records (about 40 KB
// uncompressed, franz-go's default codec) appended to a topic of each
// compression.type. producer and snappy store it as sent; the others
// rewrite it. Bytes/s count the uncompressed records.
func BenchmarkAppendRecompress(b *testing.B) {
	recs := make([]testRecord, 200)
	raw := 0
	for i := range recs {
		v := fmt.Sprintf(`{"order_id":%d,"customer":"customer-%d","items":[{"sku":"SKU-%05d","qty":%d,"price":%d.99}],"status":"created","region":"eu-west-%d"}`,
			100000+i, i%37, i*7919%100000, 1+i%5, 10+i%90, i%3)
		recs[i] = testRecord{Timestamp: 1_700_000_000_000 + int64(i), Key: []byte(fmt.Sprintf("customer-%d", i%37)), Value: []byte(v)}
		raw += len(v) + 12
	}
	batch := makeBatch(b, batchSpec{Codec: 2, Records: recs})
	for _, target := range []Compression{CompressionProducer, CompressionSnappy, CompressionUncompressed, CompressionGzip, CompressionLZ4, CompressionZstd} {
		b.Run(target.String(), func(b *testing.B) {
			e := newTestEnv(b)
			cfg := DefaultConfig()
			cfg.SegmentBytes = 64 << 20
			cfg.Compression = target
			l := e.openLog(cfg)
			buf := make([]byte, len(batch))
			b.SetBytes(int64(raw))
			b.ReportAllocs()
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
