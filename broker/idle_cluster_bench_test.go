package broker_test

// BenchmarkIdleCluster: what a cluster at rest costs (issue 22's goal: 5 %
// of one core per node at 10,000 partitions). Three in-process nodes hold
// a topic of SLUICE_IDLE_PARTITIONS partitions (10,000 by default) at RF 3
// with Kafka's replica.lag.time.max.ms; once every node has opened every
// replica and 10 s have passed, each iteration is one second of rest and
// the benchmark reports the process's CPU time (user and system, all three
// nodes) as % of one core. With -cpuprofile the profile covers the rest as
// well as the creation before it; -benchtime 20x measures 20 s.
//
//	go test ./broker -run '^$' -bench BenchmarkIdleCluster -benchtime 20x -count 3

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicedev/sluice/sluicetest"
)

func BenchmarkIdleCluster(b *testing.B) {
	partitions := 10000
	if n, _ := strconv.Atoi(os.Getenv("SLUICE_IDLE_PARTITIONS")); n > 0 {
		partitions = n
	}
	const topic = "idle"
	c := sluicetest.StartCluster(b, 3, "replica.lag.time.max.ms=30000")
	adm := kadm.NewClient(c.Client())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), 3, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatal(err)
	}
	sluicetest.WaitFor(b, 4*time.Minute, func() error {
		for id := 1; id <= 3; id++ {
			for p := range int32(partitions) {
				if _, _, ok := c.Node(id).Broker.ReplicaOffsets(topic, p); !ok {
					return fmt.Errorf("node %d has not opened partition %d", id, p)
				}
			}
		}
		return nil
	})
	c.WaitForISR(topic, int32(partitions-1), 3)
	time.Sleep(10 * time.Second)
	cpu := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	start, used := time.Now(), cpu()
	for b.Loop() {
		time.Sleep(time.Second)
	}
	used = cpu() - used
	b.ReportMetric(100*used.Seconds()/time.Since(start).Seconds(), "%core")
}
