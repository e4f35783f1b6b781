package broker_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// BenchmarkClusterPartitionMemory measures what a partition replica costs a
// node in issue 22's 100,000-partition shape: an in-process three-node
// cluster, 10,000 partitions at RF 3 (topics of 1,000; SLUICE_MEM_PARTITIONS
// sets the count), so every node holds one replica of every partition and
// leads a third of them. Once every ISR is full (read with a Metadata
// request of its own, not a cached one) and the followers' fetch sessions
// have run idle for a few seconds, it reports the heap in use after a GC
// (and the live bytes, HeapAlloc) gained since the cluster formed, divided
// by partitions × 3 nodes: the metadata image with three replicas per
// partition, the raft log, the broker's partition and leader/follower
// state, fetch sessions on both sides and the logs. RSS is about twice
// the live heap at GOGC=100. SLUICE_MEM_PROFILE=path writes a heap
// profile sampled every 64 bytes (go tool pprof -top -inuse_space path).
//
//	go test ./broker -run '^$' -bench ClusterPartitionMemory -benchtime 1x
func BenchmarkClusterPartitionMemory(b *testing.B) {
	n := 10_000
	if s := os.Getenv("SLUICE_MEM_PARTITIONS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const perTopic, nodes = 1000, 3
	if os.Getenv("SLUICE_MEM_PROFILE") != "" {
		runtime.MemProfileRate = 64 // every small struct shows up
	}
	for range b.N {
		c := sluicetest.StartCluster(b, nodes, "log.flush.offset.checkpoint.interval.ms=3600000")
		cl := c.Client()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		heap0, live0, g0 := heapStats()
		var topics []string
		for t := 0; t*perTopic < n; t++ {
			name := fmt.Sprintf("cmem-%d", t)
			topics = append(topics, name)
			req := kmsg.NewPtrCreateTopicsRequest()
			req.TimeoutMillis = 240000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(min(perTopic, n-t*perTopic)), nodes
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
			}
			if err != nil && err != kerr.TopicAlreadyExists {
				b.Fatal(err)
			}
		}
		sluicetest.WaitFor(b, 10*time.Minute, func() error {
			full, _, err := countFullISRs(ctx, cl, topics, nodes)
			if err != nil {
				return err
			}
			if full != n {
				return fmt.Errorf("%d of %d ISRs full", full, n)
			}
			return nil
		})
		// Idle: the followers fetch their sessions with nothing new. The
		// benchmark's own client goes first: its metadata cache is not
		// a node's.
		cl.Close()
		time.Sleep(5 * time.Second)
		heap1, live1, g1 := heapStats()
		per := float64(n * nodes)
		b.ReportMetric(float64(heap1-heap0)/per, "heap-B/partition/node")
		b.ReportMetric(float64(live1-live0)/per, "live-B/partition/node")
		b.ReportMetric(float64(g1-g0)/per, "goroutines/partition/node")
		b.ReportMetric(float64(n), "partitions")
		if p := os.Getenv("SLUICE_MEM_PROFILE"); p != "" {
			writeHeapProfile(b, p)
		}
		cancel()
	}
}

// heapStats is the heap in use and the live bytes after two GCs, and the
// goroutines.
func heapStats() (inuse, live uint64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse, ms.HeapAlloc, runtime.NumGoroutine()
}
