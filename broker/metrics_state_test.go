package broker_test

// The state families (metrics_state.go) scraped over HTTP from a real
// three-node cluster while kgo clients produce, a follower is cut off from
// its leader, a leader stops and a group commits part of what it read.

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// scrapeAll scrapes every node of ids.
func scrapeAll(c *sluicetest.Cluster, ids ...int) (map[int]map[string]float64, error) {
	out := map[int]map[string]float64{}
	for _, id := range ids {
		m, err := scrape(c.Node(id).Broker.MetricsAddr())
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", id, err)
		}
		out[id] = m
	}
	return out, nil
}

// sumOver sums series over the scrapes (0 for a node without it).
func sumOver(scrapes map[int]map[string]float64, series string) float64 {
	var v float64
	for _, m := range scrapes {
		v += m[series]
	}
	return v
}

// TestMetricsStateCluster: raft and serf state agree with the cluster, the
// log families follow what a client produced on every replica, a
// follower cut from its leader counts an ISR shrink on the leader and an
// expand when it returns, a stopped leader counts elections on the
// active controller and leaves its single-replica topic offline, the
// stop of a topic's only in-sync replica counts an unclean election, and a group that committed part of a topic shows the
// rest as lag on its coordinator.
func TestMetricsStateCluster(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "metrics.listener=127.0.0.1:0")
	c.WaitForBrokers(3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// Raft and serf: every node names the same raft leader, the active
	// controller; exactly one is leader; three voters, three alive members.
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		ctrl := c.Controller()
		all, err := scrapeAll(c, 1, 2, 3)
		if err != nil {
			return err
		}
		if n := sumOver(all, `kafka_server_raftmetrics_current_state{current_state="leader"}`); n != 1 {
			return fmt.Errorf("%v nodes say they lead raft", n)
		}
		for id, m := range all {
			if got := m["kafka_server_raftmetrics_current_leader"]; got != float64(ctrl) {
				return fmt.Errorf("node %d: current_leader %v, the active controller is %d", id, got, ctrl)
			}
			if m["sluice_raft_voters"] != 3 || m[`sluice_serf_members{state="alive"}`] != 3 {
				return fmt.Errorf("node %d: voters %v, alive members %v", id, m["sluice_raft_voters"], m[`sluice_serf_members{state="alive"}`])
			}
			for _, k := range []string{"kafka_log_logcleaner_deadthreadcount", "kafka_log_logcleanermanager_uncleanable_partitions_count"} {
				if v, ok := m[k]; !ok || v != 0 {
					return fmt.Errorf("node %d: %s = %v (exposed: %v), want 0", id, k, v, ok)
				}
			}
			if m["kafka_server_raftmetrics_current_epoch"] < 1 || m["kafka_server_raftmetrics_high_watermark"] < 1 ||
				m["kafka_server_brokermetadatametrics_last_applied_record_offset"] > m["kafka_server_raftmetrics_log_end_offset"] {
				return fmt.Errorf("node %d: epoch %v, high watermark %v, applied %v, log end %v", id,
					m["kafka_server_raftmetrics_current_epoch"], m["kafka_server_raftmetrics_high_watermark"],
					m["kafka_server_brokermetadatametrics_last_applied_record_offset"], m["kafka_server_raftmetrics_log_end_offset"])
			}
		}
		return nil
	})

	// A partition led by a node that is not the controller, with the
	// controller and a third node as followers (as
	// TestReplicationCutOffFollowerLeavesAndRejoinsISR).
	ctrl := c.Controller()
	rest := otherThan(3, ctrl)
	leader, follower := int32(rest[0]), int32(rest[1])
	h := &batchBytes{}
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.WithHooks(h),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	createAssigned(t, all, "state", []int32{leader, int32(ctrl), follower}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, all, "state", "full ISR on the leader", isrLen(3))
	if err := produce(all, "state", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	// kgo may call the batch hook just after the produce returns: the
	// hook's sum is read again on every try.
	var wantBytes int
	size := `kafka_log_log_size{partition="0",topic="state"}`
	end := `kafka_log_log_logendoffset{partition="0",topic="state"}`
	start := `kafka_log_log_logstartoffset{partition="0",topic="state"}`
	segs := `kafka_log_log_numlogsegments{partition="0",topic="state"}`
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		h.mu.Lock()
		wantBytes = h.bytes
		h.mu.Unlock()
		scrapes, err := scrapeAll(c, 1, 2, 3)
		if err != nil {
			return err
		}
		for id, m := range scrapes {
			if wantBytes == 0 || m[size] != float64(wantBytes) || m[end] != 10 || m[start] != 0 || m[segs] != 1 {
				return fmt.Errorf("node %d: size %v (produced %d batch bytes), end %v, start %v, segments %v", id, m[size], wantBytes, m[end], m[start], m[segs])
			}
		}
		return nil
	})
	t.Logf("every replica: %s = %d, %s = 10", size, wantBytes, end)

	// The follower cut from the leader leaves the ISR: the leader counts
	// a shrink; healed, it comes back: an expand.
	leaderAddr := c.Node(int(leader)).Broker.MetricsAddr()
	before, err := scrape(leaderAddr)
	if err != nil {
		t.Fatal(err)
	}
	shrinks, expands := "kafka_server_replicamanager_isrshrinks_total", "kafka_server_replicamanager_isrexpands_total"
	c.Cut(int(follower), int(leader))
	if err := produce(all, "state", valuesN("b", 10)...); err != nil {
		t.Fatalf("acks=all with a follower cut off: %v", err)
	}
	waitState(t, all, "state", "ISR without the cut follower", isrLen(2))
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		m, err := scrape(leaderAddr)
		if err != nil {
			return err
		}
		if m[shrinks] <= before[shrinks] {
			return fmt.Errorf("%s on the leader is %v, was %v", shrinks, m[shrinks], before[shrinks])
		}
		return nil
	})
	c.Heal(int(follower), int(leader))
	waitState(t, all, "state", "the follower back in the ISR", isrLen(3))
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		m, err := scrape(leaderAddr)
		if err != nil {
			return err
		}
		if m[expands] <= before[expands] {
			return fmt.Errorf("%s on the leader is %v, was %v", expands, m[expands], before[expands])
		}
		t.Logf("leader %d: %s %v → %v, %s %v → %v", leader, shrinks, before[shrinks], m[shrinks], expands, before[expands], m[expands])
		return nil
	})

	// The leader stops: the active controller elects another replica
	// (clean: it is in the ISR).
	elections := "kafka_controller_controllerstats_leaderelectionrateandtimems_count"
	unclean := "kafka_controller_controllerstats_uncleanleaderelectionspersec_total"
	// A topic with its one replica on the leader goes offline with it.
	createAssigned(t, all, "alone", []int32{leader}, nil)
	waitState(t, all, "alone", "a leader", func(st partitionState) bool { return st.leader == leader })
	others := otherThan(3, int(leader))
	prev, err := scrapeAll(c, others...)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(int(leader))
	waitState(t, all, "state", "a new leader", func(st partitionState) bool { return st.leader >= 0 && st.leader != leader })
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		now, err := scrapeAll(c, others...)
		if err != nil {
			return err
		}
		if sumOver(now, elections) <= sumOver(prev, elections) {
			return fmt.Errorf("%s summed over nodes %v: %v, was %v", elections, others, sumOver(now, elections), sumOver(prev, elections))
		}
		if sumOver(now, unclean) != sumOver(prev, unclean) {
			return fmt.Errorf("%s grew from %v to %v on a clean election", unclean, sumOver(prev, unclean), sumOver(now, unclean))
		}
		t.Logf("node %d stopped: %s over nodes %v %v → %v", leader, elections, others, sumOver(prev, elections), sumOver(now, elections))
		return nil
	})
	offline := "kafka_controller_kafkacontroller_offlinepartitionscount"
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		now, err := scrapeAll(c, others...)
		if err != nil {
			return err
		}
		if v := sumOver(now, offline); v != 1 {
			return fmt.Errorf("%s summed over nodes %v: %v, want 1 (topic alone)", offline, others, v)
		}
		return nil
	})
	c.Restart(int(leader))
	c.WaitForBrokers(3)
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		now, err := scrapeAll(c, 1, 2, 3)
		if err != nil {
			return err
		}
		if v := sumOver(now, offline); v != 0 {
			return fmt.Errorf("%s summed over the nodes: %v after node %d returned", offline, v, leader)
		}
		return nil
	})
	t.Logf("node %d stopped: %s 1 (topic alone), 0 once it returned", leader, offline)

	// An unclean election: the one in-sync replica of a topic that allows
	// them stops while the other replica is out of the ISR.
	ctrl = c.Controller()
	rest = otherThan(3, ctrl)
	inSync, outOfSync := rest[0], rest[1]
	createAssigned(t, all, "unclean", []int32{int32(inSync), int32(outOfSync)}, map[string]string{"unclean.leader.election.enable": "true"})
	waitState(t, all, "unclean", "full ISR", isrLen(2))
	c.Cut(outOfSync, inSync)
	if err := produce(all, "unclean", valuesN("u", 5)...); err != nil {
		t.Fatalf("acks=all with a follower cut off: %v", err)
	}
	waitState(t, all, "unclean", "ISR of the leader alone", isrLen(1))
	others = otherThan(3, inSync)
	prev, err = scrapeAll(c, others...)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(inSync)
	c.Heal(outOfSync, inSync)
	waitState(t, all, "unclean", "the out-of-sync replica leading", func(st partitionState) bool { return st.leader == int32(outOfSync) })
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		now, err := scrapeAll(c, others...)
		if err != nil {
			return err
		}
		if got := sumOver(now, unclean) - sumOver(prev, unclean); got != 1 {
			return fmt.Errorf("%s summed over nodes %v grew by %v, want 1", unclean, others, got)
		}
		t.Logf("node %d (the ISR) stopped: %s over nodes %v %v → %v", inSync, unclean, others, sumOver(prev, unclean), sumOver(now, unclean))
		return nil
	})
	c.Restart(inSync)
	c.WaitForBrokers(3)

	// A group reads 30 of 50 records of a three-partition topic and
	// commits them: its lag is 20 on the coordinator, its committed
	// offsets sum to 30.
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "lagged"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		c.WaitForISR("lagged", p, 3)
	}
	prod := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	const produced, consumed = 50, 30
	for i := range produced {
		prod.Produce(ctx, &kgo.Record{Topic: "lagged", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := clusterClient(c, kgo.ConsumerGroup("lagging"), kgo.ConsumeTopics("lagged"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	var read []*kgo.Record
	for len(read) < consumed {
		fs := cons.PollRecords(ctx, consumed-len(read))
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", len(read), consumed, err)
		}
		read = append(read, fs.Records()...)
	}
	if err := cons.CommitRecords(ctx, read...); err != nil {
		t.Fatal(err)
	}
	cons.Close()
	lagSeries := func(m map[string]float64, family string) float64 {
		var v float64
		for p := range 3 {
			v += m[fmt.Sprintf(`%s{consumergroup="lagging",partition="%d",topic="lagged"}`, family, p)]
		}
		return v
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		scrapes, err := scrapeAll(c, 1, 2, 3)
		if err != nil {
			return err
		}
		var lag, committed float64
		for _, m := range scrapes {
			lag += lagSeries(m, "kafka_consumergroup_lag")
			committed += lagSeries(m, "kafka_consumergroup_current_offset")
		}
		if lag != produced-consumed || committed != consumed {
			return fmt.Errorf("kafka_consumergroup_lag sums to %v (want %d), current_offset to %v (want %d)", lag, produced-consumed, committed, consumed)
		}
		t.Logf("group lagging: lag %v, committed %v over the nodes", lag, committed)
		return nil
	})
}
