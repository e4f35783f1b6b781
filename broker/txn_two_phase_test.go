package broker_test

// Two-phase commit transactions (KIP-939) as Kafka 4.4 has them, through
// InitProducerId v6 requests kmsg cannot build (twoPCInit encodes them):
// transaction.two.phase.commit.enable gates Enable2Pc
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED without it) and the listing of
// v6, TWO_PHASE_COMMIT on the transactional id is needed under an
// authorizer, KeepPreparedTxn is UNSUPPORTED_VERSION, and a 2PC
// transaction is never aborted by its timeout, also after a restart and
// on the coordinator that takes over from a dead one.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// twoPCInit is an InitProducerId request at v6: kmsg's v5 fields, then
// Enable2Pc and KeepPreparedTxn, then the tagged fields.
type twoPCInit struct {
	kmsg.InitProducerIDRequest
	enable2PC, keepPrepared bool
}

func (*twoPCInit) MaxVersion() int16 { return 6 }

func (r *twoPCInit) AppendTo(dst []byte) []byte {
	if r.Version < 6 {
		return r.InitProducerIDRequest.AppendTo(dst)
	}
	dst = kbin.AppendCompactNullableString(dst, r.TransactionalID)
	dst = kbin.AppendInt32(dst, r.TransactionTimeoutMillis)
	dst = kbin.AppendInt64(dst, r.ProducerID)
	dst = kbin.AppendInt16(dst, r.ProducerEpoch)
	dst = kbin.AppendBool(dst, r.enable2PC)
	dst = kbin.AppendBool(dst, r.keepPrepared)
	return append(dst, 0) // no tagged fields
}

func (r *twoPCInit) ResponseKind() kmsg.Response {
	return &twoPCInitResponse{InitProducerIDResponse: kmsg.NewInitProducerIDResponse()}
}

// twoPCInitResponse is an InitProducerId response at v6, which adds
// OngoingTxnProducerId and OngoingTxnProducerEpoch.
type twoPCInitResponse struct {
	kmsg.InitProducerIDResponse
	ongoingID    int64
	ongoingEpoch int16
}

func (r *twoPCInitResponse) ReadFrom(src []byte) error {
	if r.Version < 6 {
		return r.InitProducerIDResponse.ReadFrom(src)
	}
	b := kbin.Reader{Src: src}
	r.ThrottleMillis, r.ErrorCode = b.Int32(), b.Int16()
	r.ProducerID, r.ProducerEpoch = b.Int64(), b.Int16()
	r.ongoingID, r.ongoingEpoch = b.Int64(), b.Int16()
	if tags := b.Uvarint(); tags != 0 {
		return fmt.Errorf("%d tagged fields in the answer", tags)
	}
	return b.Complete()
}

// initV6 sends InitProducerId v6 for id on a new connection to addr,
// asking again while the coordinator is not ready (the
// __transaction_state topic is created by the first request).
func initV6(t *testing.T, addr, id string, timeoutMs int32, enable2PC, keepPrepared bool) *twoPCInitResponse {
	t.Helper()
	var got *twoPCInitResponse
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		req := &twoPCInit{InitProducerIDRequest: kmsg.NewInitProducerIDRequest(), enable2PC: enable2PC, keepPrepared: keepPrepared}
		req.Version = 6
		req.TransactionalID, req.TransactionTimeoutMillis = &id, timeoutMs
		resp, err := rawRequest(t, addr, req)
		if err != nil {
			return fmt.Errorf("InitProducerId v6: %v", err)
		}
		got = resp.(*twoPCInitResponse)
		switch err := kerr.ErrorForCode(got.ErrorCode); err {
		case kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.NotCoordinator, kerr.ConcurrentTransactions:
			return err
		}
		return nil
	})
	return got
}

// initProducerIDMax is the highest InitProducerId version addr lists.
func initProducerIDMax(t *testing.T, addr string) int16 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "1.0"
	resp, err := rawRequest(t, addr, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == 22 {
			return k.MaxVersion
		}
	}
	t.Fatal("InitProducerId is not listed")
	return 0
}

func TestTwoPhaseCommitRefusedByDefault(t *testing.T) {
	n := sluicetest.Start(t)
	if got := initProducerIDMax(t, n.Addr()); got != 5 {
		t.Fatalf("InitProducerId listed up to v%d, want v5 as a default Kafka 4.4", got)
	}
	r := initV6(t, n.Addr(), "no-2pc", 60000, true, false)
	if r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || r.ProducerID != -1 {
		t.Fatalf("Enable2Pc with transaction.two.phase.commit.enable=false: %v id %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID)
	}
	// v6 itself is served: without Enable2Pc it is an ordinary init.
	r = initV6(t, n.Addr(), "no-2pc", 60000, false, false)
	if r.ErrorCode != 0 || r.ProducerID < 0 || r.ongoingID != -1 || r.ongoingEpoch != -1 {
		t.Fatalf("v6 without Enable2Pc: %v id %d ongoing %d/%d", kerr.ErrorForCode(r.ErrorCode), r.ProducerID, r.ongoingID, r.ongoingEpoch)
	}
}

func TestTwoPhaseCommitNeverTimesOut(t *testing.T) {
	n := sluicetest.Start(t, "transaction.two.phase.commit.enable=true",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=100")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seeds := []string{n.Addr()}
	needMarkers(t, n.Addr())
	if got := initProducerIDMax(t, n.Addr()); got != 6 {
		t.Fatalf("InitProducerId listed up to v%d with two-phase commit on, want v6", got)
	}
	if _, err := n.Admin().CreateTopic(ctx, 1, 1, nil, "txn-2pc"); err != nil {
		t.Fatal(err)
	}
	if r := initV6(t, n.Addr(), "2pc", 1000, true, true); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("KeepPreparedTxn: %v, want UNSUPPORTED_VERSION as Kafka 4.4", kerr.ErrorForCode(r.ErrorCode))
	}
	p := initV6(t, n.Addr(), "2pc", 1000, true, false)
	if p.ErrorCode != 0 || p.ongoingID != -1 || p.ongoingEpoch != -1 {
		t.Fatalf("Enable2Pc: %v ongoing %d/%d", kerr.ErrorForCode(p.ErrorCode), p.ongoingID, p.ongoingEpoch)
	}
	cl := n.Client()
	addTxnPartition(ctx, t, cl, "txn-2pc", "2pc", p.ProducerID, p.ProducerEpoch)
	// Three records in the transaction (Produce v11: the partition was
	// added by AddPartitionsToTxn above, as a transactions v1 producer does).
	batch := recordBatch(p.ProducerID, p.ProducerEpoch, 0, true, "2pc-0", "2pc-1", "2pc-2")
	produce := produceRequest("txn-2pc", topicID(t, n, "txn-2pc"), 0, 5000, batch)
	produce.TransactionID = kmsg.StringPtr("2pc")
	if resp, err := produce.RequestWith(ctx, n.Client(txnV1Versions())); err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("produce in the 2PC transaction: %v %+v", err, resp)
	}
	// An ordinary transaction with the same 1 s timeout next to it: once
	// the coordinator has aborted it, it has looked at the 2PC one too.
	plainTimesOut := func(id string) { plainTxnTimesOut(ctx, t, cl, seeds, "txn-2pc", id) }
	plainTimesOut("plain-1")
	d, err := describeTxn(ctx, seeds, "2pc")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "Ongoing" || d.TimeoutMillis != 2147483647 || d.ProducerID != p.ProducerID || d.ProducerEpoch != p.ProducerEpoch {
		t.Fatalf("2PC transaction after the timeout: %+v", d)
	}

	// The timeout is in __transaction_state: after a restart the
	// coordinator that loads it leaves it running too.
	n.Restart()
	cl = n.Client()
	plainTimesOut("plain-2")
	d, err = describeTxn(ctx, seeds, "2pc")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "Ongoing" || d.TimeoutMillis != 2147483647 || d.ProducerID != p.ProducerID || d.ProducerEpoch != p.ProducerEpoch {
		t.Fatalf("2PC transaction after a restart: %+v", d)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 4
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "2pc", p.ProducerID, p.ProducerEpoch, true
	resp, err := end.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("commit: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
	}
	waitTxnState(t, seeds, "2pc", "CompleteCommit")

	// A read_committed consumer sees the three records once.
	consumer := n.Client(kgo.ConsumeTopics("txn-2pc"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 3 {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read_committed: %v, got %q", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 3 || got[0] != "2pc-0" || got[1] != "2pc-1" || got[2] != "2pc-2" {
		t.Fatalf("read_committed: %q", got)
	}
}

// addTxnPartition adds partition 0 of topic to id's transaction.
func addTxnPartition(ctx context.Context, t *testing.T, cl *kgo.Client, topic, id string, pid int64, epoch int16) {
	t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 3
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	tp := kmsg.NewAddPartitionsToTxnRequestTopic()
	tp.Topic, tp.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn %s: %v", id, kerr.ErrorForCode(code))
	}
}

// plainTxnTimesOut starts an ordinary transaction of id with a 1 s
// timeout (InitProducerId v5, so no Enable2Pc) and waits until its
// coordinator has aborted it.
func plainTxnTimesOut(ctx context.Context, t *testing.T, cl *kgo.Client, seeds []string, topic, id string) {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 1000
	q, err := init.RequestWith(ctx, cl)
	if err != nil || q.ErrorCode != 0 {
		t.Fatalf("init %s: %v %v", id, err, q)
	}
	addTxnPartition(ctx, t, cl, topic, id, q.ProducerID, q.ProducerEpoch)
	waitTxnState(t, seeds, id, "CompleteAbort")
}

// TestTwoPhaseCommitCoordinatorFailover: the broker that coordinates a 2PC
// transaction dies; the one that loads its __transaction_state partition
// keeps the transaction running past its would-be timeout, with the same
// producer id and epoch, and commits it when asked.
func TestTwoPhaseCommitCoordinatorFailover(t *testing.T) {
	// One __transaction_state partition: the 2PC id and the plain ones
	// that show the timer ran share a coordinator.
	c := sluicetest.StartCluster(t, 3, "transaction.two.phase.commit.enable=true",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=100", "transaction.state.log.num.partitions=1")
	seeds := c.Addrs()
	needMarkers(t, seeds[0])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.Admin().CreateTopic(ctx, 1, 3, nil, "txn-2pc-ha"); err != nil {
		t.Fatal(err)
	}
	c.WaitForISR("txn-2pc-ha", 0, 3)
	const id = "2pc-ha"
	var coordinator int
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		f, ok := c.Admin().FindTxnCoordinators(ctx, id)[id]
		if !ok || f.Err != nil {
			return fmt.Errorf("FindCoordinator %s: %v", id, f.Err)
		}
		coordinator = int(f.NodeID)
		return nil
	})
	p := initV6(t, c.Node(coordinator).Addr(), id, 1000, true, false)
	if p.ErrorCode != 0 {
		t.Fatalf("Enable2Pc: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	cl := c.Client()
	addTxnPartition(ctx, t, cl, "txn-2pc-ha", id, p.ProducerID, p.ProducerEpoch)
	c.WaitForISR("__transaction_state", 0, 3)

	c.Kill(coordinator)
	var live []string
	for i, a := range seeds {
		if i+1 != coordinator {
			live = append(live, a)
		}
	}
	cl = c.Client(kgo.SeedBrokers(live...))
	plainTxnTimesOut(ctx, t, cl, live, "txn-2pc-ha", "plain-ha")
	d, err := describeTxn(ctx, live, id)
	if err != nil {
		t.Fatal(err)
	}
	if int(d.Coordinator) == coordinator || d.State != "Ongoing" || d.TimeoutMillis != 2147483647 || d.ProducerID != p.ProducerID || d.ProducerEpoch != p.ProducerEpoch {
		t.Fatalf("2PC transaction on the new coordinator: %+v (the old one was %d)", d, coordinator)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.Version = 4
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, p.ProducerID, p.ProducerEpoch, true
	resp, err := end.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("commit through the new coordinator: %v %v", err, resp)
	}
	waitTxnState(t, live, id, "CompleteCommit")
}

func TestTwoPhaseCommitNeedsTwoPhaseCommitACL(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true",
		"transaction.two.phase.commit.enable=true")
	adm := n.Admin()
	// An ACL names the id: allow.everyone no longer applies to it.
	createACLs(t, adm, kadm.NewACLs().TransactionalIDs("acl-2pc").Allow("User:ANONYMOUS").AllowHosts("*").Operations(kadm.OpWrite))
	if r := initV6(t, n.Addr(), "acl-2pc", 60000, false, false); r.ErrorCode != 0 {
		t.Fatalf("WRITE without 2PC: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := initV6(t, n.Addr(), "acl-2pc", 60000, true, false); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("Enable2Pc without TWO_PHASE_COMMIT: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	createACLs(t, adm, kadm.NewACLs().TransactionalIDs("acl-2pc").Allow("User:ANONYMOUS").AllowHosts("*").Operations(kmsg.ACLOperation(15)))
	if r := initV6(t, n.Addr(), "acl-2pc", 60000, true, false); r.ErrorCode != 0 {
		t.Fatalf("Enable2Pc with TWO_PHASE_COMMIT: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
