package broker_test

// A log directory failing while a node runs (JBOD, KIP-858): only its
// replicas go offline on that node, their leaderships move, the other
// directory keeps serving, and nothing acknowledged is lost (issue 20).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestLogDirFailureMovesOnlyItsPartitions: three nodes with two log dirs
// each; node 2 leads all six partitions, three in each of its
// directories. Its second directory is replaced by a file under it (the
// disk is gone): the next checkpoint fails, the directory goes offline,
// node 2 reports it, and the controller moves the leadership of exactly
// the partitions in it away and drops node 2 from their ISRs, while the
// partitions in node 2's first directory keep node 2 as leader. Every
// acknowledged record reads back, and the failed directory's files are
// all still there. A restart with the disk still gone keeps those replicas
// out; one with the disk back brings them into their ISRs again.
func TestLogDirFailureMovesOnlyItsPartitions(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, jbodDirs, "log.flush.offset.checkpoint.interval.ms=200")
	c.WaitForBrokers(3)
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const topic = "failing"
	replicas := make([][]int32, 6)
	for i := range replicas {
		replicas[i] = []int32{2, 1, 3}
	}
	createPlaced(t, cl, topic, replicas, map[string]string{"min.insync.replicas": "2"})
	for p := int32(0); p < 6; p++ {
		c.WaitForISR(topic, p, 3)
	}
	produceTo(t, cl, topic, 6, 20)

	n2 := c.Node(2)
	d1, d2 := jbodDirsOf(n2)
	inD2 := partitionsIn(describeBrokerDirs(t, n2.Admin(), 2), topic)[d2]
	slices.Sort(inD2)
	t.Logf("node 2 holds partitions %v of %s in %s", inD2, topic, d2)
	if len(inD2) != 3 {
		t.Fatalf("node 2 holds %v in d2, want three partitions", inD2)
	}

	// The disk goes: its directory is moved aside and a file stands in
	// its place, so every new file in it fails.
	gone := d2 + ".gone"
	if err := os.Rename(d2, gone); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d2, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := filesUnder(t, gone)

	sluicetest.WaitFor(t, 30*time.Second, func() error {
		md, err := topicMetadata(cl, topic)
		if err != nil {
			return err
		}
		for _, p := range md.Partitions {
			off := slices.Contains(inD2, p.Partition)
			in := slices.Contains(p.ISR, 2)
			switch {
			case off && (p.Leader == 2 || in):
				return fmt.Errorf("partition %d (node 2's replica offline): leader %d isr %v", p.Partition, p.Leader, p.ISR)
			case !off && (p.Leader != 2 || !in):
				return fmt.Errorf("partition %d (node 2's replica online): leader %d isr %v, want node 2 leading", p.Partition, p.Leader, p.ISR)
			case off && p.Leader < 0:
				return fmt.Errorf("partition %d has no leader", p.Partition)
			}
		}
		return nil
	})
	dirs := describeBrokerDirs(t, n2.Admin(), 2)
	if !errors.Is(dirs[d2].Err, kerr.KafkaStorageError) || dirs[d1].Err != nil {
		t.Fatalf("node 2's dirs: d1 %v, d2 %v; want d2 KAFKA_STORAGE_ERROR only", dirs[d1].Err, dirs[d2].Err)
	}

	// Every partition takes writes again, and everything reads back.
	produceMore(t, cl, topic, 6, 20, 20)
	for p := int32(0); p < 6; p++ {
		checkPartition(t, c.Node(1), topic, p, 40)
	}
	if after := filesUnder(t, gone); len(after) < len(before) {
		t.Fatalf("files of the failed directory went away: %d before, %d after", len(before), len(after))
	}

	// Node 2 restarted while the disk is still gone: it starts with the
	// directory offline, the replicas of its first directory rejoin their
	// ISRs, and those of the failed one stay out (reported again, so no
	// election picks them).
	c.Restart(2)
	for _, p := range []int32{0, 1, 2, 3, 4, 5} {
		if !slices.Contains(inD2, p) {
			c.WaitForISR(topic, p, 3)
		}
	}
	if !errors.Is(describeBrokerDirs(t, n2.Admin(), 2)[d2].Err, kerr.KafkaStorageError) {
		t.Fatal("after a restart with the disk still gone, d2 is not reported offline")
	}
	md, err := topicMetadata(cl, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range md.Partitions {
		if slices.Contains(inD2, p.Partition) && (p.Leader == 2 || slices.Contains(p.ISR, 2)) {
			t.Fatalf("partition %d after a restart with d2 gone: leader %d isr %v", p.Partition, p.Leader, p.ISR)
		}
	}

	// Node 2 restarted with the directory back: its replicas return.
	n2.Stop()
	if err := os.Remove(d2); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(gone, d2); err != nil {
		t.Fatal(err)
	}
	c.Restart(2)
	for p := int32(0); p < 6; p++ {
		c.WaitForISR(topic, p, 3)
	}
}

// produceMore produces n records with values "<partition>-<i>" for i from
// first to each partition of topic.
func produceMore(t *testing.T, cl *kgo.Client, topic string, partitions int32, first, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := first; i < first+n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}
