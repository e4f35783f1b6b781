package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// This file is the leader's record validator, sluice's version of Kafka's
// LogValidator for magic v2: every record of every batch a leader appends
// is walked (and decompressed, with a cap; decompress.go) before anything
// is written, so a batch is either proven well-formed and stored as sent,
// or refused with the error Kafka gives:
//
//   - the declared record count equals the records present, and no bytes
//     follow the last one; every length, varint, key, value and header
//     lies inside its record (INVALID_RECORD, Kafka's DefaultRecord and
//     DefaultRecordBatch checks);
//   - offset deltas are 0, 1, 2, … (INVALID_RECORD). Kafka rewrites a
//     compressed batch whose inner offsets are off and does not look at
//     them in an uncompressed one; sluice stores batches as the producer
//     sent them, so it refuses what it cannot store correctly;
//   - on a topic whose cleanup.policy includes compact, every record has a
//     key (INVALID_RECORD);
//   - on a CreateTime topic, record timestamps lie within
//     message.timestamp.before.max.ms / after.max.ms of the leader's clock
//     (INVALID_TIMESTAMP); a batch that claims the LogAppendTime type is
//     INVALID_TIMESTAMP (Kafka: "Producer should not set timestamp type to
//     LogAppendTime"; Kafka lets it through on a CreateTime topic when the
//     timestamp is in range and then flips the type, sluice refuses it);
//   - a non-control batch with a producer id has a sequence (INVALID_RECORD);
//   - the codec is one of Kafka's and its data decodes (CORRUPT_MESSAGE);
//     the batches of one append decompress to at most decompressedLimit
//     bytes, and those of all the appends of one Produce request to at
//     most its RequestDecompressBudget (MESSAGE_TOO_LARGE).
//
// The checks of what one record holds (offset delta, key, timestamp, and
// the LogAppendTime a producer may not set) do not stop at the first bad
// record: every record of the batch is checked and the append is refused
// with a *RecordErrors naming each one (KIP-467's record_errors, as Kafka's
// LogValidator.validateRecord collects them; one error per record, the
// first that applies). The other checks are about the batch and refuse it
// at once, without record errors, as Kafka's validateBatch and its record
// iterator do.
//
// Control batches are walked like any other: the broker refuses them from
// clients before the log sees them (INVALID_RECORD), and lets the
// transaction coordinator's markers through.
//
// The batch header's max timestamp is corrected to the records' largest,
// as Kafka does, so the time index never trusts a producer's claim.
//
// The walk of an uncompressed batch is a varint walk over bytes already in
// memory; see BenchmarkAppendValidated for what it costs.

// validation holds what the checks of one append need.
type validation struct {
	tp           TopicPartition
	compact      bool
	createTime   bool
	oldestMs     int64 // now - message.timestamp.before.max.ms, clamped
	newestMs     int64 // now + message.timestamp.after.max.ms, clamped
	budget       int64 // decompressed bytes left for this append
	limit        int64 // the cap, for messages
	batchIndex   int
	batch        BatchHeader
	maxTimestamp int64
	recordErrs   []RecordError // of the current batch
	badTimestamp bool          // a timestamp is among recordErrs' causes
}

// validateRecords walks every record of the batches in buf (already
// checked by splitBatches) and records each batch's true max timestamp in
// its span.
func validateRecords(buf []byte, spans []batchSpan, cfg Config, tp TopicPartition, now time.Time) error {
	return validateRecordsWithin(buf, spans, cfg, tp, now, nil)
}

// validateRecordsWithin is validateRecords for one append of a Produce
// request: a non-nil request is the request's budget, charged with what
// the compressed batches decompress to.
func validateRecordsWithin(buf []byte, spans []batchSpan, cfg Config, tp TopicPartition, now time.Time, request *RequestDecompressBudget) error {
	limit := decompressedLimit(cfg)
	v := validation{
		tp:         tp,
		compact:    cfg.Compact,
		createTime: !cfg.LogAppendTime,
		oldestMs:   satAdd(now.UnixMilli(), -cfg.TimestampBeforeMaxMs),
		newestMs:   satAdd(now.UnixMilli(), cfg.TimestampAfterMaxMs),
		budget:     limit,
		limit:      limit,
	}
	for i := range spans {
		sp := &spans[i]
		h := sp.header
		b := buf[sp.pos : sp.pos+int(h.size())]
		if err := v.checkBatch(i, h); err != nil {
			return err
		}
		v.batchIndex, v.batch, v.maxTimestamp = i, h, -1
		v.recordErrs, v.badTimestamp = v.recordErrs[:0], false
		allowed, byRequest := v.budget, false
		if request != nil && h.compression() != 0 {
			if left := request.left(v.limit); left < allowed {
				allowed, byRequest = max(left, 0), true
			}
		}
		used, err := walkRecords(b, h, allowed, v.record)
		if h.compression() != 0 {
			v.budget -= used
			if request != nil {
				request.used += used // spent, whether or not the batch is refused
			}
		}
		if errors.Is(err, ErrMessageTooLarge) && byRequest {
			return fmt.Errorf("%w: the batches of one Produce request decompress to more than %d bytes; %s is refused", ErrMessageTooLarge, max(request.limit, v.limit), tp)
		}
		if errors.Is(err, ErrMessageTooLarge) {
			return fmt.Errorf("%w: the batches of one append to %s decompress to more than %d bytes", ErrMessageTooLarge, tp, v.limit)
		}
		if err != nil {
			return fmt.Errorf("batch %d of %s: %w", i, tp, err)
		}
		if len(v.recordErrs) > 0 {
			sentinel := ErrInvalidRecord
			if v.badTimestamp {
				sentinel = ErrInvalidTimestamp
			}
			return &RecordErrors{Sentinel: sentinel, Batch: i, TP: tp, Records: slices.Clone(v.recordErrs)}
		}
		if h.logAppendTime() {
			// A batch without records: nothing to name.
			return fmt.Errorf("%w: batch %d of %s: Producer should not set timestamp type to LogAppendTime", ErrInvalidTimestamp, i, tp)
		}
		sp.maxTimestamp = v.maxTimestamp
	}
	return nil
}

// checkBatch is what the header alone tells beyond splitBatches.
func (v *validation) checkBatch(i int, h BatchHeader) error {
	if c := h.compression(); c > 4 {
		return fmt.Errorf("%w: batch %d of %s: unknown compression codec %d", ErrCorruptMessage, i, v.tp, c)
	}
	if h.Attributes&attrControl == 0 && h.ProducerID >= 0 && h.BaseSequence < 0 {
		return fmt.Errorf("%w: Invalid sequence number %d in record batch with producerId %d in topic partition %s", ErrInvalidRecord, h.BaseSequence, h.ProducerID, v.tp)
	}
	return nil
}

// record checks one record of the current batch. What is wrong with it is
// added to recordErrs, not returned: the walk goes on to the next record.
func (v *validation) record(r recordInfo) error {
	fail := func(timestamp bool, format string, args ...any) error {
		v.recordErrs = append(v.recordErrs, RecordError{Index: r.index, Message: fmt.Sprintf(format, args...)})
		v.badTimestamp = v.badTimestamp || timestamp
		return nil
	}
	if r.offsetDelta != r.index {
		return fail(false, "Record %d has offset delta %d in topic partition %s; a producer's records carry offset deltas 0, 1, 2, …", r.index, r.offsetDelta, v.tp)
	}
	if v.compact && !r.hasKey {
		return fail(false, "Compacted topic cannot accept message without key in topic partition %s", v.tp)
	}
	ts := v.batch.BaseTimestamp + r.timestampDelta
	offset := v.batch.BaseOffset + int64(r.offsetDelta)
	switch {
	case v.createTime && ts != -1 && (ts < v.oldestMs || ts > v.newestMs):
		return fail(true, "Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
			ts, offset, v.oldestMs, v.newestMs)
	case v.batch.logAppendTime():
		// Kafka lets an in-range timestamp through on a CreateTime
		// topic and flips the type; sluice stores batches as sent and
		// refuses every record of such a batch.
		return fail(true, "Invalid timestamp type in message with offset %d. Producer should not set timestamp type to LogAppendTime.", offset)
	}
	v.maxTimestamp = max(v.maxTimestamp, ts)
	return nil
}

// satAdd is a + b clamped to the int64 range, so that the window of
// accepted timestamps never wraps (b is never MinInt64 here: the configs
// are at least 0).
func satAdd(a, b int64) int64 {
	s := a + b
	if b > 0 && s < a {
		return math.MaxInt64
	}
	if b < 0 && s > a {
		return math.MinInt64
	}
	return s
}

// correctMaxTimestamp sets the header's max timestamp of batch b to the
// records' largest when they differ, and recomputes the CRC.
func correctMaxTimestamp(b []byte, maxTs int64) {
	if int64(binary.BigEndian.Uint64(b[posMaxTimestamp:])) == maxTs {
		return
	}
	binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(maxTs))
	binary.BigEndian.PutUint32(b[posCRC:], batchCRC(b))
}
