package broker_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicedev/sluice/sluicetest"
)

// BenchmarkPartitionMemory measures what a partition costs a node: one
// in-process node (the controller too), heap in use after a GC and
// goroutines before and after creating 10,000 partitions at RF 1 (ten
// topics of 1,000), once every log is open (a partition directory each and
// ListOffsets answered), divided by the partitions, and the descriptors
// the process gained (the segment files the default FileCache keeps open,
// at most half the open-file limit, and the node's own). The heap figure holds
// everything a partition brings: the metadata image, the broker's
// partition state and the log. SLUICE_MEM_PARTITIONS sets the count.
//
//	go test ./broker -run '^$' -bench PartitionMemory -benchtime 1x
func BenchmarkPartitionMemory(b *testing.B) {
	n := 10_000
	if s := os.Getenv("SLUICE_MEM_PARTITIONS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const perTopic = 1000
	for range b.N {
		node := sluicetest.Start(b, "log.flush.offset.checkpoint.interval.ms=3600000")
		adm := node.Admin()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		heap0, g0 := heapInuse(), runtime.NumGoroutine()
		fd0 := 0
		if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
			fd0 = len(fds)
		}
		var topics []string
		for t := 0; t*perTopic < n; t++ {
			name := fmt.Sprintf("mem-%d", t)
			topics = append(topics, name)
			if _, err := adm.CreateTopic(ctx, int32(min(perTopic, n-t*perTopic)), 1, nil, name); err != nil {
				b.Fatal(err)
			}
		}
		for open := 0; open < n; {
			entries, err := os.ReadDir(node.Dir)
			if err != nil {
				b.Fatal(err)
			}
			open = 0
			for _, e := range entries {
				if e.IsDir() && strings.HasPrefix(e.Name(), "mem-") {
					open++
				}
			}
			if ctx.Err() != nil {
				b.Fatalf("%d of %d partition directories", open, n)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for {
			offs, err := adm.ListEndOffsets(ctx, topics...)
			if err == nil && offs.Error() == nil {
				break
			}
			if ctx.Err() != nil {
				b.Fatal(err, offs.Error())
			}
			time.Sleep(100 * time.Millisecond)
		}
		heap1, g1 := heapInuse(), runtime.NumGoroutine()
		b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/partition")
		b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/partition")
		if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
			b.ReportMetric(float64(len(fds)-fd0), "fds")
		}
		b.ReportMetric(float64(n), "partitions")
		if p := os.Getenv("SLUICE_MEM_PROFILE"); p != "" {
			writeHeapProfile(b, p)
		}
		cancel()
		adm.Close()
		node.Broker.Close()
	}
}

func heapInuse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}
