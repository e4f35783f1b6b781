package broker_test

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestRestartToFullISRsTimed measures issue 22's restart goal on an
// in-process three-node cluster: SLUICE_RESTART_PARTITIONS partitions at
// RF 3 (topics of 100), node 3 stopped cleanly and restarted, then killed
// and restarted; it logs how long the restart took and how long until
// every partition's ISR holds all three replicas again. Skipped unless
// the variable is set; it asserts only that the ISRs fill (speed belongs
// to benchmarks). SLUICE_RESTART_PROFILE=path writes a CPU profile of
// each restart (the whole process: all three nodes) to path.false (clean
// stop) and path.true (kill).
//
// The ISRs are read with a Metadata request of their own each time, not
// kadm's Metadata: kadm answers from the client's metadata cache, up to
// MetadataMinAge (5 s) old, which the timing would include.
func TestRestartToFullISRsTimed(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SLUICE_RESTART_PARTITIONS"))
	if n <= 0 {
		t.Skip("set SLUICE_RESTART_PARTITIONS to a partition count")
	}
	c := sluicetest.StartCluster(t, 3)
	cl := c.Client()
	adm := kadm.NewClient(cl)
	const per = 100
	var topics []string
	start := time.Now()
	for i := 0; i*per < n; i++ {
		name := fmt.Sprintf("r%04d", i)
		topics = append(topics, name)
		if _, err := adm.CreateTopic(context.Background(), int32(min(per, n-i*per)), 3, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	full := func() (int, int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return countFullISRs(ctx, cl, topics, 3)
	}
	waitFull := func(what string, since time.Time) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Minute)
		for {
			got, all, err := full()
			if err == nil && got == n && all == n {
				t.Logf("%s: every ISR full after %v", what, time.Since(since))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d ISRs full (%d listed), %v", what, got, n, all, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFull(fmt.Sprintf("created %d partitions", n), start)
	for _, kill := range []bool{false, true} {
		what := "clean stop"
		if kill {
			what = "kill"
			c.Kill(3)
		} else {
			c.Stop(3)
		}
		deadline := time.Now().Add(5 * time.Minute)
		for { // the ISRs shrink first
			got, _, err := full()
			if err == nil && got == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d ISRs still full", what, got)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if path := os.Getenv("SLUICE_RESTART_PROFILE"); path != "" {
			f, err := os.Create(fmt.Sprintf("%s.%v", path, kill))
			if err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				t.Fatal(err)
			}
		}
		start := time.Now()
		c.Restart(3)
		t.Logf("%s, restart of node 3 with %d replicas: Restart returned after %v", what, n, time.Since(start))
		waitFull(what+", restart", start)
		pprof.StopCPUProfile()
	}
}
