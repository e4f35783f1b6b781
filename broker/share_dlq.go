package broker

// The share-group dead-letter queue (KIP-1191, Kafka 4.4), written by the
// share-partition leader: a record a member REJECTs, or one released after
// share.delivery.count.limit deliveries, is ARCHIVING, and written to the
// topic the group's errors.deadletterqueue.topic.name names once that
// state was persisted (package share hands it over then:
// share.Settings.DeadLetters); when the write ended it is ARCHIVED. A new
// leader (or this one after a reload) writes the records it finds
// ARCHIVING again: at least once, as Kafka's maybeResumeDlqArchiving. Only
// while share.version is finalized at 2 or more (Kafka's
// ShareVersion.supportsShareGroupDLQ) and the group names a topic;
// otherwise nothing is dead-lettered.
//
// As Kafka's ShareGroupDLQStateManager, each dead-lettered offset becomes
// one record of the DLQ topic's partition (source partition modulo its
// partition count), produced with acks=all to that partition's leader,
// timestamped now, with no key and no value and the headers
// __dlq.errors.topic, __dlq.errors.partition, __dlq.errors.offset,
// __dlq.errors.group, __dlq.errors.delivery.count and __dlq.errors.message
// ("Offset rejected by client." or "Offset delivery count exceeded the
// threshold."), all UTF-8 strings; with the group's
// errors.deadletterqueue.copy.record.enable, the key and value of the
// original record too (headers only when it cannot be read). The write is
// refused, as Kafka's validateDlqTopic refuses it and in its order, when
// the topic name starts with "__", the topic exists and its
// errors.deadletterqueue.group.enable is not true, the name does not start
// with errors.deadletterqueue.topic.name.prefix (the broker config, "dlq."
// by default; "" allows any name), or the topic does not exist and
// errors.deadletterqueue.auto.create.topics.enable (a dynamic broker
// config, false by default) is not true. With it true a missing DLQ topic
// is created by the writer, with the broker's num.partitions and
// default.replication.factor and errors.deadletterqueue.group.enable=true,
// and written once the metadata shows it. A write that is refused or fails
// is logged and dropped: the record is ARCHIVED all the same, as Kafka's
// "proceeding to ARCHIVED regardless".

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
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
	// produced batch (well under the default max.message.bytes); a
	// record larger than dlqBatchBytes goes alone.
	dlqRecordsPerBatch = 500
	dlqBatchBytes      = 256 << 10
	// dlqCopyReadBytes bounds what one write reads of the source log for
	// errors.deadletterqueue.copy.record.enable.
	dlqCopyReadBytes = 8 << 20
)

// dlqSlots holds one token per dead-letter write in flight.
var dlqSlots = make(chan struct{}, dlqMaxWrites)

// shareDeadLetters returns what a group's share-partitions hand their
// dead-lettered records to: nil while share.version is below 2 or the
// group names no DLQ topic.
func (b *Broker) shareDeadLetters(group, dlqTopic string, copyRecord bool) func(share.Key, []share.DeadLetter, func()) {
	if dlqTopic == "" || b.featureLevel(controller.FeatureShareVersion) < 2 {
		return nil
	}
	return func(key share.Key, dls []share.DeadLetter, done func()) {
		select {
		case dlqSlots <- struct{}{}:
		default:
			b.logger.Warn("share-group dead-letter queue: too many writes in flight, records dropped", "group", group, "dlq", dlqTopic, "records", len(dls))
			go done() // the caller holds the share-partition's lock
			return
		}
		go func() {
			defer func() { <-dlqSlots }()
			defer done()
			if err := b.writeDeadLetters(group, dlqTopic, copyRecord, key, dls); err != nil {
				b.logger.Warn("share-group dead-letter queue: write failed, records stay archived", "group", group, "dlq", dlqTopic, "records", len(dls), "err", err)
			}
		}()
	}
}

// errDLQTopicToCreate is dlqTopicError's answer for a missing DLQ topic
// that errors.deadletterqueue.auto.create.topics.enable lets the writer
// create.
var errDLQTopicToCreate = errors.New("broker: the DLQ topic is to be created")

// dlqTopicError is Kafka's validateDlqTopic: why the DLQ topic cannot be
// written, nil when it can, errDLQTopicToCreate when it is missing and may
// be created.
func (b *Broker) dlqTopicError(img *controller.Image, group, dlqTopic string) (*controller.Topic, error) {
	if strings.HasPrefix(dlqTopic, "__") {
		return nil, fmt.Errorf("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, dlqTopic)
	}
	t := img.Topics[dlqTopic]
	if t != nil && b.effectiveTopicConfig(img, t)["errors.deadletterqueue.group.enable"] != "true" {
		return nil, fmt.Errorf("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, dlqTopic)
	}
	if prefix := b.dlqTopicPrefix(img); prefix != "" && !strings.HasPrefix(dlqTopic, prefix) {
		return nil, fmt.Errorf("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, dlqTopic, prefix)
	}
	if t == nil {
		if b.dlqBrokerConfig(img, dlqAutoCreateKey, "false") == "true" {
			return nil, errDLQTopicToCreate
		}
		return nil, fmt.Errorf("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, dlqTopic)
	}
	if len(t.Partitions) == 0 {
		return nil, fmt.Errorf("DLQ topic partition count could not be found for share group %s with DLQ topic %s.", group, dlqTopic)
	}
	return t, nil
}

// dlqAutoCreateKey is the broker config letting the DLQ writer create a
// missing DLQ topic.
const dlqAutoCreateKey = "errors.deadletterqueue.auto.create.topics.enable"

// dlqTopicPrefix is errors.deadletterqueue.topic.name.prefix.
func (b *Broker) dlqTopicPrefix(img *controller.Image) string {
	return b.dlqBrokerConfig(img, "errors.deadletterqueue.topic.name.prefix", "dlq.")
}

// dlqBrokerConfig is a dynamic broker config of the DLQ: this broker's
// dynamic value, the cluster's, the static one, else def.
func (b *Broker) dlqBrokerConfig(img *controller.Image, key, def string) string {
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
	return def
}

// createDLQTopic has the controller create the missing DLQ topic with the
// broker's default partitions and replication factor, DLQ enabled on it;
// one created meanwhile by another writer is fine.
func (b *Broker) createDLQTopic(ctx context.Context, dlqTopic string) error {
	enable := "true"
	res := b.createTopics(ctx, []controller.CreateTopic{{Name: dlqTopic, NumPartitions: -1, ReplicationFactor: -1,
		Configs: map[string]*string{"errors.deadletterqueue.group.enable": &enable}}}, false)
	if len(res) != 1 {
		return fmt.Errorf("broker: creating DLQ topic %s: no answer", dlqTopic)
	}
	if err := res[0].Err; err != nil {
		if errorCode(err) == kerr.TopicAlreadyExists.Code {
			return nil
		}
		return err
	}
	b.logger.Info("share-group dead-letter queue: created the DLQ topic", "topic", dlqTopic)
	return nil
}

// writeDeadLetters produces one DLQ record per dead letter of key's
// share-partition, retrying what is retriable until dlqWriteTimeout.
func (b *Broker) writeDeadLetters(group, dlqTopic string, copyRecord bool, key share.Key, dls []share.DeadLetter) error {
	ctx, cancel := context.WithTimeout(context.Background(), dlqWriteTimeout)
	defer cancel()
	source := uuidString(key.TopicID) // as Kafka, when the name is unknown
	t := b.metadata().TopicsByID[key.TopicID]
	if t != nil {
		source = t.Name
	}
	var originals map[int64]dlqOriginal
	if copyRecord && t != nil {
		originals = b.dlqOriginals(t, key.Partition, dls)
	}
	now := time.Now().UnixMilli()
	var recs []kmsg.Record
	size := 0
	flush := func() error {
		if len(recs) == 0 {
			return nil
		}
		err := b.produceDeadLetters(ctx, group, dlqTopic, key.Partition, dlqBatch(recs, now))
		recs, size = recs[:0], 0
		return err
	}
	for _, dl := range dls {
		r := dlqRecord(group, source, key.Partition, dl, originals[dl.Offset])
		n := len(r.Key) + len(r.Value) + 200 + len(group) + len(source)
		if len(recs) > 0 && (size+n > dlqBatchBytes || len(recs) == dlqRecordsPerBatch) {
			if err := flush(); err != nil {
				return err
			}
		}
		r.OffsetDelta = int32(len(recs))
		recs = append(recs, r)
		size += n
	}
	return flush()
}

// dlqOriginal is the key and value of a dead-lettered record.
type dlqOriginal struct{ key, value []byte }

// dlqOriginals reads the keys and values of the dead-lettered offsets
// from partition of t, which this broker leads, within dlqCopyReadBytes;
// what it cannot read is left out (its DLQ record has headers only, as
// Kafka's when it cannot fetch the original).
func (b *Broker) dlqOriginals(t *controller.Topic, partition int32, dls []share.DeadLetter) map[int64]dlqOriginal {
	p, _, err := b.leaderReplica(t, partition, -1)
	if err != nil || len(dls) == 0 {
		return nil
	}
	want := make(map[int64]bool, len(dls))
	first, last := dls[0].Offset, dls[0].Offset
	for _, dl := range dls {
		want[dl.Offset] = true
		first, last = min(first, dl.Offset), max(last, dl.Offset)
	}
	out := make(map[int64]dlqOriginal, len(dls))
	read := 0
	for off := first; off <= last && read < dlqCopyReadBytes; {
		res, err := p.log.Read(off, 1<<20, p.highWatermark(), true)
		if err != nil || len(res.Data) == 0 {
			break
		}
		read += len(res.Data)
		next := dlqEachRecord(logstore.DecompressBatches(res.Data), func(o int64, r *kmsg.Record) {
			if want[o] {
				out[o] = dlqOriginal{key: r.Key, value: r.Value}
			}
		})
		if next <= off {
			break
		}
		off = next
	}
	return out
}

// dlqEachRecord calls fn with the offset and record of each record of the
// uncompressed data batches in data (control batches and batches it
// cannot decode are skipped) and returns the offset after the last whole
// batch, -1 if there was none.
func dlqEachRecord(data []byte, fn func(int64, *kmsg.Record)) int64 {
	next := int64(-1)
	for len(data) >= 61 {
		size := int(binary.BigEndian.Uint32(data[8:])) + 12
		if size < 61 || size > len(data) {
			break
		}
		var rb kmsg.RecordBatch
		err := rb.ReadFrom(data[:size])
		data = data[size:]
		if err != nil {
			continue
		}
		next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		if rb.Attributes&0x07 != 0 || rb.Attributes&0x20 != 0 {
			continue
		}
		recs := rb.Records
		for range rb.NumRecords {
			length, n := binary.Varint(recs)
			if n <= 0 || length < 0 || int64(len(recs)-n) < length {
				break
			}
			var r kmsg.Record
			if r.ReadFrom(recs[:n+int(length)]) != nil {
				break
			}
			recs = recs[n+int(length):]
			fn(rb.FirstOffset+int64(r.OffsetDelta), &r)
		}
	}
	return next
}

// produceDeadLetters sends batch to the leader of the DLQ partition the
// source partition maps to, acks=all, until it is written, refused for
// good, or ctx ends.
func (b *Broker) produceDeadLetters(ctx context.Context, group, dlqTopic string, sourcePartition int32, batch []byte) error {
	backoff := 50 * time.Millisecond
	for {
		img := b.metadata()
		t, err := b.dlqTopicError(img, group, dlqTopic)
		if errors.Is(err, errDLQTopicToCreate) {
			if err = b.createDLQTopic(ctx, dlqTopic); err != nil {
				return err
			}
			err = fmt.Errorf("DLQ topic %s created for share group %s, not in this broker's metadata yet", dlqTopic, group)
		} else if err != nil {
			return err
		}
		var dest, leader int32
		if t != nil {
			dest = sourcePartition % int32(len(t.Partitions))
			leader = t.Partitions[dest].Leader
		}
		retriable := true
		if t == nil {
			// created: wait for the metadata to show it
		} else if leader < 0 {
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

// dlqRecord is the DLQ record of dl: Kafka's headers, and orig's key and
// value when the record is copied.
func dlqRecord(group, sourceTopic string, sourcePartition int32, dl share.DeadLetter, orig dlqOriginal) kmsg.Record {
	msg := dlqMessageExceeded
	if dl.Rejected {
		msg = dlqMessageRejected
	}
	return kmsg.Record{
		Key:   orig.key,
		Value: orig.value,
		Headers: []kmsg.Header{
			{Key: dlqHeaderTopic, Value: []byte(sourceTopic)},
			{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(sourcePartition)))},
			{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(dl.Offset, 10))},
			{Key: dlqHeaderGroup, Value: []byte(group)},
			{Key: dlqHeaderDeliveryCount, Value: []byte(strconv.Itoa(int(dl.DeliveryCount)))},
			{Key: dlqHeaderMessage, Value: []byte(msg)},
		},
	}
}

// dlqBatch encodes recs (their OffsetDelta set) as one uncompressed magic
// v2 batch without a producer, timestamped now.
func dlqBatch(recs []kmsg.Record, now int64) []byte {
	var raw []byte
	for i := range recs {
		body := recs[i].AppendTo(nil)[1:] // a zero Length is one varint byte
		raw = binary.AppendVarint(raw, int64(len(body)))
		raw = append(raw, body...)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(recs)),
		Records:              raw,
	}
	const headerAfterLength = 61 - 12 // batch header bytes after the length field
	rb.Length = int32(headerAfterLength + len(raw))
	out := rb.AppendTo(nil)
	const posCRC, posAttributes = 17, 21
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], dlqCastagnoli))
	return out
}

var dlqCastagnoli = crc32.MakeTable(crc32.Castagnoli)
