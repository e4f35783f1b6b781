package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/sluicetest"
)

// ShareFetch (78) and ShareAcknowledge (79) driven with raw requests, as a
// share consumer sends them, against one real node: share sessions, record
// acquisition with delivery counts, acknowledgements, redelivery, and
// release when a session closes (KIP-932).

// shareFetcher is one share group member with its own connection (a share
// session belongs to the connection that opened it).
type shareFetcher struct {
	t             *testing.T
	cl            *kgo.Client
	group, member string
	topicID       [16]byte
	epoch         int32
}

func newShareFetcher(t *testing.T, n *sluicetest.Node, group, member string, topicID [16]byte) *shareFetcher {
	cl := n.Client()
	t.Cleanup(cl.Close)
	return &shareFetcher{t: t, cl: cl, group: group, member: member, topicID: topicID}
}

type shareAckRange struct {
	first, last int64
	types       []int8
}

// fetchReq builds a ShareFetch of partition 0 with acks, at the member's
// epoch.
func (m *shareFetcher) fetchReq(maxWait int32, acks ...shareAckRange) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member)
	req.ShareSessionEpoch = m.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = maxWait, 1, 1<<20, 500, 500
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.topicID
	rp := kmsg.NewShareFetchRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// send sends req and, when it succeeded at the top level, moves the
// member's epoch on.
func (m *shareFetcher) fetch(req *kmsg.ShareFetchRequest) *kmsg.ShareFetchResponse {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("ShareFetch: %v", err)
	}
	if resp.ErrorCode == 0 {
		m.epoch = nextShareSessionEpoch(req.ShareSessionEpoch)
	}
	return resp
}

func nextShareSessionEpoch(e int32) int32 {
	if e == -1 {
		return 0
	}
	return e + 1
}

func (m *shareFetcher) acknowledge(epoch int32, acks ...shareAckRange) *kmsg.ShareAcknowledgeResponse {
	m.t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.Version = 1
	req.GroupID, req.MemberID = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member)
	req.ShareSessionEpoch = epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = m.topicID
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: a.types})
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("ShareAcknowledge: %v", err)
	}
	if resp.ErrorCode == 0 {
		m.epoch = nextShareSessionEpoch(epoch)
	}
	return resp
}

// oneSharePartition returns the answer's partition 0, failing if it has none.
func oneSharePartition(t *testing.T, resp *kmsg.ShareFetchResponse) kmsg.ShareFetchResponseTopicPartition {
	t.Helper()
	if resp.ErrorCode != 0 {
		t.Fatalf("ShareFetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("ShareFetch answered %d topics, want one with one partition: %+v", len(resp.Topics), resp.Topics)
	}
	return resp.Topics[0].Partitions[0]
}

// acquired formats AcquiredRecords as first-last/deliveries.
func acquiredString(p kmsg.ShareFetchResponseTopicPartition) string {
	s := ""
	for _, a := range p.AcquiredRecords {
		s += fmt.Sprintf("%d-%d/%d ", a.FirstOffset, a.LastOffset, a.DeliveryCount)
	}
	return s
}

func produceShareRecords(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func sharePartitionsNode(t *testing.T, topic string) (*sluicetest.Node, [16]byte, *kgo.Client) {
	n := sluicetest.Start(t)
	createTopic(t, n, topic, 1, nil)
	producer := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	t.Cleanup(producer.Close)
	return n, topicID(t, n, topic), producer
}

func TestShareFetchRefusedWithoutShareVersion(t *testing.T) {
	n, id, _ := sharePartitionsNode(t, "sq-off")
	disableShareGroups(t, n)
	m := newShareFetcher(t, n, "g", "m1", id)
	if resp := m.fetch(m.fetchReq(0)); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ShareFetch with share.version 0: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := m.acknowledge(1); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ShareAcknowledge with share.version 0: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestShareFetchAcquireAcknowledgeRedeliver(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq"
	n, id, producer := sharePartitionsNode(t, topic)
	produceShareRecords(t, producer, topic, 5) // before the group starts: skipped (latest)

	m1 := newShareFetcher(t, n, "g1", "m1", id)
	p := oneSharePartition(t, m1.fetch(m1.fetchReq(0)))
	if p.ErrorCode != 0 || len(p.AcquiredRecords) != 0 {
		t.Fatalf("opening fetch: %v, acquired %s; want no records (share.auto.offset.reset=latest)", kerr.ErrorForCode(p.ErrorCode), acquiredString(p))
	}

	produceShareRecords(t, producer, topic, 10) // offsets 5-14
	p = oneSharePartition(t, m1.fetch(m1.fetchReq(5000)))
	if got := acquiredString(p); got != "5-14/1 " {
		t.Fatalf("acquired %q, want 5-14 delivered once", got)
	}
	if hs := logstore.ParseBatchHeaders(p.Records); len(hs) == 0 || hs[0].BaseOffset > 5 || hs[len(hs)-1].LastOffset() < 14 {
		t.Fatalf("records do not cover 5-14: %+v", hs)
	}

	// A second member finds nothing while m1 holds everything.
	m2 := newShareFetcher(t, n, "g1", "m2", id)
	oneSharePartition(t, m2.fetch(m2.fetchReq(0)))
	if resp := m2.fetch(m2.fetchReq(100)); len(resp.Topics) != 0 {
		t.Fatalf("m2 got %+v while m1 holds every record", resp.Topics)
	}
	// m2 may not acknowledge m1's records.
	ackResp := m2.acknowledge(m2.epoch, shareAckRange{5, 5, []int8{1}})
	if c := ackResp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRecordState.Code {
		t.Fatalf("m2 acknowledging m1's record: %v, want INVALID_RECORD_STATE", kerr.ErrorForCode(c))
	}

	// m1 accepts 5-9 and releases 10-14: they are redelivered, counted.
	ackResp = m1.acknowledge(m1.epoch, shareAckRange{5, 9, []int8{1}}, shareAckRange{10, 14, []int8{2}})
	if ackResp.ErrorCode != 0 || ackResp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("acknowledge: %v / %v", kerr.ErrorForCode(ackResp.ErrorCode), kerr.ErrorForCode(ackResp.Topics[0].Partitions[0].ErrorCode))
	}
	p = oneSharePartition(t, m2.fetch(m2.fetchReq(5000)))
	if got := acquiredString(p); got != "10-14/2 " {
		t.Fatalf("m2 acquired %q, want 10-14 on their second delivery", got)
	}

	// m2 rejects 10 and accepts the rest in a piggy-backed fetch; the
	// fetch itself finds nothing new and comes back empty.
	resp := m2.fetch(m2.fetchReq(100, shareAckRange{10, 14, []int8{3, 1, 1, 1, 1}}))
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 || len(resp.Topics[0].Partitions[0].AcquiredRecords) != 0 {
		t.Fatalf("piggy-backed acknowledgement: %+v", resp.Topics)
	}

	// Closing m1's session releases what it holds: produce 15-19, m1
	// takes them, closes; m2 gets them on their second delivery.
	produceShareRecords(t, producer, topic, 5)
	p = oneSharePartition(t, m1.fetch(m1.fetchReq(5000)))
	if got := acquiredString(p); got != "15-19/1 " {
		t.Fatalf("m1 acquired %q, want 15-19", got)
	}
	if r := m1.acknowledge(-1); r.ErrorCode != 0 {
		t.Fatalf("closing acknowledge: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	p = oneSharePartition(t, m2.fetch(m2.fetchReq(5000)))
	if got := acquiredString(p); got != "15-19/2 " {
		t.Fatalf("m2 acquired %q after m1 closed its session, want 15-19/2", got)
	}
}

func TestShareSessionErrors(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-sessions"
	n, id, _ := sharePartitionsNode(t, topic)
	m := newShareFetcher(t, n, "g2", "m", id)

	// No session yet.
	m.epoch = 3
	if resp := m.fetch(m.fetchReq(0)); resp.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("fetch without a session: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp := m.acknowledge(0); resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ShareAcknowledge at epoch 0: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// Acknowledgements on an opening fetch.
	m.epoch = 0
	if resp := m.fetch(m.fetchReq(0, shareAckRange{0, 0, []int8{1}})); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("opening fetch with acknowledgements: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	oneSharePartition(t, m.fetch(m.fetchReq(0)))
	if m.epoch != 1 {
		t.Fatalf("epoch %d after opening, want 1", m.epoch)
	}
	m.epoch = 5
	if resp := m.fetch(m.fetchReq(0)); resp.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("fetch at a wrong epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epoch = 1
	if resp := m.fetch(m.fetchReq(0)); resp.ErrorCode != 0 {
		t.Fatalf("fetch at the right epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	// An unknown topic id is answered per partition.
	other := newShareFetcher(t, n, "g2", "other", [16]byte{9, 9, 9})
	p := oneSharePartition(t, other.fetch(other.fetchReq(0)))
	if p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// A missing member id.
	anon := newShareFetcher(t, n, "g2", "", id)
	if resp := anon.fetch(anon.fetchReq(0)); resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("no member id: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

func TestShareFetchLongPollWakesOnProduce(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-poll"
	n, id, producer := sharePartitionsNode(t, topic)
	m := newShareFetcher(t, n, "g3", "m", id)
	oneSharePartition(t, m.fetch(m.fetchReq(0)))
	got := make(chan *kmsg.ShareFetchResponse, 1)
	req := m.fetchReq(30000)
	go func() {
		resp, err := req.RequestWith(context.Background(), m.cl)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	produceShareRecords(t, producer, topic, 3)
	resp := <-got
	if resp == nil {
		return
	}
	if p := oneSharePartition(t, resp); acquiredString(p) != "0-2/1 " {
		t.Fatalf("long poll acquired %q, want 0-2", acquiredString(p))
	}
}

// With share.isolation.level=read_committed a share group gets only
// committed records: the offsets of an aborted transaction (and its abort
// marker) are archived, never acquired; the commit marker is acquired with
// its transaction, for the client to acknowledge as a gap.
func TestShareFetchReadCommittedArchivesAborted(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic, group = "sq-txn", "g-txn"
	n, id, producer := sharePartitionsNode(t, topic)
	mustAlterGroupConfigs(t, n.Client(), group, "set:share.auto.offset.reset=earliest", "set:share.isolation.level=read_committed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	txc := n.Client(kgo.TransactionalID("sq-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	t.Cleanup(txc.Close)
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := txc.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var rs []*kgo.Record
		for i := range 3 {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "t%d", i)})
		}
		if err := txc.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txc.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	produceShareRecords(t, producer, topic, 1) // offsets: aborted 0-2, marker 3, committed 4-6, marker 7, plain 8

	m := newShareFetcher(t, n, group, "m", id)
	got := map[int64]bool{}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		resp := m.fetch(m.fetchReq(200))
		if resp.ErrorCode != 0 {
			return kerr.ErrorForCode(resp.ErrorCode)
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				for _, a := range p.AcquiredRecords {
					for o := a.FirstOffset; o <= a.LastOffset; o++ {
						got[o] = true
					}
				}
			}
		}
		if !got[8] {
			return fmt.Errorf("acquired %v so far, want up to offset 8", got)
		}
		return nil
	})
	for o := int64(0); o <= 8; o++ {
		if want := o >= 4; got[o] != want {
			t.Fatalf("offset %d acquired=%v, want %v (acquired %v)", o, got[o], want, got)
		}
	}
}

// RENEW (KIP-1222, ShareAcknowledge and ShareFetch v2 with IsRenewAck)
// keeps records acquired with a fresh lock; without IsRenewAck it is an
// invalid acknowledgement, and a renewing ShareFetch fetches nothing.
func TestShareAcknowledgeRenew(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-renew"
	n, id, producer := sharePartitionsNode(t, topic)
	m := newShareFetcher(t, n, "g-renew", "m", id)
	oneSharePartition(t, m.fetch(m.fetchReq(0)))
	produceShareRecords(t, producer, topic, 3)
	if p := oneSharePartition(t, m.fetch(m.fetchReq(5000))); acquiredString(p) != "0-2/1 " {
		t.Fatalf("acquired %q, want 0-2", acquiredString(p))
	}
	renew := func(version int16, isRenew bool) *kmsg.ShareAcknowledgeResponse {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version, req.IsRenewAck = version, isRenew
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(m.group), kmsg.StringPtr(m.member), m.epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{4}}}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), m.cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode == 0 {
			m.epoch++
		}
		return resp
	}
	if resp := renew(1, false); resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("RENEW without IsRenewAck: %v", kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	resp := renew(2, true)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 || resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("RENEW: %v, lock timeout %d", kerr.ErrorForCode(c), resp.AcquisitionLockTimeoutMillis)
	}
	// A renewing ShareFetch renews and fetches nothing; the records are
	// still the member's to accept.
	req := m.fetchReq(0, shareAckRange{0, 2, []int8{4}})
	req.Version, req.IsRenewAck = 2, true
	fr := m.fetch(req)
	if len(fr.Topics) != 1 || fr.Topics[0].Partitions[0].AcknowledgeErrorCode != 0 || len(fr.Topics[0].Partitions[0].AcquiredRecords) != 0 {
		t.Fatalf("renewing ShareFetch: %+v", fr.Topics)
	}
	if r := m.acknowledge(m.epoch, shareAckRange{0, 2, []int8{1}}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("accept after renewing: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
}

// A member long-polling while another holds every record is answered as
// soon as the holder releases them, with their second delivery.
func TestShareFetchLongPollWakesOnRelease(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic = "sq-release"
	n, id, producer := sharePartitionsNode(t, topic)
	m1 := newShareFetcher(t, n, "g-release", "m1", id)
	m2 := newShareFetcher(t, n, "g-release", "m2", id)
	oneSharePartition(t, m1.fetch(m1.fetchReq(0)))
	oneSharePartition(t, m2.fetch(m2.fetchReq(0)))
	produceShareRecords(t, producer, topic, 4)
	if p := oneSharePartition(t, m1.fetch(m1.fetchReq(5000))); acquiredString(p) != "0-3/1 " {
		t.Fatalf("m1 acquired %q, want 0-3", acquiredString(p))
	}
	got := make(chan *kmsg.ShareFetchResponse, 1)
	req := m2.fetchReq(60000)
	go func() {
		resp, err := req.RequestWith(context.Background(), m2.cl)
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	if r := m1.acknowledge(m1.epoch, shareAckRange{0, 3, []int8{2}}); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if resp := <-got; resp != nil {
		if p := oneSharePartition(t, resp); acquiredString(p) != "0-3/2 " {
			t.Fatalf("m2 acquired %q after the release, want 0-3/2", acquiredString(p))
		}
	}
}
