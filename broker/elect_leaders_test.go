package broker_test

// Leader balance as an operator sees it: ElectLeaders (preferred and
// unclean) through kadm, the automatic rebalance, and what an acks=all
// producer on the old leader observes when an election moves leadership.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// storyPlacement is the notes' topic test: 3 partitions, 3 replicas, each
// broker the preferred replica of one partition, broker 1 of test-2.
var storyPlacement = [][]int32{{2, 3, 1}, {3, 1, 2}, {1, 2, 3}}

// partitionsOf is every partition's state of topic, by partition, as
// Metadata reports it, with the replicas in assignment order.
func partitionsOf(cl *kgo.Client, topic string) (map[int32]kmsg.MetadataResponseTopicPartition, error) {
	mt, err := topicMetadata(cl, topic)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32]kmsg.MetadataResponseTopicPartition{}
	for _, p := range mt.Partitions {
		out[p.Partition] = p
	}
	return out, nil
}

// waitPartitions waits until every partition of topic satisfies ok.
func waitPartitions(t *testing.T, cl *kgo.Client, topic, what string, ok func(p kmsg.MetadataResponseTopicPartition) bool) map[int32]kmsg.MetadataResponseTopicPartition {
	t.Helper()
	var parts map[int32]kmsg.MetadataResponseTopicPartition
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		var err error
		if parts, err = partitionsOf(cl, topic); err != nil {
			return err
		}
		for i, p := range parts {
			if !ok(p) {
				return fmt.Errorf("%s: %s-%d leader %d replicas %v ISR %v", what, topic, i, p.Leader, p.Replicas, p.ISR)
			}
		}
		return nil
	})
	return parts
}

func preferredLeads(p kmsg.MetadataResponseTopicPartition) bool {
	return len(p.Replicas) > 0 && p.Leader == p.Replicas[0]
}

func fullISR(p kmsg.MetadataResponseTopicPartition) bool {
	return p.Leader >= 0 && len(p.ISR) == len(p.Replicas)
}

// electCodes runs ElectLeaders and returns "topic-partition" → error.
func electCodes(t *testing.T, adm *kadm.Client, how kadm.ElectLeadersHow, s kadm.TopicsSet) map[string]error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rs, err := adm.ElectLeaders(ctx, how, s)
	if err != nil {
		t.Fatalf("ElectLeaders: %v", err)
	}
	out := map[string]error{}
	for topic, ps := range rs {
		for p, r := range ps {
			out[fmt.Sprintf("%s-%d", topic, p)] = r.Err
		}
	}
	return out
}

// wantCodes checks electCodes' answer against want (nil: success).
func wantCodes(t *testing.T, what string, got map[string]error, want map[string]error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: results %v, want %v", what, got, want)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok || (w == nil) != (g == nil) || (w != nil && !errors.Is(g, w)) {
			t.Fatalf("%s: results %v, want %v", what, got, want)
		}
	}
}

// unbalance kills and restarts each broker in ids in turn, waiting for the
// leaders to move away and the ISR to fill again, so the partitions those
// brokers preferred end up led elsewhere.
func unbalance(t *testing.T, c *sluicetest.Cluster, cl *kgo.Client, topic string, ids ...int) {
	t.Helper()
	for _, id := range ids {
		c.Kill(id)
		waitPartitions(t, cl, topic, fmt.Sprintf("broker %d leads nothing", id), func(p kmsg.MetadataResponseTopicPartition) bool {
			return p.Leader >= 0 && p.Leader != int32(id)
		})
		c.Restart(id)
		waitPartitions(t, cl, topic, "full ISR", fullISR)
	}
}

func TestElectLeadersPreferredAfterRestart(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	createPlaced(t, cl, "test", storyPlacement, nil)
	waitPartitions(t, cl, "test", "preferred leaders with full ISR", func(p kmsg.MetadataResponseTopicPartition) bool {
		return preferredLeads(p) && fullISR(p)
	})

	// Broker 1 dies: test-2 moves away, and while 1 is down its preferred
	// replica cannot take it back.
	c.Kill(1)
	waitPartitions(t, cl, "test", "broker 1 leads nothing", func(p kmsg.MetadataResponseTopicPartition) bool {
		return p.Leader >= 0 && p.Leader != 1
	})
	wantCodes(t, "preferred election with broker 1 down",
		electCodes(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{"test": {2: {}, 9: {}}, "nosuch": {0: {}}}),
		map[string]error{"test-2": kerr.PreferredLeaderNotAvailable, "test-9": kerr.UnknownTopicOrPartition, "nosuch-0": kerr.UnknownTopicOrPartition})
	c.Restart(1)
	waitPartitions(t, cl, "test", "full ISR", fullISR)
	// Broker 3 too, so that two partitions are led by a broker that is
	// not their preferred replica.
	unbalance(t, c, cl, "test", 3)
	parts, err := partitionsOf(cl, "test")
	if err != nil {
		t.Fatal(err)
	}
	if parts[2].Leader == 1 || parts[1].Leader == 3 {
		t.Fatalf("leadership came back by itself: test-1 leader %d, test-2 leader %d", parts[1].Leader, parts[2].Leader)
	}

	wantCodes(t, "preferred election for test-2",
		electCodes(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{"test": {2: {}}}),
		map[string]error{"test-2": nil})
	waitPartitions(t, cl, "test", "test-2 led by broker 1", func(p kmsg.MetadataResponseTopicPartition) bool {
		return p.Partition != 2 || p.Leader == 1
	})

	// All partitions: test-1 is elected; the others needed nothing and,
	// as with KRaft, are left out of the answer.
	wantCodes(t, "preferred election for all partitions",
		electCodes(t, adm, kadm.ElectPreferredReplica, nil),
		map[string]error{"test-1": nil})
	waitPartitions(t, cl, "test", "every preferred replica leads", preferredLeads)

	wantCodes(t, "second run for all partitions", electCodes(t, adm, kadm.ElectPreferredReplica, nil), map[string]error{})
	notNeeded := map[string]error{"test-0": kerr.ElectionNotNeeded, "test-1": kerr.ElectionNotNeeded, "test-2": kerr.ElectionNotNeeded}
	wantCodes(t, "second run for listed partitions",
		electCodes(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{"test": {0: {}, 1: {}, 2: {}}}), notNeeded)

	// v0 has no election type and no top-level error code.
	v := kversion.Stable()
	v.SetMaxKeyVersion(43, 0)
	v0 := kadm.NewClient(clusterClient(c, kgo.MaxVersions(v)))
	wantCodes(t, "v0 request", electCodes(t, v0, kadm.ElectPreferredReplica, kadm.TopicsSet{"test": {0: {}, 1: {}, 2: {}}}), notNeeded)
}

func TestElectLeadersAutomaticRebalance(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "leader.imbalance.check.interval.seconds=1")
	cl := clusterClient(c)
	createPlaced(t, cl, "test", storyPlacement, nil)
	waitPartitions(t, cl, "test", "preferred leaders with full ISR", func(p kmsg.MetadataResponseTopicPartition) bool {
		return preferredLeads(p) && fullISR(p)
	})
	c.Kill(1)
	waitPartitions(t, cl, "test", "broker 1 leads nothing", func(p kmsg.MetadataResponseTopicPartition) bool {
		return p.Leader >= 0 && p.Leader != 1
	})
	c.Restart(1)
	// No request: the controller's periodic check moves test-2 back once
	// broker 1 is in its ISR again.
	waitPartitions(t, cl, "test", "balanced again", func(p kmsg.MetadataResponseTopicPartition) bool {
		return preferredLeads(p) && fullISR(p)
	})
}

func TestElectLeadersUnclean(t *testing.T) {
	// Five nodes, voters 1–3: the replicas sit on non-voters 4 and 5 so
	// that with both down the controller quorum stands.
	c := sluicetest.StartCluster(t, 5)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	one := clusterClient(c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	adm := kadm.NewClient(all)
	createAssigned(t, all, "offline", []int32{4, 5}, map[string]string{"min.insync.replicas": "1"})
	waitState(t, all, "offline", "full ISR on leader 4", func(st partitionState) bool { return st.leader == 4 && len(st.isr) == 2 })
	if err := produce(all, "offline", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	waitIdentical(t, c, "offline", 4, 5)
	wantCodes(t, "unclean election with a leader",
		electCodes(t, adm, kadm.ElectLiveReplica, kadm.TopicsSet{"offline": {0: {}}}),
		map[string]error{"offline-0": kerr.ElectionNotNeeded})

	// 5 dies, 4 alone takes acks=1 writes and dies too: the partition is
	// offline with ISR [4].
	c.Kill(5)
	waitState(t, all, "offline", "ISR [4]", func(st partitionState) bool { return slices.Equal(st.isr, []int32{4}) })
	if err := produce(one, "offline", valuesN("lost", 10)...); err != nil {
		t.Fatal(err)
	}
	c.Kill(4)
	waitState(t, all, "offline", "offline", func(st partitionState) bool { return st.leader == -1 })
	wantCodes(t, "unclean election with every replica down",
		electCodes(t, adm, kadm.ElectLiveReplica, kadm.TopicsSet{"offline": {0: {}}}),
		map[string]error{"offline-0": kerr.EligibleLeadersNotAvailable})

	// 5 returns out of sync and, with unclean election off, stays
	// follower of nobody; a preferred election cannot help.
	c.Restart(5)
	c.WaitForBrokers(4)
	if st, err := metadataOf(all, "offline"); err != nil || st.leader != -1 {
		t.Fatalf("after 5 returned: leader %d (err %v), want still offline", st.leader, err)
	}
	wantCodes(t, "preferred election of the offline partition",
		electCodes(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{"offline": {0: {}}}),
		map[string]error{"offline-0": kerr.PreferredLeaderNotAvailable})

	// The unclean election makes 5 leader with an ISR of itself.
	wantCodes(t, "unclean election",
		electCodes(t, adm, kadm.ElectLiveReplica, kadm.TopicsSet{"offline": {0: {}}}),
		map[string]error{"offline-0": nil})
	waitState(t, all, "offline", "5 elected uncleanly", func(st partitionState) bool { return st.leader == 5 && slices.Equal(st.isr, []int32{5}) })
	if err := produce(one, "offline", valuesN("c", 5)...); err != nil {
		t.Fatal(err)
	}
	c.Restart(4)
	waitState(t, all, "offline", "4 back in the ISR", isrLen(2))
	if end := waitIdentical(t, c, "offline", 4, 5); end != 15 {
		t.Fatalf("log end offset %d, want 15 (10 before the unclean election, 5 after)", end)
	}
}

func TestElectLeadersFailsInFlightAcksAllWrites(t *testing.T) {
	// A long replica.lag.time.max.ms keeps a follower that cannot fetch in
	// the ISR, so an acks=all write on the leader stays unacknowledged
	// until the election takes the leadership away.
	c := sluicetest.StartCluster(t, 3, "replica.lag.time.max.ms=30000")
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	createAssigned(t, cl, "inflight", []int32{2, 1, 3}, nil)
	waitState(t, cl, "inflight", "full ISR on leader 2", func(st partitionState) bool { return st.leader == 2 && len(st.isr) == 3 })
	if err := produce(cl, "inflight", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	// A clean stop hands the leadership to 1; 2 returns as follower.
	c.Stop(2)
	waitState(t, cl, "inflight", "leader 1", func(st partitionState) bool { return st.leader == 1 })
	c.Restart(2)
	waitState(t, cl, "inflight", "full ISR on leader 1", func(st partitionState) bool { return st.leader == 1 && len(st.isr) == 3 })

	// 3 can no longer fetch from 1: the high watermark stops, and an
	// acks=all write to 1 waits.
	tds, err := adm.ListTopics(context.Background(), "inflight")
	if err != nil {
		t.Fatal(err)
	}
	topicID := tds["inflight"].ID
	c.Cut(3, 1)
	_, hwBefore, _ := c.Node(1).Broker.ReplicaOffsets("inflight", 0)
	type answer struct {
		code int16
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		req := produceRequest("inflight", topicID, 0, 20000, recordBatch(-1, -1, -1, false, "in-flight"))
		ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			done <- answer{err: err}
			return
		}
		done <- answer{code: resp.Topics[0].Partitions[0].ErrorCode}
	}()
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		leo, hw, _ := c.Node(1).Broker.ReplicaOffsets("inflight", 0)
		if leo <= hwBefore || hw != hwBefore {
			return fmt.Errorf("leader log end %d, high watermark %d (was %d): write not yet waiting", leo, hw, hwBefore)
		}
		return nil
	})
	select {
	case a := <-done:
		t.Fatalf("the acks=all write was answered before the election: code %d err %v", a.code, a.err)
	default:
	}

	wantCodes(t, "preferred election moving leadership from 1 to 2",
		electCodes(t, adm, kadm.ElectPreferredReplica, kadm.TopicsSet{"inflight": {0: {}}}),
		map[string]error{"inflight-0": nil})
	select {
	case a := <-done:
		if a.err != nil || a.code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("in-flight acks=all write on the old leader answered code %d (%v) err %v, want NOT_LEADER_OR_FOLLOWER",
				a.code, kerr.ErrorForCode(a.code), a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight acks=all write was not answered after the leader changed")
	}
	c.Heal(3, 1)
	waitState(t, cl, "inflight", "full ISR on leader 2", func(st partitionState) bool { return st.leader == 2 && len(st.isr) == 3 })
	// The producer's retry goes to the new leader; everything acknowledged
	// is there, in order.
	if err := produce(cl, "inflight", valuesN("b", 10)...); err != nil {
		t.Fatal(err)
	}
	got := consumePartition0(t, c, "inflight", 20)
	var acked []string
	for _, v := range got {
		if v != "in-flight" {
			acked = append(acked, v)
		}
	}
	if want := append(valuesN("a", 10), valuesN("b", 10)...); !slices.Equal(acked, want) {
		t.Fatalf("read %v, want the 20 acknowledged records in order (the unacknowledged one may be there too)", got)
	}
}
