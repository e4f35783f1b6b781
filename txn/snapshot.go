package txn

// Producer state snapshots, in Kafka's .snapshot file format (version 1,
// the ProducerSnapshot schema), so Kafka's tools read sluice's files. The
// layout is frozen: it is Kafka's. Big-endian:
//
//	+---------------+--------------+------------------+
//	| version int16 | crc uint32   | count int32      |  then count entries:
//	| (1)           | CRC-32C of   |                  |
//	|               | bytes 6..end |                  |
//	+---------------+--------------+------------------+
//	+-----------------+-------------+--------------------+-----------------+
//	| producerId      | epoch int16 | lastSequence int32 | lastOffset      |
//	| int64           |             |                    | int64           |
//	+-----------------+-------------+--------------------+-----------------+
//	| offsetDelta     | timestamp   | coordinatorEpoch   | currentTxnFirst |
//	| int32           | int64       | int32              | Offset int64    |
//	+-----------------+-------------+--------------------+-----------------+
//
// Like Kafka, a snapshot keeps only each producer's last batch
// (offsetDelta = its last offset minus its first offset; lastSequence and
// lastOffset are -1 for a producer that has written only markers), so
// after a restore only that batch is recognised as a duplicate until the
// batches after the snapshot are replayed from the log.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrCorruptSnapshot is returned by Restore for bytes that are not a
// version 1 snapshot with a matching CRC.
var ErrCorruptSnapshot = errors.New("txn: corrupt producer snapshot")

const (
	snapshotVersion    = 1
	snapshotHeaderSize = 2 + 4 + 4
	snapshotEntrySize  = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8
)

// crc32cTable is CRC-32C (Castagnoli), which snapshots and batches use.
var crc32cTable = crc32.MakeTable(crc32.Castagnoli)

// Snapshot encodes the table. Completed transactions waiting for their
// marker to be replicated are not part of it (Kafka's are not either): a
// snapshot is taken at an offset the log has, and a restore replays from
// there.
func (s *ProducerState) Snapshot() []byte {
	entries := s.Producers()
	buf := make([]byte, snapshotHeaderSize, snapshotHeaderSize+len(entries)*snapshotEntrySize)
	be := binary.BigEndian
	be.PutUint16(buf[0:], snapshotVersion)
	be.PutUint32(buf[6:], uint32(len(entries)))
	for _, e := range entries {
		lastSeq, lastOffset, delta := int32(-1), int64(-1), int32(0)
		if n := len(e.Batches); n > 0 {
			m := e.Batches[n-1]
			lastSeq, lastOffset, delta = m.LastSeq, m.LastOffset, int32(m.LastOffset-m.FirstOffset)
		}
		buf = be.AppendUint64(buf, uint64(e.ProducerID))
		buf = be.AppendUint16(buf, uint16(e.Epoch))
		buf = be.AppendUint32(buf, uint32(lastSeq))
		buf = be.AppendUint64(buf, uint64(lastOffset))
		buf = be.AppendUint32(buf, uint32(delta))
		buf = be.AppendUint64(buf, uint64(e.LastTimestamp))
		buf = be.AppendUint32(buf, uint32(e.CoordinatorEpoch))
		buf = be.AppendUint64(buf, uint64(e.TxnFirstOffset))
	}
	be.PutUint32(buf[2:], crc32.Checksum(buf[6:], crc32cTable))
	return buf
}

// RestoreProducerState decodes a snapshot into a new table, leaving out
// producers already expired at nowMs (expirationMs <= 0 keeps all).
func RestoreProducerState(data []byte, nowMs, expirationMs int64) (*ProducerState, error) {
	be := binary.BigEndian
	if len(data) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorruptSnapshot, len(data))
	}
	if v := int16(be.Uint16(data)); v != snapshotVersion {
		return nil, fmt.Errorf("%w: version %d", ErrCorruptSnapshot, v)
	}
	if got, want := crc32.Checksum(data[6:], crc32cTable), be.Uint32(data[2:]); got != want {
		return nil, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptSnapshot, want, got)
	}
	n := int32(be.Uint32(data[6:]))
	rest := data[snapshotHeaderSize:]
	if n < 0 || int64(len(rest)) != int64(n)*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorruptSnapshot, n, len(rest))
	}
	s := NewProducerState()
	for i := int32(0); i < n; i++ {
		r := rest[int(i)*snapshotEntrySize:]
		e := &ProducerEntry{
			ProducerID:       int64(be.Uint64(r[0:])),
			Epoch:            int16(be.Uint16(r[8:])),
			LastTimestamp:    int64(be.Uint64(r[26:])),
			CoordinatorEpoch: int32(be.Uint32(r[34:])),
			TxnFirstOffset:   int64(be.Uint64(r[38:])),
		}
		lastSeq := int32(be.Uint32(r[10:]))
		lastOffset := int64(be.Uint64(r[14:]))
		delta := int32(be.Uint32(r[22:]))
		if lastOffset >= 0 {
			e.Batches = []BatchMeta{{FirstSeq: subSequence(lastSeq, delta), LastSeq: lastSeq,
				FirstOffset: lastOffset - int64(delta), LastOffset: lastOffset, Timestamp: e.LastTimestamp}}
		}
		if expirationMs > 0 && expired(e, nowMs, expirationMs) {
			continue
		}
		s.put(e, e.TxnFirstOffset)
	}
	return s, nil
}
