package broker_test

// BenchmarkProduceBatch: what one produced batch costs the broker, in
// allocations and bytes allocated, along the path a client's Produce takes
// (issue 22): a size-prefixed frame arrives on a loopback TCP connection,
// is read and decoded (protocol/conn.go, router.go), handled (00_produce.go:
// idempotent producer checks, validation, the log's append to a real
// segment in a temporary directory, the acks=all wait) and its answer
// encoded and written. Each request carries one topic's 12 partitions, one
// batch each of 16 incompressible 1 KiB records from one idempotent
// producer, as the harness's produce workload sends them (its client
// batches more records per batch; the per-batch cost is what is measured
// here). allocs/batch and B/batch are the process's allocations (every
// goroutine: the benchmark's own loop allocates nothing) per op divided by
// the batches in a request.
//
//	go test ./broker -run '^$' -bench BenchmarkProduceBatch -benchmem -count 5

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

const (
	benchPartitions = 12
	benchRecords    = 16
	benchValueSize  = 1024
)

func BenchmarkProduceBatch(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchProduce(b, 0) })
	b.Run("lz4", func(b *testing.B) { benchProduce(b, 3) })
}

func benchProduce(b *testing.B, codec int16) {
	n := sluicetest.Start(b, "log.segment.bytes=1073741824")
	topic := "bench-produce"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := n.Admin()
	if _, err := adm.CreateTopic(ctx, benchPartitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = -1
	ipr, err := init.RequestWith(ctx, n.Client())
	if err != nil || ipr.ErrorCode != 0 {
		b.Fatalf("InitProducerID: %v, code %d", err, ipr.ErrorCode)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	req := kmsg.NewPtrProduceRequest()
	req.Version = 11
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	batches := make([][]byte, benchPartitions)
	for p := range benchPartitions {
		batches[p] = benchBatch(rng, codec, ipr.ProducerID, ipr.ProducerEpoch)
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = batches[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	// Where each batch sits in the frame: its sequence and CRC are
	// rewritten for every request.
	at := make([]int, benchPartitions)
	for p, batch := range batches {
		at[p] = bytes.Index(frame, batch)
		if at[p] < 0 {
			b.Fatal("batch not found in the frame")
		}
	}

	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", n.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	resp := make([]byte, 0, 4096)
	seq := int32(0)
	send := func() []byte {
		for p := range benchPartitions {
			batch := frame[at[p] : at[p]+len(batches[p])]
			binary.BigEndian.PutUint32(batch[53:], uint32(seq))
			binary.BigEndian.PutUint32(batch[17:], crc32.Checksum(batch[21:], crc32c))
		}
		seq += benchRecords
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		resp = resp[:binary.BigEndian.Uint32(size[:])]
		if _, err := io.ReadFull(nc, resp); err != nil {
			b.Fatal(err)
		}
		return resp
	}
	check := func(raw []byte, wantBase int64) {
		pr := kmsg.NewPtrProduceResponse()
		pr.Version = req.Version
		if err := pr.ReadFrom(raw[4+1:]); err != nil { // correlation id, header tags
			b.Fatal(err)
		}
		for _, t := range pr.Topics {
			for _, sp := range t.Partitions {
				if sp.ErrorCode != 0 || sp.BaseOffset != wantBase {
					b.Fatalf("partition %d: error %d, base offset %d, want %d", sp.Partition, sp.ErrorCode, sp.BaseOffset, wantBase)
				}
			}
		}
	}
	sluicetest.WaitFor(b, 30*time.Second, func() error {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		for _, pd := range td[topic].Partitions {
			if pd.Err != nil || pd.Leader < 0 {
				return fmt.Errorf("partition %d: leader %d, %v", pd.Partition, pd.Leader, pd.Err)
			}
		}
		return nil
	})
	// The partitions have leaders once Metadata says so; a first request
	// outside the timer checks the answer's shape.
	check(send(), 0)

	b.SetBytes(int64(benchPartitions * benchRecords * benchValueSize))
	b.ReportAllocs()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		send()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	batchesSent := float64(b.N * benchPartitions)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/batchesSent, "allocs/batch")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/batchesSent, "B/batch")
	check(send(), int64(b.N+1)*benchRecords)
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// benchBatch is one magic v2 batch of benchRecords records with random
// 1 KiB values and no keys, from producer id/epoch, sequence 0, its
// records compressed with codec (0 none, 3 lz4).
func benchBatch(rng *rand.Rand, codec int16, id int64, epoch int16) []byte {
	var raw []byte
	for i := range benchRecords {
		v := make([]byte, benchValueSize)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		rec := kmsg.Record{OffsetDelta: int32(i), Value: v}
		rec.Length = int32(len(rec.AppendTo(nil)) - 1)
		raw = rec.AppendTo(raw)
	}
	if codec == 3 {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			panic(err)
		}
		if err := w.Close(); err != nil {
			panic(err)
		}
		raw = buf.Bytes()
	}
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: codec, LastOffsetDelta: benchRecords - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: id, ProducerEpoch: epoch, FirstSequence: 0,
		NumRecords: benchRecords, Records: raw,
	}
	batch.Length = int32(len(batch.AppendTo(nil)) - 12)
	return batch.AppendTo(nil)
}
