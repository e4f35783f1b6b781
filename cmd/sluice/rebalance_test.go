package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue 7, acceptance 2, with real processes: the notes' first story ends
// balanced with no tool run. Topic test (3 partitions, RF 3) starts with
// each broker leading the partition whose preferred replica it is; broker
// 1 is kill -9'd and its leadership moves; it restarts and leads nothing;
// with automatic rebalance checked every second the controller gives every
// partition back to its preferred replica.
func TestThreeProcessAutomaticLeaderRebalance(t *testing.T) {
	c := startClusterProcs(t, 3, "--override", "leader.imbalance.check.interval.seconds=1")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := kadm.NewClient(c.client(kgo.MetadataMinAge(50 * time.Millisecond)))
	if resp, err := adm.CreateTopic(ctx, 3, 3, nil, "test"); err != nil || resp.Err != nil {
		t.Fatalf("create test: %v %v", err, resp.Err)
	}
	// leaders returns each partition's leader and whether it is its
	// preferred replica, once every partition has a leader.
	leaders := func() (map[int32]int32, bool, error) {
		md, err := adm.Metadata(ctx, "test")
		if err != nil {
			return nil, false, err
		}
		out, balanced := map[int32]int32{}, true
		for _, p := range md.Topics["test"].Partitions {
			if p.Leader < 0 || len(p.Replicas) != 3 {
				return nil, false, fmt.Errorf("partition %d: leader %d replicas %v", p.Partition, p.Leader, p.Replicas)
			}
			out[p.Partition] = p.Leader
			balanced = balanced && p.Leader == p.Replicas[0]
		}
		if len(out) != 3 {
			return nil, false, fmt.Errorf("%d partitions", len(out))
		}
		return out, balanced, nil
	}
	waitBalanced := func(what string) {
		waitFor(t, what, func() error {
			l, ok, err := leaders()
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("leaders %v are not the preferred replicas", l)
			}
			return nil
		})
	}
	waitBalanced("preferred leaders after creation")

	c.procs[0].kill()
	waitFor(t, "leaders without broker 1", func() error {
		l, _, err := leaders()
		if err != nil {
			return err
		}
		for p, id := range l {
			if id == 1 {
				return fmt.Errorf("partition %d still led by 1", p)
			}
		}
		return nil
	})
	c.restart(1)
	restarted := time.Now()
	waitBalanced("every preferred replica leading again, with no tool run")
	t.Logf("broker 1 back; preferred leaders restored by the controller %s later", time.Since(restarted).Round(time.Millisecond))
}
