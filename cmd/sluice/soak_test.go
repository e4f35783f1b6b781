package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 13, problem 6 and acceptance 3: three sluice processes with every
// CPU saturated by other processes (two `yes > /dev/null` per CPU) and a
// steady acks=all producer of 1 KiB records, for SLUICE_SOAK_CPU (a Go
// duration).
// Nothing fails, so there must be no fencing of a (live) broker and no raft
// leader stepping down: both are counted in the processes' logs ("fenced
// broker" not asked for by a controlled shutdown; "failed to contact
// quorum of nodes, stepping down", "lost controller leadership"), and
// Metadata, polled every second, must always list three brokers. Every
// record must be acknowledged.
//
// It is skipped unless SLUICE_SOAK_CPU is set, since it saturates the
// machine. The acceptance run is ten minutes:
//
//	SLUICE_SOAK_CPU=10m go test ./cmd/sluice -run TestThreeProcessSoakUnderCPULoad -v -timeout 30m
//
// and a short form fits CI: SLUICE_SOAK_CPU=30s. SLUICE_SOAK_BURNERS_PER_CPU
// (default 2) loads the machine harder.
func TestThreeProcessSoakUnderCPULoad(t *testing.T) {
	spec := os.Getenv("SLUICE_SOAK_CPU")
	if spec == "" {
		t.Skip("set SLUICE_SOAK_CPU to a duration (e.g. 10m, or 30s in CI) to run the CPU-saturated soak")
	}
	soak, err := time.ParseDuration(spec)
	if err != nil || soak <= 0 {
		t.Fatalf("SLUICE_SOAK_CPU=%q: want a positive Go duration", spec)
	}
	c := startClusterProcs(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), soak+5*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	createInsyncTopic(ctx, t, adm, "soak")

	// The load: two busy processes per CPU (SLUICE_SOAK_BURNERS_PER_CPU
	// sets another count), at the same priority, so the brokers get well
	// under half of each CPU.
	perCPU := 2
	if v := os.Getenv("SLUICE_SOAK_BURNERS_PER_CPU"); v != "" {
		if perCPU, err = strconv.Atoi(v); err != nil || perCPU < 0 {
			t.Fatalf("SLUICE_SOAK_BURNERS_PER_CPU=%q: want a count", v)
		}
	}
	burners := perCPU * runtime.NumCPU()
	for range burners {
		burner := exec.Command("yes") // stdout nil: /dev/null
		if err := burner.Start(); err != nil {
			t.Fatalf("start a CPU burner: %v", err)
		}
		t.Cleanup(func() {
			burner.Process.Kill()
			burner.Wait()
		})
	}

	producer := c.client(fast,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("soak"),
		kgo.RecordDeliveryTimeout(time.Minute),
		kgo.MaxBufferedRecords(1000),
	)
	var (
		mu            sync.Mutex
		acked, failed int
		firstErr      error
	)
	value := make([]byte, 1024)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := append([]byte("s"+strconv.Itoa(i)+" "), value...)
			producer.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					if firstErr == nil {
						firstErr = err
					}
					return
				}
				acked++
			})
			time.Sleep(500 * time.Microsecond)
		}
	}()

	start := time.Now()
	shortBrokers := 0
	for time.Since(start) < soak {
		time.Sleep(time.Second)
		mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
		md, err := adm.Metadata(mctx, "soak")
		mcancel()
		if err != nil {
			continue // a slow answer under load is not a fencing
		}
		if len(md.Brokers) != 3 {
			shortBrokers++
			t.Logf("%s: metadata lists brokers %v", time.Since(start).Round(time.Second), md.Brokers.NodeIDs())
		}
	}
	close(stop)
	<-produced
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	var fenced, quorumLost, leadershipLost int
	for i, p := range c.procs {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			switch {
			case strings.Contains(line, `msg="fenced broker"`) && strings.Contains(line, "controlled=false"):
				fenced++
				t.Logf("node %d: %s", i+1, line)
			case strings.Contains(line, "failed to contact quorum of nodes, stepping down"):
				quorumLost++
				t.Logf("node %d: %s", i+1, line)
			case strings.Contains(line, `msg="lost controller leadership"`):
				leadershipLost++
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Printf("soak under %d CPU burners for %s: %d records acknowledged, %d failed; fencings %d, raft step-downs (quorum lost) %d, controller leadership lost %d, metadata polls short of a broker %d\n",
		burners, soak, acked, failed, fenced, quorumLost, leadershipLost, shortBrokers)
	if failed > 0 {
		t.Errorf("%d records failed, the first with %v", failed, firstErr)
	}
	if fenced > 0 || shortBrokers > 0 {
		t.Errorf("live brokers were fenced: %d fence commands, %d metadata polls short of a broker", fenced, shortBrokers)
	}
	if quorumLost > 0 || leadershipLost > 0 {
		t.Errorf("a healthy raft leader stepped down: %d quorum losses, %d controller leadership losses", quorumLost, leadershipLost)
	}
	if acked == 0 {
		t.Error("nothing was acknowledged")
	}
}

// createInsyncTopic creates topic with 3 partitions, RF 3 and
// min.insync.replicas=2, and waits until every partition has its full ISR.
func createInsyncTopic(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitFor(t, "full ISRs", func() error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		if n := len(md.Topics[topic].Partitions); n != 3 {
			return fmt.Errorf("%d partitions", n)
		}
		for _, p := range md.Topics[topic].Partitions {
			if len(p.ISR) != 3 {
				return fmt.Errorf("partition %d: ISR %v", p.Partition, p.ISR)
			}
		}
		return nil
	})
}
