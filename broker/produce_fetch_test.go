package broker_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// produceKeyed produces n records with keys k-<i> to topic, acks=all, and
// returns the records as the broker acknowledged them.
func produceKeyed(t *testing.T, cl *kgo.Client, topic string, from, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for i := from; i < from+n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k-" + strconv.Itoa(i%97)), Value: []byte("v-" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return recs
}

// consumeAll reads want records of topic from the beginning.
func consumeAll(t *testing.T, addr, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), want, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		got = append(got, fs.Records()...)
	}
	return got
}

// checkSame checks that consumed holds exactly produced, in produce order
// within each partition, at the offsets the broker acknowledged.
func checkSame(t *testing.T, produced, consumed []*kgo.Record) {
	t.Helper()
	if len(produced) != len(consumed) {
		t.Fatalf("produced %d records, consumed %d", len(produced), len(consumed))
	}
	type key struct {
		p   int32
		off int64
	}
	byOffset := make(map[key]*kgo.Record, len(produced))
	for _, r := range produced {
		byOffset[key{r.Partition, r.Offset}] = r
	}
	last := make(map[int32]int64)
	for _, r := range consumed {
		want := byOffset[key{r.Partition, r.Offset}]
		if want == nil {
			t.Fatalf("consumed unexpected record at %d/%d", r.Partition, r.Offset)
		}
		if string(want.Key) != string(r.Key) || string(want.Value) != string(r.Value) {
			t.Fatalf("record %d/%d: got %s=%s, want %s=%s", r.Partition, r.Offset, r.Key, r.Value, want.Key, want.Value)
		}
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			t.Fatalf("partition %d out of order: %d after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
	}
}

func createTopic(t *testing.T, n *sluicetest.Node, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := n.Admin().CreateTopic(ctx, partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "orders", 6, nil)
	cl := n.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	produced := produceKeyed(t, cl, "orders", 0, 3000)
	consumed := consumeAll(t, n.Addr(), "orders", len(produced))
	checkSame(t, produced, consumed)
}

func TestProduceAcksZeroAndOne(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "acks", 1, nil)
	for _, acks := range []kgo.Acks{kgo.NoAck(), kgo.LeaderAck()} {
		cl := n.Client(kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite())
		produceKeyed(t, cl, "acks", 0, 100)
	}
	got := consumeAll(t, n.Addr(), "acks", 200)
	if len(got) != 200 {
		t.Fatalf("consumed %d, want 200", len(got))
	}
}

func TestFetchLongPollWakesOnProduce(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "poll", 1, nil)
	cl := n.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxWaitMillis = 15000
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "poll", topicID(t, n, "poll")
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	// The fetch is parked; a produce must answer it with the record,
	// well inside its 15 s wait.
	time.Sleep(200 * time.Millisecond)
	produceKeyed(t, n.Client(), "poll", 0, 1)
	select {
	case resp := <-done:
		if resp == nil || len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatalf("long poll answered without the produced record")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake on produce")
	}
}

func TestFetchOffsetOutOfRange(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "oor", 1, nil)
	produceKeyed(t, n.Client(), "oor", 0, 10)
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "oor", topicID(t, n, "oor")
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = 11
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(sp.ErrorCode); err != kerr.OffsetOutOfRange {
		t.Fatalf("fetch at 11 of a 10-record log: got %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if sp.HighWatermark != 10 || sp.LogStartOffset != 0 {
		t.Fatalf("high watermark %d, log start %d; want 10, 0", sp.HighWatermark, sp.LogStartOffset)
	}
}

func TestProduceUnknownTopicAndPartition(t *testing.T) {
	n := sluicetest.Start(t, "auto.create.topics.enable=false")
	cl := n.Client(kgo.RecordRetries(1), kgo.UnknownTopicRetries(1), kgo.ProduceRequestTimeout(2*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "missing", Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to a missing topic with auto-creation off: got %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// topicID looks a topic's id up through the admin API, as a client would
// before a v13+ Fetch.
func topicID(t *testing.T, n *sluicetest.Node, topic string) [16]byte {
	t.Helper()
	topics, err := n.Admin().ListTopics(context.Background(), topic)
	if err != nil || !topics.Has(topic) {
		t.Fatalf("list topic %s: %v", topic, err)
	}
	return topics[topic].ID
}
