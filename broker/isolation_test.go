package broker_test

// A follower cut off from its leader while it stays alive, as the notes'
// ISR story tells it: it stops fetching, the leader drops it from the ISR
// after replica.lag.time.max.ms so acks=all writes go on without it, and
// once the link is back it catches up and rejoins.

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestReplicationCutOffFollowerLeavesAndRejoinsISR(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, all, "cut", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, all, "cut", "full ISR on leader 1", func(st partitionState) bool { return st.leader == 1 && len(st.isr) == 3 })
	if err := produce(all, "cut", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}

	// Follower 3 can no longer reach leader 1. A write now waits for 3
	// until the leader gives up on it; then it is acknowledged by 1 and 2.
	c.Cut(3, 1)
	if err := produce(all, "cut", valuesN("b", 10)...); err != nil {
		t.Fatalf("acks=all with a follower cut off: %v", err)
	}
	st := waitState(t, all, "cut", "ISR without 3", func(st partitionState) bool { return slices.Equal(st.isr, []int32{1, 2}) })
	if st.leader != 1 {
		t.Fatalf("leader %d after cutting a follower off, want 1", st.leader)
	}
	// 3 is alive all along: still a registered broker, still a replica.
	c.WaitForBrokers(3)
	if err := produce(all, "cut", valuesN("c", 10)...); err != nil {
		t.Fatalf("acks=all with ISR [1 2]: %v", err)
	}

	c.Heal(3, 1)
	waitState(t, all, "cut", "3 back in the ISR", isrLen(3))
	if end := waitIdentical(t, c, "cut", 1, 2, 3); end != 30 {
		t.Fatalf("log end offset %d, want 30", end)
	}
	want := append(append(valuesN("a", 10), valuesN("b", 10)...), valuesN("c", 10)...)
	if got := consumePartition0(t, c, "cut", 30); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}
