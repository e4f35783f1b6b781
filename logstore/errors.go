package logstore

import "errors"

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
