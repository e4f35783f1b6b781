package broker

// The share-group dead-letter queue (KIP-1191, Kafka 4.4), written by the
// share-partition leader: a record a member REJECTs, or one archived after
// share.delivery.count.limit deliveries, is written to the topic the
// group's errors.deadletterqueue.topic.name names, once the change that
// archived it was persisted (package share hands it over then:
// share.Settings.DeadLetters). Only while share.version is finalized at 2
// or more (Kafka's ShareVersion.supportsShareGroupDLQ) and the group names
// a topic; otherwise nothing is dead-lettered.
//
// As Kafka's ShareGroupDLQStateManager, each dead-lettered offset becomes
// one record of the DLQ topic's partition (source partition modulo its
// partition count), produced with acks=all to that partition's leader,
// timestamped now, with no key and no value and the headers
// __dlq.errors.topic, __dlq.errors.partition, __dlq.errors.offset,
// __dlq.errors.group, __dlq.errors.delivery.count and __dlq.errors.message
// ("Offset rejected by client." or "Offset delivery count exceeded the
// threshold."), all UTF-8 strings. The write is refused, as Kafka's
// validateDlqTopic refuses it, when the topic name starts with "__", does
// not start with errors.deadletterqueue.topic.name.prefix (the broker
// config, "dlq." by default; "" allows any name), the topic does not
// exist, or its errors.deadletterqueue.group.enable is not true. A write
// that is refused or fails is logged and dropped: the record stays
// ARCHIVED, as Kafka's "proceeding to ARCHIVED regardless".
//
// sluice differs from Kafka 4.4 in: the record is ARCHIVED at once (Kafka
// keeps it ARCHIVING, a persisted state, until the DLQ write completed, and
// a new leader writes what an old one had not), so a leader that dies
// between the state write and the DLQ write loses that DLQ record;
// errors.deadletterqueue.copy.record.enable (copying the record's key and
// value) and errors.deadletterqueue.auto.create.topics.enable (the broker
// creating a missing DLQ topic) accept only their default, false.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/share"
)

// Kafka's DLQ record headers and messages
// (ShareGroupDLQStateManager.ProduceRequestHandler, ShareGroupDLQManager).
const (
	dlqHeaderTopic         = "__dlq.errors.topic"
	dlqHeaderPartition     = "__dlq.errors.partition"
	dlqHeaderOffset        = "__dlq.errors.offset"
	dlqHeaderGroup         = "__dlq.errors.group"
	dlqHeaderDeliveryCount = "__dlq.errors.delivery.count"
	dlqHeaderMessage       = "__dlq.errors.message"

	dlqMessageRejected = "Offset rejected by client."
	dlqMessageExceeded = "Offset delivery count exceeded the threshold."

	// dlqWriteTimeout bounds one dead-letter write, its retries
	// included; Kafka's produce timeout is 30s.
	dlqWriteTimeout = 30 * time.Second
	// dlqMaxWrites bounds the dead-letter writes in flight per broker;
	// past it a write is dropped (logged), as a failed one is.
	dlqMaxWrites = 64
	// dlqRecordsPerBatch and dlqBatchBytes bound the records of one
	// produced batch (well under the default max.message.bytes).
	dlqRecordsPerBatch = 500
	dlqBatchBytes      = 256 << 10
)

// dlqSlots holds one token per dead-letter write in flight.
var dlqSlots = make(chan struct{}, dlqMaxWrites)

// shareDeadLetters returns what a group's share-partitions hand their
// dead-lettered records to: nil while share.version is below 2 or the
// group names no DLQ topic.
func (b *Broker) shareDeadLetters(group, dlqTopic string) func(share.Key, []share.DeadLetter) {
	if dlqTopic == "" || b.featureLevel(controller.FeatureShareVersion) < 2 {
		return nil
	}
	return func(key share.Key, dls []share.DeadLetter) {
		select {
		case dlqSlots <- struct{}{}:
		default:
			b.logger.Warn("share-group dead-letter queue: too many writes in flight, records dropped", "group", group, "dlq", dlqTopic, "records", len(dls))
			return
		}
		go func() {
			defer func() { <-dlqSlots }()
			if err := b.writeDeadLetters(group, dlqTopic, key, dls); err != nil {
				b.logger.Warn("share-group dead-letter queue: write failed, records stay archived", "group", group, "dlq", dlqTopic, "records", len(dls), "err", err)
			}
		}()
	}
}

// dlqTopicError is Kafka's validateDlqTopic: why the DLQ topic cannot be
// written, nil when it can.
func (b *Broker) dlqTopicError(img *controller.Image, group, dlqTopic string) (*controller.Topic, error) {
	if strings.HasPrefix(dlqTopic, "__") {
		return nil, fmt.Errorf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, dlqTopic)
	}
	t := img.Topics[dlqTopic]
	if t == nil {
		return nil, fmt.Errorf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, dlqTopic)
	}
	if b.effectiveTopicConfig(img, t)["errors.deadletterqueue.group.enable"] != "true" {
		return nil, fmt.Errorf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, dlqTopic)
	}
	if prefix := b.dlqTopicPrefix(img); prefix != "" && !strings.HasPrefix(dlqTopic, prefix) {
		return nil, fmt.Errorf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, dlqTopic, prefix)
	}
	if len(t.Partitions) == 0 {
		return nil, fmt.Errorf("DLQ topic partition count could not be found for share group %s with DLQ topic %s.", group, dlqTopic)
	}
	return t, nil
}

// dlqTopicPrefix is errors.deadletterqueue.topic.name.prefix: this
// broker's dynamic value, the cluster's, the static one, else "dlq.".
func (b *Broker) dlqTopicPrefix(img *controller.Image) string {
	const key = "errors.deadletterqueue.topic.name.prefix"
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	if v, ok := perBroker[key]; ok {
		return v
	}
	if v, ok := clusterDefault[key]; ok {
		return v
	}
	if v, ok := b.cfg.Get(key); ok {
		return v
	}
	return "dlq."
}

// writeDeadLetters produces one DLQ record per dead letter of key's
// share-partition, retrying what is retriable until dlqWriteTimeout.
func (b *Broker) writeDeadLetters(group, dlqTopic string, key share.Key, dls []share.DeadLetter) error {
	ctx, cancel := context.WithTimeout(context.Background(), dlqWriteTimeout)
	defer cancel()
	source := uuidString(key.TopicID) // as Kafka, when the name is unknown
	if t := b.metadata().TopicsByID[key.TopicID]; t != nil {
		source = t.Name
	}
	now := time.Now().UnixMilli()
	// A DLQ record is its headers: about 200 bytes besides the names.
	perBatch := max(1, min(dlqRecordsPerBatch, dlqBatchBytes/(200+len(group)+len(source))))
	for len(dls) > 0 {
		n := min(len(dls), perBatch)
		batch := dlqBatch(group, source, key.Partition, dls[:n], now)
		if err := b.produceDeadLetters(ctx, group, dlqTopic, key.Partition, batch); err != nil {
			return err
		}
		dls = dls[n:]
	}
	return nil
}

// produceDeadLetters sends batch to the leader of the DLQ partition the
// source partition maps to, acks=all, until it is written, refused for
// good, or ctx ends.
func (b *Broker) produceDeadLetters(ctx context.Context, group, dlqTopic string, sourcePartition int32, batch []byte) error {
	backoff := 50 * time.Millisecond
	for {
		img := b.metadata()
		t, err := b.dlqTopicError(img, group, dlqTopic)
		if err != nil {
			return err
		}
		dest := sourcePartition % int32(len(t.Partitions))
		leader := t.Partitions[dest].Leader
		retriable := true
		if leader < 0 {
			err = fmt.Errorf("DLQ topic partition leader node for share group %s with DLQ topic %s and partition %d could not be found.", group, dlqTopic, dest)
		} else if err = b.sendDeadLetters(ctx, t, dest, leader, batch); err == nil {
			return nil
		} else if ke, ok := err.(*kerr.Error); ok {
			retriable = ke.Retriable
		}
		if !retriable {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// sendDeadLetters sends one Produce of batch to partition dest of t at
// leader and returns the partition's error.
func (b *Broker) sendDeadLetters(ctx context.Context, t *controller.Topic, dest, leader int32, batch []byte) error {
	cl, err := b.peerClient()
	if err != nil {
		return err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, int32(dlqWriteTimeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = t.Name, t.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = dest, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	rctx, cancel := context.WithTimeout(ctx, dlqWriteTimeout)
	defer cancel()
	kresp, err := cl.Broker(int(leader)).Request(rctx, req)
	if err != nil {
		cl.ForceMetadataRefresh()
		return kerr.NetworkException // retriable: the leader may have moved
	}
	resp, ok := kresp.(*kmsg.ProduceResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("broker: unexpected answer %T to a DLQ produce", kresp)
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

// dlqBatch encodes the DLQ records of dls as one uncompressed magic v2
// batch without a producer, timestamped now.
func dlqBatch(group, sourceTopic string, sourcePartition int32, dls []share.DeadLetter, now int64) []byte {
	var raw []byte
	for i, dl := range dls {
		msg := dlqMessageExceeded
		if dl.Rejected {
			msg = dlqMessageRejected
		}
		rec := kmsg.Record{
			OffsetDelta: int32(i),
			Key:         nil,
			Value:       nil,
			Headers: []kmsg.Header{
				{Key: dlqHeaderTopic, Value: []byte(sourceTopic)},
				{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(sourcePartition)))},
				{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(dl.Offset, 10))},
				{Key: dlqHeaderGroup, Value: []byte(group)},
				{Key: dlqHeaderDeliveryCount, Value: []byte(strconv.Itoa(int(dl.DeliveryCount)))},
				{Key: dlqHeaderMessage, Value: []byte(msg)},
			},
		}
		body := rec.AppendTo(nil)[1:] // a zero Length is one varint byte
		raw = binary.AppendVarint(raw, int64(len(body)))
		raw = append(raw, body...)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(dls) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(dls)),
		Records:              raw,
	}
	const headerAfterLength = 61 - 12 // batch header bytes after the length field
	rb.Length = int32(headerAfterLength + len(raw))
	out := rb.AppendTo(nil)
	const posCRC, posAttributes = 17, 21
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}
