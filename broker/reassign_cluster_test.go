package broker_test

// Reassignment on three nodes: a move that outlives the controller that
// started it, replication factor changes 1→3→1, and the leader handing
// over when the move removes it.

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicedev/sluice/sluicetest"
)

func TestReassignSurvivesControllerFailover(t *testing.T) {
	const topic = "tp_failover"
	c := sluicetest.StartCluster(t, 3)
	ctrl := int32(c.Controller())
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != ctrl {
			others = append(others, id)
		}
	}
	from, to := others[0], others[1]
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	createAssigned(t, cl, topic, []int32{from}, nil)
	values := bigValues("v", 3000)
	if err := produce(cl, topic, values...); err != nil {
		t.Fatal(err)
	}
	throttle(t, adm, topic, "1000", from, to)
	mustReassign(t, adm, topic, map[int32][]int32{0: {to}})
	time.Sleep(500 * time.Millisecond)
	if l := listReassignments(t, adm, topic, 0); len(l) != 1 {
		t.Fatalf("throttled move not in progress: %+v", l)
	}

	c.Kill(int(ctrl))
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		if id := int32(c.Controller()); id == ctrl {
			return fmt.Errorf("controller still %d", id)
		}
		return nil
	})
	// The new controller knows the move from the metadata log.
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		ra, ok := listReassignments(t, adm, topic, 0)[0]
		if !ok || !slices.Equal(ra.AddingReplicas, []int32{to}) || !slices.Equal(ra.RemovingReplicas, []int32{from}) {
			return fmt.Errorf("after failover the move is listed as %+v (%v)", ra, ok)
		}
		return nil
	})
	if err := produce(cl, topic, "during"); err != nil {
		t.Fatal(err)
	}
	throttle(t, adm, topic, "", from, to)
	if st := waitPlaced(t, cl, topic, 0, to); st.leader != to {
		t.Fatalf("leader %d after the move to %d", st.leader, to)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if _, _, ok := c.Node(int(from)).Broker.ReplicaOffsets(topic, 0); ok {
			return fmt.Errorf("node %d still holds the moved replica", from)
		}
		return nil
	})
	got := consumeAllValues(t, c, topic)
	if len(got) != len(values)+1 || got["during"] != 1 {
		t.Fatalf("read %d distinct values, want %d", len(got), len(values)+1)
	}
}

func TestReassignReplicationFactorAndLeaderMove(t *testing.T) {
	const topic = "tp_rf"
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	createAssigned(t, cl, topic, []int32{1}, nil)
	if err := produce(cl, topic, valuesN("a", 500)...); err != nil {
		t.Fatal(err)
	}

	// 1 → 3 replicas.
	mustReassign(t, adm, topic, map[int32][]int32{0: {1, 2, 3}})
	before := waitPlaced(t, cl, topic, 0, 1, 2, 3)
	if before.leader != 1 {
		t.Fatalf("leader %d after growing to 3 replicas, want 1 to stay", before.leader)
	}
	if err := produce(cl, topic, valuesN("b", 500)...); err != nil {
		t.Fatal(err)
	}
	waitIdentical(t, c, topic, 1, 2, 3)

	// 3 → 1 replica, removing the leader: node 3 takes over with a new
	// leader epoch, and nodes 1 and 2 drop their replicas.
	mustReassign(t, adm, topic, map[int32][]int32{0: {3}})
	after := waitPlaced(t, cl, topic, 0, 3)
	if after.leader != 3 || after.epoch <= before.epoch {
		t.Fatalf("after removing the leader: leader %d epoch %d (was %d at %d)", after.leader, after.epoch, before.leader, before.epoch)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		for _, id := range []int{1, 2} {
			if _, _, ok := c.Node(id).Broker.ReplicaOffsets(topic, 0); ok {
				return fmt.Errorf("node %d still holds a removed replica", id)
			}
		}
		return nil
	})
	if err := produce(cl, topic, valuesN("c", 500)...); err != nil {
		t.Fatal(err)
	}
	got := consumeAllValues(t, c, topic)
	for _, prefix := range []string{"a", "b", "c"} {
		for _, v := range valuesN(prefix, 500) {
			if got[v] != 1 {
				t.Fatalf("record %q read %d times", v, got[v])
			}
		}
	}
}
