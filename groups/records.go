package groups

// The coordinator's records in __consumer_offsets use Kafka's own formats, so
// a partition written by sluice reads the same as one written by Kafka (and
// Kafka's tools that dump the topic understand it):
//
//	key   int16 version | fields                      value
//	  0,1 OffsetCommitKey (group, topic, partition)   OffsetCommitValue v3 (offset, leader epoch, metadata, commit timestamp)
//	  2   GroupMetadataKey (group)                    GroupMetadataValue v3 (protocol type, generation, protocol, leader, members)
//	  3–8 KIP-848 consumer group records              see consumer_records.go
//	 9–15 KIP-932 share group records                 see share_records.go
//	17–23 KIP-1071 streams group records              see streams_records.go
//
// A nil value is a tombstone: the offset or the group is deleted, and
// compaction eventually drops every older record of the same key. The
// coordinator writes records in uncompressed magic v2 batches with no
// producer id, one batch per operation so an operation is applied whole or
// not at all. A transactional offset commit (TxnOffsetCommit) is the one
// exception: its batch carries the producer's id and epoch, the
// transactional attribute and base sequence 0, as Kafka's coordinator
// writes it, and the transaction's COMMIT or ABORT control batch, written
// to the same partition by WriteTxnMarkers, decides its fate.
//
// A record that does not decode, or whose value is of a version newer than
// Kafka's newest, is skipped by the load with an error log (load.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Record key versions, frozen by Kafka's format.
const (
	offsetCommitKeyVersion  = 1
	groupMetadataKeyVersion = 2
	// offsetCommitValueVersion 3 is the newest non-flexible value with the
	// leader epoch; groupMetadataValueVersion 3 carries instance ids.
	offsetCommitValueVersion  = 3
	groupMetadataValueVersion = 3
	// The newest value versions Kafka defines (v4 of both is flexible);
	// a value of a later version is not guessed at.
	maxOffsetCommitValueVersion  = 4
	maxGroupMetadataValueVersion = 4
)

// ErrCorruptRecord is returned when a record of __consumer_offsets cannot be
// decoded.
var ErrCorruptRecord = errors.New("groups: corrupt record in __consumer_offsets")

// batch header layout (magic v2): the CRC covers attributes to the end.
const (
	batchHeaderSize = 61
	posLength       = 8
	posMagic        = 16
	posCRC          = 17
	posAttributes   = 21
	posProducerID   = 43
	posRecordCount  = 57
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// kv is one record to write: a nil value is a tombstone.
type kv struct {
	key, value []byte
}

// batchProducer is the producer a batch is written for: noProducer for
// the coordinator's own records, a transactional producer's id and epoch
// for TxnOffsetCommit.
type batchProducer struct {
	id    int64
	epoch int16
}

var noProducer = batchProducer{id: -1, epoch: -1}

// Batch attribute bits (magic v2).
const (
	attrCompression   = 0x07
	attrTransactional = 0x10
	attrControl       = 0x20
)

// buildBatch encodes records as one uncompressed magic v2 batch with base
// offset 0 and no producer; the log assigns the real offsets and the
// leader epoch.
func buildBatch(records []kv, timestamp int64) []byte {
	return buildProducerBatch(records, timestamp, noProducer)
}

// buildProducerBatch is buildBatch for producer: with a producer id the
// batch is transactional, at base sequence 0 (the partition leader checks
// the epoch of a coordinator's write, not its sequence).
func buildProducerBatch(records []kv, timestamp int64, producer batchProducer) []byte {
	var raw []byte
	for i, r := range records {
		raw = appendRecord(raw, kmsg.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value})
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(len(records) - 1),
		FirstTimestamp:       timestamp,
		MaxTimestamp:         timestamp,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(records)),
		Records:              raw,
	}
	if producer.id >= 0 {
		b.Attributes = attrTransactional
		b.ProducerID, b.ProducerEpoch, b.FirstSequence = producer.id, producer.epoch, 0
	}
	b.Length = int32(batchHeaderSize - 12 + len(raw)) // the bytes after the length field
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], castagnoli))
	return out
}

// appendRecord appends r with its varint length prefix.
func appendRecord(dst []byte, r kmsg.Record) []byte {
	r.Length = 0
	body := r.AppendTo(nil)[1:] // a zero length is one varint byte
	dst = binary.AppendVarint(dst, int64(len(body)))
	return append(dst, body...)
}

// parsedRecord is one record read back from the log, or one transaction
// marker (control set; commit says which marker).
type parsedRecord struct {
	offset     int64
	key, value []byte
	// producerID is the producer of a transactional batch's records
	// and of a marker, -1 for the coordinator's own records.
	producerID int64
	control    bool
	commit     bool
	// err is set, and nothing else but offset, when the record could
	// not be read out of its batch: the rest of that batch is skipped.
	err error
}

// parseBatches walks whole batches, calling fn for each record of each
// uncompressed data batch and once for each transaction marker. It
// returns the offset after the last batch. Other control batches, and
// compressed batches (Log.Read hands them back decompressed; one that did
// not decompress is left so), are skipped rather than guessed at. A record whose framing cannot be read is handed
// to fn with err set and ends its batch (the records after it cannot be
// found); the next batch is read as usual, since the batch header says
// where it starts. A batch header that cannot be read is an error: with
// it, no later batch can be found.
func parseBatches(data []byte, fn func(parsedRecord) error) (next int64, err error) {
	next = -1
	for len(data) > 0 {
		if len(data) < batchHeaderSize {
			break // a partial batch at the end of a read
		}
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
		lastDelta := int32(binary.BigEndian.Uint32(batch[23:]))
		next = base + int64(lastDelta) + 1
		attrs := int16(binary.BigEndian.Uint16(batch[posAttributes:]))
		if attrs&attrCompression != 0 {
			continue
		}
		producerID := int64(-1)
		if attrs&attrTransactional != 0 {
			producerID = int64(binary.BigEndian.Uint64(batch[posProducerID:]))
		}
		count := int(int32(binary.BigEndian.Uint32(batch[posRecordCount:])))
		recs := batch[batchHeaderSize:]
		if attrs&attrControl != 0 {
			if producerID < 0 || count < 1 {
				continue
			}
			commit, ok, err := parseMarker(recs, base)
			switch {
			case err != nil:
				err = fn(parsedRecord{offset: base, producerID: producerID, err: err})
			case ok:
				err = fn(parsedRecord{offset: base, producerID: producerID, control: true, commit: commit})
			}
			if err != nil {
				return next, err
			}
			continue
		}
		for i := 0; i < count; i++ {
			r, rest, err := readRecord(recs)
			if err != nil {
				err = fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorruptRecord, i, base, err)
				if err := fn(parsedRecord{offset: base + int64(i), producerID: producerID, err: err}); err != nil {
					return next, err
				}
				break
			}
			recs = rest
			if err := fn(parsedRecord{offset: base + int64(r.OffsetDelta), key: r.Key, value: r.Value, producerID: producerID}); err != nil {
				return next, err
			}
		}
	}
	return next, nil
}

// readRecord reads the record at the start of recs, checking its varint
// length against the bytes there, and returns the bytes after it.
func readRecord(recs []byte) (kmsg.Record, []byte, error) {
	var r kmsg.Record
	length, n := binary.Varint(recs)
	if n <= 0 || length < 0 || int64(len(recs)-n) < length {
		return r, nil, errors.New("bad record length")
	}
	if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
		return r, nil, err
	}
	return r, recs[n+int(length):], nil
}

// parseMarker reads the first record of a control batch: a key of int16
// version and int16 type, type 0 being ABORT and 1 COMMIT. ok is false for
// other control records.
func parseMarker(recs []byte, base int64) (commit, ok bool, err error) {
	r, _, err := readRecord(recs)
	if err != nil {
		return false, false, fmt.Errorf("%w: control record of the batch at offset %d: %v", ErrCorruptRecord, base, err)
	}
	if len(r.Key) < 4 {
		return false, false, nil
	}
	switch binary.BigEndian.Uint16(r.Key[2:]) {
	case 0:
		return false, true, nil
	case 1:
		return true, true, nil
	}
	return false, false, nil
}

func offsetKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetCommitKeyVersion, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetValue(o committedOffset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetCommitValueVersion
	v.Offset = o.offset
	v.LeaderEpoch = o.leaderEpoch
	v.Metadata = o.metadata
	v.CommitTimestamp = o.commitTimestamp
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupMetadataKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// decodedKey is a record key of any kind the coordinator reads: version
// says which (0–2 classic, 3–8 consumer group records of consumer_records.go).
type decodedKey struct {
	version   int16
	isGroup   bool
	group     string
	topic     string
	partition int32
	member    string // consumer group member records (5, 7, 8)
}

func decodeKey(b []byte) (decodedKey, error) {
	if len(b) < 2 {
		return decodedKey{}, fmt.Errorf("%w: key of %d bytes", ErrCorruptRecord, len(b))
	}
	switch version := int16(binary.BigEndian.Uint16(b)); version {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("%w: offset commit key: %v", ErrCorruptRecord, err)
		}
		return decodedKey{group: k.Group, topic: k.Topic, partition: k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return decodedKey{}, fmt.Errorf("%w: group metadata key: %v", ErrCorruptRecord, err)
		}
		return decodedKey{version: 2, isGroup: true, group: k.Group}, nil
	case consumerGroupMetadataKeyVersion, consumerGroupPartitionMetadataKeyVersion, consumerGroupTargetMetadataKeyVersion:
		r := &recordReader{b: b[2:]}
		k := decodedKey{version: version, group: r.keyString()}
		return k, r.done("consumer group key")
	case consumerGroupMemberMetadataKeyVersion, consumerGroupTargetMemberKeyVersion, consumerGroupCurrentAssignmentKeyVersion:
		r := &recordReader{b: b[2:]}
		k := decodedKey{version: version, group: r.keyString()}
		k.member = r.keyString()
		return k, r.done("consumer group member key")
	case shareGroupPartitionMetadataKeyVersion, shareGroupMemberMetadataKeyVersion, shareGroupMetadataKeyVersion,
		shareGroupTargetMetadataKeyVersion, shareGroupTargetMemberKeyVersion, shareGroupCurrentAssignmentKeyVersion,
		shareGroupStatePartitionMetadataKeyVersion:
		r := &recordReader{b: b[2:]}
		k := decodedKey{version: version, group: r.keyString()}
		if isShareMemberKeyVersion(version) {
			k.member = r.keyString()
		}
		return k, r.done("share group key")
	case streamsGroupMetadataKeyVersion, streamsGroupPartitionMetadataKeyVersion, streamsGroupMemberMetadataKeyVersion,
		streamsGroupTargetMetadataKeyVersion, streamsGroupTargetMemberKeyVersion, streamsGroupCurrentAssignmentKeyVersion,
		streamsGroupTopologyKeyVersion:
		r := &recordReader{b: b[2:]}
		k := decodedKey{version: version, group: r.keyString()}
		if isStreamsMemberKeyVersion(version) {
			k.member = r.keyString()
		}
		return k, r.done("streams group key")
	default:
		// Newer Kafka writes other record types here (regular
		// expressions); this coordinator does not know them.
		return decodedKey{}, errUnknownKey
	}
}

var errUnknownKey = errors.New("groups: unknown record key version")

func decodeOffsetValue(b []byte) (committedOffset, error) {
	if err := checkValueVersion(b, maxOffsetCommitValueVersion, "offset commit value"); err != nil {
		return committedOffset{}, err
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return committedOffset{}, fmt.Errorf("%w: offset commit value: %v", ErrCorruptRecord, err)
	}
	epoch := v.LeaderEpoch
	if v.Version < 3 {
		epoch = -1
	}
	return committedOffset{offset: v.Offset, leaderEpoch: epoch, metadata: v.Metadata, commitTimestamp: v.CommitTimestamp}, nil
}

func decodeGroupValue(b []byte) (*kmsg.GroupMetadataValue, error) {
	if err := checkValueVersion(b, maxGroupMetadataValueVersion, "group metadata value"); err != nil {
		return nil, err
	}
	v := new(kmsg.GroupMetadataValue)
	if err := v.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: group metadata value: %v", ErrCorruptRecord, err)
	}
	return v, nil
}

// checkValueVersion checks that a value starts with an int16 version from
// 0 to newest: kmsg would read any later version as its newest layout.
func checkValueVersion(b []byte, newest int16, what string) error {
	if len(b) < 2 {
		return fmt.Errorf("%w: %s of %d bytes", ErrCorruptRecord, what, len(b))
	}
	if v := int16(binary.BigEndian.Uint16(b)); v < 0 || v > newest {
		return fmt.Errorf("%w: %s of unknown version %d", ErrCorruptRecord, what, v)
	}
	return nil
}
