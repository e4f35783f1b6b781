package broker

import (
	"sync"

	"github.com/sluicedev/sluice/logstore"
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

// idempotent reports whether a batch carries a producer id and sequence.
func idempotent(h logstore.BatchHeader) bool { return h.ProducerID >= 0 && h.BaseSequence >= 0 }

// duplicateLocked returns the offsets a single idempotent batch was already
// written at, if the producer's recent batches hold it. Lock should be held.
func (s *producerState) duplicateLocked(h logstore.BatchHeader) (producerBatch, bool) {
	pb := s.producers[h.ProducerID]
	if pb == nil || pb.epoch != h.ProducerEpoch {
		return producerBatch{}, false
	}
	lastSeq := h.BaseSequence + h.LastOffsetDelta
	for _, b := range pb.batches {
		if b.firstSeq == h.BaseSequence && b.lastSeq == lastSeq {
			return b, true
		}
	}
	return producerBatch{}, false
}

// recordLocked remembers batches just appended; firstOffset is the offset
// the first of them got. Lock should be held.
func (s *producerState) recordLocked(headers []logstore.BatchHeader, firstOffset int64) {
	offset := firstOffset
	for _, h := range headers {
		last := offset + int64(h.LastOffsetDelta)
		if idempotent(h) {
			if s.producers == nil {
				s.producers = make(map[int64]*producerBatches)
			}
			pb := s.producers[h.ProducerID]
			if pb == nil || h.ProducerEpoch > pb.epoch {
				pb = &producerBatches{epoch: h.ProducerEpoch}
				s.producers[h.ProducerID] = pb
			}
			if h.ProducerEpoch == pb.epoch {
				pb.batches = append(pb.batches, producerBatch{
					firstSeq: h.BaseSequence, lastSeq: h.BaseSequence + h.LastOffsetDelta,
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
func (s *producerState) recordFollowerLocked(headers []logstore.BatchHeader) {
	for _, h := range headers {
		s.recordLocked([]logstore.BatchHeader{h}, h.BaseOffset)
	}
}

// forget drops everything: the log was truncated below batches it knew.
func (s *producerState) forget() {
	s.mu.Lock()
	s.producers = nil
	s.mu.Unlock()
}
