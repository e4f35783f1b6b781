// Package skiplog reports the records a coordinator skips while loading a
// partition of its internal topic (__consumer_offsets, __transaction_state):
// a record it cannot parse is logged and skipped, never a reason to give
// up the partition, and a partition full of them cannot flood the log,
// because only the first few are logged one by one and the rest are
// counted in one line when the load ends.
package skiplog

import "log/slog"

// maxLogged bounds the records of one load logged one by one.
const maxLogged = 10

// Records counts one load's skipped records. Set the exported fields,
// call Unreadable and Unknown as records are met, and Done at the end.
type Records struct {
	Logger    *slog.Logger
	Topic     string // the internal topic, for the log lines
	Partition int32
	// UnknownKind names the records Unknown counts, e.g. "records of
	// unknown types", in the summary line.
	UnknownKind string

	unreadable int
	unknown    int
}

// Unreadable logs (among the first few) and counts a record at offset
// that could not be parsed.
func (s *Records) Unreadable(offset int64, err error) {
	s.unreadable++
	if s.unreadable <= maxLogged {
		s.Logger.Error("skipping unreadable record while loading "+s.Topic,
			"partition", s.Partition, "offset", offset, "err", err)
	}
}

// Unknown counts a record this coordinator does not know how to read
// (a newer Kafka's key type or version), which is ignored as Kafka does.
func (s *Records) Unknown() { s.unknown++ }

// Done logs what was not logged one by one.
func (s *Records) Done() {
	if s.unreadable > maxLogged {
		s.Logger.Error("skipped unreadable records while loading "+s.Topic,
			"partition", s.Partition, "records", s.unreadable, "logged", maxLogged)
	}
	if s.unknown > 0 {
		s.Logger.Warn("ignored "+s.UnknownKind+" while loading "+s.Topic,
			"partition", s.Partition, "records", s.unknown)
	}
}
