package broker_test

// Client byte-rate quotas enforced as Kafka does (issue 18, KIP-219): what
// a franz-go client and a raw connection observe. Rates are measured by
// the perf-tool compat row (compat/java_quota_perf_test.go), not here.

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
	"github.com/sluicedev/sluice/sluicetest"
)

// throttles counts the throttle times a client was told, by whether the
// broker muted after the response (KIP-219).
type throttles struct {
	mu    sync.Mutex
	after []time.Duration
	held  []time.Duration
}

func (t *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, afterResponse bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if afterResponse {
		t.after = append(t.after, d)
	} else {
		t.held = append(t.held, d)
	}
}

func (t *throttles) count() (after, held int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.after), len(t.held)
}

// incompressible is n random bytes: a client's compression must not
// shrink what the quotas are to charge.
func incompressible(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// setQuota sets key=limit on entity (qEntity's pairs) through
// AlterClientQuotas; the broker asked answers once its own metadata has
// the change.
func setQuota(t *testing.T, adm *kadm.Client, key string, limit float64, entity ...string) {
	t.Helper()
	res, err := adm.AlterClientQuotas(context.Background(), []kadm.AlterClientQuotaEntry{
		{Entity: qEntity(entity...), Ops: []kadm.AlterClientQuotaOp{qSet(key, limit)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// A producer over its producer_byte_rate is told a throttle time after
// the response (Produce v6+) and its records are all appended; a producer
// with another client id on the same broker is not throttled.
func TestProduceQuotaThrottles(t *testing.T) {
	node := sluicetest.Start(t, "quota.window.num=2", "quota.window.size.seconds=1")
	setQuota(t, node.Admin(), quotas.ProducerByteRate, 4096, "client-id", "greedy")
	ctx := context.Background()
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, "quota-produce"); err != nil {
		t.Fatal(err)
	}
	greedyHook, politeHook := &throttles{}, &throttles{}
	greedy := node.Client(kgo.ClientID("greedy"), kgo.WithHooks(greedyHook), kgo.DefaultProduceTopic("quota-produce"), kgo.ProducerLinger(0))
	polite := node.Client(kgo.ClientID("polite"), kgo.WithHooks(politeHook), kgo.DefaultProduceTopic("quota-produce"), kgo.ProducerLinger(0))
	value := incompressible(3000)
	const n = 6
	for range n {
		if err := greedy.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := polite.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if after, held := greedyHook.count(); after == 0 || held != 0 {
		t.Fatalf("greedy producer throttled %d times after the response, %d before; want some, all after", after, held)
	}
	if after, held := politeHook.count(); after+held != 0 {
		t.Fatalf("producer with another client id throttled %d times", after+held)
	}
	// Throttled, not dropped: every record is in the log.
	offsets, err := node.Admin().ListEndOffsets(ctx, "quota-produce")
	if err != nil {
		t.Fatal(err)
	}
	if end, _ := offsets.Lookup("quota-produce", 0); end.Offset != 2*n {
		t.Fatalf("end offset %d, want %d", end.Offset, 2*n)
	}
}

// The connection of a throttled producer is muted (KIP-219): a request
// pipelined behind the throttled one is not read before the throttle time
// has passed, so its answer cannot arrive sooner than that after both
// were sent; the connection stays open.
func TestProduceQuotaMutesConnection(t *testing.T) {
	node := sluicetest.Start(t, "quota.window.num=2", "quota.window.size.seconds=1")
	setQuota(t, node.Admin(), quotas.ProducerByteRate, 10_000, "client-id", "raw")
	ctx := context.Background()
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, "quota-mute"); err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", node.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// 15,000 bytes against 10,000/s measured over one second: about
	// 500 ms of throttle.
	first := produceFrame(t, 1, 15_000)
	second := produceFrame(t, 2, 10)
	sent := time.Now()
	if _, err := nc.Write(append(first, second...)); err != nil {
		t.Fatal(err)
	}
	r1 := readProduceResponse(t, nc, 1)
	if r1.ThrottleMillis <= 0 {
		t.Fatalf("throttle %d ms, want > 0", r1.ThrottleMillis)
	}
	if code := r1.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("throttled produce error %d, want appended", code)
	}
	readProduceResponse(t, nc, 2)
	if waited, throttle := time.Since(sent), time.Duration(r1.ThrottleMillis)*time.Millisecond; waited < throttle {
		t.Fatalf("second request answered %v after sending, before the %v throttle ended: the connection was not muted", waited, throttle)
	}
}

// produceFrame is a size-prefixed Produce v9 request (acks=1) for
// partition 0 of quota-mute carrying one batch of about size bytes.
func produceFrame(t *testing.T, corr int32, size int) []byte {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, 1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "quota-mute"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = recordBatch(-1, -1, -1, false, string(bytes.Repeat([]byte("m"), size)))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	clientID := "raw"
	h := protocol.Header{APIKey: 0, APIVersion: 9, CorrelationID: corr, ClientID: &clientID}
	body := req.AppendTo(protocol.AppendRequestHeader(nil, h, protocol.RequestHeaderV2))
	frame := make([]byte, 4, 4+len(body))
	frame[0], frame[1], frame[2], frame[3] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	return append(frame, body...)
}

func readProduceResponse(t *testing.T, nc net.Conn, corr int32) *kmsg.ProduceResponse {
	t.Helper()
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	frame, err := protocol.ReadFrame(nc, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := int32(frame[0])<<24 | int32(frame[1])<<16 | int32(frame[2])<<8 | int32(frame[3]); got != corr {
		t.Fatalf("correlation %d, want %d", got, corr)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 9
	// Produce v9 responses have a flexible header: one tag byte.
	if err := resp.ReadFrom(frame[5:]); err != nil {
		t.Fatal(err)
	}
	return resp
}

// A consumer over its consumer_byte_rate gets an empty response with the
// throttle time and, once it has waited, the rest of the data; a consumer
// with another client id is not throttled.
func TestFetchQuotaThrottles(t *testing.T) {
	node := sluicetest.Start(t, "quota.window.num=2", "quota.window.size.seconds=1")
	setQuota(t, node.Admin(), quotas.ConsumerByteRate, 20_000, "client-id", "slow")
	ctx := context.Background()
	if _, err := node.Admin().CreateTopic(ctx, 1, 1, nil, "quota-fetch"); err != nil {
		t.Fatal(err)
	}
	producer := node.Client(kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerLinger(0))
	const n = 20
	for range n {
		if err := producer.ProduceSync(ctx, &kgo.Record{Value: incompressible(5000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(clientID string) *throttles {
		hook := &throttles{}
		cl := node.Client(kgo.ClientID(clientID), kgo.WithHooks(hook), kgo.ConsumeTopics("quota-fetch"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := 0
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		for got < n {
			fs := cl.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("%s consumed %d of %d records: %v", clientID, got, n, err)
			}
			got += fs.NumRecords()
		}
		return hook
	}
	if after, held := consume("slow").count(); after == 0 || held != 0 {
		t.Fatalf("slow consumer throttled %d times after the response, %d before; want some, all after", after, held)
	}
	if after, held := consume("fast").count(); after+held != 0 {
		t.Fatalf("consumer with another client id throttled %d times", after+held)
	}

	// Fetched by hand: the answer that goes over the quota is empty, with
	// the throttle time, as Kafka's throttled fetch is.
	raw := node.Client(kgo.ClientID("slow"))
	for i := 0; ; i++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = 12, -1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "quota-fetch"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ThrottleMillis > 0 {
			if len(resp.Topics) != 0 || resp.ErrorCode != 0 {
				t.Fatalf("throttled fetch answered %d topics, error %d; want an empty answer", len(resp.Topics), resp.ErrorCode)
			}
			break
		}
		// Each answer holds what one quota window absorbs (20 KB,
		// capBudget); two within a second are over the quota. CI once
		// saw ten pass unthrottled on a loaded machine, where answers
		// can come a second apart; a hundred cannot all be.
		if i == 100 {
			t.Fatal("a hundred fetches against a 20 KB/s quota, none throttled")
		}
	}
}

// Replication is never client-throttled: with a consumer_byte_rate of one
// byte a second on every client id and user, followers keep fetching, so
// acks=all produces complete and the ISR stays whole.
func TestFetchQuotaSparesReplication(t *testing.T) {
	c := sluicetest.StartCluster(t, 3)
	setQuota(t, c.Admin(), quotas.ConsumerByteRate, 1, "client-id", "<default>")
	setQuota(t, c.Admin(), quotas.ConsumerByteRate, 1, "user", "<default>")
	ctx := context.Background()
	for id := 1; id <= c.Size(); id++ {
		adm := c.Node(id).Admin()
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			qs, err := adm.DescribeClientQuotas(ctx, false, nil)
			if err != nil {
				return err
			}
			if len(qs) != 2 {
				return fmt.Errorf("node %d describes %d quota entities, want 2", id, len(qs))
			}
			return nil
		})
	}
	if _, err := c.Admin().CreateTopic(ctx, 3, 3, nil, "quota-replicas"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		c.WaitForISR("quota-replicas", p, 3)
	}
	cl := c.Client(kgo.DefaultProduceTopic("quota-replicas"), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(5*time.Second), kgo.RecordDeliveryTimeout(20*time.Second))
	for i := range 30 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: incompressible(10_000), Partition: int32(i % 3)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	for p := range int32(3) {
		c.WaitForISR("quota-replicas", p, 3)
	}
}
