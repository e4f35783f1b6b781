package logstore

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Callers match them with errors.Is; the broker maps each to
// the Kafka error code named in its comment at the handler boundary. Errors
// returned by this package wrap one of these with %w and add context.
var (
	// ErrOffsetOutOfRange: OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("logstore: offset out of range")
	// ErrCorruptMessage: CORRUPT_MESSAGE (CRC mismatch, bad length, truncated batch).
	ErrCorruptMessage = errors.New("logstore: corrupt message")
	// ErrInvalidRecord: INVALID_RECORD (magic != 2, inconsistent counts).
	ErrInvalidRecord = errors.New("logstore: invalid record")
	// ErrInvalidTimestamp: INVALID_TIMESTAMP (a record's timestamp outside
	// message.timestamp.before.max.ms / after.max.ms, or a producer that
	// set the LogAppendTime type itself).
	ErrInvalidTimestamp = errors.New("logstore: invalid timestamp")
	// ErrMessageTooLarge: MESSAGE_TOO_LARGE (a batch is bigger than max.message.bytes).
	ErrMessageTooLarge = errors.New("logstore: message too large")
	// ErrRecordListTooLarge: RECORD_LIST_TOO_LARGE (an append is bigger than segment.bytes).
	ErrRecordListTooLarge = errors.New("logstore: record list too large")
	// ErrLogClosed is returned by every method of a closed Log or Dir.
	ErrLogClosed = errors.New("logstore: log closed")
	// ErrKafkaStorage: KAFKA_STORAGE_ERROR. Once a write fails the Log
	// remembers the error and returns it from every later write, because the
	// on-disk state is unknown until the log is reopened and recovered.
	ErrKafkaStorage = errors.New("logstore: storage error")
	// ErrLogOffline: KAFKA_STORAGE_ERROR. A partition log that failed to
	// open (an I/O error, not a missing directory) is offline until the
	// process restarts: Dir.Open returns this error for it without
	// touching its files again, and Dir.Remove refuses to delete it, so
	// data that could not be read is never deleted or recreated empty.
	ErrLogOffline = errors.New("logstore: log offline")
	// ErrDirLocked is returned by OpenDir when another process (or another
	// Dir in this process) holds the directory's .lock file.
	ErrDirLocked = errors.New("logstore: log directory is locked")
)

// RecordError is one record's part in a batch refused for what its records
// hold: its index in the batch and why (KIP-467's record_errors entry).
type RecordError struct {
	Index   int32
	Message string
}

// RecordErrors is the error of an append refused because records of one of
// its batches failed validation: a record without a key on a compacted
// topic, a timestamp out of range, a producer's LogAppendTime, offset
// deltas out of sequence. The whole append is refused, as Kafka refuses the
// whole batch; Records names each record at fault, so that a client fails
// those and retries the rest (KIP-467). It unwraps to ErrInvalidTimestamp
// when any record's timestamp is at fault and to ErrInvalidRecord
// otherwise, the code Kafka's LogValidator.processRecordErrors picks.
type RecordErrors struct {
	Sentinel error // ErrInvalidRecord or ErrInvalidTimestamp
	Batch    int   // the batch's index in the append
	TP       TopicPartition
	Records  []RecordError // in record order
}

func (e *RecordErrors) Unwrap() error { return e.Sentinel }

func (e *RecordErrors) Error() string {
	msgs := make([]string, 0, 3)
	for _, r := range e.Records[:min(len(e.Records), 3)] {
		msgs = append(msgs, fmt.Sprintf("record %d: %s", r.Index, r.Message))
	}
	return fmt.Sprintf("%v: batch %d of %s: %d records refused: %s", e.Sentinel, e.Batch, e.TP, len(e.Records), strings.Join(msgs, "; "))
}

// Message is the partition's error_message in Kafka's words: for a
// timestamp "One or more records have been rejected due to invalid
// timestamp", otherwise the count of record errors and the first three.
func (e *RecordErrors) Message() string {
	if errors.Is(e.Sentinel, ErrInvalidTimestamp) {
		return "One or more records have been rejected due to invalid timestamp"
	}
	first := make([]string, 0, 3)
	for _, r := range e.Records[:min(len(e.Records), 3)] {
		first = append(first, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", r.Index, r.Message))
	}
	return fmt.Sprintf("One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		len(e.Records), strings.Join(first, ", "))
}
