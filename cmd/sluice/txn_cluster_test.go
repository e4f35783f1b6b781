package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinator asks the cluster which broker coordinates transactional id.
func txnCoordinator(ctx context.Context, c *clusterProcs, id string) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKey = id
	req.CoordinatorKeys = []string{id}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if len(resp.Coordinators) == 1 {
		co := resp.Coordinators[0]
		if co.ErrorCode != 0 {
			return -1, fmt.Errorf("FindCoordinator: error %d", co.ErrorCode)
		}
		return co.NodeID, nil
	}
	if resp.ErrorCode != 0 {
		return -1, fmt.Errorf("FindCoordinator: error %d", resp.ErrorCode)
	}
	return resp.NodeID, nil
}

// Issue 6, acceptance 3: a consume–transform–produce job (franz-go's
// GroupTransactSession: read input, write output and commit the group's
// offsets in one transaction) on three processes, whose transaction
// coordinator's process is kill -9'd mid-run, finishes with an output
// equal to its input as read_committed reads it: no duplicates, no gaps.
func TestTransactionalCopySurvivesCoordinatorKill9(t *testing.T) {
	const records = 3000
	c := startClusterProcs(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	for _, topic := range []string{"input", "output"} {
		resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	prod := c.client(fast, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("input"))
	var in []*kgo.Record
	for i := range records {
		in = append(in, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("v-" + strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctx, in...).FirstErr(); err != nil {
		t.Fatalf("produce input: %v", err)
	}

	// The job is a GroupTransactSession; like an application it starts
	// again with a new session (the same transactional id, fencing the
	// old one) if its producer fails for good — franz-go gives up on a
	// transactional producer whose coordinator vanished from the metadata
	// while it was cached. Exactly-once holds across such restarts.
	newSession := func() *kgo.GroupTransactSession {
		sess, err := kgo.NewGroupTransactSession(
			kgo.SeedBrokers(c.addrs()...), fast,
			kgo.TransactionalID("copier"),
			kgo.TransactionTimeout(10*time.Second),
			kgo.ConsumerGroup("copier-group"),
			kgo.ConsumeTopics("input"),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(),
			kgo.DefaultProduceTopic("output"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
		)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	sess := newSession()
	defer func() { sess.Close() }()
	restart := func(why error) {
		t.Logf("job restarts with a new session: %v", why)
		sess.Close()
		sess = newSession()
	}

	// groupDone reports whether the group's committed offsets of the input
	// reached its end: the job is finished even if an acknowledgement of
	// its last commit was lost with a session.
	groupDone := func() bool {
		os, err := adm.FetchOffsets(ctx, "copier-group")
		if err != nil {
			return false
		}
		var sum int64
		for _, o := range os["input"] {
			sum += o.At
		}
		return sum == records
	}
	copied, killedAt := 0, -1
	for copied < records {
		if ctx.Err() != nil {
			t.Fatalf("copied %d of %d records before the deadline", copied, records)
		}
		if killedAt < 0 && copied >= records/3 {
			id, err := txnCoordinator(ctx, c, "copier")
			if err != nil {
				t.Fatalf("find the transaction coordinator: %v", err)
			}
			c.procs[id-1].kill()
			killedAt = copied
			t.Logf("transaction coordinator %d killed after %d records copied", id, copied)
		}
		// Small transactions: at most 100 records each.
		pollCtx, cancelPoll := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollRecords(pollCtx, 100)
		cancelPoll()
		var batch []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			batch = append(batch, &kgo.Record{Partition: r.Partition, Key: r.Key, Value: r.Value})
		})
		if len(batch) == 0 {
			if groupDone() {
				break
			}
			continue
		}
		if err := sess.Begin(); err != nil {
			restart(err)
			continue
		}
		produced := true
		if err := sess.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			t.Logf("produce in transaction: %v (aborting)", err)
			produced = false
		}
		committed, err := sess.End(ctx, kgo.TransactionEndTry(produced))
		if committed {
			copied += len(batch)
		}
		if err != nil {
			restart(err)
		}
	}
	if killedAt < 0 {
		t.Fatal("the coordinator was never killed")
	}

	// Read the output with read_committed: exactly the input.
	reader := c.client(fast, kgo.ConsumeTopics("output"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < records {
		fs := reader.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d output records", len(got), records)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	// Anything beyond the input would be a duplicate: wait briefly for it.
	extra, cancelExtra := context.WithTimeout(ctx, time.Second)
	reader.PollFetches(extra).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	cancelExtra()
	var want []string
	for _, r := range in {
		want = append(want, string(r.Value))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("output (%d records) differs from input (%d records)", len(got), len(want))
	}
	t.Logf("copied %d records exactly once through a coordinator kill -9 at %d", records, killedAt)
}
