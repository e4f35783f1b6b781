package broker_test

// Multi-node replication as clients observe it: acks, the ISR in Metadata,
// failover and truncation by leader epoch. Timings are short
// (replica.lag.time.max.ms=1000); every wait polls with a deadline.

import (
	"bytes"
	"context"
	"errors"
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

// clusterClient is a client of every node that notices leader changes
// quickly and gives up on a record after 15s, so a broken cluster fails the
// test instead of hanging it.
func clusterClient(c *sluicetest.Cluster, opts ...kgo.Opt) *kgo.Client {
	return c.Client(append([]kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.RecordDeliveryTimeout(15 * time.Second)}, opts...)...)
}

// partitionState is what Metadata reports for partition 0 of topic.
type partitionState struct {
	leader, epoch int32
	isr           []int32
}

func metadataOf(cl *kgo.Client, topic string) (partitionState, error) {
	mt, err := topicMetadata(cl, topic)
	if err != nil {
		return partitionState{}, err
	}
	if len(mt.Partitions) != 1 {
		return partitionState{}, fmt.Errorf("metadata: %d partitions", len(mt.Partitions))
	}
	p := mt.Partitions[0]
	isr := slices.Clone(p.ISR)
	slices.Sort(isr)
	return partitionState{leader: p.Leader, epoch: p.LeaderEpoch, isr: isr}, nil
}

// waitState waits until Metadata's partition state satisfies ok.
func waitState(t *testing.T, cl *kgo.Client, topic string, what string, ok func(partitionState) bool) partitionState {
	t.Helper()
	var st partitionState
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		var err error
		st, err = metadataOf(cl, topic)
		if err != nil {
			return err
		}
		if !ok(st) {
			return fmt.Errorf("%s: leader %d epoch %d isr %v", what, st.leader, st.epoch, st.isr)
		}
		return nil
	})
	return st
}

func isrLen(n int) func(partitionState) bool {
	return func(st partitionState) bool { return st.leader >= 0 && len(st.isr) == n }
}

// produce writes values synchronously and returns the first error.
func produce(cl *kgo.Client, topic string, values ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(v)})
	}
	return cl.ProduceSync(ctx, recs...).FirstErr()
}

func valuesN(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, prefix+strconv.Itoa(i))
	}
	return out
}

// consumePartition0 reads partition 0 from the start until want records arrived.
func consumePartition0(t *testing.T, c *sluicetest.Cluster, topic string, want int) []string {
	t.Helper()
	cl := clusterClient(c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", len(got), want)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// waitIdentical waits until every listed node's replica has the same log
// end offset and high watermark, then checks the logs are byte-identical.
func waitIdentical(t *testing.T, c *sluicetest.Cluster, topic string, ids ...int32) int64 {
	t.Helper()
	var end int64
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		var ends, hws []int64
		for _, id := range ids {
			b := c.Node(int(id)).Broker
			leo, hw, ok := b.ReplicaOffsets(topic, 0)
			if !ok {
				return fmt.Errorf("node %d has no replica", id)
			}
			ends, hws = append(ends, leo), append(hws, hw)
		}
		for i := range ends {
			if ends[i] != ends[0] || hws[i] != hws[0] || hws[i] != ends[i] {
				return fmt.Errorf("log end offsets %v, high watermarks %v", ends, hws)
			}
		}
		end = ends[0]
		return nil
	})
	var first []byte
	for i, id := range ids {
		data, err := c.Node(int(id)).Broker.ReplicaRead(topic, 0, 0)
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if i == 0 {
			first = data
		} else if !bytes.Equal(first, data) {
			t.Fatalf("node %d's log (%d bytes) differs from node %d's (%d bytes)", id, len(data), ids[0], len(first))
		}
	}
	return end
}

func TestReplicationAcksAllReachesEveryReplica(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, cl, "rf3", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, cl, "rf3", "full ISR", isrLen(3))
	want := valuesN("v", 200)
	for i := 0; i < len(want); i += 20 {
		if err := produce(cl, "rf3", want[i:i+20]...); err != nil {
			t.Fatal(err)
		}
	}
	if end := waitIdentical(t, c, "rf3", 1, 2, 3); end != 200 {
		t.Fatalf("log end offset %d, want 200", end)
	}
	if got := consumePartition0(t, c, "rf3", 200); !slices.Equal(got, want) {
		t.Fatalf("consumed %d records, not the %d produced in order", len(got), len(want))
	}
	// A follower never serves clients.
	st, _ := metadataOf(cl, "rf3")
	follower := int32(1)
	if st.leader == 1 {
		follower = 2
	}
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "rf3"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl.Broker(int(follower)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("ListOffsets on follower %d: %v, want NOT_LEADER_OR_FOLLOWER", follower, kerr.ErrorForCode(code))
	}
}

func TestReplicationFollowerLossAndReturn(t *testing.T) {
	// Five nodes, three voters: the topic lives on non-voters 4 and 5 and
	// voter 3, so two of its replicas can die while the controller stays.
	c := sluicetest.StartCluster(t, 5)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, all, "loss", []int32{3, 4, 5}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, all, "loss", "full ISR", isrLen(3))
	if err := produce(all, "loss", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}

	c.Kill(int(5))
	waitState(t, all, "loss", "ISR without 5", func(st partitionState) bool { return slices.Equal(st.isr, []int32{3, 4}) })
	if err := produce(all, "loss", valuesN("b", 10)...); err != nil {
		t.Fatalf("acks=all with ISR 2 >= min.insync.replicas 2: %v", err)
	}

	c.Kill(int(4))
	waitState(t, all, "loss", "ISR [3]", func(st partitionState) bool { return slices.Equal(st.isr, []int32{3}) })
	strict := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err := produce(strict, "loss", "refused"); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR 1 < min.insync.replicas 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	one := clusterClient(c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if err := produce(one, "loss", valuesN("c", 5)...); err != nil {
		t.Fatalf("acks=1 with ISR 1: %v", err)
	}

	c.Restart(int(4))
	c.Restart(int(5))
	waitState(t, all, "loss", "ISR back to three", isrLen(3))
	if end := waitIdentical(t, c, "loss", 3, 4, 5); end != 25 {
		t.Fatalf("log end offset %d, want 25", end)
	}
	if err := produce(all, "loss", valuesN("d", 5)...); err != nil {
		t.Fatal(err)
	}
	waitIdentical(t, c, "loss", 3, 4, 5)
}

func TestReplicationLeaderFailover(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, cl, "failover", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	before := waitState(t, cl, "failover", "full ISR", isrLen(3))
	first := valuesN("a", 50)
	if err := produce(cl, "failover", first...); err != nil {
		t.Fatal(err)
	}
	c.Kill(int(before.leader))
	after := waitState(t, cl, "failover", "new leader", func(st partitionState) bool {
		return st.leader >= 0 && st.leader != before.leader && st.epoch > before.epoch
	})
	second := valuesN("b", 50)
	if err := produce(cl, "failover", second...); err != nil {
		t.Fatalf("produce to new leader %d: %v", after.leader, err)
	}
	want := append(first, second...)
	if got := consumePartition0(t, c, "failover", len(want)); !slices.Equal(got, want) {
		t.Fatalf("after failover consumed %v, want %v", got, want)
	}
	c.Restart(int(before.leader))
	waitState(t, cl, "failover", "old leader back in ISR", isrLen(3))
	waitIdentical(t, c, "failover", 1, 2, 3)
}

func TestReplicationDivergentLeaderTruncates(t *testing.T) {
	// RF=2 on non-voters 4 and 5 of a five-node cluster, unclean election
	// on: 4 leads, takes acks=1 writes alone, dies; 5 comes back and is
	// elected uncleanly without them; 4 returns and must drop them.
	c := sluicetest.StartCluster(t, 5)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	one := clusterClient(c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	createAssigned(t, all, "diverge", []int32{4, 5}, map[string]string{
		"min.insync.replicas": "1", "unclean.leader.election.enable": "true",
	})
	waitState(t, all, "diverge", "full ISR on leader 4", func(st partitionState) bool { return st.leader == 4 && len(st.isr) == 2 })
	if err := produce(all, "diverge", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	waitIdentical(t, c, "diverge", 4, 5)

	c.Kill(int(5))
	waitState(t, all, "diverge", "ISR [4]", func(st partitionState) bool { return slices.Equal(st.isr, []int32{4}) })
	if err := produce(one, "diverge", valuesN("lost", 10)...); err != nil {
		t.Fatal(err)
	}
	c.Kill(int(4))
	waitState(t, all, "diverge", "offline", func(st partitionState) bool { return st.leader == -1 })
	c.Restart(int(5))
	waitState(t, all, "diverge", "5 elected uncleanly", func(st partitionState) bool { return st.leader == 5 })
	if err := produce(one, "diverge", valuesN("c", 5)...); err != nil {
		t.Fatal(err)
	}
	c.Restart(int(4))
	waitState(t, all, "diverge", "4 back in the ISR", isrLen(2))
	if end := waitIdentical(t, c, "diverge", 4, 5); end != 15 {
		t.Fatalf("log end offset %d, want 15 (10 before the divergence, 5 after)", end)
	}
	want := append(valuesN("a", 10), valuesN("c", 5)...)
	if got := consumePartition0(t, c, "diverge", 15); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}

func TestReplicationLeaderKillLoopKeepsAckedRecords(t *testing.T) {
	// A steady idempotent acks=all stream while the leader is killed and
	// restarted: every acknowledged record is read back exactly once, in
	// order, and the restarted broker rejoins the ISR each time.
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	createAssigned(t, cl, "loop", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, cl, "loop", "full ISR", isrLen(3))

	var acked []string
	next := 0
	send := func(n int) {
		for range n {
			v := "r" + strconv.Itoa(next)
			next++
			if err := produce(cl, "loop", v); err == nil {
				acked = append(acked, v)
			} else {
				t.Logf("record %s not acknowledged: %v", v, err)
			}
		}
	}
	send(20)
	for round := range 3 {
		st := waitState(t, cl, "loop", "full ISR", isrLen(3))
		c.Kill(int(st.leader))
		start := time.Now()
		waitState(t, cl, "loop", "new leader", func(s partitionState) bool { return s.leader >= 0 && s.leader != st.leader })
		t.Logf("round %d: leader %d killed, new leader after %v", round, st.leader, time.Since(start))
		send(20)
		c.Restart(int(st.leader))
	}
	waitState(t, cl, "loop", "full ISR", isrLen(3))
	// Every record that was written is read once; records whose
	// acknowledgement was lost may be there too, but every acknowledged
	// one must be, in order.
	end := waitIdentical(t, c, "loop", 1, 2, 3)
	got := consumePartition0(t, c, "loop", int(end))
	seen := map[string]bool{}
	for _, v := range got {
		if seen[v] {
			t.Fatalf("record %q read twice", v)
		}
		seen[v] = true
	}
	i := 0
	for _, v := range got {
		if i < len(acked) && v == acked[i] {
			i++
		}
	}
	if i != len(acked) {
		t.Fatalf("acknowledged record %q missing or out of order (read %d records)", acked[i], len(got))
	}
	if len(acked) < 60 {
		t.Fatalf("only %d of 80 records acknowledged", len(acked))
	}
}
