package broker_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// A batch refused for what some of its records hold carries KIP-467's
// record_errors (Produce v8+): each bad record's index in the batch with
// Kafka's message, and the partition's error_message, so that a client
// (librdkafka's test 0011_produce_batch) fails those records only. The
// whole batch is still refused, as Kafka refuses it.

// recordsBatch encodes records (offset deltas filled in) as one
// uncompressed magic v2 batch based at base milliseconds, without a
// producer id.
func recordsBatch(base int64, records []kmsg.Record) []byte {
	var raw []byte
	for i, rec := range records {
		rec.OffsetDelta = int32(i)
		body := rec.AppendTo(nil)[1:] // a zero length is one varint byte
		rec.Length = int32(len(body))
		raw = rec.AppendTo(raw)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(records) - 1),
		FirstTimestamp: base, MaxTimestamp: base, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(records)), Records: raw,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// produceRaw sends batch to partition 0 of topic with Produce v12 (topics
// by name) and returns that partition's answer.
func produceRaw(t *testing.T, n *sluicetest.Node, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 12)
	cl := n.Client(kgo.MaxVersions(v))
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// recordErrorsOf lists a partition's record_errors as "index: message".
func recordErrorsOf(sp kmsg.ProduceResponseTopicPartition) []string {
	var out []string
	for _, e := range sp.ErrorRecords {
		out = append(out, fmt.Sprintf("%d: %s", e.RelativeOffset, msgOf(e.ErrorMessage)))
	}
	return out
}

// msgOf is a nullable error_message as text.
func msgOf(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// wantNothingStored checks that the refused batch left partition 0 empty.
func wantNothingStored(t *testing.T, n *sluicetest.Node, topic string) {
	t.Helper()
	ends, err := n.Admin().ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Err != nil || o.Offset != 0 {
		t.Errorf("end offset of %s after the refused batch: %+v, want 0 (the whole batch is refused)", topic, o)
	}
}

// TestProduceNullKeysOnCompactedTopicNameTheRecords is librdkafka's
// 0011_produce_batch case: 100 records to a compacted topic, 10 of them
// without a key. The partition answers INVALID_RECORD with one record
// error per keyless record and Kafka's summary message.
func TestProduceNullKeysOnCompactedTopicNameTheRecords(t *testing.T) {
	n := sluicetest.Start(t)
	const topic = "record-errors-compacted"
	compact := "compact"
	createTopic(t, n, topic, 1, map[string]*string{"cleanup.policy": &compact})
	var records []kmsg.Record
	var want []string
	for i := range 100 {
		rec := kmsg.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")}
		if i%10 == 3 {
			rec.Key = nil
			want = append(want, fmt.Sprintf("%d: Compacted topic cannot accept message without key in topic partition %s-0", i, topic))
		}
		records = append(records, rec)
	}
	sp := produceRaw(t, n, topic, recordsBatch(time.Now().UnixMilli(), records))
	if sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("error %v, want INVALID_RECORD", kerr.ErrorForCode(sp.ErrorCode))
	}
	if got := recordErrorsOf(sp); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("record_errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantMsg := "One or more records have been rejected due to 10 record errors in total, and only showing the first three errors at most: [" +
		"RecordError(batchIndex=3, message='Compacted topic cannot accept message without key in topic partition " + topic + "-0'), " +
		"RecordError(batchIndex=13, message='Compacted topic cannot accept message without key in topic partition " + topic + "-0'), " +
		"RecordError(batchIndex=23, message='Compacted topic cannot accept message without key in topic partition " + topic + "-0')]"
	if sp.ErrorMessage == nil || *sp.ErrorMessage != wantMsg {
		t.Errorf("error_message %q, want %q", msgOf(sp.ErrorMessage), wantMsg)
	}
	wantNothingStored(t, n, topic)
}

// TestProduceBadTimestampsNameTheRecords: a batch with a keyless record on
// a compacted topic and a record two hours ahead (past the default
// message.timestamp.after.max.ms of one hour). Both are named; a timestamp
// among the causes makes the partition's error INVALID_TIMESTAMP.
func TestProduceBadTimestampsNameTheRecords(t *testing.T) {
	n := sluicetest.Start(t)
	const topic = "record-errors-timestamps"
	compact := "compact"
	createTopic(t, n, topic, 1, map[string]*string{"cleanup.policy": &compact})
	base := time.Now().UnixMilli()
	ahead := int64(2 * time.Hour / time.Millisecond)
	records := []kmsg.Record{
		{Key: []byte("a"), Value: []byte("v")},
		{Value: []byte("v")},
		{Key: []byte("c"), Value: []byte("v")},
		{Key: []byte("d"), Value: []byte("v"), TimestampDelta64: ahead},
		{Key: []byte("e"), Value: []byte("v")},
	}
	sp := produceRaw(t, n, topic, recordsBatch(base, records))
	if sp.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Fatalf("error %v, want INVALID_TIMESTAMP", kerr.ErrorForCode(sp.ErrorCode))
	}
	got := recordErrorsOf(sp)
	if len(got) != 2 || got[0] != fmt.Sprintf("1: Compacted topic cannot accept message without key in topic partition %s-0", topic) ||
		!strings.HasPrefix(got[1], fmt.Sprintf("3: Timestamp %d of message with offset 3 is out of range. The timestamp should be within [", base+ahead)) {
		t.Errorf("record_errors %q, want record 1 (no key) and record 3 (timestamp)", got)
	}
	if want := "One or more records have been rejected due to invalid timestamp"; sp.ErrorMessage == nil || *sp.ErrorMessage != want {
		t.Errorf("error_message %q, want %q", msgOf(sp.ErrorMessage), want)
	}
	wantNothingStored(t, n, topic)
}
