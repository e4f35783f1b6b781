package broker_test

// Unclean leader election enabled by an operator while a partition is
// offline, as the notes tell it: every replica is down, an out-of-sync one
// comes back and stays offline until unclean.leader.election.enable is set
// on the topic, then leads at once; the former leader returns as follower
// and drops the acks=1 writes the new leader never had.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestReplicationUncleanElectionEnabledWhileOffline(t *testing.T) {
	// Five nodes, voters 1–3: the replicas sit on 3, 4 and 5, so with all
	// three down voters 1 and 2 still form the controller quorum.
	c := sluicetest.StartCluster(t, 5)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	one := clusterClient(c, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	createAssigned(t, all, "offline", []int32{4, 5, 3}, map[string]string{"min.insync.replicas": "1"})
	waitState(t, all, "offline", "full ISR on leader 4", func(st partitionState) bool { return st.leader == 4 && len(st.isr) == 3 })
	if err := produce(all, "offline", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}
	waitIdentical(t, c, "offline", 3, 4, 5)

	// 5 and 3 die; 4 alone takes acks=1 writes; then 4 dies too.
	c.Kill(5)
	c.Kill(3)
	waitState(t, all, "offline", "ISR [4]", func(st partitionState) bool { return slices.Equal(st.isr, []int32{4}) })
	if err := produce(one, "offline", valuesN("lost", 10)...); err != nil {
		t.Fatal(err)
	}
	c.Kill(4)
	waitState(t, all, "offline", "offline", func(st partitionState) bool { return st.leader == -1 })

	// 5 returns out of sync: with unclean election off the partition
	// stays offline. Metadata is watched for a while; a leader at any
	// point fails the test.
	c.Restart(5)
	c.WaitForBrokers(3)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		st, err := metadataOf(all, "offline")
		if err == nil && st.leader != -1 {
			t.Fatalf("out-of-sync replica elected with unclean election off: leader %d isr %v", st.leader, st.isr)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// The operator allows unclean election on the topic: 5 leads.
	adm := kadm.NewClient(all)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v := "true"
	rs, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: &v}}, "offline")
	if err == nil {
		err = rs[0].Err
	}
	if err != nil {
		t.Fatalf("set unclean.leader.election.enable: %v", err)
	}
	waitState(t, all, "offline", "5 elected uncleanly", func(st partitionState) bool { return st.leader == 5 && slices.Equal(st.isr, []int32{5}) })
	if err := produce(one, "offline", valuesN("c", 5)...); err != nil {
		t.Fatal(err)
	}

	// The former leader and the third replica return, truncate what 5
	// never had and rejoin the ISR with logs byte-identical to 5's.
	c.Restart(4)
	c.Restart(3)
	waitState(t, all, "offline", "full ISR again", isrLen(3))
	if end := waitIdentical(t, c, "offline", 3, 4, 5); end != 15 {
		t.Fatalf("log end offset %d, want 15 (10 before the divergence, 5 after)", end)
	}
	want := append(valuesN("a", 10), valuesN("c", 5)...)
	if got := consumePartition0(t, c, "offline", 15); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}
