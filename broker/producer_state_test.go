package broker_test

import (
	"context"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// idempotentBatch encodes one v2 record batch of n records from producer
// id/epoch starting at sequence seq.
func idempotentBatch(id int64, epoch int16, seq int32, n int) []byte {
	var records []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // a zero length is one varint byte
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(n - 1), ProducerID: id, ProducerEpoch: epoch,
		FirstSequence: seq, NumRecords: int32(n), Records: records,
		FirstTimestamp: 1, MaxTimestamp: 1,
	}
	raw := b.AppendTo(nil)
	// batchLength counts from the partition leader epoch on.
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	b.CRC = int32(crc)
	return b.AppendTo(nil)
}

func TestIdempotentRetryIsNotAppendedTwice(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "idem", 1, nil)
	cl := n.Client()
	produce := func(batch []byte) (int64, int16) {
		return rawProduce(t, cl, "idem", topicID(t, n, "idem"), batch)
	}
	first, code := produce(idempotentBatch(7000, 0, 0, 3))
	if code != 0 || first != 0 {
		t.Fatalf("first batch: offset %d, error %d", first, code)
	}
	second, code := produce(idempotentBatch(7000, 0, 3, 2))
	if code != 0 || second != 3 {
		t.Fatalf("second batch: offset %d, error %d", second, code)
	}
	// The first batch again, as a producer retries after a lost ack.
	again, code := produce(idempotentBatch(7000, 0, 0, 3))
	if code != 0 || again != 0 {
		t.Fatalf("retried batch: offset %d, error %d; want its original offset 0", again, code)
	}
	ends, err := n.Admin().ListEndOffsets(context.Background(), "idem")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("idem", 0); o.Offset != 5 {
		t.Fatalf("log end offset %d after a retried batch, want 5", o.Offset)
	}
	// A new epoch (KIP-360 reset) with the same sequence is new data.
	if off, code := produce(idempotentBatch(7000, 1, 0, 1)); code != 0 || off != 5 {
		t.Fatalf("new epoch batch: offset %d, error %d", off, code)
	}
}
