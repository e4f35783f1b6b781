package logstore

import (
	"errors"
	"fmt"
	"time"
)

// ErrUnexpectedAppendOffset is returned by AppendAsFollower when the first
// batch starts below the log end offset (Kafka's
// UnexpectedAppendOffsetException): the follower must truncate first.
var ErrUnexpectedAppendOffset = errors.New("logstore: unexpected append offset")

// AppendResult describes a successful append.
type AppendResult struct {
	FirstOffset    int64
	LastOffset     int64
	LogAppendTime  int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset int64
	Batches        int
	Records        int
	// Rolled is set when the append started a new segment, at FirstOffset:
	// the broker snapshots its producer state there (before applying the
	// appended batches to it).
	Rolled bool
}

// AppendAsLeader appends a producer's record batches. Every batch, and
// every record in it, is validated before anything is written (validate.go),
// so an error means nothing was appended. The leader then assigns offsets
// from the log end offset, stamps leaderEpoch into each batch, corrects a
// max timestamp the records do not match and, for LogAppendTime topics,
// rewrites the timestamp type and max timestamp (recomputing the CRC).
// When the topic's compression.type is not producer, batches in another
// codec are first rewritten in the topic's (recompress.go). records is
// modified in place and must not be used by the caller
// afterwards.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendResult, error) {
	return l.AppendAsLeaderWithin(records, leaderEpoch, nil)
}

// AppendAsLeaderWithin is AppendAsLeader for one of the appends of a
// Produce request: the bytes its compressed batches decompress to are
// charged to request, the request's budget, and a batch past it is
// ErrMessageTooLarge (nothing appended). A nil request is AppendAsLeader.
func (l *Log) AppendAsLeaderWithin(records []byte, leaderEpoch int32, request *RequestDecompressBudget) (AppendResult, error) {
	// Validation reads only records and a copy of the config, so it runs
	// before appendMu: decompressing a batch does not hold up the
	// partition's other appends.
	cfg := l.Config()
	var one [1]batchSpan // a Produce carries one batch (issue 22: no allocation)
	spans, err := splitBatchesInto(one[:0], records, cfg, true)
	if err != nil {
		return AppendResult{}, err
	}
	if err := validateRecordsWithin(records, spans, cfg, l.tp, l.now(), request); err != nil {
		return AppendResult{}, err
	}
	if cfg.Compression != CompressionProducer {
		// Like validation, recompression works on the caller's bytes
		// and a copy of the config, outside appendMu.
		if records, spans, err = recompressBatches(records, spans, cfg); err != nil {
			return AppendResult{}, err
		}
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	now := l.now()
	appendTime := int64(-1)
	if l.cfg.Value().LogAppendTime {
		appendTime = now.UnixMilli()
	}
	res := AppendResult{FirstOffset: l.logEnd, LogAppendTime: appendTime, Batches: len(spans)}
	next := l.logEnd
	for i := range spans {
		sp := &spans[i]
		b := records[sp.pos : sp.pos+int(sp.header.size())]
		if appendTime < 0 {
			correctMaxTimestamp(b, sp.maxTimestamp)
		}
		stampLeaderBatch(b, next, leaderEpoch, appendTime)
		sp.header = parseHeader(b)
		next = sp.header.nextOffset()
		res.Records += int(sp.header.RecordCount)
	}
	res.LastOffset = next - 1
	if err := l.epochs.assign(leaderEpoch, res.FirstOffset); err != nil {
		return AppendResult{}, l.fail("leader epoch checkpoint", err)
	}
	if res.Rolled, err = l.appendLocked(records, spans, now); err != nil {
		return AppendResult{}, err
	}
	if err := l.flushForMessagesLocked(); err != nil {
		return AppendResult{}, err
	}
	res.LogStartOffset = l.logStart
	return res, nil
}

// AppendAsFollower appends batches fetched from the leader: offsets and
// leader epochs are kept as they are. The first batch must not start below
// the log end offset; it may start above it, because compaction on the
// leader can leave gaps between batches.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendResult{}, err
	}
	spans, err := splitBatches(records, l.cfg.Value(), false)
	if err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{FirstOffset: spans[0].header.BaseOffset, LogAppendTime: -1, Batches: len(spans)}
	next := l.logEnd
	for _, sp := range spans {
		if sp.header.BaseOffset < next {
			return AppendResult{}, fmt.Errorf("%w: batch at offset %d, expected at least %d", ErrUnexpectedAppendOffset, sp.header.BaseOffset, next)
		}
		next = sp.header.nextOffset()
		res.Records += int(sp.header.RecordCount)
	}
	res.LastOffset = next - 1
	for _, sp := range spans {
		if err := l.epochs.assign(sp.header.LeaderEpoch, sp.header.BaseOffset); err != nil {
			return AppendResult{}, l.fail("leader epoch checkpoint", err)
		}
	}
	if res.Rolled, err = l.appendLocked(records, spans, l.now()); err != nil {
		return AppendResult{}, err
	}
	if err := l.flushForMessagesLocked(); err != nil {
		return AppendResult{}, err
	}
	res.LogStartOffset = l.logStart
	return res, nil
}

// appendLocked writes validated, stamped batches to the active segment
// (rolling first if needed) and then publishes them to readers. It reports
// whether it rolled. Lock should be held (appendMu).
func (l *Log) appendLocked(records []byte, spans []batchSpan, now time.Time) (rolled bool, err error) {
	first := spans[0].header
	last := spans[len(spans)-1].header
	maxTs := int64(-1)
	for _, sp := range spans {
		maxTs = max(maxTs, sp.header.MaxTimestamp)
	}
	seg := l.active()
	if l.shouldRollLocked(seg, int64(len(records)), maxTs, last.lastOffset(), now) {
		old := seg
		if seg, err = l.rollLocked(first.BaseOffset, now); err != nil {
			return false, err
		}
		rolled = seg != old
	}
	pos := seg.size
	if _, err := seg.log.WriteAt(records, pos); err != nil {
		_ = seg.log.Truncate(pos) // best effort; recovery will cut a torn tail anyway
		return rolled, l.fail("append", err)
	}
	l.segsMu.Lock()
	defer l.segsMu.Unlock()
	for _, sp := range spans {
		if err := seg.indexBatch(pos+int64(sp.pos), sp.header, l.cfg.Value()); err != nil {
			// The batch is in the log but the index may miss an entry: the
			// log is still readable (lookups scan further) but must be
			// recovered before more writes.
			seg.size = pos + int64(len(records))
			seg.nextOffset = last.nextOffset()
			l.setLogEnd(seg.nextOffset)
			return rolled, l.fail("index append", err)
		}
	}
	seg.lastModified = now
	l.setLogEnd(seg.nextOffset)
	return rolled, nil
}

// shouldRollLocked follows Kafka's LogSegment.shouldRoll: a non-empty
// segment rolls when the append would take it past segment.bytes, or when
// segment.ms has passed since its first batch's timestamp (measured against
// the incoming batches' max timestamp, or wall time since the segment was
// created when batches carry no timestamp); any segment rolls when an index
// is full or the last offset no longer fits a 32-bit relative offset.
// Lock should be held (appendMu).
func (l *Log) shouldRollLocked(seg *segment, size, maxTs, lastOffset int64, now time.Time) bool {
	if seg.size > 0 {
		if seg.size+size > l.cfg.Value().SegmentBytes {
			return true
		}
		var waited int64
		if seg.rollTimestamp >= 0 && maxTs >= 0 {
			waited = maxTs - seg.rollTimestamp
		} else {
			waited = now.Sub(seg.created).Milliseconds()
		}
		if waited > l.cfg.Value().SegmentMs {
			return true
		}
	}
	return seg.index.full() || seg.timeIndex.full() || !fitsRelativeOffset(lastOffset, seg.base)
}

// rollLocked closes off the active segment (its final time-index entry,
// and its index entries written to their files, not fsynced: the next
// flush does that) and starts a new one at base. Lock should be held
// (appendMu).
func (l *Log) rollLocked(base int64, now time.Time) (*segment, error) {
	old := l.active()
	if old.size == 0 && old.base == base {
		return old, nil
	}
	l.segsMu.Lock()
	old.finalize()
	l.segsMu.Unlock()
	if err := old.persistIndexes(false); err != nil {
		return nil, l.fail("roll", err)
	}
	seg, err := newSegment(l.fsys, l.path, base, l.cfg.Value(), now)
	if err != nil {
		return nil, l.fail("roll", err)
	}
	l.segsMu.Lock()
	l.segments = append(l.segments, seg)
	l.segsMu.Unlock()
	return seg, nil
}
