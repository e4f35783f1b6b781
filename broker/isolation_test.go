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
	c.WaitForBrokers(3)
	// Neither the leader nor the cut follower is the controller: a
	// broker cut from the controller's listener loses its heartbeats and
	// is fenced (TestBrokerCutFromControllerIsFenced), which is not what
	// this test is about.
	ctrl := c.Controller()
	rest := otherThan(3, ctrl)
	leader, follower := int32(rest[0]), int32(rest[1])
	all := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	createAssigned(t, all, "cut", []int32{leader, int32(ctrl), follower}, map[string]string{"min.insync.replicas": "2"})
	waitState(t, all, "cut", "full ISR on the leader", func(st partitionState) bool { return st.leader == leader && len(st.isr) == 3 })
	if err := produce(all, "cut", valuesN("a", 10)...); err != nil {
		t.Fatal(err)
	}

	// The follower can no longer reach the leader. A write now waits for
	// it until the leader gives up on it; then it is acknowledged by the
	// leader and the controller's replica.
	c.Cut(int(follower), int(leader))
	if err := produce(all, "cut", valuesN("b", 10)...); err != nil {
		t.Fatalf("acks=all with a follower cut off: %v", err)
	}
	st := waitState(t, all, "cut", "ISR without the cut follower", func(st partitionState) bool {
		// ISR order carries no meaning (an ISR rebuilt by the
		// controller may come back sorted): compare as sets.
		isr := slices.Sorted(slices.Values(st.isr))
		want := slices.Sorted(slices.Values([]int32{leader, int32(ctrl)}))
		return slices.Equal(isr, want)
	})
	if st.leader != leader {
		t.Fatalf("leader %d after cutting a follower off, want %d", st.leader, leader)
	}
	// The follower is alive all along: still a registered broker, still
	// a replica.
	c.WaitForBrokers(3)
	if err := produce(all, "cut", valuesN("c", 10)...); err != nil {
		t.Fatalf("acks=all with ISR [%d %d]: %v", leader, ctrl, err)
	}

	c.Heal(int(follower), int(leader))
	waitState(t, all, "cut", "the follower back in the ISR", isrLen(3))
	if end := waitIdentical(t, c, "cut", 1, 2, 3); end != 30 {
		t.Fatalf("log end offset %d, want 30", end)
	}
	want := append(append(valuesN("a", 10), valuesN("b", 10)...), valuesN("c", 10)...)
	if got := consumePartition0(t, c, "cut", 30); !slices.Equal(got, want) {
		t.Fatalf("consumed %v, want %v", got, want)
	}
}
