package txn

// Transaction markers: the control batches that end a transaction on a
// partition (Kafka's EndTransactionMarker). Frozen format, Kafka's:
//
//	batch   magic 2, attributes transactional|control (0x30), the
//	        producer's id and epoch, baseSequence -1, one record,
//	        never compressed
//	record  key   = int16 version (0) | int16 type (0 ABORT, 1 COMMIT)
//	        value = int16 version (0) | int32 coordinatorEpoch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// EndTxnMarker is the content of a COMMIT or ABORT control record.
type EndTxnMarker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// Control record types (frozen, Kafka's ControlRecordType).
const (
	controlTypeAbort  = 0
	controlTypeCommit = 1
)

// Record batch v2 positions used here (see logstore/doc.go for the drawing).
const (
	markerHeaderSize     = 61
	markerAttrCompress   = 0x07
	markerAttrTxnControl = 0x30
	markerPosAttributes  = 21
	markerPosRecordCount = 57
	markerPosCRC         = 17
)

// ErrNotMarker is returned by DecodeMarkerBatch for a control batch whose
// first record is not a COMMIT or ABORT marker.
var ErrNotMarker = errors.New("txn: control batch is not a transaction marker")

// EncodeMarkerBatch builds the control batch of a marker for producerID at
// producerEpoch, with timestamp in milliseconds. The base offset and
// partition leader epoch are left 0 for the leader to stamp.
func EncodeMarkerBatch(producerID int64, producerEpoch int16, m EndTxnMarker, timestamp int64) []byte {
	be := binary.BigEndian
	key := []byte{0, 0, 0, controlTypeAbort}
	if m.Commit {
		key[3] = controlTypeCommit
	}
	value := be.AppendUint32([]byte{0, 0}, uint32(m.CoordinatorEpoch))
	var rec []byte
	rec = append(rec, 0)              // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, int64(len(key)))
	rec = append(rec, key...)
	rec = binary.AppendVarint(rec, int64(len(value)))
	rec = append(rec, value...)
	rec = binary.AppendVarint(rec, 0) // headers
	records := binary.AppendVarint(nil, int64(len(rec)))
	records = append(records, rec...)

	b := make([]byte, markerHeaderSize, markerHeaderSize+len(records))
	be.PutUint64(b[0:], 0)                                        // base offset
	be.PutUint32(b[8:], uint32(markerHeaderSize-12+len(records))) // length
	be.PutUint32(b[12:], 0)                                       // partition leader epoch
	b[16] = 2                                                     // magic
	be.PutUint16(b[markerPosAttributes:], markerAttrTxnControl)   // attributes
	be.PutUint32(b[23:], 0)                                       // last offset delta
	be.PutUint64(b[27:], uint64(timestamp))                       // base timestamp
	be.PutUint64(b[35:], uint64(timestamp))                       // max timestamp
	be.PutUint64(b[43:], uint64(producerID))                      // producer id
	be.PutUint16(b[51:], uint16(producerEpoch))                   // producer epoch
	be.PutUint32(b[53:], 0xffffffff)                              // base sequence -1
	be.PutUint32(b[markerPosRecordCount:], 1)                     // record count
	b = append(b, records...)
	be.PutUint32(b[markerPosCRC:], crc32.Checksum(b[markerPosAttributes:], crc32cTable))
	return b
}

// DecodeMarkerBatch reads the marker of one whole control batch. It
// returns nil, nil for a batch without records (compaction emptied it).
func DecodeMarkerBatch(batch []byte) (*EndTxnMarker, error) {
	be := binary.BigEndian
	if len(batch) < markerHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrNotMarker, len(batch))
	}
	if be.Uint16(batch[markerPosAttributes:])&markerAttrCompress != 0 {
		return nil, fmt.Errorf("%w: compressed control batch", ErrNotMarker)
	}
	if be.Uint32(batch[markerPosRecordCount:]) == 0 {
		return nil, nil
	}
	r := batch[markerHeaderSize:]
	next := func() (int64, bool) {
		v, n := binary.Varint(r)
		if n <= 0 {
			return 0, false
		}
		r = r[n:]
		return v, true
	}
	length, ok := next()
	if !ok || length < 1 || int64(len(r)) < length {
		return nil, fmt.Errorf("%w: bad record length", ErrNotMarker)
	}
	r = r[1:length] // skip attributes; stay inside the record
	if _, ok := next(); !ok {
		return nil, fmt.Errorf("%w: bad timestamp delta", ErrNotMarker)
	}
	if _, ok := next(); !ok {
		return nil, fmt.Errorf("%w: bad offset delta", ErrNotMarker)
	}
	keyLen, ok := next()
	if !ok || keyLen < 4 || int64(len(r)) < keyLen {
		return nil, fmt.Errorf("%w: bad key", ErrNotMarker)
	}
	key := r[:keyLen]
	r = r[keyLen:]
	var m EndTxnMarker
	switch be.Uint16(key[2:]) {
	case controlTypeAbort:
	case controlTypeCommit:
		m.Commit = true
	default:
		return nil, fmt.Errorf("%w: control type %d", ErrNotMarker, be.Uint16(key[2:]))
	}
	valueLen, ok := next()
	if !ok || valueLen < 6 || int64(len(r)) < valueLen {
		return nil, fmt.Errorf("%w: bad value", ErrNotMarker)
	}
	m.CoordinatorEpoch = int32(be.Uint32(r[2:]))
	return &m, nil
}
