package broker_test

// Followers fetch through incremental fetch sessions (replica_fetcher.go):
// replication, the high watermark and the ISRs work as with full fetches,
// idle partitions stay in sync while the followers' requests name none of
// them, and a follower whose session the leader lost opens another.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestFetchSessionFollowers(t *testing.T) {
	const (
		topic      = "follower-sessions"
		partitions = 24
	)
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	minISR := "3"
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	fullISRs := func(what string) {
		t.Helper()
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			full, _, err := isrCounts(cl, topic, 3, 3)
			if err != nil {
				return err
			}
			if full != partitions {
				return fmt.Errorf("%s: %d of %d partitions with a full ISR", what, full, partitions)
			}
			return nil
		})
	}
	caughtUp := func(want int64) {
		t.Helper()
		sluicetest.WaitFor(t, 20*time.Second, func() error {
			for p := range int32(partitions) {
				for id := 1; id <= 3; id++ {
					leo, hw, ok := c.Node(id).Broker.ReplicaOffsets(topic, p)
					if !ok || leo != want || hw != want {
						return fmt.Errorf("node %d partition %d: log end %d, high watermark %d, want %d", id, p, leo, hw, want)
					}
				}
			}
			return nil
		})
	}
	// Each node leads some partitions and follows the rest from both
	// others: two follower sessions on every node.
	followerSessions := func(nodes ...int) {
		t.Helper()
		sluicetest.WaitFor(t, 20*time.Second, func() error {
			for _, id := range nodes {
				if _, followers, _ := c.Node(id).Broker.FetchSessions(); followers < 2 {
					return fmt.Errorf("node %d holds %d follower sessions, want 2", id, followers)
				}
			}
			return nil
		})
	}
	fullISRs("created")
	followerSessions(1, 2, 3)

	// min.insync.replicas 3 with acks=all: every write needs both
	// followers to fetch it through their sessions.
	if err := produceToEach(cl, topic, partitions, "a"); err != nil {
		t.Fatal(err)
	}
	caughtUp(1)

	// Idle for three replica.lag.time.max.ms (1 s in sluicetest
	// clusters): the followers' requests name no partition, and the
	// leaders still count them as caught up.
	time.Sleep(3 * time.Second)
	fullISRs("idle")
	if err := produceToEach(cl, topic, partitions, "b"); err != nil {
		t.Fatal(err)
	}
	caughtUp(2)

	// A restarted node has lost the sessions it held and its fetchers'
	// sessions: the others lead its partitions now, node 1 opens new
	// sessions with them (its old ones stay until evicted) and catches up.
	c.Restart(1)
	fullISRs("node 1 back")
	if err := produceToEach(cl, topic, partitions, "c"); err != nil {
		t.Fatal(err)
	}
	caughtUp(3)
	followerSessions(2, 3)
}

// An idle follower, whose session's fetches skip every partition, stays in
// the ISRs past replica.lag.time.max.ms (1 s in sluicetest clusters); once
// it stops fetching it leaves them.
func TestFetchSessionIdleFollowerISR(t *testing.T) {
	const (
		topic      = "idle-follower-isr"
		partitions = 6
	)
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, 3, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	isrs := func(what string, want func(isr []int32) error) {
		t.Helper()
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			ps := md.Topics[topic].Partitions
			if len(ps) != partitions {
				return fmt.Errorf("%s: %d partitions", what, len(ps))
			}
			for _, p := range ps {
				if err := want(p.ISR); err != nil {
					return fmt.Errorf("%s: partition %d: %w", what, p.Partition, err)
				}
			}
			return nil
		})
	}
	full := func(isr []int32) error {
		if len(isr) != 3 {
			return fmt.Errorf("ISR %v", isr)
		}
		return nil
	}
	isrs("created", full)
	if err := produceToEach(cl, topic, partitions, "a"); err != nil {
		t.Fatal(err)
	}
	isrs("written", full)
	time.Sleep(3 * time.Second)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Topics[topic].Partitions {
		if len(p.ISR) != 3 {
			t.Fatalf("idle 3 s: partition %d ISR %v, want all three replicas", p.Partition, p.ISR)
		}
	}
	c.Stop(3)
	isrs("node 3 stopped", func(isr []int32) error {
		for _, id := range isr {
			if id == 3 {
				return fmt.Errorf("ISR %v still holds node 3", isr)
			}
		}
		return nil
	})
}
