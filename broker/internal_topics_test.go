package broker_test

// Internal topics against hostile clients (issue 14): a client's Produce to
// __consumer_offsets or __transaction_state is refused with
// INVALID_TOPIC_EXCEPTION and appends nothing, so a forged record cannot
// change what a coordinator loads after a restart; and a record a
// coordinator cannot parse (written straight into the partition's log while
// the broker is down, since clients can no longer produce one) is skipped
// while loading, not a reason to give up the partition.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/sluicetest"
)

const (
	offsetsTopic  = "__consumer_offsets"
	txnStateTopic = "__transaction_state"
)

// internalNode starts a node whose internal topics have one partition, so
// every group and transactional id of a test shares partition 0.
func internalNode(t *testing.T) *sluicetest.Node {
	return sluicetest.Start(t, "offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1")
}

// keyedRecord is one record of a hand-built batch.
type keyedRecord struct{ key, value []byte }

// keyedBatch encodes records as one uncompressed magic v2 batch without a
// producer, as a coordinator writes its own records.
func keyedBatch(records ...keyedRecord) []byte {
	var raw []byte
	for i, r := range records {
		rec := kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
		body := rec.AppendTo(nil)[1:] // a zero length is one varint byte
		rec.Length = int32(len(body))
		raw = rec.AppendTo(raw)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(records) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(records)), Records: raw,
	}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitValue(version int16, offset int64) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp = version, offset, -1, time.Now().UnixMilli()
	return v.AppendTo(nil)
}

// groupMetadataValue is an Empty classic group's GroupMetadataValue.
func groupMetadataValue(version int16) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = version, "consumer", 3
	return v.AppendTo(nil)
}

func txnLogKey(id string) []byte {
	k := kmsg.TxnMetadataKey{Version: 0, TransactionalID: id}
	return k.AppendTo(nil)
}

// txnLogValue is the TransactionLogValue v0 of an Empty transaction.
func txnLogValue(producerID int64, epoch int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.TimeoutMillis = 0, producerID, epoch, 60000
	v.LastUpdateTimestamp, v.StartTimestamp = time.Now().UnixMilli(), -1
	return v.AppendTo(nil)
}

// produceToInternal sends one acks=all Produce of batch to partition 0 of
// an internal topic and returns the partition's answer.
func produceToInternal(t *testing.T, n *sluicetest.Node, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := produceRequest(topic, topicID(t, n, topic), 0, 5000, batch)
	resp, err := req.RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	return resp.Topics[0].Partitions[0]
}

// produceIsRefused produces batch to partition 0 of an internal topic and
// checks Kafka's answer, INVALID_TOPIC_EXCEPTION with its message, and
// that the partition's end offset is still before.
func produceIsRefused(t *testing.T, n *sluicetest.Node, topic string, batch []byte, before int64) {
	t.Helper()
	sp := produceToInternal(t, n, topic, batch)
	if sp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("produce to %s: error code %d (%v), want INVALID_TOPIC_EXCEPTION", topic, sp.ErrorCode, kerr.ErrorForCode(sp.ErrorCode))
	}
	if want := "Cannot append to internal topic " + topic; sp.ErrorMessage == nil || *sp.ErrorMessage != want {
		t.Errorf("error message %v, want %q", strPtr(sp.ErrorMessage), want)
	}
	if after := endOffset(t, n, topic); after != before {
		t.Errorf("%s-0 end offset moved from %d to %d: the forged record was appended", topic, before, after)
	}
}

// endOffset is partition 0's high watermark as ListOffsets reports it.
func endOffset(t *testing.T, n *sluicetest.Node, topic string) int64 {
	t.Helper()
	ends, err := n.Admin().ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s-0: %v", topic, o.Err)
	}
	return o.Offset
}

func commitGroupOffset(t *testing.T, n *sluicetest.Node, group, topic string, partition int32, offset int64) {
	t.Helper()
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: partition, At: offset, LeaderEpoch: -1})
	resp, err := n.Admin().CommitOffsets(context.Background(), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s %s-%d at %d: %v", group, topic, partition, offset, err)
	}
}

// groupOffset waits until the group's coordinator answers OffsetFetch and
// returns the group's committed offset of topic-partition (-1 if none).
func groupOffset(t *testing.T, n *sluicetest.Node, group, topic string, partition int32) int64 {
	t.Helper()
	adm := n.Admin()
	var got int64
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return fmt.Errorf("fetch offsets of %s: %w", group, err)
		}
		if err := resp.Error(); err != nil {
			return fmt.Errorf("fetch offsets of %s: %w", group, err)
		}
		got = -1
		if o, ok := resp.Lookup(topic, partition); ok {
			got = o.At
		}
		return nil
	})
	return got
}

// initProducerID sends InitProducerId for a transactional id, retrying
// while its coordinator loads, and returns the producer id and epoch.
func initProducerID(t *testing.T, n *sluicetest.Node, txnID string) (int64, int16) {
	t.Helper()
	cl := n.Client()
	var id int64
	var epoch int16
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &txnID, 60000
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return fmt.Errorf("InitProducerId %s: %w", txnID, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("InitProducerId %s: %w", txnID, err)
		}
		id, epoch = resp.ProducerID, resp.ProducerEpoch
		return nil
	})
	return id, epoch
}

// appendToStoppedLog appends batches to partition 0 of topic in the log
// dir of a stopped node, straight through logstore at the log's latest
// leader epoch, and checkpoints the new end as the high watermark so the
// restarted leader serves it.
func appendToStoppedLog(t *testing.T, dir, topic string, batches ...[]byte) {
	t.Helper()
	d, err := logstore.OpenDir(dir, logstore.Options{})
	if err != nil {
		t.Fatalf("open log dir: %v", err)
	}
	tp := logstore.TopicPartition{Topic: topic, Partition: 0}
	l, err := d.Open(tp, [16]byte{}, logstore.DefaultConfig())
	if err != nil {
		t.Fatalf("open %s: %v", tp, err)
	}
	for _, b := range batches {
		if _, err := l.AppendAsLeader(b, l.LatestEpoch()); err != nil {
			t.Fatalf("append to %s: %v", tp, err)
		}
	}
	if err := d.Close(map[logstore.TopicPartition]int64{tp: l.LogEndOffset()}); err != nil {
		t.Fatalf("close log dir: %v", err)
	}
}

// TestProduceToConsumerOffsetsIsRefused: a forged offset commit produced
// to __consumer_offsets is refused and appends nothing, and the group
// resumes at its real committed offset after a restart.
func TestProduceToConsumerOffsetsIsRefused(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "orders", 1, nil)
	commitGroupOffset(t, n, "billing", "orders", 0, 3)
	before := endOffset(t, n, offsetsTopic)

	forged := keyedBatch(keyedRecord{offsetCommitKey("billing", "orders", 0), offsetCommitValue(3, 424242)})
	produceIsRefused(t, n, offsetsTopic, forged, before)

	n.Restart()
	if got := groupOffset(t, n, "billing", "orders", 0); got != 3 {
		t.Errorf("after a restart group billing resumes at %d, want its committed 3", got)
	}
}

// TestProduceToTransactionStateIsRefused: a forged transaction log record
// produced to __transaction_state is refused and appends nothing, and the
// transactional id keeps its producer id after a restart.
func TestProduceToTransactionStateIsRefused(t *testing.T) {
	n := internalNode(t)
	pid, epoch := initProducerID(t, n, "payments")
	before := endOffset(t, n, txnStateTopic)

	forged := keyedBatch(keyedRecord{txnLogKey("payments"), txnLogValue(424242, 7)})
	produceIsRefused(t, n, txnStateTopic, forged, before)

	n.Restart()
	gotPID, gotEpoch := initProducerID(t, n, "payments")
	if gotPID != pid || gotEpoch != epoch+1 {
		t.Errorf("after a restart InitProducerId gives producer %d epoch %d, want %d epoch %d", gotPID, gotEpoch, pid, epoch+1)
	}
}

// TestUnreadableOffsetsRecordsAreSkipped: records of __consumer_offsets
// the coordinator cannot parse (a short or truncated key, a value it
// cannot decode, an unknown value version) are skipped while loading; the
// groups of the partition load with their committed offsets, including
// records after the bad ones and in the same batch.
func TestUnreadableOffsetsRecordsAreSkipped(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "orders", 1, nil)
	commitGroupOffset(t, n, "billing", "orders", 0, 5)
	n.Stop()

	groupKey := kmsg.GroupMetadataKey{Version: 2, Group: "billing"}
	consumerGroupKey := append([]byte{0, 3, 0, 7}, "billing"...) // ConsumerGroupMetadataKey
	appendToStoppedLog(t, n.Dir, offsetsTopic,
		keyedBatch(keyedRecord{[]byte{0xff}, []byte("x")}),                                              // key too short for a version
		keyedBatch(keyedRecord{[]byte{0, 1, 0, 9, 'b'}, []byte("x")}),                                   // truncated offset commit key
		keyedBatch(keyedRecord{offsetCommitKey("billing", "orders", 0), []byte{0, 3, 1}}),               // truncated value
		keyedBatch(keyedRecord{offsetCommitKey("billing", "orders", 0), offsetCommitValue(99, 424242)}), // unknown value version
		keyedBatch(keyedRecord{groupKey.AppendTo(nil), []byte{0, 3, 0xff}}),                             // bad group metadata value
		keyedBatch(keyedRecord{groupKey.AppendTo(nil), groupMetadataValue(9)}),                          // unknown group metadata value version
		keyedBatch(keyedRecord{[]byte{0, 42, 0, 1, 'x'}, []byte("x")}),                                  // a key type of a newer Kafka, ignored
		keyedBatch(keyedRecord{consumerGroupKey, []byte{0, 0, 1}}),                                      // bad consumer group value
		keyedBatch(keyedRecord{offsetCommitKey("shipping", "orders", 0), offsetCommitValue(3, 9)}),      // a good record after them
		keyedBatch(keyedRecord{offsetCommitKey("billing", "orders", 0), []byte{0, 1}}, // a bad record and
			keyedRecord{offsetCommitKey("audit", "orders", 0), offsetCommitValue(1, 11)}), // a good one in one batch
	)

	n.Restart()
	for group, want := range map[string]int64{"billing": 5, "shipping": 9, "audit": 11} {
		if got := groupOffset(t, n, group, "orders", 0); got != want {
			t.Errorf("group %s: committed offset %d after the restart, want %d", group, got, want)
		}
	}
}

// TestUnreadableTransactionStateRecordsAreSkipped: records of
// __transaction_state the coordinator cannot parse are skipped while
// loading; the transactional ids of the partition load, including one
// whose record follows the bad ones.
func TestUnreadableTransactionStateRecordsAreSkipped(t *testing.T) {
	n := internalNode(t)
	pid, epoch := initProducerID(t, n, "payments")
	n.Stop()

	good := txnLogValue(5555, 3)
	unknownVersion := append([]byte{0, 9}, good[2:]...)
	badState := append([]byte(nil), good...)
	badState[2+8+2+4] = 42 // TransactionStatus
	appendToStoppedLog(t, n.Dir, txnStateTopic,
		keyedBatch(keyedRecord{[]byte{0xff}, []byte("x")}),              // key too short for a version
		keyedBatch(keyedRecord{[]byte{0, 0, 0, 9, 'p'}, []byte("x")}),   // truncated key
		keyedBatch(keyedRecord{txnLogKey("payments"), []byte{0, 1, 0}}), // truncated value
		keyedBatch(keyedRecord{txnLogKey("payments"), unknownVersion}),  // unknown value version
		keyedBatch(keyedRecord{txnLogKey("payments"), badState}),        // unknown transaction status
		keyedBatch(keyedRecord{[]byte{0, 1, 0, 1, 'x'}, []byte("x")}),   // a key version of a newer Kafka, ignored
		keyedBatch(keyedRecord{txnLogKey("refunds"), good}),             // a good record after them
	)

	n.Restart()
	if gotPID, gotEpoch := initProducerID(t, n, "payments"); gotPID != pid || gotEpoch != epoch+1 {
		t.Errorf("payments after the restart: producer %d epoch %d, want %d epoch %d", gotPID, gotEpoch, pid, epoch+1)
	}
	if gotPID, gotEpoch := initProducerID(t, n, "refunds"); gotPID != 5555 || gotEpoch != 4 {
		t.Errorf("refunds after the restart: producer %d epoch %d, want 5555 epoch 4", gotPID, gotEpoch)
	}
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}
