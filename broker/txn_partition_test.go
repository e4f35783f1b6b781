package broker_test

import (
	"context"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// recordBatch encodes one v2 batch of values from producer id/epoch at
// sequence seq; transactional sets the attribute bit.
func recordBatch(id int64, epoch int16, seq int32, transactional bool, values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		body := r.AppendTo(nil)[1:] // a zero length is one varint byte
		r.Length = int32(len(body))
		records = r.AppendTo(records)
	}
	b := kmsg.RecordBatch{
		Magic: 2, LastOffsetDelta: int32(len(values) - 1), ProducerID: id, ProducerEpoch: epoch,
		FirstSequence: seq, NumRecords: int32(len(values)), Records: records,
		FirstTimestamp: time.Now().UnixMilli(), MaxTimestamp: time.Now().UnixMilli(),
	}
	if transactional {
		b.Attributes = 0x10
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	raw := b.AppendTo(nil)
	b.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b.AppendTo(nil)
}

// noTxnVerification turns off KIP-890's check with the transaction
// coordinator, for tests that write transactional batches of producer ids
// no coordinator knows, as a Kafka broker needs it off for them. Such
// tests send Produce v11 (txnV1Versions): from v12 the leader adds the
// partition to the producer's transaction whatever the setting says.
const noTxnVerification = "transaction.partition.verification.enable=false"

// produceRequest is an acks=all Produce of one batch to one partition,
// waiting at most timeoutMillis for the ISR.
func produceRequest(topic string, id [16]byte, partition int32, timeoutMillis int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, timeoutMillis
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// rawProduce sends one batch to partition 0 with acks=all and returns the
// partition's base offset and error code. A transactional batch goes with
// a transactional id, as a producer sends it: Kafka refuses transactional
// records without one (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func rawProduce(t *testing.T, cl kmsg.Requestor, topic string, id [16]byte, batch []byte) (int64, int16) {
	t.Helper()
	req := produceRequest(topic, id, 0, 5000, batch)
	if len(batch) > 22 && batch[22]&0x10 != 0 { // attributes, bit 4: transactional
		req.TransactionID = kmsg.StringPtr("raw-produce")
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	return p.BaseOffset, p.ErrorCode
}

// writeMarker sends WriteTxnMarkers for partition 0 of topic and returns
// the partition's error code. With a *kgo.Client the request goes to its
// seed broker: kgo would shard it by partition leader and answer for an
// unknown topic itself.
func writeMarker(t *testing.T, r kmsg.Requestor, topic string, producerID int64, epoch int16, commit bool, coordinatorEpoch int32) int16 {
	t.Helper()
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = producerID, epoch, commit, coordinatorEpoch
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	if cl, ok := r.(*kgo.Client); ok {
		r = cl.SeedBrokers()[0]
	}
	resp, err := req.RequestWith(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
}

// listLatest returns ListOffsets latest for partition 0 at isolation level.
func listLatest(t *testing.T, cl kmsg.Requestor, topic string, isolation int8) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("list offsets: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	return p.Offset
}

// consumeValues reads partition 0 of topic from the start with opts until
// it has seen a record with value last, and returns the values in order.
func consumeValues(t *testing.T, n *sluicetest.Node, topic, last string, opts ...kgo.Opt) []string {
	t.Helper()
	cl := n.Client(append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var got []string
	for !slices.Contains(got, last) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %q, never saw %q", got, last)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func TestOutOfOrderSequenceAndStaleEpoch(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "seq", 1, nil)
	cl, id := n.Client(), topicID(t, n, "seq")
	if off, code := rawProduce(t, cl, "seq", id, recordBatch(8000, 1, 0, false, "a", "b")); code != 0 || off != 0 {
		t.Fatalf("first batch: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	if _, code := rawProduce(t, cl, "seq", id, recordBatch(8000, 1, 5, false, "gap")); code != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(code))
	}
	if _, code := rawProduce(t, cl, "seq", id, recordBatch(8000, 0, 2, false, "old")); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if off, code := rawProduce(t, cl, "seq", id, recordBatch(8000, 1, 2, false, "c")); code != 0 || off != 2 {
		t.Fatalf("next in sequence: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	// KIP-360: a producer the partition does not know may start anywhere.
	if _, code := rawProduce(t, cl, "seq", id, recordBatch(8001, 0, 17, false, "x")); code != 0 {
		t.Fatalf("unknown producer at sequence 17: %v", kerr.ErrorForCode(code))
	}
}

func TestIdempotentDuplicateSurvivesRestart(t *testing.T) {
	for _, crash := range []bool{false, true} {
		name := map[bool]string{false: "clean", true: "crash"}[crash]
		t.Run(name, func(t *testing.T) {
			n := sluicetest.Start(t)
			createTopic(t, n, "idem-restart", 1, nil)
			id := topicID(t, n, "idem-restart")
			cl := n.Client()
			rawProduce(t, cl, "idem-restart", id, recordBatch(7100, 0, 0, false, "a", "b", "c"))
			last := recordBatch(7100, 0, 3, false, "d", "e")
			if off, code := rawProduce(t, cl, "idem-restart", id, last); code != 0 || off != 3 {
				t.Fatalf("second batch: offset %d, %v", off, kerr.ErrorForCode(code))
			}
			if crash {
				n.CrashRestart()
			} else {
				n.Restart()
			}
			cl = n.Client()
			if off, code := rawProduce(t, cl, "idem-restart", id, last); code != 0 || off != 3 {
				t.Fatalf("retry after restart: offset %d, %v; want the original offset 3", off, kerr.ErrorForCode(code))
			}
			if end := listLatest(t, cl, "idem-restart", 0); end != 5 {
				t.Fatalf("log end %d after a retried batch, want 5", end)
			}
			if _, code := rawProduce(t, cl, "idem-restart", id, recordBatch(7100, 0, 9, false, "gap")); code != kerr.OutOfOrderSequenceNumber.Code {
				t.Fatalf("gap after restart: %v", kerr.ErrorForCode(code))
			}
		})
	}
}

func TestIdempotentClientProducesExactlyOnce(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "idem-kgo", 1, nil)
	cl := n.Client(kgo.DefaultProduceTopic("idem-kgo"), kgo.MaxBufferedRecords(10), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var want []string
	for i := 0; i < 50; i++ {
		v := string(rune('a'+i%26)) + string(rune('0'+i/26))
		want = append(want, v)
		cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := consumeValues(t, n, "idem-kgo", want[len(want)-1]); !slices.Equal(got, want) {
		t.Fatalf("consumed %q, want %q", got, want)
	}
}

func TestReadCommittedWaitsForCommitMarker(t *testing.T) {
	n := sluicetest.Start(t, noTxnVerification)
	createTopic(t, n, "txn-commit", 1, nil)
	cl, id := n.Client(txnV1Versions()), topicID(t, n, "txn-commit") // Produce v11: see noTxnVerification
	rawProduce(t, cl, "txn-commit", id, recordBatch(-1, -1, -1, false, "before"))
	if off, code := rawProduce(t, cl, "txn-commit", id, recordBatch(9000, 0, 0, true, "t1", "t2")); code != 0 || off != 1 {
		t.Fatalf("transactional batch: offset %d, %v", off, kerr.ErrorForCode(code))
	}
	rawProduce(t, cl, "txn-commit", id, recordBatch(-1, -1, -1, false, "after"))

	if got := listLatest(t, cl, "txn-commit", 1); got != 1 {
		t.Fatalf("read_committed latest offset %d with a transaction open at 1, want 1", got)
	}
	if got := listLatest(t, cl, "txn-commit", 0); got != 4 {
		t.Fatalf("read_uncommitted latest offset %d, want 4", got)
	}
	// A read_committed fetch from the open transaction gets nothing and
	// learns the last stable offset.
	fetch := func() kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.IsolationLevel, req.MaxBytes = -1, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = "txn-commit", id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes = 1, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := fetch(); p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.LastStableOffset != 1 || p.HighWatermark != 4 {
		t.Fatalf("fetch inside the open transaction: error %d, %d bytes, LSO %d, HW %d", p.ErrorCode, len(p.RecordBatches), p.LastStableOffset, p.HighWatermark)
	}
	// DescribeProducers shows the open transaction.
	dreq := kmsg.NewPtrDescribeProducersRequest()
	dt := kmsg.NewDescribeProducersRequestTopic()
	dt.Topic, dt.Partitions = "txn-commit", []int32{0}
	dreq.Topics = append(dreq.Topics, dt)
	dresp, err := dreq.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if ps := dresp.Topics[0].Partitions[0]; ps.ErrorCode != 0 || len(ps.ActiveProducers) != 1 ||
		ps.ActiveProducers[0].ProducerID != 9000 || ps.ActiveProducers[0].CurrentTxnStartOffset != 1 || ps.ActiveProducers[0].LastSequence != 1 {
		t.Fatalf("describe producers: %+v", ps)
	}

	if code := writeMarker(t, cl, "txn-commit", 9000, 0, true, 3); code != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	if got := listLatest(t, cl, "txn-commit", 1); got != 5 {
		t.Fatalf("read_committed latest offset %d after the commit, want 5", got)
	}
	got := consumeValues(t, n, "txn-commit", "after", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if want := []string{"before", "t1", "t2", "after"}; !slices.Equal(got, want) {
		t.Fatalf("read_committed consumer got %q, want %q", got, want)
	}
	// A marker from an older coordinator epoch is fenced.
	if code := writeMarker(t, cl, "txn-commit", 9000, 0, false, 2); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("stale coordinator: %v", kerr.ErrorForCode(code))
	}
	if code := writeMarker(t, cl, "no-such-topic", 9000, 0, true, 3); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(code))
	}
}

func TestReadCommittedSkipsAbortedTransactions(t *testing.T) {
	n := sluicetest.Start(t, noTxnVerification)
	createTopic(t, n, "txn-abort", 1, nil)
	cl, id := n.Client(txnV1Versions()), topicID(t, n, "txn-abort") // Produce v11: see noTxnVerification
	rawProduce(t, cl, "txn-abort", id, recordBatch(9100, 0, 0, true, "aborted-1", "aborted-2"))
	rawProduce(t, cl, "txn-abort", id, recordBatch(9200, 0, 0, true, "committed-1"))
	rawProduce(t, cl, "txn-abort", id, recordBatch(-1, -1, -1, false, "plain"))
	if code := writeMarker(t, cl, "txn-abort", 9100, 0, false, 0); code != 0 {
		t.Fatalf("abort marker: %v", kerr.ErrorForCode(code))
	}
	rawProduce(t, cl, "txn-abort", id, recordBatch(9100, 0, 2, true, "aborted-3")) // a new transaction of 9100
	if code := writeMarker(t, cl, "txn-abort", 9200, 0, true, 0); code != 0 {
		t.Fatalf("commit marker: %v", kerr.ErrorForCode(code))
	}
	if code := writeMarker(t, cl, "txn-abort", 9100, 0, false, 0); code != 0 {
		t.Fatalf("second abort marker: %v", kerr.ErrorForCode(code))
	}
	rawProduce(t, cl, "txn-abort", id, recordBatch(-1, -1, -1, false, "end"))

	committed := consumeValues(t, n, "txn-abort", "end", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if want := []string{"committed-1", "plain", "end"}; !slices.Equal(committed, want) {
		t.Fatalf("read_committed consumer got %q, want %q", committed, want)
	}
	uncommitted := consumeValues(t, n, "txn-abort", "end")
	if want := []string{"aborted-1", "aborted-2", "committed-1", "plain", "aborted-3", "end"}; !slices.Equal(uncommitted, want) {
		t.Fatalf("read_uncommitted consumer got %q, want %q", uncommitted, want)
	}
	// The aborted-transaction index is rebuilt after a crash.
	n.CrashRestart()
	committed = consumeValues(t, n, "txn-abort", "end", kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if want := []string{"committed-1", "plain", "end"}; !slices.Equal(committed, want) {
		t.Fatalf("read_committed consumer after a crash got %q, want %q", committed, want)
	}
}
