package logstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/sluicetest"
)

// These tests check the per-request cap on decompressed bytes
// (logstore.RequestDecompressBudget): one Produce request naming many
// partitions may not make the broker decompress more than the request's
// budget, however small each partition's batch stays under the per-batch
// cap.

// produceAll sends batches[i] to partition i of topic in one request with
// acks=1 and returns each partition's error code.
func produceAll(t *testing.T, cl *kgo.Client, topic string, id [16]byte, batches [][]byte) []int16 {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	for i, b := range batches {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(i), b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	codes := make([]int16, len(batches))
	for _, p := range resp.Topics[0].Partitions {
		codes[p.Partition] = p.ErrorCode
	}
	return codes
}

// createPartitions creates topic with partitions partitions and returns
// its id.
func createPartitions(t *testing.T, n *sluicetest.Node, topic string, partitions int32) [16]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := n.Admin()
	if resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	return details[topic].ID
}

// TestProduceRequestDecompressCap: a request of eight small zstd batches,
// each of one record of 48 MiB of zeros (under the 64 MiB per-batch cap),
// decompresses to 384 MiB in all, past the per-request cap (256 MiB for a
// request this small): the first five partitions (240 MiB) are appended,
// the other three are MESSAGE_TOO_LARGE and hold nothing. Before the cap
// every partition was appended.
func TestProduceRequestDecompressCap(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.RecordRetries(1), kgo.RequestRetries(1))
	t.Cleanup(cl.Close)
	const parts = 8
	id := createPartitions(t, n, "inflate", parts)

	batch := logstore.HostileBatch(t, 4, 1, time.Now().UnixMilli(), logstore.ZerosRecord(48<<20))
	batches := make([][]byte, parts)
	for i := range batches {
		batches[i] = append([]byte(nil), batch...) // the log stamps batches in place
	}
	t.Logf("%d partitions, one %d-byte zstd batch each, 48 MiB decompressed each", parts, len(batch))
	codes := produceAll(t, cl, "inflate", id, batches)
	for i, code := range codes {
		want := int16(0)
		if i >= 5 {
			want = kerr.MessageTooLarge.Code
		}
		if code != want {
			t.Errorf("partition %d: %v, want %v", i, kerr.ErrorForCode(code), kerr.ErrorForCode(want))
		}
	}
	// A refused partition holds nothing: the next request appends at 0.
	small := [][]byte{}
	for range parts {
		small = append(small, logstore.HostileBatch(t, 4, 3, time.Now().UnixMilli(), logstore.Records(3)))
	}
	for i, code := range produceAll(t, cl, "inflate", id, small) {
		if code != 0 {
			t.Errorf("ordinary produce to partition %d after the refused request: %v", i, kerr.ErrorForCode(code))
		}
	}
}

// TestProduceManyCompressedPartitions: an ordinary request of many
// well-compressed batches (gzip, zstd, lz4, snappy; 64 partitions of 2000
// records each) passes whole: the per-request cap is far above what real
// data decompresses to.
func TestProduceManyCompressedPartitions(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.RecordRetries(1), kgo.RequestRetries(1))
	t.Cleanup(cl.Close)
	const parts = 64
	id := createPartitions(t, n, "ordinary", parts)
	batches := make([][]byte, parts)
	for i := range batches {
		codec := int8(1 + i%4)
		batches[i] = logstore.HostileBatch(t, codec, 2000, time.Now().UnixMilli(), logstore.Records(2000))
	}
	for i, code := range produceAll(t, cl, "ordinary", id, batches) {
		if code != 0 {
			t.Errorf("partition %d: %v, want success", i, kerr.ErrorForCode(code))
		}
	}
}
