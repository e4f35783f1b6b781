package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// checkCleanedRead checks a read of a cleaned log against what the leader
// served before the move: offsets strictly increasing, each record one the
// leader had at that offset with the same key and value, and each key's
// last value the latest produced.
func checkCleanedRead(t *testing.T, what string, got []*kgo.Record, leader map[int64]*kgo.Record, latest map[string]string) {
	t.Helper()
	last := map[string]string{}
	for i, r := range got {
		if i > 0 && r.Offset <= got[i-1].Offset {
			t.Fatalf("%s: offset %d after %d", what, r.Offset, got[i-1].Offset)
		}
		if l, ok := leader[r.Offset]; ok && (string(l.Key) != string(r.Key) || string(l.Value) != string(r.Value)) {
			t.Fatalf("%s: offset %d holds %s=%q, the cleaned leader had %s=%q", what, r.Offset, r.Key, r.Value, l.Key, l.Value)
		}
		last[string(r.Key)] = string(r.Value)
	}
	for k, v := range latest {
		if last[k] != v {
			t.Fatalf("%s: key %s last value %q, want %q", what, k, last[k], v)
		}
	}
}

// A replica that copies a cleaned log ends with the same keys and latest
// values (issue 17, Replicas): a reassignment adds node 2 to a partition
// whose leader (node 1) has cleaned its log, so node 2's fetches start in
// the gaps the cleaner left and must get the next batch each time; once
// the partition has moved to node 2 alone, clients read from node 2 each
// key's latest value at the leader's offsets. Then node 1 copies node 2's
// log back, node 2 stops, and node 1 serves the same keys again.
func TestCleanedLogReplicates(t *testing.T) {
	const topic = "compacted-moved"
	c := sluicetest.StartCluster(t, 2)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	createAssigned(t, cl, topic, []int32{1}, map[string]string{"cleanup.policy": "compact", "segment.bytes": "16384"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	latest := map[string]string{}
	produced := 0
	for round := range 40 {
		var recs []*kgo.Record
		for k := range 50 {
			key := fmt.Sprintf("key-%02d", k)
			r := &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(fmt.Sprintf("v-%d-%d", round, k))}
			if round%7 == 3 && k%10 == 0 {
				r.Value = nil // a tombstone, kept for delete.retention.ms (a day)
			}
			latest[key] = string(r.Value)
			recs = append(recs, r)
		}
		if round%4 == 0 {
			// Keys written once: they survive cleaning at low offsets,
			// between the gaps of their overwritten neighbours.
			key := fmt.Sprintf("once-%02d", round)
			latest[key] = "once"
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte("once")})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += len(recs)
	}
	passes := 0
	for c.Node(1).Broker.RunCleaner() {
		if passes++; passes > 50 {
			t.Fatal("the cleaner never runs out of work")
		}
	}
	cleaned := readAllRecords(t, c.Addrs(), topic)
	if len(cleaned) >= produced/2 {
		t.Fatalf("leader serves %d of %d produced records after %d passes: not compacted", len(cleaned), produced, passes)
	}
	first := cleaned[0].Offset
	gaps := 0
	for i := 1; i < len(cleaned); i++ {
		if cleaned[i].Offset != cleaned[i-1].Offset+1 {
			gaps++
		}
	}
	if gaps == 0 {
		t.Fatal("the cleaned log has no gaps: nothing for a follower to skip")
	}
	onLeader := map[int64]*kgo.Record{}
	for _, r := range cleaned {
		onLeader[r.Offset] = r
	}
	checkCleanedRead(t, "leader after cleaning", cleaned, onLeader, latest)
	t.Logf("%d produced, %d after %d passes (%d gaps, first offset %d)", produced, len(cleaned), passes, gaps, first)

	// Node 2 copies the cleaned log from offset 0.
	mustReassign(t, adm, topic, map[int32][]int32{0: {2}})
	if st := waitPlaced(t, cl, topic, 0, 2); st.leader != 2 {
		t.Fatalf("leader %d after moving to node 2", st.leader)
	}
	moved := readAllRecords(t, c.Addrs(), topic)
	checkCleanedRead(t, "node 2 after the move", moved, onLeader, latest)
	if moved[len(moved)-1].Offset != cleaned[len(cleaned)-1].Offset {
		t.Fatalf("node 2 ends at offset %d, node 1 ended at %d", moved[len(moved)-1].Offset, cleaned[len(cleaned)-1].Offset)
	}

	// New writes on node 2, its own cleaner, then node 1 copies node 2's
	// log and takes over when node 2 stops.
	var recs []*kgo.Record
	for k := range 50 {
		key := fmt.Sprintf("key-%02d", k)
		v := fmt.Sprintf("after-move-%d", k)
		latest[key] = v
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for c.Node(2).Broker.RunCleaner() {
	}
	mustReassign(t, adm, topic, map[int32][]int32{0: {2, 1}})
	waitPlaced(t, cl, topic, 0, 2, 1)
	c.Stop(2)
	waitState(t, cl, topic, "node 1 leads once node 2 stopped", func(st partitionState) bool { return st.leader == 1 })
	back := readAllRecords(t, c.Addrs(), topic)
	checkCleanedRead(t, "node 1 after copying node 2's log", back, onLeader, latest)
	t.Logf("node 2 served %d records after the move, node 1 %d after copying it back", len(moved), len(back))
}
