package txn

// The coordinator's records in __transaction_state use Kafka's own format,
// so a partition written by sluice reads the same as one written by Kafka:
//
//	key    int16 version 0 | string transactional id          (TransactionLogKey)
//	value  int16 version | TransactionLogValue v0 or v1, or nil (a tombstone)
//
//	TransactionLogValue
//	  int64  ProducerId
//	  int16  ProducerEpoch
//	  int32  TransactionTimeoutMs
//	  int8   TransactionStatus          (State)
//	  []     TransactionPartitions      nullable: null when Empty
//	           string  Topic
//	           []int32 PartitionIds
//	  int64  TransactionLastUpdateTimestampMs
//	  int64  TransactionStartTimestampMs
//	  v1 tagged fields: 0 PreviousProducerId int64 (default -1),
//	                    1 NextProducerId int64 (default -1),
//	                    2 ClientTransactionVersion int16 (default 0)
//
// v0 uses int16-length strings and int32-count arrays; v1 is flexible
// (compact strings and arrays, tagged fields at the end of every struct).
// sluice writes v1, so the previous producer id of KIP-360, and a
// transaction version 2 transaction's version and next producer id
// (KIP-890 part 2), survive a coordinator change, and reads both. The format is frozen by Kafka.
//
// Records go in uncompressed magic v2 batches with no producer id, one
// record per batch, so each state change is applied whole or not at all.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record versions, frozen by Kafka's format.
const (
	keyVersion     = 0
	valueVersionV0 = 0
	valueVersionV1 = 1
)

// ErrCorruptRecord is returned when a record of __transaction_state cannot
// be decoded.
var ErrCorruptRecord = errors.New("txn: corrupt record in __transaction_state")

// encodeKey is the TransactionLogKey of id.
func encodeKey(id string) []byte {
	b := binary.BigEndian.AppendUint16(nil, keyVersion)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	return append(b, id...)
}

// decodeKey returns the transactional id of a key; ok is false for a key
// of a version this coordinator does not know (skipped while loading).
func decodeKey(b []byte) (id string, ok bool, err error) {
	r := &reader{b: b}
	if v := r.int16(); r.err == nil && v != keyVersion {
		return "", false, nil
	}
	id = r.string(false)
	if r.err != nil || len(r.b) != 0 {
		return "", false, fmt.Errorf("%w: transaction log key", ErrCorruptRecord)
	}
	return id, true, nil
}

// encodeValue is the TransactionLogValue of m at version (0 or 1).
func encodeValue(m *metadata, version int16) []byte {
	flexible := version >= 1
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = binary.BigEndian.AppendUint64(b, uint64(m.producerID))
	b = binary.BigEndian.AppendUint16(b, uint16(m.epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.timeoutMs))
	b = append(b, byte(m.state))
	if m.state == StateEmpty {
		if flexible {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.BigEndian.AppendUint32(b, 0xffffffff)
		}
	} else {
		topics := groupByTopic(m.partitions)
		b = appendLen(b, len(topics), flexible)
		for _, t := range topics {
			if flexible {
				b = binary.AppendUvarint(b, uint64(len(t.topic))+1)
			} else {
				b = binary.BigEndian.AppendUint16(b, uint16(len(t.topic)))
			}
			b = append(b, t.topic...)
			b = appendLen(b, len(t.partitions), flexible)
			for _, p := range t.partitions {
				b = binary.BigEndian.AppendUint32(b, uint32(p))
			}
			if flexible {
				b = binary.AppendUvarint(b, 0) // no tagged fields
			}
		}
	}
	b = binary.BigEndian.AppendUint64(b, uint64(m.updateMs))
	b = binary.BigEndian.AppendUint64(b, uint64(m.startMs))
	if flexible {
		var tags [][]byte
		if m.lastProducerID >= 0 {
			tag := binary.AppendUvarint(nil, 0)
			tag = binary.AppendUvarint(tag, 8)
			tags = append(tags, binary.BigEndian.AppendUint64(tag, uint64(m.lastProducerID)))
		}
		if m.hasNext {
			tag := binary.AppendUvarint(nil, 1)
			tag = binary.AppendUvarint(tag, 8)
			tags = append(tags, binary.BigEndian.AppendUint64(tag, uint64(m.nextProducerID)))
		}
		if m.txnVersion != 0 {
			tag := binary.AppendUvarint(nil, 2)
			tag = binary.AppendUvarint(tag, 2)
			tags = append(tags, binary.BigEndian.AppendUint16(tag, uint16(m.txnVersion)))
		}
		b = binary.AppendUvarint(b, uint64(len(tags)))
		for _, t := range tags {
			b = append(b, t...)
		}
	}
	return b
}

// appendLen appends an array length: compact, or int32 for v0.
func appendLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// decodeValue decodes a TransactionLogValue v0 or v1.
func decodeValue(b []byte) (metadata, error) {
	r := &reader{b: b}
	m := metadata{lastProducerID: -1, lastEpoch: -1}
	version := r.int16()
	if r.err == nil && (version < valueVersionV0 || version > valueVersionV1) {
		return m, fmt.Errorf("%w: transaction log value version %d", ErrCorruptRecord, version)
	}
	flexible := version >= 1
	m.producerID = r.int64()
	m.epoch = r.int16()
	m.timeoutMs = r.int32()
	m.state = State(r.int8())
	if n, null := r.arrayLen(flexible); !null {
		for range n {
			topic := r.string(flexible)
			np, _ := r.arrayLen(flexible)
			for range np {
				m.partitions = append(m.partitions, TopicPartition{Topic: topic, Partition: r.int32()})
			}
			if flexible {
				r.skipTags()
			}
			if r.err != nil {
				break
			}
		}
	}
	m.updateMs = r.int64()
	m.startMs = r.int64()
	if flexible {
		n := r.uvarint()
		for i := uint64(0); i < n && r.err == nil; i++ {
			tag, size := r.uvarint(), r.uvarint()
			data := r.bytes(int(size))
			switch {
			case tag == 0 && len(data) == 8:
				m.lastProducerID = int64(binary.BigEndian.Uint64(data))
			case tag == 1 && len(data) == 8:
				if id := int64(binary.BigEndian.Uint64(data)); id >= 0 {
					m.hasNext, m.nextProducerID = true, id
				}
			case tag == 2 && len(data) == 2:
				m.txnVersion = int16(binary.BigEndian.Uint16(data))
			}
		}
	}
	if r.err != nil {
		return m, fmt.Errorf("%w: transaction log value: %v", ErrCorruptRecord, r.err)
	}
	if m.state < StateEmpty || m.state > StatePrepareEpochFence {
		return m, fmt.Errorf("%w: transaction status %d", ErrCorruptRecord, m.state)
	}
	sortPartitions(m.partitions)
	return m, nil
}

// topicPartitions is one topic's partitions in a value.
type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic groups sorted partitions by topic.
func groupByTopic(parts []TopicPartition) []topicPartitions {
	var out []topicPartitions
	for _, tp := range parts {
		if len(out) == 0 || out[len(out)-1].topic != tp.Topic {
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.partitions = append(last.partitions, tp.Partition)
	}
	return out
}

func sortPartitions(parts []TopicPartition) {
	slices.SortFunc(parts, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
}

// reader decodes Kafka's primitive types; the first error sticks.
type reader struct {
	b   []byte
	err error
}

var errShort = errors.New("record too short")

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() int8 {
	if b := r.bytes(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if b := r.bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return v
}

// string reads a non-nullable string: int16 length, or compact.
func (r *reader) string(flexible bool) string {
	n := 0
	if flexible {
		n = int(r.uvarint()) - 1
	} else {
		n = int(r.int16())
	}
	if n < 0 && r.err == nil {
		r.err = errors.New("null string")
	}
	return string(r.bytes(n))
}

// arrayLen reads an array length: int32, or compact; null is -1 or 0.
func (r *reader) arrayLen(flexible bool) (n int, null bool) {
	if flexible {
		n = int(r.uvarint()) - 1
	} else {
		n = int(r.int32())
	}
	if r.err != nil || n < 0 {
		return 0, true
	}
	if n > len(r.b) { // every element takes at least a byte
		r.err = errShort
		return 0, true
	}
	return n, false
}

func (r *reader) skipTags() {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.uvarint()
		r.bytes(int(r.uvarint()))
	}
}

// Batch layout (magic v2); the CRC covers attributes to the end.
const (
	batchHeaderSize = 61
	posLength       = 8
	posMagic        = 16
	posCRC          = 17
	posAttributes   = 21
	posLastDelta    = 23
	posRecordCount  = 57
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes one record as an uncompressed magic v2 batch with
// base offset 0; the log assigns the offset and the leader epoch.
func buildBatch(key, value []byte, timestamp int64) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	body := rec.AppendTo(nil)[1:] // a zero Length encodes as one varint byte
	raw := binary.AppendVarint(nil, int64(len(body)))
	raw = append(raw, body...)
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		FirstTimestamp:       timestamp,
		MaxTimestamp:         timestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              raw,
	}
	b.Length = int32(batchHeaderSize - 12 + len(raw))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], castagnoli))
	return out
}

// logRecord is one record of a data batch read back from the log. err is
// set, and nothing else but offset, when the record could not be read out
// of its batch: the rest of that batch is skipped.
type logRecord struct {
	offset     int64
	key, value []byte
	err        error
}

// scanBatches calls fn for each record of each uncompressed data batch in
// data and returns the offset after the last whole batch (-1 if none).
// Control batches and compressed batches (Log.Read hands them back
// decompressed; one that did not decompress is left so) are skipped. A record whose framing cannot be read is handed to fn with err
// set and ends its batch (the records after it cannot be found); the next
// batch is read as usual, since the batch header says where it starts. A
// batch header that cannot be read is an error: past it, no later batch
// can be found.
func scanBatches(data []byte, fn func(logRecord) error) (next int64, err error) {
	next = -1
	for len(data) >= batchHeaderSize {
		base := int64(binary.BigEndian.Uint64(data))
		size := int(binary.BigEndian.Uint32(data[posLength:])) + 12
		if size < batchHeaderSize || data[posMagic] != 2 {
			return next, fmt.Errorf("%w: bad batch header at offset %d", ErrCorruptRecord, base)
		}
		if size > len(data) {
			break
		}
		batch := data[:size]
		data = data[size:]
		next = base + int64(int32(binary.BigEndian.Uint32(batch[posLastDelta:]))) + 1
		attrs := binary.BigEndian.Uint16(batch[posAttributes:])
		if attrs&0x07 != 0 || attrs&0x20 != 0 {
			continue
		}
		recs := batch[batchHeaderSize:]
		count := int(int32(binary.BigEndian.Uint32(batch[posRecordCount:])))
		for i := range count {
			length, n := binary.Varint(recs)
			var r kmsg.Record
			err := errors.New("bad record length")
			if n > 0 && length >= 0 && int64(len(recs)-n) >= length {
				err = r.ReadFrom(recs[:n+int(length)])
			}
			if err != nil {
				err = fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorruptRecord, i, base, err)
				if err := fn(logRecord{offset: base + int64(i), err: err}); err != nil {
					return next, err
				}
				break
			}
			recs = recs[n+int(length):]
			if err := fn(logRecord{offset: base + int64(r.OffsetDelta), key: r.Key, value: r.Value}); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}

// parseBatches is scanBatches for a caller that wants only keys and values
// and stops at the first record that cannot be read.
func parseBatches(data []byte, fn func(key, value []byte) error) (next int64, err error) {
	return scanBatches(data, func(r logRecord) error {
		if r.err != nil {
			return r.err
		}
		return fn(r.key, r.value)
	})
}
