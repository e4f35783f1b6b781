package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// failoverRounds is how many times TestThreeProcessLeaderKill9Loop kills
// the leader: SLUICE_FAILOVER_ROUNDS, 3 by default (issue 4's acceptance
// run uses 20).
func failoverRounds(t *testing.T) int {
	s := os.Getenv("SLUICE_FAILOVER_ROUNDS")
	if s == "" {
		return 3
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("SLUICE_FAILOVER_ROUNDS=%q: want a positive number", s)
	}
	return n
}

// ackLog records, in acknowledgement order, the values of acknowledged
// records and when each acknowledgement arrived.
type ackLog struct {
	mu     sync.Mutex
	values []string
	times  []time.Time
	failed int
}

func (a *ackLog) add(v string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.values = append(a.values, v)
	a.times = append(a.times, at)
}

// firstAfter returns the time of the first acknowledgement after t.
func (a *ackLog) firstAfter(t time.Time) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, _ := slices.BinarySearchFunc(a.times, t, func(x, t time.Time) int { return x.Compare(t) })
	if i == len(a.times) {
		return time.Time{}, false
	}
	return a.times[i], true
}

// Issue 4, acceptance 3: a steady idempotent acks=all stream (RF=3,
// min.insync.replicas=2) while the partition leader's process is kill -9'd
// and restarted, round after round. Each round reports how long after the
// kill the next record was acknowledged; the killed broker must rejoin the
// ISR; at the end a consumer reading from the beginning sees every
// acknowledged record exactly once, in order. The durations are printed,
// not asserted.
func TestThreeProcessLeaderKill9Loop(t *testing.T) {
	rounds := failoverRounds(t)
	c := startClusterProcs(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+2)*time.Minute)
	defer cancel()

	// The client notices leader changes as soon as a broker tells it:
	// franz-go's default 5s minimum metadata age would hide the failover.
	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "stream")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	state := func() (leader int32, isr int, err error) {
		md, err := adm.Metadata(ctx, "stream")
		if err != nil {
			return -1, 0, err
		}
		p, ok := md.Topics["stream"].Partitions[0]
		if !ok {
			return -1, 0, fmt.Errorf("stream-0 not in metadata")
		}
		return p.Leader, len(p.ISR), nil
	}
	waitFullISR := func() int32 {
		var leader int32
		waitFor(t, "stream-0 with a leader and a full ISR", func() error {
			var isr int
			var err error
			if leader, isr, err = state(); err != nil {
				return err
			}
			if leader < 0 || isr != 3 {
				return fmt.Errorf("leader %d, ISR of %d", leader, isr)
			}
			return nil
		})
		return leader
	}
	waitFullISR()

	producer := c.client(fast,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("stream"),
		kgo.RecordDeliveryTimeout(time.Minute),
		kgo.MaxBufferedRecords(1000),
	)
	acks := &ackLog{}
	stop := make(chan struct{})
	streamDone := make(chan struct{})
	go func() {
		defer close(streamDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := "r" + strconv.Itoa(i)
			producer.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					acks.mu.Lock()
					acks.failed++
					acks.mu.Unlock()
					return
				}
				acks.add(v, time.Now())
			})
			time.Sleep(time.Millisecond)
		}
	}()

	var served []time.Duration
	for round := 1; round <= rounds; round++ {
		leader := waitFullISR()
		time.Sleep(200 * time.Millisecond) // some stream to the full ISR
		c.procs[leader-1].kill()
		killed := time.Now()
		var next int32
		waitFor(t, "a new leader", func() error {
			l, _, err := state()
			if err != nil {
				return err
			}
			if l < 0 || l == leader {
				return fmt.Errorf("leader %d", l)
			}
			next = l
			return nil
		})
		var ackedAt time.Time
		waitFor(t, "an acknowledgement after the kill", func() error {
			var ok bool
			if ackedAt, ok = acks.firstAfter(killed); !ok {
				return fmt.Errorf("none yet")
			}
			return nil
		})
		d := ackedAt.Sub(killed)
		served = append(served, d)
		t.Logf("round %d: leader %d killed; leader %d; next acknowledgement after %s", round, leader, next, d.Round(time.Millisecond))
		c.restart(leader)
	}
	waitFullISR()
	close(stop)
	<-streamDone
	if err := producer.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	acks.mu.Lock()
	acked, failed := slices.Clone(acks.values), acks.failed
	acks.mu.Unlock()
	if failed > 0 {
		t.Errorf("%d records failed (the delivery timeout is a minute; every record should be acknowledged)", failed)
	}

	// Read the whole partition from the beginning and match it with the
	// acknowledgements.
	ends := c.procs[0].endOffsets("stream")
	got := c.procs[0].consumeAll("stream", ends)[0]
	seen := make(map[string]bool, len(got))
	for _, r := range got {
		if seen[string(r.Value)] {
			t.Fatalf("record %q read twice", r.Value)
		}
		seen[string(r.Value)] = true
	}
	i := 0
	for _, r := range got {
		if i < len(acked) && string(r.Value) == acked[i] {
			i++
		}
	}
	if i != len(acked) {
		t.Fatalf("acknowledged record %q (number %d of %d) missing or out of order; %d records read", acked[i], i, len(acked), len(got))
	}

	sorted := slices.Clone(served)
	slices.Sort(sorted)
	fmt.Printf("leader kill -9 rounds: %d; next acknowledgement after the kill: median %s, worst %s; %d records acknowledged, %d read, 0 missing, 0 duplicated\n",
		rounds, sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), len(acked), len(got))
}
