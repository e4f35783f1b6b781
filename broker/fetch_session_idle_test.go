package broker_test

// A measurement, not a test: the CPU and allocations of a three-node
// cluster at rest, each node following the others' idle partitions. It is
// skipped unless SLUICE_IDLE_COST names the partition count:
//
//	SLUICE_IDLE_COST=2000 go test ./broker -run TestFetchSessionIdleCost -count=1 -v -timeout 10m
//
// SLUICE_IDLE_PROFILE=<file> writes a CPU profile of the measured window.
//
// The three nodes run in the test's process, so its CPU time is the
// cluster's.

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

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// processCPU returns the CPU time (user and system) this process used.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func TestFetchSessionIdleCost(t *testing.T) {
	partitions, _ := strconv.Atoi(os.Getenv("SLUICE_IDLE_COST"))
	if partitions <= 0 {
		t.Skip("set SLUICE_IDLE_COST=<partitions> to measure")
	}
	window := 30 * time.Second
	c := sluicetest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm := c.Admin()
	// A retried CreateTopics whose first attempt was slow finds the topic.
	if resp, err := adm.CreateTopic(ctx, int32(partitions), 3, nil, "idle"); err != nil || (resp.Err != nil && !strings.Contains(resp.Err.Error(), kerr.TopicAlreadyExists.Message)) {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	sluicetest.WaitFor(t, 4*time.Minute, func() error {
		md, err := adm.Metadata(ctx, "idle")
		if err != nil {
			return err
		}
		full := 0
		for _, p := range md.Topics["idle"].Partitions {
			if len(p.ISR) == 3 && p.Leader >= 0 {
				full++
			}
		}
		if full != partitions {
			return fmt.Errorf("%d of %d partitions with a full ISR", full, partitions)
		}
		return nil
	})
	time.Sleep(5 * time.Second) // let start-up work settle
	defer measureIdleRound(t, c, "idle")
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if path := os.Getenv("SLUICE_IDLE_PROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	cpu0, t0 := processCPU(t), time.Now()
	time.Sleep(window)
	cpu1, elapsed := processCPU(t), time.Since(t0)
	runtime.ReadMemStats(&m1)
	cpu := cpu1 - cpu0
	defer t.Logf("idle cost: %d partitions, RF 3, 3 nodes in one process, %.1f s: CPU %.2f s (%.1f%% of one core), %.1f MiB allocated (%d objects)",
		partitions, elapsed.Seconds(), cpu.Seconds(), 100*cpu.Seconds()/elapsed.Seconds(),
		float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20), m1.Mallocs-m0.Mallocs)
}

// measureIdleRound logs the bytes of one fetch of node 1's idle
// partitions of topic, full and incremental: the request sizes and the
// answers' (their size prefixes).
func measureIdleRound(t *testing.T, c *sluicetest.Cluster, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	md, err := c.Admin().Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 16, -1, 1<<20, 0
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = td.ID
	for _, p := range td.Partitions {
		if p.Leader == 1 {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LogStartOffset, rp.PartitionMaxBytes = p.Partition, p.LeaderEpoch, -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	req.Topics = []kmsg.FetchRequestTopic{rt}
	f := kmsg.NewRequestFormatter()
	conn := dialRawConn(t, c.Node(1).Addr())
	fullReq := len(f.AppendRequest(nil, req, 1))
	fullResp, r := conn.do(req)
	id := r.(*kmsg.FetchResponse).SessionID
	incr := kmsg.NewPtrFetchRequest()
	incr.Version, incr.ReplicaID, incr.MaxBytes, incr.SessionID, incr.SessionEpoch = 16, -1, 1<<20, id, 1
	incrReq := len(f.AppendRequest(nil, incr, 2))
	incrResp, r := conn.do(incr)
	t.Logf("one fetch of node 1's %d idle partitions: full %d request + %d answer bytes; incremental (session %d, error %d) %d + %d bytes",
		len(rt.Partitions), fullReq, fullResp, id, r.(*kmsg.FetchResponse).ErrorCode, incrReq, incrResp)
}
