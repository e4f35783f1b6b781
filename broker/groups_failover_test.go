package broker_test

// A consumer group on a three-node cluster whose coordinator's broker dies
// (issue 5, acceptance 3): the group finds the new coordinator (the new
// leader of its __consumer_offsets partition), its committed offsets are
// intact, commits go on, and the next consumer starts exactly at the last
// commit: nothing skipped, only what came after the commit re-read.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// freshAdmin is an admin client that has not cached a coordinator yet.
func freshAdmin(t *testing.T, c *sluicetest.Cluster) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// groupCoordinator is the node id DescribeGroups names as group's
// coordinator, asked through a new client: a client keeps asking the
// coordinator it knows until it answers.
func groupCoordinator(ctx context.Context, t *testing.T, c *sluicetest.Cluster, group string) (int32, error) {
	dg, err := freshAdmin(t, c).DescribeGroups(ctx, group)
	if err != nil {
		return -1, err
	}
	g, ok := dg[group]
	if !ok {
		return -1, fmt.Errorf("group %s not described", group)
	}
	if g.Err != nil {
		return -1, g.Err
	}
	return g.Coordinator.NodeID, nil
}

// committedOffsets fetches the group's committed offsets of topic.
func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := os.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range os[topic] {
		out[p] = o.At
	}
	return out, nil
}

func TestGroupSurvivesCoordinatorKill(t *testing.T) {
	const (
		topic      = "events"
		group      = "survivors"
		partitions = 4
		perPart    = 100
	)
	c := sluicetest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(50 * time.Millisecond)
	adm := kadm.NewClient(c.Client(fast))
	if _, err := adm.CreateTopic(ctx, partitions, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := c.Client(fast, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	// Batches of ten records, so consumers stop and commit mid-partition.
	for i := 0; i < perPart; i += 10 {
		var recs []*kgo.Record
		for p := range int32(partitions) {
			for j := i; j < i+10; j++ {
				recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, j)})
			}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The first consumer reads about half, commits it, reads a little
	// more without committing.
	first := c.Client(fast, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.FetchMaxPartitionBytes(500), kgo.SessionTimeout(6*time.Second))
	next := map[int32]int64{} // per partition, the offset after the last record read
	read := 0
	poll := func(cl *kgo.Client, until int) {
		t.Helper()
		for read < until {
			fs := cl.PollRecords(ctx, 50)
			if ctx.Err() != nil {
				t.Fatalf("read %d records, waiting for %d", read, until)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: read offset %d, expected %d (skipped or repeated)", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition] = r.Offset + 1
				read++
			})
		}
	}
	poll(first, partitions*perPart/2)
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit before the kill: %v", err)
	}
	committed, err := committedOffsets(ctx, freshAdmin(t, c), group, topic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("committed before the kill: %v", committed)

	coord, err := groupCoordinator(ctx, t, c, group)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(int(coord))
	t.Logf("coordinator %d killed", coord)

	var newCoord int32
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		id, err := groupCoordinator(ctx, t, c, group)
		if err != nil {
			return err
		}
		if id == coord || id < 0 {
			return fmt.Errorf("coordinator still %d", id)
		}
		newCoord = id
		return nil
	})
	// Brokers learn the new leader of the group's partition a moment apart;
	// until then a client may be sent to the dead one and retries.
	var after map[int32]int64
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		after, err = committedOffsets(ctx, freshAdmin(t, c), group, topic)
		return err
	})
	if fmt.Sprint(after) != fmt.Sprint(committed) {
		t.Fatalf("new coordinator %d has committed offsets %v, before the kill %v", newCoord, after, committed)
	}

	// The same consumer goes on and commits through the new coordinator.
	// It may still be sent to the dead one first (a broker that has not
	// yet applied the new leader of the group's partition answers
	// FindCoordinator with it), and kgo gives up on a refused dial: the
	// application commits again, as one would.
	poll(first, partitions*perPart*3/4)
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if err := first.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("commit after the kill: %w", err)
		}
		return nil
	})
	committed = map[int32]int64{}
	for p, o := range next {
		committed[p] = o
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		got, err := committedOffsets(ctx, freshAdmin(t, c), group, topic)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(committed) {
			return fmt.Errorf("committed %v, want %v", got, committed)
		}
		return nil
	})
	// It reads some more without committing, then leaves.
	poll(first, partitions*perPart*3/4+20)
	first.Close()

	// The next consumer starts exactly at the last commit and reads the
	// rest: nothing skipped, only records after the commit read again.
	next = map[int32]int64{}
	for p, o := range committed {
		next[p] = o
	}
	read = 0
	for p := range int32(partitions) {
		read += int(committed[p])
	}
	second := c.Client(fast, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	poll(second, partitions*perPart)
	for p := range int32(partitions) {
		if next[p] != perPart {
			t.Fatalf("partition %d read up to %d, want %d", p, next[p], perPart)
		}
	}
}
