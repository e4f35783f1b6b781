package broker_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// Decommissioning a broker (issue 7): its replicas are moved off with a
// reassignment while a producer writes, it then holds nothing, and once it
// stops the cluster lists one broker fewer with every partition still fully
// replicated and every acknowledged record readable.
func TestDecommissionMovesReplicasOffBeforeLeaving(t *testing.T) {
	const topic = "decom"
	c := sluicetest.StartCluster(t, 4)
	cl := clusterClient(c, kgo.RequiredAcks(kgo.AllISRAcks()))
	adm := kadm.NewClient(cl)
	// Node 4 (not a raft voter) holds a replica of every partition and
	// leads two of them.
	assignment := map[int32][]int32{0: {4, 1}, 1: {2, 4}, 2: {4, 3}, 3: {3, 4}}
	createSpread(t, cl, topic, assignment)
	for p := range int32(4) {
		waitPlaced(t, cl, topic, p, assignment[p]...)
	}
	bp := startProducer(cl, topic)

	off := map[int32][]int32{0: {1, 2}, 1: {2, 3}, 2: {3, 1}, 3: {3, 1}}
	mustReassign(t, adm, topic, off)
	for p := range int32(4) {
		got := waitPlaced(t, cl, topic, p, off[p]...)
		if !slices.Contains(off[p], got.leader) {
			t.Fatalf("partition %d led by %d after moving off node 4", p, got.leader)
		}
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		for p := range int32(4) {
			if _, _, ok := c.Node(4).Broker.ReplicaOffsets(topic, p); ok {
				return fmt.Errorf("node 4 still holds partition %d", p)
			}
		}
		return nil
	})

	// Node 4 leaves; nothing depended on it.
	c.Stop(4)
	c.WaitForBrokers(3)
	acked := bp.finish(t)
	for p := range int32(4) {
		c.WaitForISR(topic, p, 2)
	}
	got := consumeAllValues(t, c, topic)
	for v := range acked {
		if got[v] != 1 {
			t.Fatalf("acknowledged record %q read %d times", v, got[v])
		}
	}
	t.Logf("%d records acknowledged while node 4's replicas moved off, all read back once", len(acked))
}
