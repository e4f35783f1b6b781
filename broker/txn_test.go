package broker_test

// The transaction coordinator seen through franz-go: fencing by
// InitProducerId, commit and abort reaching CompleteCommit / CompleteAbort
// as DescribeTransactions and ListTransactions show them, and coordinator
// state surviving a restart. Committing needs the partition leaders'
// WriteTxnMarkers (api key 27).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// needMarkers skips a test that ends transactions while the broker does
// not serve WriteTxnMarkers (api key 27), which the partition side of
// issue 6 adds: without it no transaction completes.
func needMarkers(t *testing.T, seed string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seed))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 27 {
			return
		}
	}
	t.Skip("the broker does not serve WriteTxnMarkers (api key 27) yet")
}

// describeTxn describes one transactional id through a fresh admin client
// (a client keeps asking the coordinator it knows).
func describeTxn(ctx context.Context, seeds []string, id string) (kadm.DescribedTransaction, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return kadm.DescribedTransaction{}, err
	}
	defer cl.Close()
	described, err := kadm.NewClient(cl).DescribeTransactions(ctx, id)
	if err != nil {
		return kadm.DescribedTransaction{}, err
	}
	d, ok := described[id]
	if !ok {
		return d, fmt.Errorf("%s not described", id)
	}
	return d, d.Err
}

// waitTxnState waits until id's coordinator reports state.
func waitTxnState(t *testing.T, seeds []string, id, state string) kadm.DescribedTransaction {
	t.Helper()
	var d kadm.DescribedTransaction
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		var err error
		d, err = describeTxn(ctx, seeds, id)
		if err != nil {
			return err
		}
		if d.State != state {
			return fmt.Errorf("%s is %s, want %s", id, d.State, state)
		}
		return nil
	})
	return d
}

// txnProducer is a transactional franz-go client.
func txnProducer(t *testing.T, seeds []string, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(50 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn runs one transaction of n records to topic partition 0.
func produceTxn(ctx context.Context, cl *kgo.Client, topic string, n int, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		r := &kgo.Record{Topic: topic, Partition: 0, Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return err
		}
	}
	return cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
}

func TestTxnCommitAbortAndFencing(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	needMarkers(t, n.Addr())
	if _, err := n.Admin().CreateTopic(ctx, 1, 1, nil, "txn-out"); err != nil {
		t.Fatal(err)
	}

	// Clients of transactions v1 (txnV1Versions), whose epoch only an
	// InitProducerId moves; TestTxnV2Franz runs v2 ones.
	first := txnProducer(t, seeds, "fence-me", txnV1Versions())
	if err := produceTxn(ctx, first, "txn-out", 3, true); err != nil {
		t.Fatalf("commit: %v", err)
	}
	d := waitTxnState(t, seeds, "fence-me", "CompleteCommit")
	if d.ProducerEpoch != 0 || d.TimeoutMillis != 10000 {
		t.Fatalf("after commit: %+v", d)
	}
	if err := produceTxn(ctx, first, "txn-out", 2, false); err != nil {
		t.Fatalf("abort: %v", err)
	}
	waitTxnState(t, seeds, "fence-me", "CompleteAbort")

	// A second producer with the same transactional id fences the first.
	second := txnProducer(t, seeds, "fence-me", txnV1Versions())
	if err := produceTxn(ctx, second, "txn-out", 1, true); err != nil {
		t.Fatalf("second producer: %v", err)
	}
	d = waitTxnState(t, seeds, "fence-me", "CompleteCommit")
	if d.ProducerEpoch != 1 {
		t.Fatalf("second producer's epoch %d, want 1", d.ProducerEpoch)
	}
	err := produceTxn(ctx, first, "txn-out", 1, true)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's transaction: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}

	listed, err := n.Admin().ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := listed["fence-me"]; !ok || l.State != "CompleteCommit" || l.ProducerID != d.ProducerID {
		t.Fatalf("listed: %+v", listed)
	}
	if listed, err := n.Admin().ListTransactions(ctx, nil, []string{"Ongoing"}); err != nil || len(listed) != 0 {
		t.Fatalf("listed as ongoing: %+v, %v", listed, err)
	}

	// The coordinator's state survives a restart.
	n.Restart()
	d2 := waitTxnState(t, seeds, "fence-me", "CompleteCommit")
	if d2.ProducerID != d.ProducerID || d2.ProducerEpoch != d.ProducerEpoch {
		t.Fatalf("after restart: %+v, before %+v", d2, d)
	}
}

func TestTxnOngoingVisibleAndTimedOut(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	needMarkers(t, n.Addr())
	if _, err := n.Admin().CreateTopic(ctx, 2, 1, nil, "txn-slow"); err != nil {
		t.Fatal(err)
	}
	cl := txnProducer(t, seeds, "left-open", kgo.TransactionTimeout(1500*time.Millisecond))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "txn-slow", Partition: 1, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	d, err := describeTxn(ctx, seeds, "left-open")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "Ongoing" || d.StartTimestamp <= 0 {
		t.Fatalf("described: %+v", d)
	}
	if ps, ok := d.Topics["txn-slow"]; !ok || len(ps) != 1 {
		t.Fatalf("partitions of the running transaction: %+v", d.Topics)
	}
	// The producer goes silent; the coordinator aborts after the timeout
	// and bumps the epoch, fencing it.
	d = waitTxnState(t, seeds, "left-open", "CompleteAbort")
	if d.ProducerEpoch != 1 {
		t.Fatalf("timed-out abort left epoch %d, want 1", d.ProducerEpoch)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the timed-out producer committed")
	}
}
