package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupCoordinatorOf asks the cluster which broker coordinates group.
func groupCoordinatorOf(ctx context.Context, c *clusterProcs, group string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorKeys = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	code, id := resp.ErrorCode, resp.NodeID
	if len(resp.Coordinators) == 1 {
		code, id = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
	}
	if code != 0 {
		return -1, fmt.Errorf("FindCoordinator: error %d", code)
	}
	return id, nil
}

// Issue 5, acceptance 3, with real processes: a consumer group reads a
// stream on three sluice processes and commits as it goes; the group
// coordinator's process is kill -9'd. The consumer carries on through the
// new coordinator; a consumer that takes over afterwards starts exactly at
// the last commit. Every record is read (nothing skipped), and only those
// after the last commit are read twice.
func TestGroupCoordinatorKill9(t *testing.T) {
	const perPartition = 600
	c := startClusterProcs(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	if resp, err := adm.CreateTopic(ctx, 3, 3, nil, "stream"); err != nil || resp.Err != nil {
		t.Fatalf("create stream: %v %v", err, resp.Err)
	}

	// A producer streams in the background, ten records per partition at
	// a time.
	prod := c.client(fast, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("stream"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produced := make(chan error, 1)
	go func() {
		for i := 0; i < perPartition; i += 10 {
			var rs []*kgo.Record
			for p := range int32(3) {
				for j := i; j < i+10; j++ {
					rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, j)})
				}
			}
			if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				produced <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		produced <- nil
	}()

	next := map[int32]int64{} // the offset after the last record read, per partition
	read := func(cl *kgo.Client, until func() bool) {
		t.Helper()
		for !until() {
			fs := cl.PollRecords(ctx, 100)
			if ctx.Err() != nil {
				t.Fatalf("reading the stream: %v (positions %v)", ctx.Err(), next)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: read offset %d after %d (skipped or repeated)", r.Partition, r.Offset, next[r.Partition]-1)
				}
				if want := fmt.Sprintf("%d-%d", r.Partition, r.Offset); string(r.Value) != want {
					t.Fatalf("partition %d offset %d holds %q, want %q", r.Partition, r.Offset, r.Value, want)
				}
				next[r.Partition]++
			})
		}
	}
	total := func() (n int64) {
		for _, o := range next {
			n += o
		}
		return n
	}

	first := c.client(fast, kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("stream"), kgo.DisableAutoCommit(),
		kgo.FetchMaxPartitionBytes(1000))
	read(first, func() bool { return total() >= perPartition })
	if err := first.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit before the kill: %v", err)
	}
	coord, err := groupCoordinatorOf(ctx, c, "readers")
	if err != nil {
		t.Fatal(err)
	}
	c.procs[coord-1].kill()
	t.Logf("group coordinator %d killed after %d records read and committed", coord, total())

	// The same consumer reads on and commits through the new coordinator.
	read(first, func() bool { return total() >= 2*perPartition })
	// A commit issued before the controller has fenced the dead node may
	// still be sent to it: franz-go can give up on a refused dial of a
	// cached coordinator at once. An application retries such a commit;
	// what must hold is that it lands on the new coordinator.
	for try := 1; ; try++ {
		err := first.CommitUncommittedOffsets(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil || try == 20 {
			t.Fatalf("commit after the kill (try %d): %v", try, err)
		}
		t.Logf("commit after the kill, try %d: %v; retrying", try, err)
		time.Sleep(250 * time.Millisecond)
	}
	committed := map[int32]int64{}
	for p, o := range next {
		committed[p] = o
	}
	newCoord, err := groupCoordinatorOf(ctx, c, "readers")
	if err != nil {
		t.Fatal(err)
	}
	if newCoord == coord {
		t.Fatalf("coordinator still %d after its kill", coord)
	}
	// Then it reads a little more without committing, and leaves.
	read(first, func() bool { return total() >= 2*perPartition+30 })
	first.Close()
	if err := <-produced; err != nil {
		t.Fatalf("producer: %v", err)
	}

	// The next member starts exactly at the last commit and reads the rest.
	next = map[int32]int64{}
	for p, o := range committed {
		next[p] = o
	}
	second := c.client(fast, kgo.ConsumerGroup("readers"), kgo.ConsumeTopics("stream"), kgo.DisableAutoCommit())
	read(second, func() bool { return total() >= 3*perPartition })
	t.Logf("new coordinator %d; the next member started at the last commit %v and read to the end", newCoord, committed)
}
