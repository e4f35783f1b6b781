package share

// The records of __share_group_state, in Kafka's layouts (KIP-932, the
// share coordinator's ShareSnapshot and ShareUpdate records): a key of
// record type 0 (ShareSnapshotKey) or 1 (ShareUpdateKey) — int16 type,
// then the group id (int16-length string), the topic id (16 bytes) and the
// partition (int32) — and a flexible value of version 0:
//
//	ShareSnapshotValue: SnapshotEpoch int32, StateEpoch int32,
//	    LeaderEpoch int32, StartOffset int64, CreateTimestamp int64,
//	    WriteTimestamp int64, StateBatches (compact array)
//	ShareUpdateValue: SnapshotEpoch int32, LeaderEpoch int32,
//	    StartOffset int64, StateBatches (compact array)
//	StateBatch: FirstOffset int64, LastOffset int64, DeliveryState int8,
//	    DeliveryCount int16
//
// A record with no value is a tombstone (DeleteShareGroupState). The
// records are written one per uncompressed magic v2 batch, with no
// producer, built and read with franz-go's kmsg.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record types of __share_group_state keys: frozen, Kafka's.
const (
	recordSnapshot int16 = 0
	recordUpdate   int16 = 1
)

// errCorruptRecord is a __share_group_state record that cannot be read.
var errCorruptRecord = errors.New("share: corrupt __share_group_state record")

// stateRecord is one decoded __share_group_state record.
type stateRecord struct {
	typ           int16
	key           Key
	tombstone     bool
	snapshotEpoch int32
	stateEpoch    int32 // snapshots only
	leaderEpoch   int32
	startOffset   int64
	createTime    int64 // snapshots only
	writeTime     int64 // snapshots only
	batches       []StateBatch
}

func encodeStateKey(typ int16, k Key) []byte {
	b := kbin.AppendInt16(nil, typ)
	b = kbin.AppendString(b, k.Group)
	b = kbin.AppendUuid(b, k.TopicID)
	return kbin.AppendInt32(b, k.Partition)
}

// encodeStateValue encodes r's value (nil for a tombstone).
func encodeStateValue(r *stateRecord) []byte {
	if r.tombstone {
		return nil
	}
	b := kbin.AppendInt16(nil, 0) // value version 0
	b = kbin.AppendInt32(b, r.snapshotEpoch)
	if r.typ == recordSnapshot {
		b = kbin.AppendInt32(b, r.stateEpoch)
	}
	b = kbin.AppendInt32(b, r.leaderEpoch)
	b = kbin.AppendInt64(b, r.startOffset)
	if r.typ == recordSnapshot {
		b = kbin.AppendInt64(b, r.createTime)
		b = kbin.AppendInt64(b, r.writeTime)
	}
	b = kbin.AppendCompactArrayLen(b, len(r.batches))
	for _, sb := range r.batches {
		b = kbin.AppendInt64(b, sb.First)
		b = kbin.AppendInt64(b, sb.Last)
		b = kbin.AppendInt8(b, int8(sb.State))
		b = kbin.AppendInt16(b, sb.DeliveryCount)
		b = kbin.AppendUvarint(b, 0) // no tagged fields
	}
	return kbin.AppendUvarint(b, 0) // no tagged fields
}

// decodeStateRecord decodes one record; ok is false for a key of another
// record type (skipped, as Kafka's loader skips unknown types).
func decodeStateRecord(key, value []byte) (r stateRecord, ok bool, err error) {
	d := kbin.Reader{Src: key}
	r.typ = d.Int16()
	if d.Ok() && r.typ != recordSnapshot && r.typ != recordUpdate {
		return r, false, nil
	}
	r.key.Group = d.String()
	r.key.TopicID = d.Uuid()
	r.key.Partition = d.Int32()
	if err := d.Complete(); err != nil {
		return r, false, fmt.Errorf("%w: key: %v", errCorruptRecord, err)
	}
	if value == nil {
		r.tombstone = true
		return r, true, nil
	}
	d = kbin.Reader{Src: value}
	if v := d.Int16(); d.Ok() && v != 0 {
		return r, false, fmt.Errorf("%w: value version %d", errCorruptRecord, v)
	}
	r.snapshotEpoch = d.Int32()
	if r.typ == recordSnapshot {
		r.stateEpoch = d.Int32()
	}
	r.leaderEpoch = d.Int32()
	r.startOffset = d.Int64()
	if r.typ == recordSnapshot {
		r.createTime = d.Int64()
		r.writeTime = d.Int64()
	}
	// A batch takes at least 20 bytes: a count the value cannot hold is
	// corrupt, and allocates nothing.
	n := int(d.CompactArrayLen())
	if n < 0 || n > len(d.Src)/20 {
		return r, false, fmt.Errorf("%w: value: %d state batches", errCorruptRecord, n)
	}
	r.batches = make([]StateBatch, 0, n)
	for range n {
		sb := StateBatch{First: d.Int64(), Last: d.Int64(), State: RecordState(d.Int8()), DeliveryCount: d.Int16()}
		skipTags(&d)
		r.batches = append(r.batches, sb)
	}
	skipTags(&d)
	if err := d.Complete(); err != nil {
		return r, false, fmt.Errorf("%w: value: %v", errCorruptRecord, err)
	}
	return r, true, nil
}

// skipTags skips a tagged-field section.
func skipTags(d *kbin.Reader) {
	for n := d.Uvarint(); n > 0 && d.Ok(); n-- {
		d.Uvarint()
		d.Span(int(d.Uvarint()))
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildStateBatch encodes one record as an uncompressed magic v2 batch
// with base offset 0 and no producer; the log assigns the offset and the
// leader epoch.
func buildStateBatch(key, value []byte, timestamp int64) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	body := rec.AppendTo(nil)[1:] // a zero Length is one varint byte
	raw := append(binary.AppendVarint(nil, int64(len(body))), body...)
	rb := kmsg.RecordBatch{
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
	const headerAfterLength = 61 - 12 // batch header bytes after the length field
	rb.Length = int32(headerAfterLength + len(raw))
	out := rb.AppendTo(nil)
	const posCRC, posAttributes = 17, 21
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], castagnoli))
	return out
}

// readStateBatches calls fn with the offset, key and value of each record of the
// uncompressed data batches in data (control and still-compressed batches
// are skipped) and returns the offset after the last whole batch, -1 if
// there was none.
func readStateBatches(data []byte, fn func(offset int64, key, value []byte) error) (next int64, err error) {
	next = -1
	for len(data) >= 61 {
		size := int(binary.BigEndian.Uint32(data[8:])) + 12
		if size < 61 || size > len(data) {
			if size < 61 {
				return next, fmt.Errorf("%w: bad batch length", errCorruptRecord)
			}
			break
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(data[:size]); err != nil {
			return next, fmt.Errorf("%w: %v", errCorruptRecord, err)
		}
		data = data[size:]
		next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		if rb.Attributes&0x07 != 0 || rb.Attributes&0x20 != 0 {
			continue
		}
		recs := rb.Records
		for range rb.NumRecords {
			length, n := binary.Varint(recs)
			if n <= 0 || length < 0 || int64(len(recs)-n) < length {
				return next, fmt.Errorf("%w: bad record length", errCorruptRecord)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				return next, fmt.Errorf("%w: %v", errCorruptRecord, err)
			}
			recs = recs[n+int(length):]
			if err := fn(rb.FirstOffset+int64(r.OffsetDelta), r.Key, r.Value); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}
