package broker_test

// Transactions on a three-node cluster: the transaction coordinator's
// broker dies with a transaction open, the leader of its
// __transaction_state partition moves, and the new coordinator loads the
// state from the partition: the producer commits through it, and the
// coordinator's answers (DescribeTransactions) keep the producer id and
// epoch. Read-committed visibility of what was committed and aborted needs
// the partition side of issue 6 (markers in the log, the last stable
// offset, the aborted transactions index).

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
	"github.com/sluicedev/sluice/txn"
)

func TestTxnCoordinatorFailover(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	needMarkers(t, c.Addrs()[0])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := c.Addrs()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "txn-ha"); err != nil {
		t.Fatal(err)
	}
	c.WaitForISR("txn-ha", 0, 3)

	const id = "survivor"
	prod := txnProducer(t, seeds, id, kgo.TransactionTimeout(60*time.Second))
	if err := produceTxn(ctx, prod, "txn-ha", 5, true); err != nil {
		t.Fatalf("first transaction: %v", err)
	}
	before := waitTxnState(t, seeds, id, "CompleteCommit")
	coordinator := int(before.Coordinator)

	// The coordinator's partition must be fully replicated before its
	// leader dies, or the new leader could lack the newest state.
	c.WaitForISR("__transaction_state", txn.PartitionFor(id, 50), 3)

	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		r := &kgo.Record{Topic: "txn-ha", Partition: 0, Value: []byte(fmt.Sprintf("second-%d", i))}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ongoing := waitTxnState(t, seeds, id, "Ongoing")

	c.Kill(coordinator)
	var live []string
	for i, a := range seeds {
		if i+1 != coordinator {
			live = append(live, a)
		}
	}
	moved := waitTxnState(t, live, id, "Ongoing")
	if moved.Coordinator == before.Coordinator || moved.ProducerID != ongoing.ProducerID || moved.ProducerEpoch != ongoing.ProducerEpoch {
		t.Fatalf("after failover: %+v, before %+v", moved, ongoing)
	}
	if ps := moved.Topics["txn-ha"]; len(ps) != 1 || !hasKey(ps, 0) {
		t.Fatalf("the new coordinator lost the transaction's partitions: %+v", moved.Topics)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit through the new coordinator: %v", err)
	}
	after := waitTxnState(t, live, id, "CompleteCommit")
	if after.ProducerID != before.ProducerID {
		t.Fatalf("producer id changed: %d, was %d", after.ProducerID, before.ProducerID)
	}

	// The killed broker comes back as a follower; the id stays where it is.
	c.Restart(coordinator)
	if d := waitTxnState(t, seeds, id, "CompleteCommit"); d.ProducerEpoch != after.ProducerEpoch {
		t.Fatalf("after restart: %+v", d)
	}
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// TestTxnReadCommitted needs the partition side of issue 6: read_committed
// consumers see committed transactions, never aborted ones, and stop at an
// open one.
func TestTxnReadCommitted(t *testing.T) {
	n := sluicetest.Start(t)
	needMarkers(t, n.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	if _, err := n.Admin().CreateTopic(ctx, 1, 1, nil, "txn-rc"); err != nil {
		t.Fatal(err)
	}
	prod := txnProducer(t, seeds, "rc")
	for i, commit := range []bool{true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			r := &kgo.Record{Topic: "txn-rc", Partition: 0, Value: []byte(fmt.Sprintf("t%d-%d", i, j))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	cons := n.Client(kgo.ConsumeTopics("txn-rc"), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	var got []string
	want := []string{"t0-0", "t0-1", "t0-2", "t2-0", "t2-1", "t2-2"}
	for len(got) < len(want) && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read_committed saw %v, want %v", got, want)
	}
}
