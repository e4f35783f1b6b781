package broker_test

// The shape Kafka requires of a partition's records in a Produce request
// (ProduceRequest.validateRecords): exactly one record batch, refused with
// INVALID_RECORD otherwise; and DeleteRecords may not trim an internal
// topic (INVALID_TOPIC_EXCEPTION), so a client cannot wipe every group's
// committed offsets.

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceOfTwoBatchesIsRefused: two well-formed batches for one
// partition in one Produce are INVALID_RECORD with Kafka's message, and
// neither is appended.
func TestProduceOfTwoBatchesIsRefused(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "two-batches", 1, nil)
	rec := keyedRecord{[]byte("k"), []byte("v")}
	two := append(keyedBatch(rec), keyedBatch(rec)...)
	req := produceRequest("two-batches", topicID(t, n, "two-batches"), 0, 5000, two)
	resp, err := req.RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.InvalidRecord.Code {
		t.Fatalf("produce of two batches: error %v, want INVALID_RECORD", kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp.ErrorMessage == nil || *sp.ErrorMessage == "" {
		t.Errorf("no error message")
	} else {
		t.Logf("message: %s", *sp.ErrorMessage)
	}
	if end := endOffset(t, n, "two-batches"); end != 0 {
		t.Errorf("end offset %d after the refused produce, want 0", end)
	}
}

// TestDeleteRecordsOfInternalTopicIsRefused: DeleteRecords on
// __consumer_offsets is INVALID_TOPIC_EXCEPTION, the log start stays, and
// the group keeps its committed offset.
func TestDeleteRecordsOfInternalTopicIsRefused(t *testing.T) {
	n := internalNode(t)
	createTopic(t, n, "orders", 1, nil)
	commitGroupOffset(t, n, "billing", "orders", 0, 3)

	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = offsetsTopic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), n.Client())
	if err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	if sp.ErrorCode != kerr.InvalidTopicException.Code {
		t.Errorf("DeleteRecords of %s-0: error %v, low watermark %d; want INVALID_TOPIC_EXCEPTION", offsetsTopic, kerr.ErrorForCode(sp.ErrorCode), sp.LowWatermark)
	}
	n.Restart()
	if got := groupOffset(t, n, "billing", "orders", 0); got != 3 {
		t.Errorf("after DeleteRecords and a restart group billing resumes at %d, want its committed 3", got)
	}
}
