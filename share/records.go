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
	b := binary.BigEndian.AppendUint16(nil, uint16(typ))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.TopicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// encodeStateValue encodes r's value (nil for a tombstone).
func encodeStateValue(r *stateRecord) []byte {
	if r.tombstone {
		return nil
	}
	b := binary.BigEndian.AppendUint16(nil, 0) // value version 0
	b = binary.BigEndian.AppendUint32(b, uint32(r.snapshotEpoch))
	if r.typ == recordSnapshot {
		b = binary.BigEndian.AppendUint32(b, uint32(r.stateEpoch))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(r.leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(r.startOffset))
	if r.typ == recordSnapshot {
		b = binary.BigEndian.AppendUint64(b, uint64(r.createTime))
		b = binary.BigEndian.AppendUint64(b, uint64(r.writeTime))
	}
	b = binary.AppendUvarint(b, uint64(len(r.batches))+1)
	for _, sb := range r.batches {
		b = binary.BigEndian.AppendUint64(b, uint64(sb.First))
		b = binary.BigEndian.AppendUint64(b, uint64(sb.Last))
		b = append(b, byte(sb.State))
		b = binary.BigEndian.AppendUint16(b, uint16(sb.DeliveryCount))
		b = append(b, 0) // no tagged fields
	}
	return append(b, 0) // no tagged fields
}

// decodeStateRecord decodes one record; ok is false for a key of another
// record type (skipped, as Kafka's loader skips unknown types).
func decodeStateRecord(key, value []byte) (r stateRecord, ok bool, err error) {
	d := decoder{b: key}
	r.typ = d.int16()
	if d.err == nil && r.typ != recordSnapshot && r.typ != recordUpdate {
		return r, false, nil
	}
	r.key.Group = string(d.bytes(int(d.int16())))
	copy(r.key.TopicID[:], d.bytes(16))
	r.key.Partition = d.int32()
	if d.err != nil {
		return r, false, fmt.Errorf("%w: key: %v", errCorruptRecord, d.err)
	}
	if value == nil {
		r.tombstone = true
		return r, true, nil
	}
	d = decoder{b: value}
	if v := d.int16(); d.err == nil && v != 0 {
		return r, false, fmt.Errorf("%w: value version %d", errCorruptRecord, v)
	}
	r.snapshotEpoch = d.int32()
	if r.typ == recordSnapshot {
		r.stateEpoch = d.int32()
	}
	r.leaderEpoch = d.int32()
	r.startOffset = d.int64()
	if r.typ == recordSnapshot {
		r.createTime = d.int64()
		r.writeTime = d.int64()
	}
	n := int(d.uvarint()) - 1
	if n < 0 || n > len(d.b)/20 { // a batch is at least 20 bytes
		if d.err == nil {
			d.err = fmt.Errorf("bad batch count %d", n)
		}
		n = 0
	}
	r.batches = make([]StateBatch, 0, n)
	for range n {
		sb := StateBatch{First: d.int64(), Last: d.int64(), State: RecordState(d.int8()), DeliveryCount: d.int16()}
		d.skipTags()
		r.batches = append(r.batches, sb)
	}
	d.skipTags()
	if d.err != nil {
		return r, false, fmt.Errorf("%w: value: %v", errCorruptRecord, d.err)
	}
	return r, true, nil
}

// decoder reads big-endian fields, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = errors.New("short record")
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) int8() int8 {
	if b := d.bytes(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (d *decoder) int16() int16 {
	if b := d.bytes(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (d *decoder) int32() int32 {
	if b := d.bytes(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (d *decoder) int64() int64 {
	if b := d.bytes(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// skipTags skips a tagged-field section.
func (d *decoder) skipTags() {
	for range d.uvarint() {
		d.uvarint()
		d.bytes(int(d.uvarint()))
		if d.err != nil {
			return
		}
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
