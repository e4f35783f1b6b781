package broker_test

// Transactions v2 (KIP-890 part 2) and transaction verification (part 1),
// driven with raw requests at the versions a transaction version 2
// producer sends: Produce v12+ adds its partition to the transaction, a
// Produce v11 outside any transaction is refused, EndTxn v5 bumps the
// epoch and its retry is answered with the new one, TxnOffsetCommit v6
// names topics by id and adds the group's partition.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// coordinatorRetriable are the answers a client retries while a
// coordinator is created, loads, moves, or writes markers, or while a new
// topic reaches a node's metadata.
func coordinatorRetriable(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.ConcurrentTransactions.Code, kerr.NotEnoughReplicas.Code, kerr.NotLeaderForPartition.Code,
		kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		return true
	}
	return false
}

// untilDone calls try until it answers a code that is not retriable, and
// returns that code.
func untilDone(t *testing.T, what string, try func() int16) int16 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code := try()
		if !coordinatorRetriable(code) {
			return code
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %v", what, kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawRequestor sends a request as it is, at the version it was given,
// on one connection.
type rawRequestor struct{ c *rawConn }

func (r rawRequestor) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	_, resp := r.c.do(req)
	if resp == nil {
		return nil, fmt.Errorf("no response to %s", kmsg.NameForKey(req.Key()))
	}
	return resp, nil
}

// initTxnProducer runs InitProducerId v5 for id until it is answered.
func initTxnProducer(t *testing.T, r kmsg.Requestor, id string) (int64, int16) {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 5
	req.TransactionalID = kmsg.StringPtr(id)
	req.TransactionTimeoutMillis = 60000
	req.ProducerID, req.ProducerEpoch = -1, -1
	var resp *kmsg.InitProducerIDResponse
	code := untilDone(t, "init producer id", func() int16 {
		var err error
		if resp, err = req.RequestWith(context.Background(), r); err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		return resp.ErrorCode
	})
	if code != 0 {
		t.Fatalf("init producer id: %v", kerr.ErrorForCode(code))
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// endTxnV5 sends EndTxn v5 and returns its answer.
func endTxnV5(t *testing.T, r kmsg.Requestor, id string, pid int64, epoch int16, commit bool) *kmsg.EndTxnResponse {
	t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = 5
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, pid, epoch, commit
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		// A coordinator that died: the caller retries.
		resp = req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
	}
	return resp
}

// txnProduce sends one transactional batch at version to partition of
// topic for transactional id and returns the partition's answer.
func txnProduce(t *testing.T, r kmsg.Requestor, version int16, id, topic string, topicID [16]byte, partition int32, pid int64, epoch int16, seq int32, value string) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(topic, topicID, partition, 5000, recordBatch(pid, epoch, seq, true, value))
	req.Version = version
	req.TransactionID = kmsg.StringPtr(id)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		// A broker that died: the caller retries with the new leader.
		return kmsg.ProduceResponseTopicPartition{Partition: partition, ErrorCode: kerr.NotLeaderForPartition.Code}
	}
	return resp.Topics[0].Partitions[0]
}

func TestTxnV2RawRequests(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "v2raw", 2, nil)
	topicID := topicID(t, n, "v2raw")
	raw := rawRequestor{dialRawConn(t, n.Addr())}
	const id = "v2-raw"
	pid, epoch := initTxnProducer(t, raw, id)

	// KIP-890 part 1: a transactional batch of a partition nobody added
	// to the transaction is refused, and nothing is appended.
	if p := txnProduce(t, raw, 11, id, "v2raw", topicID, 0, pid, epoch, 0, "stray"); p.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("Produce v11 outside the transaction: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(p.ErrorCode))
	}
	if got := listLatest(t, n.Client(), "v2raw", 0); got != 0 {
		t.Fatalf("the refused batch was appended: end offset %d", got)
	}

	// Part 2: Produce v12 has the leader add the partition itself.
	if p := txnProduce(t, raw, 12, id, "v2raw", topicID, 0, pid, epoch, 0, "first"); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("Produce v12: offset %d, %v", p.BaseOffset, kerr.ErrorForCode(p.ErrorCode))
	}
	d := waitTxnState(t, []string{n.Addr()}, id, "Ongoing")
	if !d.Topics.Lookup("v2raw", 0) {
		t.Fatalf("the partition is not in the transaction: %+v", d.Topics)
	}

	// EndTxn v5 bumps the epoch and answers the new one.
	end := endTxnV5(t, raw, id, pid, epoch, true)
	if end.ErrorCode != 0 || end.ProducerID != pid || end.ProducerEpoch != epoch+1 {
		t.Fatalf("EndTxn v5: %v, producer %d epoch %d, want %d/%d", kerr.ErrorForCode(end.ErrorCode), end.ProducerID, end.ProducerEpoch, pid, epoch+1)
	}
	waitTxnState(t, []string{n.Addr()}, id, "CompleteCommit")
	// Its retry (the answer was lost) gets the same answer.
	if again := endTxnV5(t, raw, id, pid, epoch, true); again.ErrorCode != 0 || again.ProducerID != pid || again.ProducerEpoch != epoch+1 {
		t.Fatalf("retried EndTxn v5: %v, producer %d epoch %d", kerr.ErrorForCode(again.ErrorCode), again.ProducerID, again.ProducerEpoch)
	}
	// The same request at the new epoch is a new commit of nothing.
	if next := endTxnV5(t, raw, id, pid, epoch+1, true); next.ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("commit with nothing added: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(next.ErrorCode))
	}
	// A late batch of the finished transaction cannot open another one.
	if p := txnProduce(t, raw, 12, id, "v2raw", topicID, 1, pid, epoch, 0, "late"); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("late batch at the old epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(p.ErrorCode))
	}
	ends, err := n.Admin().ListEndOffsets(context.Background(), "v2raw")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("v2raw", 1); o.Offset != 0 {
		t.Fatalf("the late batch was appended: end offset %d", o.Offset)
	}

	// The next transaction at the new epoch: a record and the group's
	// offsets, committed with TxnOffsetCommit v6 (topic ids), which adds
	// the group's partition without AddOffsetsToTxn.
	epoch++
	if p := txnProduce(t, raw, 12, id, "v2raw", topicID, 1, pid, epoch, 0, "second"); p.ErrorCode != 0 {
		t.Fatalf("Produce v12 at the new epoch: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	const group = "v2-group"
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version = 3
	find.CoordinatorKey = group
	untilDone(t, "find the group coordinator", func() int16 {
		resp, err := find.RequestWith(context.Background(), raw)
		if err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		return resp.ErrorCode
	})
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version = 6
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, group, pid, epoch
	known := kmsg.NewTxnOffsetCommitRequestTopic()
	known.TopicID = topicID
	kp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	kp.Partition, kp.Offset = 0, 1
	known.Partitions = append(known.Partitions, kp)
	unknown := kmsg.NewTxnOffsetCommitRequestTopic()
	unknown.TopicID = [16]byte{1, 2, 3}
	unknown.Partitions = append(unknown.Partitions, kp)
	commit.Topics = append(commit.Topics, known, unknown)
	var committed *kmsg.TxnOffsetCommitResponse
	untilDone(t, "TxnOffsetCommit v6", func() int16 {
		var err error
		if committed, err = commit.RequestWith(context.Background(), raw); err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		return committed.Topics[0].Partitions[0].ErrorCode
	})
	if len(committed.Topics) != 2 || committed.Topics[0].TopicID != topicID || committed.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("TxnOffsetCommit v6: %+v", committed.Topics)
	}
	if code := committed.Topics[1].Partitions[0].ErrorCode; committed.Topics[1].TopicID != unknown.TopicID || code != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(code))
	}
	// v6 answers a member of a group that is not there GROUP_ID_NOT_FOUND
	// (ILLEGAL_GENERATION before, KIP-1319).
	ghost := *commit
	ghost.Group, ghost.Generation, ghost.MemberID = "v2-no-such-group", 3, "m"
	ghost.Topics = ghost.Topics[:1]
	var refused *kmsg.TxnOffsetCommitResponse
	untilDone(t, "TxnOffsetCommit v6 of a missing group", func() int16 {
		var err error
		if refused, err = ghost.RequestWith(context.Background(), raw); err != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		return refused.Topics[0].Partitions[0].ErrorCode
	})
	if code := refused.Topics[0].Partitions[0].ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("TxnOffsetCommit v6 of a missing group: %v, want GROUP_ID_NOT_FOUND", kerr.ErrorForCode(code))
	}
	d = waitTxnState(t, []string{n.Addr()}, id, "Ongoing")
	if len(d.Topics["__consumer_offsets"]) == 0 {
		t.Fatalf("the group's partition is not in the transaction: %+v", d.Topics)
	}
	end = endTxnV5(t, raw, id, pid, epoch, true)
	if end.ErrorCode != 0 || end.ProducerEpoch != epoch+1 {
		t.Fatalf("second EndTxn v5: %v epoch %d", kerr.ErrorForCode(end.ErrorCode), end.ProducerEpoch)
	}
	adm := n.Admin()
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		offsets, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return err
		}
		if o, ok := offsets.Lookup("v2raw", 0); !ok || o.At != 1 {
			return fmt.Errorf("committed offset %+v, want 1", o)
		}
		return nil
	})
	got := consumeN(t, n, "v2raw", 2, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	slices.Sort(got)
	if !slices.Equal(got, []string{"first", "second"}) {
		t.Fatalf("read_committed: %q, want the two committed records", got)
	}
}

// leaderOf is the current leader of partition 0 of topic, as a requestor
// (a kgo client sends a Produce it is handed to any broker).
func leaderOf(t *testing.T, cl *kgo.Client, topic string) kmsg.Requestor {
	t.Helper()
	cl.ForceMetadataRefresh()
	meta, err := topicMetadata(cl, topic)
	if err != nil || len(meta.Partitions) == 0 || meta.Partitions[0].Leader < 0 {
		return cl // answered NOT_LEADER_OR_FOLLOWER or so, and retried
	}
	return cl.Broker(int(meta.Partitions[0].Leader))
}

// TestTxnV2CoordinatorDiesBetweenTransactions runs transaction version 2
// transactions on three nodes and kills the transaction coordinator
// between two of them: the next coordinator loads the bumped epoch, the
// producer goes on at it, and both transactions are visible to
// read_committed consumers.
func TestTxnV2CoordinatorDiesBetweenTransactions(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	cl := c.Client(kgo.MetadataMinAge(50 * time.Millisecond))
	createAssigned(t, cl, "v2fo", []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	c.WaitForISR("v2fo", 0, 3)
	// A new topic's ISR is full from its creation, so WaitForISR can pass
	// on the controller's answer before the other nodes apply the topic:
	// wait until every node knows it before reading its ID from any.
	c.WaitForTopic("v2fo")
	meta, err := topicMetadata(cl, "v2fo")
	if err != nil || meta.ErrorCode != 0 {
		t.Fatalf("metadata for v2fo: %v %v", err, kerr.ErrorForCode(meta.ErrorCode))
	}
	topicID := meta.TopicID
	const id = "v2-failover"
	pid, epoch := initTxnProducer(t, cl, id)

	produce := func(epoch int16, value string) {
		t.Helper()
		code := untilDone(t, "produce "+value, func() int16 {
			return txnProduce(t, leaderOf(t, cl, "v2fo"), 13, id, "v2fo", topicID, 0, pid, epoch, 0, value).ErrorCode
		})
		if code != 0 {
			t.Fatalf("produce %s: %v", value, kerr.ErrorForCode(code))
		}
	}
	end := func(epoch int16) int16 {
		t.Helper()
		var resp *kmsg.EndTxnResponse
		code := untilDone(t, "EndTxn v5", func() int16 {
			resp = endTxnV5(t, cl, id, pid, epoch, true)
			return resp.ErrorCode
		})
		if code != 0 || resp.ProducerID != pid || resp.ProducerEpoch != epoch+1 {
			t.Fatalf("EndTxn v5 at epoch %d: %v, producer %d epoch %d", epoch, kerr.ErrorForCode(code), resp.ProducerID, resp.ProducerEpoch)
		}
		return resp.ProducerEpoch
	}

	produce(epoch, "one")
	epoch = end(epoch)
	waitTxnState(t, c.Addrs(), id, "CompleteCommit")

	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKey, find.CoordinatorType = id, 1
	resp, err := find.RequestWith(context.Background(), cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("find coordinator: %v %v", err, resp)
	}
	c.Kill(int(resp.NodeID))

	produce(epoch, "two")
	epoch = end(epoch)

	var live *sluicetest.Node
	for i := 1; i <= 3; i++ {
		if i != int(resp.NodeID) {
			live = c.Node(i)
			break
		}
	}
	got := consumeValues(t, live, "v2fo", "two", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("read_committed: %q, want [one two]", got)
	}
	// The first transaction's epoch is fenced everywhere.
	if p := txnProduce(t, leaderOf(t, cl, "v2fo"), 13, id, "v2fo", topicID, 0, pid, epoch-2, 1, "zombie"); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("zombie at epoch %d: %v", epoch-2, kerr.ErrorForCode(p.ErrorCode))
	}
}

// txnV1Versions caps a franz-go client below transactions v2 (EndTxn v4,
// Produce v11, TxnOffsetCommit v4), so it runs the classic protocol even
// where the cluster finalizes transaction.version 2, as a client from
// before KIP-890 part 2 does.
func txnV1Versions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	v.SetMaxKeyVersion(26, 4)
	v.SetMaxKeyVersion(28, 4)
	return kgo.MaxVersions(v)
}

// TestTxnV2Franz runs franz-go's transactional producer against a node
// that finalizes transaction.version 2: franz-go then skips
// AddPartitionsToTxn, and every EndTxn bumps its epoch. A client capped
// below v2 works on the same node with the classic protocol.
func TestTxnV2Franz(t *testing.T) {
	n := sluicetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	createTopic(t, n, "v2kgo", 1, nil)

	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	level := int16(-1)
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			level = f.MaxVersionLevel
		}
	}
	if level < 2 {
		t.Skipf("transaction.version is finalized at %d; this test needs 2", level)
	}

	v2 := txnProducer(t, seeds, "v2-kgo")
	for i, commit := range []bool{true, false, true} {
		if err := produceTxn(ctx, v2, "v2kgo", 2, commit); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		want := "CompleteCommit"
		if !commit {
			want = "CompleteAbort"
		}
		d := waitTxnState(t, seeds, "v2-kgo", want)
		if d.ProducerEpoch != int16(i+1) {
			t.Fatalf("after transaction %d the epoch is %d, want %d (one bump per EndTxn v5)", i, d.ProducerEpoch, i+1)
		}
		if _, epoch, err := v2.ProducerID(ctx); err != nil || epoch != d.ProducerEpoch {
			t.Fatalf("franz-go's epoch %d (%v), the coordinator's %d", epoch, err, d.ProducerEpoch)
		}
	}

	v1 := txnProducer(t, seeds, "v1-kgo", txnV1Versions())
	for i, commit := range []bool{true, false} {
		if err := produceTxn(ctx, v1, "v2kgo", 1, commit); err != nil {
			t.Fatalf("v1 transaction %d: %v", i, err)
		}
	}
	if d := waitTxnState(t, seeds, "v1-kgo", "CompleteAbort"); d.ProducerEpoch != 0 {
		t.Fatalf("a v1 client's epoch moved to %d", d.ProducerEpoch)
	}
	// 2+2 committed records of v2-kgo and one of v1-kgo.
	all := consumeN(t, n, "v2kgo", 5, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if len(all) != 5 {
		t.Fatalf("read_committed: %d records, want 5 (4 of transactions v2, 1 of v1)", len(all))
	}
}

// consumeN reads partition 0 of topic from the start until it has n
// records or nothing more comes for a second, and returns the values.
func consumeN(t *testing.T, n *sluicetest.Node, topic string, want int, opts ...kgo.Opt) []string {
	t.Helper()
	cl := n.Client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	var got []string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if fs.NumRecords() == 0 && len(got) >= want {
			break
		}
	}
	return got
}
