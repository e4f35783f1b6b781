package broker_test

// Fetch answers bounded by the request and the broker (issue 14): a
// partition named many times is answered once, as Kafka's LinkedHashMap of
// fetch partitions does, and the record bytes of one answer stay under the
// request's MaxBytes and the broker's fetch.max.bytes, except for the first
// batch of the first partition with data (KIP-74).

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// produceBatches writes n batches of one record with a value of size bytes
// to each of the given partitions of topic, one batch per produce.
func produceBatches(t *testing.T, cl *kgo.Client, topic string, partitions []int32, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := bytes.Repeat([]byte("x"), size)
	for i := 0; i < n; i++ {
		for _, p := range partitions {
			r := &kgo.Record{Topic: topic, Partition: p, Value: value}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to %s/%d: %v", topic, p, err)
			}
		}
	}
}

// batchCount counts the record batches in a fetched partition's bytes.
func batchCount(t *testing.T, records []byte) int {
	t.Helper()
	n := 0
	for len(records) >= 12 {
		length := int(binary.BigEndian.Uint32(records[8:12]))
		if 12+length > len(records) {
			break // a partial batch at the end, which consumers skip
		}
		records = records[12+length:]
		n++
	}
	return n
}

// fetchRequest builds a v12 Fetch (topics by name) of topic from offset 0,
// naming each of the given partitions.
func fetchRequest(topic string, partitions []int32, maxBytes, partitionMaxBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset = 0
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = partitionMaxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// checkFetchBound checks that resp's record bytes stay within limit, or,
// over it, are a single batch (the one Kafka returns whatever its size).
func checkFetchBound(t *testing.T, resp *kmsg.FetchResponse, limit int) int {
	t.Helper()
	total, withData, batches := 0, 0, 0
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("partition %s/%d: error %d", rt.Topic, rp.Partition, rp.ErrorCode)
			}
			total += len(rp.RecordBatches)
			if len(rp.RecordBatches) > 0 {
				withData++
				batches += batchCount(t, rp.RecordBatches)
			}
		}
	}
	if total > limit && (withData != 1 || batches != 1) {
		t.Fatalf("response holds %d record bytes in %d batches of %d partitions, limit %d", total, batches, withData, limit)
	}
	return total
}

func TestFetchDuplicatePartitionAnsweredOnce(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, n, "fetch-dup", 1, nil)
	produceBatches(t, cl, "fetch-dup", []int32{0}, 1, 4000)

	const copies = 10000
	parts := make([]int32, copies)
	req := fetchRequest("fetch-dup", parts, math.MaxInt32, 1<<20)
	size, r := dialRawConn(t, n.Addr()).do(req)
	if r == nil {
		t.Fatalf("Fetch naming partition 0 %d times: response of %d bytes", copies, size)
	}
	resp := r.(*kmsg.FetchResponse)
	count := 0
	for _, rt := range resp.Topics {
		count += len(rt.Partitions)
	}
	if count != 1 {
		t.Fatalf("Fetch naming partition 0 %d times: %d partitions answered in %d bytes, want 1", copies, count, size)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || batchCount(t, p.RecordBatches) != 1 {
		t.Fatalf("partition 0: error %d, %d record bytes", p.ErrorCode, len(p.RecordBatches))
	}
	if size > 64<<10 {
		t.Fatalf("response is %d bytes for one 4 KB batch", size)
	}
}

func TestFetchDuplicatePartitionsLastWins(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, n, "fetch-dup-last", 2, nil)
	produceBatches(t, cl, "fetch-dup-last", []int32{0, 1}, 3, 100)

	// Partition 0 at offsets 0, then 2: Kafka keeps the first position
	// and the last entry's fetch offset.
	req := fetchRequest("fetch-dup-last", []int32{0, 1, 0}, math.MaxInt32, 1<<20)
	req.Topics[0].Partitions[2].FetchOffset = 2
	_, r := dialRawConn(t, n.Addr()).do(req)
	resp := r.(*kmsg.FetchResponse)
	var got []int32
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, rp.Partition)
			if rp.Partition == 0 && batchCount(t, rp.RecordBatches) != 1 {
				t.Fatalf("partition 0 from offset 2: %d batches, want 1", batchCount(t, rp.RecordBatches))
			}
		}
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Fatalf("answered partitions %v, want [0 1]", got)
	}
}

func TestFetchCappedByFetchMaxBytes(t *testing.T) {
	const cap = 4096
	n := sluicetest.Start(t, "fetch.max.bytes=4096")
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, n, "fetch-cap", 4, nil)
	produceBatches(t, cl, "fetch-cap", []int32{0, 1, 2, 3}, 3, 1500)

	req := fetchRequest("fetch-cap", []int32{0, 1, 2, 3}, math.MaxInt32, 1<<20)
	_, r := dialRawConn(t, n.Addr()).do(req)
	if total := checkFetchBound(t, r.(*kmsg.FetchResponse), cap); total == 0 {
		t.Fatal("no records returned")
	}

	// A batch larger than fetch.max.bytes is still returned, alone.
	produceBatches(t, cl, "fetch-cap", []int32{0}, 1, 3*cap)
	req = fetchRequest("fetch-cap", []int32{0, 1}, math.MaxInt32, 1<<20)
	req.Topics[0].Partitions[0].FetchOffset = 3
	_, r = dialRawConn(t, n.Addr()).do(req)
	if total := checkFetchBound(t, r.(*kmsg.FetchResponse), cap); total <= cap {
		t.Fatalf("the %d-byte batch was not returned: %d record bytes", 3*cap, total)
	}
}

func TestFetchCappedByRequestMaxBytes(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, n, "fetch-max", 4, nil)
	produceBatches(t, cl, "fetch-max", []int32{0, 1, 2, 3}, 3, 1500)

	for _, parts := range [][]int32{{0, 1, 2, 3}, {0, 0, 0, 1, 1, 2, 3, 3}} {
		req := fetchRequest("fetch-max", parts, 5000, 1<<20)
		_, r := dialRawConn(t, n.Addr()).do(req)
		if total := checkFetchBound(t, r.(*kmsg.FetchResponse), 5000); total == 0 {
			t.Fatalf("fetch of %v: no records returned", parts)
		}
	}
}

// TestFetchMinBytesAboveCap checks that a MinBytes above what the broker
// would ever return does not hold the answer for MaxWait: Kafka lowers
// MinBytes to the response cap.
func TestFetchMinBytesAboveCap(t *testing.T) {
	n := sluicetest.Start(t, "fetch.max.bytes=4096")
	cl := n.Client(kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, n, "fetch-min", 1, nil)
	produceBatches(t, cl, "fetch-min", []int32{0}, 4, 1500)

	req := fetchRequest("fetch-min", []int32{0}, math.MaxInt32, 1<<20)
	req.MinBytes = 1 << 20
	// Ten minutes: the answer must come without the wait, before
	// rawConn's 60 s deadline.
	req.MaxWaitMillis = 600000
	_, r := dialRawConn(t, n.Addr()).do(req)
	if total := checkFetchBound(t, r.(*kmsg.FetchResponse), 4096); total == 0 {
		t.Fatal("no records returned")
	}
}
