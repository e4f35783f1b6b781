package broker

import (
	"encoding/binary"
	"sync"
)

// producerState remembers, per producer id, the last batches an idempotent
// producer wrote to one partition, so that a retried batch — one the log
// already holds because the acknowledgement was lost, typically across a
// leader failover — is answered with its original offsets instead of being
// appended twice. Leaders and followers both record every batch they
// append, so a follower that becomes leader already knows the producers.
//
// This is the duplicate check only: sequence gaps (OUT_OF_ORDER_SEQUENCE_NUMBER),
// stale epochs and rebuilding the state from the log after a restart come
// with the transaction work (issue 6). A producer the state does not know is
// accepted as it is.
type producerState struct {
	mu        sync.Mutex
	producers map[int64]*producerBatches
}

// producerBatches is one producer's most recent batches, oldest first.
type producerBatches struct {
	epoch   int16
	batches []producerBatch
}

type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
}

// maxProducerBatches is how many batches per producer Kafka keeps for
// duplicate detection; a producer has at most five requests in flight.
const maxProducerBatches = 5

// batchMeta is what the duplicate check needs from one batch header.
type batchMeta struct {
	baseOffset      int64
	lastOffsetDelta int32
	producerID      int64
	producerEpoch   int16
	baseSequence    int32
}

// parseBatchMetas reads the headers of the record batches in records. It
// returns nil when records is not a clean sequence of v2 batches; the log's
// own validation reports that.
func parseBatchMetas(records []byte) []batchMeta {
	var out []batchMeta
	for len(records) > 0 {
		if len(records) < 61 {
			return nil
		}
		length := int(int32(binary.BigEndian.Uint32(records[8:12])))
		size := 12 + length
		if length < 49 || size > len(records) || records[16] != 2 {
			return nil
		}
		out = append(out, batchMeta{
			baseOffset:      int64(binary.BigEndian.Uint64(records[0:8])),
			lastOffsetDelta: int32(binary.BigEndian.Uint32(records[23:27])),
			producerID:      int64(binary.BigEndian.Uint64(records[43:51])),
			producerEpoch:   int16(binary.BigEndian.Uint16(records[51:53])),
			baseSequence:    int32(binary.BigEndian.Uint32(records[53:57])),
		})
		records = records[size:]
	}
	return out
}

// idempotent reports whether a batch carries a producer id and sequence.
func (m batchMeta) idempotent() bool { return m.producerID >= 0 && m.baseSequence >= 0 }

// duplicateLocked returns the offsets a single idempotent batch was already
// written at, if the producer's recent batches hold it. Lock should be held.
func (s *producerState) duplicateLocked(m batchMeta) (producerBatch, bool) {
	pb := s.producers[m.producerID]
	if pb == nil || pb.epoch != m.producerEpoch {
		return producerBatch{}, false
	}
	lastSeq := m.baseSequence + m.lastOffsetDelta
	for _, b := range pb.batches {
		if b.firstSeq == m.baseSequence && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return producerBatch{}, false
}

// recordLocked remembers batches just appended; firstOffset is the offset
// the first of them got. Lock should be held.
func (s *producerState) recordLocked(metas []batchMeta, firstOffset int64) {
	offset := firstOffset
	for _, m := range metas {
		last := offset + int64(m.lastOffsetDelta)
		if m.idempotent() {
			if s.producers == nil {
				s.producers = make(map[int64]*producerBatches)
			}
			pb := s.producers[m.producerID]
			if pb == nil || m.producerEpoch > pb.epoch {
				pb = &producerBatches{epoch: m.producerEpoch}
				s.producers[m.producerID] = pb
			}
			if m.producerEpoch == pb.epoch {
				pb.batches = append(pb.batches, producerBatch{
					firstSeq: m.baseSequence, lastSeq: m.baseSequence + m.lastOffsetDelta,
					firstOffset: offset, lastOffset: last,
				})
				if len(pb.batches) > maxProducerBatches {
					pb.batches = pb.batches[len(pb.batches)-maxProducerBatches:]
				}
			}
		}
		offset = last + 1
	}
}

// recordFollowerLocked remembers batches a follower appended; they carry
// the offsets the leader gave them. Lock should be held.
func (s *producerState) recordFollowerLocked(metas []batchMeta) {
	for _, m := range metas {
		s.recordLocked([]batchMeta{m}, m.baseOffset)
	}
}

// forget drops everything: the log was truncated below batches it knew.
func (s *producerState) forget() {
	s.mu.Lock()
	s.producers = nil
	s.mu.Unlock()
}
