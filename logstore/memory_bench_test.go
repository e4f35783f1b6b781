package logstore

import (
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
)

// BenchmarkLogMemory opens 10,000 empty logs in one Dir (RF 1, Kafka's
// default config, the default FileCache) and reports the heap they hold
// per log: HeapInuse after a GC, after minus before, divided by the count.
// Issue 22: 100,000 partitions at RF 3 on three nodes is 100,000 logs a
// node, within 1 GiB of RSS. LOGMEM_PROFILE=<file> writes a heap profile
// while the logs are open (run with -memprofilerate 512 for detail).
//
//	go test ./logstore -run '^$' -bench LogMemory -benchtime 1x
func BenchmarkLogMemory(b *testing.B) {
	const n = 10_000
	for range b.N {
		d, err := OpenDir(filepath.Join(b.TempDir(), "data"), Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		cfg := DefaultConfig()
		before := heapInuse()
		for i := 0; i < n; i++ {
			if _, err := d.Open(TopicPartition{Topic: "mem", Partition: int32(i)}, [16]byte{}, cfg); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInuse()
		b.ReportMetric(float64(after-before)/n, "heap-B/log")
		if p := os.Getenv("LOGMEM_PROFILE"); p != "" {
			f, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			pprof.WriteHeapProfile(f)
			f.Close()
		}
		if err := d.Close(nil); err != nil {
			b.Fatal(err)
		}
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}
