package broker_test

// Offsets committed inside transactions (TxnOffsetCommit, api key 28),
// seen through franz-go: a consume–transform–produce job whose offsets
// commit with its output, an aborted transaction whose offsets never show,
// offsets pending across a restart of their coordinator, and a fenced
// producer epoch refused.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// transactSession is a GroupTransactSession consuming in from the start
// as group, closed at the end of the test.
func transactSession(t *testing.T, seeds []string, txnID, group, in string) *kgo.GroupTransactSession {
	t.Helper()
	s, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(10*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second),
		kgo.MetadataMinAge(50*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// produceInput writes n records "0".."n-1" to topic, spread over its
// partitions.
func produceInput(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprint(i))}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// transformOnce runs one transaction of session: it polls, produces each
// record's value with prefix to out and ends the transaction with end.
// It returns the values produced.
func transformOnce(ctx context.Context, s *kgo.GroupTransactSession, out, prefix string, end kgo.TransactionEndTry) ([]string, bool, error) {
	if err := s.Begin(); err != nil {
		return nil, false, err
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	fetches := s.PollFetches(pctx)
	cancel()
	var values []string
	var rs []*kgo.Record
	fetches.EachRecord(func(r *kgo.Record) {
		v := prefix + string(r.Value)
		values = append(values, v)
		rs = append(rs, &kgo.Record{Topic: out, Value: []byte(v)})
	})
	if len(rs) > 0 {
		if err := s.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			s.End(ctx, kgo.TryAbort)
			return nil, false, err
		}
	}
	committed, err := s.End(ctx, end)
	return values, committed, err
}

// readCommitted reads topic's committed records from the start until
// want records arrived or the topic stays quiet, and returns their values.
func readCommitted(ctx context.Context, t *testing.T, seeds []string, topic string, want int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	quiet := 0
	for quiet < 3 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fetches := cl.PollFetches(pctx)
		cancel()
		n := 0
		fetches.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)); n++ })
		if n == 0 && len(out) >= want {
			quiet++
		}
	}
	return out
}

// checkExactlyOnce fails unless got holds prefix+i for every i < n, once.
func checkExactlyOnce(t *testing.T, got []string, prefix string, n int) {
	t.Helper()
	seen := make(map[string]int, len(got))
	for _, v := range got {
		seen[v]++
	}
	for i := 0; i < n; i++ {
		if c := seen[prefix+fmt.Sprint(i)]; c != 1 {
			t.Fatalf("%s%d seen %d times (%d values in all)", prefix, i, c, len(got))
		}
	}
	if len(got) != n {
		t.Fatalf("%d values, want %d", len(got), n)
	}
}

// groupAtEnd checks that group's committed offsets of topic are at its end.
func groupAtEnd(ctx context.Context, adm *kadm.Client, group, topic string) error {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err
	}
	var bad []string
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			return // nothing to consume, nothing committed
		}
		c, ok := committed.Lookup(o.Topic, o.Partition)
		if !ok || c.At != o.Offset {
			bad = append(bad, fmt.Sprintf("%s/%d committed %d (%v), end %d", o.Topic, o.Partition, c.At, ok, o.Offset))
		}
	})
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

func TestTxnConsumeTransformProduce(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	adm := n.Admin()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "ctp-in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "ctp-out"); err != nil {
		t.Fatal(err)
	}
	const records = 300
	produceInput(ctx, t, n.Client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner())), "ctp-in", records)

	s := transactSession(t, seeds, "ctp-tx", "ctp-group", "ctp-in")
	done := 0
	for done < records {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d records transformed", done, records)
		}
		values, committed, err := transformOnce(ctx, s, "ctp-out", "out-", kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			done += len(values)
		}
	}
	checkExactlyOnce(t, readCommitted(ctx, t, seeds, "ctp-out", records), "out-", records)
	if err := groupAtEnd(ctx, adm, "ctp-group", "ctp-in"); err != nil {
		t.Fatal(err)
	}
}

func TestTxnAbortedOffsetsNotVisible(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	adm := n.Admin()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "abort-in"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "abort-out"); err != nil {
		t.Fatal(err)
	}
	const records = 20
	produceInput(ctx, t, n.Client(), "abort-in", records)

	// The first consumer transforms everything and aborts.
	first := transactSession(t, seeds, "abort-tx", "abort-group", "abort-in")
	aborted := 0
	for aborted < records && ctx.Err() == nil {
		values, _, err := transformOnce(ctx, first, "abort-out", "x-", kgo.TryAbort)
		if err != nil {
			t.Fatal(err)
		}
		aborted += len(values)
	}
	first.Close()
	committed, err := adm.FetchOffsets(ctx, "abort-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := committed.Lookup("abort-in", 0); ok && o.At >= 0 {
		t.Fatalf("an aborted transaction's offset is visible: %+v", o)
	}

	// The next consumer of the group re-reads from the start.
	next := transactSession(t, seeds, "abort-tx", "abort-group", "abort-in")
	done := 0
	for done < records {
		if ctx.Err() != nil {
			t.Fatalf("only %d of %d records transformed", done, records)
		}
		values, ok, err := transformOnce(ctx, next, "abort-out", "y-", kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			done += len(values)
		}
	}
	checkExactlyOnce(t, readCommitted(ctx, t, seeds, "abort-out", records), "y-", records)
	if err := groupAtEnd(ctx, adm, "abort-group", "abort-in"); err != nil {
		t.Fatal(err)
	}
}

// beginTxnOffsetCommit begins a transaction on cl (transactional id
// txnID), produces value to out's partition 0, adds group to the
// transaction and commits group's offset of in's partition 0 in it; it
// returns the producer id and epoch. The transaction stays open.
func beginTxnOffsetCommit(ctx context.Context, t *testing.T, cl *kgo.Client, txnID, group, out, in string, value []byte, offset int64) (int64, int16) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: out, Partition: 0, Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, group
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %+v", err, resp)
	}
	if code, err := txnOffsetCommit(ctx, cl, txnID, group, pid, epoch, in, offset); err != nil || code != 0 {
		t.Fatalf("TxnOffsetCommit: %v, error %d", err, code)
	}
	return pid, epoch
}

// txnOffsetCommit sends TxnOffsetCommit v3 (no group membership) for
// group's offset of topic partition 0.
func txnOffsetCommit(ctx context.Context, cl *kgo.Client, txnID, group string, pid int64, epoch int16, topic string, offset int64) (int16, error) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = 3
	req.TransactionalID, req.Group = txnID, group
	req.ProducerID, req.ProducerEpoch = pid, epoch
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	topics, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	// kgo sends the newest version both sides know: from v6 (KIP-1319)
	// the topic goes by its id.
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, TopicID: topics[topic].ID, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}

// stableOffset fetches group's offset of topic partition 0 with
// RequireStable and returns it and the partition's error code.
func stableOffset(ctx context.Context, cl *kgo.Client, group, topic string) (int64, int16, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	req.RequireStable = true
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{0}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	if resp.ErrorCode != 0 {
		return 0, 0, kerr.ErrorForCode(resp.ErrorCode)
	}
	p := resp.Topics[0].Partitions[0]
	return p.Offset, p.ErrorCode, nil
}

func TestTxnOffsetsSurviveCoordinatorRestart(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	for _, topic := range []string{"restart-in", "restart-out"} {
		if _, err := n.Admin().CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}

	// A transaction produces and commits the group's offset 7, and its
	// producer stops before ending it.
	cl := txnProducer(t, seeds, "restart-tx")
	pid, epoch := beginTxnOffsetCommit(ctx, t, cl, "restart-tx", "restart-group", "restart-out", "restart-in", []byte("out"), 7)
	admin := n.Client()
	if _, code, err := stableOffset(ctx, admin, "restart-group", "restart-in"); err != nil || code != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("pending offset before restart: error %d, %v", code, err)
	}

	// Both coordinators restart: the offset is still pending, not visible.
	n.Restart()
	admin = n.Client()
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		_, code, err := stableOffset(ctx, admin, "restart-group", "restart-in")
		if err != nil {
			return err
		}
		if code != kerr.UnstableOffsetCommit.Code {
			return fmt.Errorf("error %d, want UNSTABLE_OFFSET_COMMIT", code)
		}
		return nil
	})
	committed, err := n.Admin().FetchOffsets(ctx, "restart-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := committed.Lookup("restart-in", 0); ok && o.At >= 0 {
		t.Fatalf("pending offset visible after restart: %+v", o)
	}

	// The producer commits after the reload: the offset applies.
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after restart: %v", err)
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		off, code, err := stableOffset(ctx, admin, "restart-group", "restart-in")
		if err != nil {
			return err
		}
		if code != 0 || off != 7 {
			return fmt.Errorf("offset %d, error %d; want 7", off, code)
		}
		return nil
	})

	// A new producer of the id fences the old epoch: once the new epoch
	// committed offsets to the group's partition, the old epoch's
	// TxnOffsetCommit is refused there.
	next := txnProducer(t, seeds, "restart-tx")
	if err := next.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := next.ProduceSync(ctx, &kgo.Record{Topic: "restart-out", Partition: 0, Value: []byte("next")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pid2, epoch2, err := next.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pid2 != pid || epoch2 <= epoch {
		t.Fatalf("new producer %d/%d, old %d/%d", pid2, epoch2, pid, epoch)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "restart-tx", pid2, epoch2, "restart-group"
	if resp, err := add.RequestWith(ctx, next); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %+v", err, resp)
	}
	if code, err := txnOffsetCommit(ctx, next, "restart-tx", "restart-group", pid2, epoch2, "restart-in", 9); err != nil || code != 0 {
		t.Fatalf("TxnOffsetCommit of the new epoch: %v, error %d", err, code)
	}
	if code, err := txnOffsetCommit(ctx, admin, "restart-tx", "restart-group", pid, epoch, "restart-in", 100); err != nil || code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TxnOffsetCommit of the fenced epoch: %v, error %d, want INVALID_PRODUCER_EPOCH", err, code)
	}
	if err := next.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		off, code, err := stableOffset(ctx, admin, "restart-group", "restart-in")
		if err != nil {
			return err
		}
		if code != 0 || off != 9 {
			return fmt.Errorf("offset %d, error %d; want 9", off, code)
		}
		return nil
	})
}
