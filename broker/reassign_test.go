package broker_test

// Partition reassignment (AlterPartitionReassignments,
// ListPartitionReassignments) as a client observes it: partitions moved to
// a broker that joined later while a producer runs, a cancelled move held
// in progress by the replication throttle, and the errors Kafka gives.
// Moves across a controller failover and replication factor changes are in
// reassign_cluster_test.go.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// placement is what Metadata reports for one partition.
type placement struct {
	leader, epoch int32
	replicas, isr []int32
}

func placementOf(cl *kgo.Client, topic string, partition int32) (placement, error) {
	mt, err := topicMetadata(cl, topic)
	if err != nil {
		return placement{}, err
	}
	for _, p := range mt.Partitions {
		if p.Partition == partition {
			isr := slices.Clone(p.ISR)
			slices.Sort(isr)
			return placement{leader: p.Leader, epoch: p.LeaderEpoch, replicas: p.Replicas, isr: isr}, nil
		}
	}
	return placement{}, fmt.Errorf("metadata: no partition %d", partition)
}

// waitPlaced waits until partition has exactly replicas (in that order),
// all of them in the ISR, and a leader among them; it returns the state.
func waitPlaced(t *testing.T, cl *kgo.Client, topic string, partition int32, replicas ...int32) placement {
	t.Helper()
	var st placement
	want := slices.Sorted(slices.Values(replicas))
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		var err error
		if st, err = placementOf(cl, topic, partition); err != nil {
			return err
		}
		if !slices.Equal(st.replicas, replicas) || !slices.Equal(st.isr, want) || !slices.Contains(replicas, st.leader) {
			return fmt.Errorf("%s-%d: replicas %v isr %v leader %d, want replicas %v all in sync", topic, partition, st.replicas, st.isr, st.leader, replicas)
		}
		return nil
	})
	return st
}

// reassign asks for the given targets (nil cancels) and returns each
// partition's error.
func reassign(t *testing.T, adm *kadm.Client, topic string, targets map[int32][]int32) map[int32]error {
	t.Helper()
	var req kadm.AlterPartitionAssignmentsReq
	for p, r := range targets {
		req.Assign(topic, p, r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resps, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatalf("AlterPartitionAssignments: %v", err)
	}
	out := map[int32]error{}
	for p, r := range resps[topic] {
		out[p] = r.Err
	}
	if len(out) != len(targets) {
		t.Fatalf("AlterPartitionAssignments answered %d partitions, asked %d", len(out), len(targets))
	}
	return out
}

// mustReassign is reassign failing the test on any partition error.
func mustReassign(t *testing.T, adm *kadm.Client, topic string, targets map[int32][]int32) {
	t.Helper()
	for p, err := range reassign(t, adm, topic, targets) {
		if err != nil {
			t.Fatalf("reassign %s-%d: %v", topic, p, err)
		}
	}
}

// listReassignments lists the reassignments of the given partitions.
func listReassignments(t *testing.T, adm *kadm.Client, topic string, partitions ...int32) map[int32]kadm.ListPartitionReassignmentsResponse {
	t.Helper()
	var s kadm.TopicsSet
	s.Add(topic, partitions...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resps, err := adm.ListPartitionReassignments(ctx, s)
	if err != nil {
		t.Fatalf("ListPartitionReassignments: %v", err)
	}
	return resps[topic]
}

// backgroundProducer produces numbered acks=all records to topic until
// stopped and remembers every acknowledged value.
type backgroundProducer struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked map[string]bool
	errs  []error
}

func startProducer(cl *kgo.Client, topic string) *backgroundProducer {
	bp := &backgroundProducer{stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]bool{}}
	go func() {
		defer close(bp.done)
		var wg sync.WaitGroup
		for i := 0; ; i++ {
			select {
			case <-bp.stop:
				wg.Wait()
				return
			default:
			}
			v := fmt.Sprintf("live-%d", i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				bp.mu.Lock()
				defer bp.mu.Unlock()
				if err != nil {
					bp.errs = append(bp.errs, err)
					return
				}
				bp.acked[v] = true
			})
			if i%50 == 49 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	return bp
}

// finish stops the producer, waits for every outstanding record and
// returns the acknowledged values.
func (bp *backgroundProducer) finish(t *testing.T) map[string]bool {
	t.Helper()
	close(bp.stop)
	select {
	case <-bp.done:
	case <-time.After(60 * time.Second):
		t.Fatal("producer did not finish")
	}
	if len(bp.errs) > 0 {
		t.Fatalf("producer lost %d records, first: %v", len(bp.errs), bp.errs[0])
	}
	return bp.acked
}

// consumeAllValues reads every partition of topic from the start to its
// end offset and returns the values with how often each was read.
func consumeAllValues(t *testing.T, c *sluicetest.Cluster, topic string) map[string]int {
	t.Helper()
	adm := kadm.NewClient(clusterClient(c))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(0)
	offsets := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		want += o.Offset
		offsets[o.Partition] = kgo.NewOffset().AtStart()
	})
	cl := clusterClient(c, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	got := map[string]int{}
	n := int64(0)
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", n, want, ctx.Err())
		}
		for _, e := range fs.Errors() {
			t.Logf("fetch %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[string(r.Value)]++
			n++
		})
	}
	return got
}

func TestReassignMovesPartitionsToAddedBroker(t *testing.T) {
	const topic = "tp_re_01"
	c := sluicetest.StartCluster(t, 1)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 5, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	pre := valuesN("pre-", 5000)
	if err := produce(cl, topic, pre...); err != nil {
		t.Fatal(err)
	}

	c.AddNode()
	c.WaitForBrokers(2)
	// A new broker holds nothing until partitions are moved to it.
	if _, _, ok := c.Node(2).Broker.ReplicaOffsets(topic, 0); ok {
		t.Fatal("the new broker holds a replica before any reassignment")
	}

	bp := startProducer(clusterClient(c), topic)
	time.Sleep(200 * time.Millisecond)
	moved := map[int32][]int32{0: {2}, 2: {2}, 4: {2}}
	mustReassign(t, adm, topic, moved)
	for p, ra := range listReassignments(t, adm, topic, 0, 1, 2, 3, 4) {
		// Listed only while in progress; then it shows the whole move.
		if _, ok := moved[p]; !ok || !slices.Equal(ra.AddingReplicas, []int32{2}) || !slices.Equal(ra.RemovingReplicas, []int32{1}) || !slices.Equal(ra.Replicas, []int32{2, 1}) {
			t.Errorf("listed %s-%d: replicas %v adding %v removing %v", topic, p, ra.Replicas, ra.AddingReplicas, ra.RemovingReplicas)
		}
	}
	for p := range moved {
		waitPlaced(t, cl, topic, p, 2)
	}
	for _, p := range []int32{1, 3} {
		waitPlaced(t, cl, topic, p, 1)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if l := listReassignments(t, adm, topic, 0, 1, 2, 3, 4); len(l) != 0 {
			return fmt.Errorf("%d reassignments still listed", len(l))
		}
		for p := range moved {
			if _, _, ok := c.Node(1).Broker.ReplicaOffsets(topic, p); ok {
				return fmt.Errorf("node 1 still holds %s-%d", topic, p)
			}
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // the producer keeps writing to the new placement
	acked := bp.finish(t)
	if len(acked) == 0 {
		t.Fatal("the producer got no acknowledgement")
	}

	got := consumeAllValues(t, c, topic)
	for _, v := range pre {
		if got[v] != 1 {
			t.Fatalf("record %q read %d times", v, got[v])
		}
	}
	for v := range acked {
		if got[v] != 1 {
			t.Fatalf("acknowledged record %q read %d times", v, got[v])
		}
	}
	t.Logf("%d records before the move, %d acknowledged during it, all read back", len(pre), len(acked))
}

// throttle sets a replication throttle: rate bytes/s for both directions
// on every listed broker, and every replica of topic partition 0 throttled.
func throttle(t *testing.T, adm *kadm.Client, topic string, rate string, brokers ...int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, b := range brokers {
		op := kadm.SetConfig
		if rate == "" {
			op = kadm.DeleteConfig
		}
		resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{
			{Op: op, Name: "leader.replication.throttled.rate", Value: kmsg.StringPtr(rate)},
			{Op: op, Name: "follower.replication.throttled.rate", Value: kmsg.StringPtr(rate)},
		}, b)
		if err == nil {
			err = resp[0].Err
		}
		if err != nil {
			t.Fatalf("throttle broker %d: %v", b, err)
		}
	}
	op := kadm.SetConfig
	if rate == "" {
		op = kadm.DeleteConfig
	}
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: op, Name: "leader.replication.throttled.replicas", Value: kmsg.StringPtr("*")},
		{Op: op, Name: "follower.replication.throttled.replicas", Value: kmsg.StringPtr("*")},
	}, topic)
	if err == nil {
		err = resp[0].Err
	}
	if err != nil {
		t.Fatalf("throttle topic %s: %v", topic, err)
	}
}

// bigValues are n values of about 1 KiB of random text, which the
// producer cannot compress much, so that a throttled replica cannot catch
// up with one fetch.
func bigValues(prefix string, n int) []string {
	out := valuesN(prefix, n)
	buf := make([]byte, 750)
	for i := range out {
		rand.Read(buf)
		out[i] += "-" + base64.StdEncoding.EncodeToString(buf)
	}
	return out
}

func TestReassignCancelAndErrors(t *testing.T) {
	const topic = "tp_cancel"
	c := sluicetest.StartCluster(t, 2)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	createAssigned(t, cl, topic, []int32{1}, nil)
	values := bigValues("v", 3000)
	if err := produce(cl, topic, values...); err != nil {
		t.Fatal(err)
	}

	errs := reassign(t, adm, topic, map[int32][]int32{0: nil})
	if !errors.Is(errs[0], kerr.NoReassignmentInProgress) {
		t.Fatalf("cancel with nothing in progress: %v, want NO_REASSIGNMENT_IN_PROGRESS", errs[0])
	}
	for name, target := range map[string][]int32{"duplicate": {2, 2}, "empty": {}, "unknown broker": {7}, "negative": {-1}} {
		if errs := reassign(t, adm, topic, map[int32][]int32{0: target}); !errors.Is(errs[0], kerr.InvalidReplicaAssignment) {
			t.Errorf("%s target %v: %v, want INVALID_REPLICA_ASSIGNMENT", name, target, errs[0])
		}
	}
	if errs := reassign(t, adm, topic, map[int32][]int32{5: {2}}); !errors.Is(errs[5], kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown partition: %v, want UNKNOWN_TOPIC_OR_PARTITION", errs[5])
	}
	if errs := reassign(t, adm, "no-such-topic", map[int32][]int32{0: {2}}); !errors.Is(errs[0], kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", errs[0])
	}

	// 1 KB/s: the first throttled fetch takes the debt far beyond the
	// test, so the move stays in progress.
	throttle(t, adm, topic, "1000", 1, 2)
	mustReassign(t, adm, topic, map[int32][]int32{0: {2}})
	// Every broker shows the whole replica set during the move (each
	// applies the change at its own pace, as in Kafka).
	sluicetest.WaitFor(t, 5*time.Second, func() error {
		st, err := placementOf(cl, topic, 0)
		if err != nil {
			return err
		}
		if !slices.Equal(st.replicas, []int32{2, 1}) || st.leader != 1 {
			return fmt.Errorf("during the move Metadata shows replicas %v leader %d, want [2 1] led by 1", st.replicas, st.leader)
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond)
	ra, ok := listReassignments(t, adm, topic, 0)[0]
	if !ok || !slices.Equal(ra.AddingReplicas, []int32{2}) || !slices.Equal(ra.RemovingReplicas, []int32{1}) {
		t.Fatalf("throttled move not listed as in progress: %+v (listed %v)", ra, ok)
	}
	leaderEnd, _, _ := c.Node(1).Broker.ReplicaOffsets(topic, 0)
	if end, _, ok := c.Node(2).Broker.ReplicaOffsets(topic, 0); !ok || end >= leaderEnd {
		t.Fatalf("throttled replica on node 2: end %d (present %v), leader's end %d", end, ok, leaderEnd)
	}
	// Data stays writable during the move.
	if err := produce(cl, topic, "during"); err != nil {
		t.Fatal(err)
	}

	mustReassign(t, adm, topic, map[int32][]int32{0: nil})
	if l := listReassignments(t, adm, topic, 0); len(l) != 0 {
		t.Fatalf("cancelled move still listed: %+v", l)
	}
	waitPlaced(t, cl, topic, 0, 1)
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if _, _, ok := c.Node(2).Broker.ReplicaOffsets(topic, 0); ok {
			return errors.New("node 2 still holds the replica of a cancelled move")
		}
		return nil
	})

	// Without the throttle the move goes through.
	throttle(t, adm, topic, "", 1, 2)
	mustReassign(t, adm, topic, map[int32][]int32{0: {2}})
	if st := waitPlaced(t, cl, topic, 0, 2); st.leader != 2 {
		t.Fatalf("leader %d after moving off node 1", st.leader)
	}
	got := consumeAllValues(t, c, topic)
	if len(got) != len(values)+1 || got["during"] != 1 {
		t.Fatalf("read %d distinct values, want %d", len(got), len(values)+1)
	}
}
