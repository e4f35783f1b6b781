package broker_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// Share-partition state survives the death of the share coordinator of
// the group's __share_group_state partition (followed by the death of the
// partition leader, so that the next leader reads what the new
// coordinator loaded), and the death of the topic partition's leader, on three nodes with franz-go's share consumer: the
// records a member acknowledged (and saw succeed) before a kill -9 are
// never delivered again after the failover, and every other record is
// delivered (at least once). With the in-memory persister of before the
// share coordinator, a new partition leader started the share-partition
// afresh from share.auto.offset.reset (earliest): every acknowledged
// record was delivered again.
func TestShareStateSurvivesFailover(t *testing.T) {
	for _, victim := range []string{"share-coordinator", "partition-leader"} {
		t.Run(victim, func(t *testing.T) { testShareStateFailover(t, victim) })
	}
}

func testShareStateFailover(t *testing.T, victim string) {
	broker.ForceShareGroups(t)
	const topic, total = "sq-durable", 200
	// A small state topic, and (when the coordinator dies) a snapshot
	// every third write, so that the new coordinator replays snapshots
	// and updates.
	opts := []string{"share.coordinator.state.topic.num.partitions=5"}
	if victim == "share-coordinator" {
		opts = append(opts, "share.coordinator.snapshot.update.records.per.snapshot=3")
	}
	c := sluicetest.StartCluster(t, 3, opts...)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, cl, topic, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	before := waitState(t, cl, topic, "full ISR", isrLen(3))
	var id [16]byte
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		mt, err := topicMetadata(cl, topic)
		if err != nil || mt.ErrorCode != 0 || mt.TopicID == [16]byte{} {
			return fmt.Errorf("topic id of %s: %v %v", topic, err, kerr.ErrorForCode(mt.ErrorCode))
		}
		id = mt.TopicID
		return nil
	})

	// A group whose state coordinator is not the partition leader, so
	// that each kill takes one of them only.
	var group string
	var coordinator int32
	for i := 0; group == ""; i++ {
		g := "g-durable-" + strconv.Itoa(i)
		coordinator = findShareCoordinator(t, cl, g+":"+base64.RawURLEncoding.EncodeToString(id[:])+":0")
		if coordinator != before.leader {
			group = g
		}
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if mt, err := topicMetadata(cl, "__share_group_state"); err != nil || mt.ErrorCode != 0 || len(mt.Partitions) != 5 || !mt.IsInternal {
			return fmt.Errorf("__share_group_state: %v %+v, want 5 partitions (share.coordinator.state.topic.num.partitions), internal", err, mt)
		}
		return nil
	})
	mustAlterGroupConfigs(t, cl, group, "set:share.auto.offset.reset=earliest")
	if err := produce(cl, topic, valuesN("", total)...); err != nil {
		t.Fatal(err)
	}

	// Phase 1: accept records until half are acknowledged; a poll's
	// records count as acknowledged once the broker said so.
	var mu sync.Mutex
	var ackErrs []error
	onAck := kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			if r.Err != nil {
				ackErrs = append(ackErrs, r.Err)
			}
		}
	})
	acked := map[string]bool{}
	uncertain := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	first := c.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group), onAck, kgo.FetchMaxWait(500*time.Millisecond))
	for len(acked) < total/2 {
		if ctx.Err() != nil {
			t.Fatalf("phase 1: %d of %d acknowledged when time ran out", len(acked), total/2)
		}
		fs := first.PollRecords(ctx, 20)
		recs := fs.Records()
		for _, r := range recs {
			r.Ack(kgo.AckAccept)
		}
		if err := first.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		failed := len(ackErrs) > 0
		ackErrs = nil
		mu.Unlock()
		for _, r := range recs {
			if failed {
				uncertain[string(r.Value)] = true
			} else {
				acked[string(r.Value)] = true
			}
		}
	}
	first.Close()
	t.Logf("phase 1: %d records acknowledged, %d with an uncertain outcome", len(acked), len(uncertain))

	switch victim {
	case "share-coordinator":
		if coordinator < 0 {
			t.Fatal("no share coordinator to kill (FindCoordinator key type 2 refused)")
		}
		c.Kill(int(coordinator))
		t.Logf("share coordinator %d killed", coordinator)
		sluicetest.WaitFor(t, 30*time.Second, func() error {
			if n := findShareCoordinatorOnce(cl, group+":"+base64.RawURLEncoding.EncodeToString(id[:])+":0"); n < 0 || n == coordinator {
				return fmt.Errorf("no new share coordinator yet (%d)", n)
			}
			return nil
		})
		// Make the partition's next leader read the state from the
		// new coordinator, which has only what it loaded from
		// __share_group_state: bring the killed node back, then kill
		// the partition leader.
		c.Restart(int(coordinator))
		waitState(t, cl, topic, "full ISR again", isrLen(3))
		now := waitState(t, cl, topic, "a leader", func(st partitionState) bool { return st.leader >= 0 })
		c.Kill(int(now.leader))
		t.Logf("then partition leader %d killed", now.leader)
		waitState(t, cl, topic, "new leader", func(st partitionState) bool {
			return st.leader >= 0 && st.leader != now.leader && st.epoch > now.epoch
		})
	case "partition-leader":
		c.Kill(int(before.leader))
		t.Logf("partition leader %d killed", before.leader)
		waitState(t, cl, topic, "new leader", func(st partitionState) bool {
			return st.leader >= 0 && st.leader != before.leader && st.epoch > before.epoch
		})
	}

	// Phase 2: a new member gets every record not acknowledged, and no
	// acknowledged one.
	second := clusterClient(c, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), onAck, kgo.FetchMaxWait(500*time.Millisecond))
	defer second.Close()
	seen := map[string]bool{}
	for {
		missing := 0
		for i := range total {
			v := strconv.Itoa(i)
			if !acked[v] && !seen[v] {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("phase 2: %d records not acknowledged before the kill were never delivered after it", missing)
		}
		fs := second.PollRecords(ctx, 50)
		for _, r := range fs.Records() {
			v := string(r.Value)
			if acked[v] {
				t.Fatalf("record %s (offset %d) was acknowledged before the kill and delivered again after it", v, r.Offset)
			}
			seen[v] = true
			r.Ack(kgo.AckAccept)
		}
	}
	t.Logf("phase 2: %d records delivered after the kill, none acknowledged before it", len(seen))
}

// findShareCoordinator asks for the share coordinator of key (FindCoordinator
// key type 2) until there is one; -2 when the broker answers with an error
// other than COORDINATOR_NOT_AVAILABLE.
func findShareCoordinator(t *testing.T, cl *kgo.Client, key string) int32 {
	t.Helper()
	var node int32
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		node = findShareCoordinatorOnce(cl, key)
		if node == -1 {
			return fmt.Errorf("no share coordinator for %s yet", key)
		}
		return nil
	})
	return node
}

func findShareCoordinatorOnce(cl *kgo.Client, key string) int32 {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{key}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
			return -2
		}
		return -1
	}
	return resp.Coordinators[0].NodeID
}

// disableShareGroups finalizes share.version at 0 on n's cluster (a new
// cluster has it at 1, as a new Kafka 4.4 cluster) and waits until n
// answers with it.
func disableShareGroups(t *testing.T, n *sluicetest.Node) {
	t.Helper()
	resp := updateFeatures(t, n.Addr(), 1, false, featureUpdate("share.version", 0, 2)) // SAFE_DOWNGRADE
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		for _, r := range resp.Results {
			if r.ErrorMessage != nil {
				msg += "; " + *r.ErrorMessage
			}
		}
		t.Fatalf("disabling share.version: %v: %s", kerr.ErrorForCode(resp.ErrorCode), msg)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if got := apiVersionsFeatures(t, n.Addr(), 4).finalized["share.version"]; got != 0 {
			return fmt.Errorf("share.version still finalized at %d", got)
		}
		return nil
	})
}

// The share coordinator's APIs on one node, as a broker calls them: a
// state initialized, written, read back with its summary and deleted;
// FindCoordinator key type 2 refuses a malformed key; __share_group_state
// is internal and closed to a client's produce.
func TestShareCoordinatorAPIs(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := [16]byte{7, 7, 7}
	key := "g1:" + base64.RawURLEncoding.EncodeToString(id[:]) + ":3"
	if node := findShareCoordinator(t, cl, key); node != 1 {
		t.Fatalf("share coordinator %d, want node 1", node)
	}
	if node := findShareCoordinatorOnce(cl, "g1:not-a-topic-id:3"); node != -2 {
		t.Fatalf("a malformed key answered %d, want an error", node)
	}

	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = "g1"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = id
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.Partition, ip.StateEpoch, ip.StartOffset = 3, 1, -1
	it.Partitions = append(it.Partitions, ip)
	init.Topics = append(init.Topics, it)
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		resp, err := init.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	})

	write := kmsg.NewPtrWriteShareGroupStateRequest()
	write.GroupID = "g1"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = id
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.StateEpoch, wp.LeaderEpoch, wp.StartOffset = 3, 1, 4, 10
	for _, b := range [][3]int64{{10, 11, 2}, {12, 14, 0}} {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b[0], b[1], int8(b[2]), 1
		wp.StateBatches = append(wp.StateBatches, sb)
	}
	wt.Partitions = append(wt.Partitions, wp)
	write.Topics = append(write.Topics, wt)
	if resp, err := write.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("write: %v %+v", err, resp)
	}
	wp.LeaderEpoch = 3
	write.Topics[0].Partitions[0] = wp
	if resp, err := write.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("write of an older leader epoch: %v %+v, want FENCED_LEADER_EPOCH", err, resp)
	}

	read := kmsg.NewPtrReadShareGroupStateRequest()
	read.GroupID = "g1"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = id
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = 3, 4
	rt.Partitions = append(rt.Partitions, rp)
	read.Topics = append(read.Topics, rt)
	rresp, err := read.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := rresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != 10 || p.StateEpoch != 1 || len(p.StateBatches) != 2 || p.StateBatches[0].DeliveryState != 2 {
		t.Fatalf("read: %+v", p)
	}

	sum := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sum.GroupID = "g1"
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = id
	sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	sp.Partition, sp.LeaderEpoch = 3, -1
	st.Partitions = append(st.Partitions, sp)
	sum.Topics = append(sum.Topics, st)
	sresp, err := sum.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if p := sresp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StartOffset != 10 || p.LeaderEpoch != 4 || p.DeliveryCompleteCount != 2 {
		t.Fatalf("summary: %+v, want start 10, leader epoch 4, 2 offsets complete", p)
	}

	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = "g1"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = id
	dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	dp.Partition = 3
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	if resp, err := del.RequestWith(ctx, cl); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, resp)
	}
	if sresp, err := sum.RequestWith(ctx, cl); err != nil || sresp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("summary after delete: %v %+v, want UNKNOWN_TOPIC_OR_PARTITION", err, sresp)
	}

	err = cl.ProduceSync(ctx, &kgo.Record{Topic: "__share_group_state", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("a client's produce to __share_group_state: %v, want INVALID_TOPIC_EXCEPTION", err)
	}
}
