package broker_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// Liveness is decided by broker heartbeats to the active controller, not by
// serf (issue 13, problems 2 and 3).

// otherThan returns the node ids 1..n other than the given ones.
func otherThan(n int, not ...int) []int {
	var ids []int
	for id := 1; id <= n; id++ {
		if !slices.Contains(not, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Issue 13, problem 2: a gossip-only cut of the controller (serf on it
// declares every other broker failed, raft and the Kafka listeners are
// fine) fences nobody. For longer than the session timeout, acks=all
// writes to every partition of an RF 3, min.insync.replicas=2 topic keep
// succeeding, and the controller's Metadata keeps three brokers, the same
// leaders and full ISRs.
func TestGossipCutOfControllerFencesNobody(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	ctrl := c.Controller()
	cl := c.Client()
	createPlaced(t, cl, "gossipcut", [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, map[string]string{"min.insync.replicas": "2"})
	for p := range int32(3) {
		c.WaitForISR("gossipcut", p, 3)
	}
	fromController := pinned(t, c, ctrl)
	leaders := func() ([]int32, error) {
		md := clusterMetadata(t, fromController, "gossipcut")
		if len(md.Brokers) != 3 {
			return nil, fmt.Errorf("metadata lists %d brokers, want 3", len(md.Brokers))
		}
		out := make([]int32, 3)
		for _, p := range md.Topics[0].Partitions {
			if len(p.ISR) != 3 {
				return nil, fmt.Errorf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
			}
			out[p.Partition] = p.Leader
		}
		return out, nil
	}
	before, err := leaders()
	if err != nil {
		t.Fatal(err)
	}
	producer := c.Client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("gossipcut"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(5*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond),
	)

	c.CutGossip(ctrl)
	t.Cleanup(func() { c.HealGossip(ctrl) })
	cut := time.Now()
	// Twice the session timeout: serf declares the others failed within
	// half a second, and a controller that fenced on sessions that never
	// started would do so after one session.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	writes := 0
	for time.Since(cut) < 6*time.Second {
		for p := range int32(3) {
			r := &kgo.Record{Partition: p, Value: []byte("w" + strconv.Itoa(writes))}
			if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("%s into the gossip cut of controller %d: acks=all write to partition %d failed: %v", time.Since(cut).Round(time.Millisecond), ctrl, p, err)
			}
			writes++
		}
		now, err := leaders()
		if err != nil {
			t.Fatalf("%s into the gossip cut of controller %d: %v", time.Since(cut).Round(time.Millisecond), ctrl, err)
		}
		if !slices.Equal(now, before) {
			t.Fatalf("%s into the gossip cut of controller %d: leaders moved from %v to %v", time.Since(cut).Round(time.Millisecond), ctrl, before, now)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("gossip of controller %d cut for %s: %d acks=all writes, leaders %v and full ISRs throughout", ctrl, time.Since(cut).Round(time.Millisecond), writes, before)
}

// Issue 13, problem 3: a broker that cannot reach the active controller
// (its Kafka and raft links to the controller silently dropped both ways)
// while it
// still gossips with everyone and replicates with the third broker is
// fenced within its session timeout plus a margin; its partition gets a
// new leader that takes acks=all writes; and the cut broker itself, whose
// metadata is stale and still names it leader, answers acks=all writes
// with NOT_LEADER_OR_FOLLOWER once its session is over.
func TestBrokerCutFromControllerIsFenced(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	c.WaitForBrokers(3)
	ctrl := c.Controller()
	rest := otherThan(3, ctrl)
	victim, other := rest[0], rest[1]
	cl := c.Client()
	createPlaced(t, cl, "cutoff", [][]int32{{int32(victim), int32(other), int32(ctrl)}}, map[string]string{"min.insync.replicas": "2"})
	c.WaitForISR("cutoff", 0, 3)
	topicID := clusterMetadata(t, pinned(t, c, ctrl), "cutoff").Topics[0].TopicID
	// Every replica has applied the topic and replicates: an acks=all
	// write is acknowledged and every high watermark passes it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("cutoff"))
	if err := first.ProduceSync(ctx, &kgo.Record{Value: []byte("before the cut")}).FirstErr(); err != nil {
		t.Fatalf("acks=all write before the cut: %v", err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		for id := 1; id <= 3; id++ {
			if _, hw, ok := c.Node(id).Broker.ReplicaOffsets("cutoff", 0); !ok || hw != 1 {
				return fmt.Errorf("node %d: high watermark %d", id, hw)
			}
		}
		return nil
	})

	// Dropped, not refused: the connections stay open and go silent, as
	// behind a firewall that drops packets, so only the session timeout
	// can tell the controller (a refused link closes the heartbeat
	// connection, which fences the broker at once).
	c.Drop(victim, ctrl)
	c.Drop(ctrl, victim)
	c.DropRaft(victim, ctrl)
	t.Cleanup(func() {
		c.Heal(victim, ctrl)
		c.Heal(ctrl, victim)
		c.HealRaft(victim, ctrl)
	})
	cut := time.Now()

	// The default broker.session.timeout.ms is 3s; 3s more is the margin
	// for the fence command and a busy machine.
	// Both brokers the producer below is seeded with must show it: a
	// client that reads a broker whose image is a few milliseconds behind
	// would still see the cut broker, may send it its InitProducerID, and
	// that broker cannot reach the controller to answer.
	fromController := pinned(t, c, ctrl)
	fromOther := pinned(t, c, other)
	sluicetest.WaitFor(t, 6*time.Second, func() error {
		for _, from := range []kmsg.Requestor{fromController, fromOther} {
			md := clusterMetadata(t, from, "cutoff")
			for _, b := range md.Brokers {
				if b.NodeID == int32(victim) {
					return fmt.Errorf("broker %d is still registered unfenced", victim)
				}
			}
			if p := md.Topics[0].Partitions[0]; p.Leader < 0 || p.Leader == int32(victim) {
				return fmt.Errorf("cutoff-0: leader %d, ISR %v", p.Leader, p.ISR)
			}
		}
		return nil
	})
	t.Logf("broker %d, cut from controller %d, fenced and replaced as leader after %s", victim, ctrl, time.Since(cut).Round(time.Millisecond))

	producer, err := kgo.NewClient(
		kgo.SeedBrokers(c.Node(ctrl).Addr(), c.Node(other).Addr()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic("cutoff"),
		kgo.RecordDeliveryTimeout(10*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	if err := producer.ProduceSync(ctx, &kgo.Record{Value: []byte("after the fence")}).FirstErr(); err != nil {
		p := clusterMetadata(t, fromController, "cutoff").Topics[0].Partitions[0]
		for id := 1; id <= 3; id++ {
			leo, hw, _ := c.Node(id).Broker.ReplicaOffsets("cutoff", 0)
			t.Logf("node %d: log end %d, high watermark %d", id, leo, hw)
		}
		req := produceRequest("cutoff", topicID, 0, 2000, recordBatch(-1, -1, -1, false, "debug"))
		resp, rerr := req.RequestWith(context.Background(), pinned(t, c, int(p.Leader)))
		if rerr == nil {
			t.Logf("raw produce to %d: %v %v", p.Leader, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), resp.Topics[0].Partitions[0].ErrorMessage)
		}
		t.Fatalf("acks=all write through the new leader (leader %d, ISR %v): %v", p.Leader, p.ISR, err)
	}

	// The cut broker's own image still makes it leader (no raft from the
	// controller); its session is over, so it must not acknowledge.
	req := produceRequest("cutoff", topicID, 0, 2000, recordBatch(-1, -1, -1, false, "on the cut broker"))
	pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer pcancel()
	resp, err := req.RequestWith(pctx, pinned(t, c, victim))
	if err != nil {
		t.Fatalf("produce to the cut broker: %v", err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("the cut broker answered an acks=all write %s after the cut with %v, want NOT_LEADER_OR_FOLLOWER", time.Since(cut).Round(time.Millisecond), kerr.ErrorForCode(code))
	}
}
