package logstore

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"
)

// This file holds the log cleaner's core (Kafka's LogCleaner.Cleaner): one
// pass of compaction over one log. A pass
//
//  1. takes the dirty section, from the first dirty offset (the
//     cleaner-offset-checkpoint, see cleaner_checkpoint.go) up to the first
//     uncleanable offset: the active segment's base, or the caller's bound
//     (high watermark, last stable offset, min.compaction.lag.ms), rounded
//     down to a segment boundary;
//  2. builds the offset map (offsetmap.go) of key → latest offset over it,
//     skipping aborted transactional data and control batches; when the map
//     fills up it covers only a prefix, the pass cleans up to there and the
//     rest waits for the next pass;
//  3. rewrites every segment from the log start up to the end of the mapped
//     prefix, grouped so that each group fits in segment.bytes and its
//     indexes in segment.index.bytes, keeping a record when it is the
//     latest for its key (or past the map), and applying Kafka's rules for
//     tombstones, transactions and producer state (filterBatch);
//  4. swaps each group in crash-safely (cleaner_swap.go).
//
// Reads and appends go on during a pass: the old segments are read
// without locks (their bytes never change while they are in the log), and
// only the swap takes the log's write lock, after checking that the
// segments it replaces are still the ones it read (a truncation or
// retention in between abandons the group; the next pass redoes it).

// CleanOptions are the inputs of one cleaning pass.
type CleanOptions struct {
	// FirstDirty is the first offset not yet cleaned (the cleaner offset
	// checkpoint); clamped to [log start, log end].
	FirstDirty int64
	// UpperBound is the first offset that may not be cleaned (Kafka's
	// firstUncleanableDirtyOffset: min of the high watermark, the first
	// unstable offset and the compaction lag bound). Zero or negative means
	// the active segment's base offset, which is never passed anyway.
	UpperBound int64
	// DeleteRetentionMs is delete.retention.ms: how long tombstones and
	// removable transaction markers survive after the first pass that saw
	// them.
	DeleteRetentionMs int64
	// Now is the pass's clock for delete horizons; zero means the log's.
	Now time.Time
	// Stop, when closed, ends the pass at the next batch with
	// ErrCleanStopped (the broker is shutting down); what was swapped in
	// stays.
	Stop <-chan struct{}
	// Throttle, when set, is the throttler shared by all the broker's
	// cleaners (log.cleaner.io.max.bytes.per.second on their sum, as
	// Kafka's one Throttler); MaxBytesPerSecond is then ignored.
	Throttle *Throttler
	// MaxBytesPerSecond is a limit for this pass alone when Throttle is
	// nil: the pass sleeps when it reads and writes faster. Zero or
	// negative: no limit.
	MaxBytesPerSecond float64
	// WriteBufferSize is how many bytes of cleaned batches a pass gathers
	// before writing them to the new segment (Kafka's cleaner write
	// buffer: log.cleaner.io.buffer.size / log.cleaner.threads / 2). A
	// batch larger than it is written alone. Zero or negative: each batch
	// is written as it is filtered.
	WriteBufferSize int
	// Recheck rewrites the cleaned section even when nothing is dirty, so
	// tombstones and markers whose delete horizon has passed go (Kafka
	// cleans such a log once its earliest delete horizon is due).
	Recheck bool
	// ActiveProducers returns the producers still in the partition's
	// producer state (not yet expired by producer.id.expiration.ms), by
	// producer id, and true; it is called once per pass that rewrites
	// segments, after the pass has read the segment list, so every batch
	// the pass rewrites was appended before the answer. The pass then
	// keeps, emptied if need be, only the last batch of each of them
	// (Kafka's lastRecordsOfActiveProducers): a producer that has expired
	// keeps nothing, so a log written by many short-lived producers does
	// not keep one batch per producer id that ever wrote. With nil, or
	// false (the state is not known, e.g. not yet rebuilt from the log),
	// the pass keeps the last data batch of every producer id found in
	// the log: safe for any producer state, but never forgetting one.
	ActiveProducers func(TopicPartition) (map[int64]ActiveProducer, bool)
}

// ActiveProducer is what a pass keeps of a producer still in its
// partition's producer state (Kafka's LastRecord): the batch ending at
// LastDataOffset, which holds the producer's last sequence, or, when it
// has written only transaction markers at its current epoch
// (LastDataOffset -1), its marker of Epoch, which fences older epochs.
type ActiveProducer struct {
	LastDataOffset int64
	Epoch          int16
}

// CleanStats describes one pass.
type CleanStats struct {
	FirstDirty      int64 // where the mapped dirty section started
	EndOffset       int64 // end of the mapped section: the next pass's first dirty offset
	MapEntries      int   // keys in the offset map
	SegmentsBefore  int   // segments rewritten
	SegmentsAfter   int   // segments that replaced them
	BytesRead       int64 // .log bytes of the rewritten segments
	BytesWritten    int64 // .log bytes of the segments that replaced them
	RecordsRead     int64
	RecordsRetained int64
	Duration        time.Duration
	Throttled       time.Duration // slept to stay under the I/O limit
	// BufferUtilization is the share of the offset map's slots the pass
	// filled (Kafka's max-buffer-utilization-percent is the largest of
	// these over the cleaner threads' last passes).
	BufferUtilization float64
	// LatestDeleteHorizon is the latest delete horizon (ms) of a batch the
	// pass left in the log (tombstones or transaction markers kept until
	// then), -1 when none is left. The manager reschedules the log when it
	// has passed (KIP-534).
	LatestDeleteHorizon int64
	// Abandoned: the log changed under the pass, which stopped after the
	// groups it had swapped in.
	Abandoned bool
}

// ErrCleanStopped ends a pass whose CleanOptions.Stop was closed.
var ErrCleanStopped = errors.New("logstore: cleaning stopped")

// stopped reports whether stop is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Cleaner cleans logs, one at a time, with an offset map allocated once
// from its memory budget. A Cleaner is not safe for concurrent use: Kafka
// runs log.cleaner.threads of them, each with its share of the budget.
type Cleaner struct {
	m *offsetMap
	// sleep and now are the throttle's clock (tests replace them).
	sleep func(time.Duration)
	now   func() time.Time
}

// NewCleaner allocates a cleaner whose offset map takes at most
// memoryBytes (log.cleaner.dedupe.buffer.size / log.cleaner.threads), full
// at loadFactor (log.cleaner.io.buffer.load.factor; 0 means 0.9).
func NewCleaner(memoryBytes int64, loadFactor float64) (*Cleaner, error) {
	m := newOffsetMap(memoryBytes, loadFactor)
	if m == nil {
		return nil, fmt.Errorf("logstore: a dedupe buffer of %d bytes cannot hold one key", memoryBytes)
	}
	return &Cleaner{m: m}, nil
}

// MapBytes is the memory the offset map holds.
func (c *Cleaner) MapBytes() int { return len(c.m.buf) }

// cleanSegment is what a pass knows of a segment it read.
type cleanSegment struct {
	seg      *segment
	size     int64
	end      int64 // next segment's base (or the log end for the last)
	txnCount int
}

// Clean runs one pass over l (see the file comment). It returns with
// EndOffset == FirstDirty and nothing rewritten when there is nothing
// cleanable. A log whose dirty section does not fit in the map needs
// several passes: call again from EndOffset.
func (c *Cleaner) Clean(l *Log, opts CleanOptions) (stats CleanStats, err error) {
	started := time.Now()
	now := opts.Now
	if now.IsZero() {
		now = l.now()
	}
	l.segsMu.RLock()
	if l.closed {
		l.segsMu.RUnlock()
		return CleanStats{}, ErrLogClosed
	}
	cfg, logStart, logEnd, truncations := l.cfg.Value(), l.logStart, l.logEnd, l.truncations
	segs := make([]cleanSegment, len(l.segments))
	var aborted []AbortedTxn
	for i, s := range l.segments {
		end := logEnd
		if i+1 < len(l.segments) {
			end = l.segments[i+1].base
		}
		segs[i] = cleanSegment{seg: s, size: s.size, end: end, txnCount: len(s.txnIndex.entries)}
		aborted = append(aborted, s.txnIndex.entries...)
	}
	l.segsMu.RUnlock()

	firstDirty := min(max(opts.FirstDirty, logStart), logEnd)
	stats = CleanStats{FirstDirty: firstDirty, EndOffset: firstDirty, LatestDeleteHorizon: -1}
	// Cleanable: whole non-active segments ending at or below the bound.
	bound := segs[len(segs)-1].seg.base
	if opts.UpperBound > 0 {
		bound = min(bound, opts.UpperBound)
	}
	cleanableEnd := int64(-1)
	for _, s := range segs[:len(segs)-1] {
		if s.end > bound {
			break
		}
		cleanableEnd = s.end
	}
	if cleanableEnd <= firstDirty && !opts.Recheck {
		return stats, nil
	}
	sort.SliceStable(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })

	c.m.clear()
	thr := &passThrottle{t: opts.Throttle, stop: opts.Stop}
	if thr.t == nil {
		thr.t = newThrottler(opts.MaxBytesPerSecond, c.now, c.sleep)
	}
	defer func() { stats.Throttled = thr.slept }()
	end := firstDirty
	if cleanableEnd > firstDirty {
		if end, err = c.buildMap(segs, firstDirty, cleanableEnd, aborted, thr, opts.Stop); err != nil {
			return stats, err
		}
	}
	stats.MapEntries = c.m.entries
	stats.BufferUtilization = float64(c.m.entries) / float64(c.m.slots)
	if end <= firstDirty && !opts.Recheck {
		return stats, nil
	}
	var active map[int64]ActiveProducer
	var lastData map[int64]int64
	known := false
	if opts.ActiveProducers != nil {
		active, known = opts.ActiveProducers(l.tp)
	}
	if !known {
		active = nil
		if lastData, err = lastProducerBatches(segs); err != nil {
			return stats, err
		}
	}
	p := &cleanPass{l: l, m: c.m, cfg: cfg, mapEnd: end, nowMs: now.UnixMilli(),
		deleteRetentionMs: max(opts.DeleteRetentionMs, 0), active: active, activeKnown: known, lastData: lastData, truncations: truncations,
		txns: newTxnTracker(aborted, segs[0].seg.base), thr: thr, stop: opts.Stop,
		writeBuffer: opts.WriteBufferSize, latestHorizon: -1}
	var todo []cleanSegment
	for _, s := range segs[:len(segs)-1] {
		if s.seg.base >= end {
			break
		}
		todo = append(todo, s)
	}
	for _, g := range groupSegments(todo, cfg) {
		if err := p.cleanGroup(g, &stats); err != nil {
			if errors.Is(err, errCleanAbandoned) {
				// The log changed under the pass: what was swapped in is
				// cleaned, the rest waits for the next pass.
				l.logger.Info("logstore: cleaning abandoned, log changed", "partition", l.tp.String())
				stats.Duration = time.Since(started)
				stats.Abandoned = true
				stats.LatestDeleteHorizon = p.latestHorizon
				return stats, nil
			}
			return stats, err
		}
	}
	stats.EndOffset = end
	stats.Duration = time.Since(started)
	stats.LatestDeleteHorizon = p.latestHorizon
	return stats, nil
}

// buildMap puts every keyed record of [firstDirty, cleanableEnd) that is
// not aborted transactional data into the map, and returns the end of what
// it mapped: cleanableEnd, or the first offset a full map could not take.
func (c *Cleaner) buildMap(segs []cleanSegment, firstDirty, cleanableEnd int64, aborted []AbortedTxn, thr *passThrottle, stop <-chan struct{}) (int64, error) {
	txns := newTxnTracker(aborted, firstDirty)
	var buf []byte
	for _, s := range segs {
		if s.end <= firstDirty {
			continue
		}
		if s.seg.base >= cleanableEnd {
			break
		}
		for pos := int64(0); pos < s.size; {
			b, h, err := readBatchAt(s.seg, pos, s.size, &buf)
			if err != nil {
				return 0, err
			}
			pos += h.size()
			thr.count(h.size())
			if stopped(stop) {
				return 0, ErrCleanStopped
			}
			if h.lastOffset() < firstDirty {
				continue
			}
			control := h.Attributes&attrControl != 0
			if control {
				recs, err := batchRecords(b, h)
				if err != nil {
					return 0, err
				}
				txns.onControl(h, controlType(recs))
				continue
			}
			if txns.onBatch(h) {
				continue // aborted
			}
			recs, err := batchRecords(b, h)
			if err != nil {
				return 0, err
			}
			for _, r := range recs {
				if r.offset < firstDirty || !r.hasKey {
					continue
				}
				if !c.m.put(r.key, r.offset) {
					return r.offset, nil
				}
			}
		}
	}
	return cleanableEnd, nil
}

// passThrottle is one pass's use of a Throttler: it counts what the pass
// slept.
type passThrottle struct {
	t     *Throttler
	stop  <-chan struct{}
	slept time.Duration
}

func (p *passThrottle) count(n int64) { p.slept += p.t.maybeThrottle(n, p.stop) }

// readBatchAt reads the whole batch at pos into *buf.
func readBatchAt(s *segment, pos, limit int64, buf *[]byte) ([]byte, BatchHeader, error) {
	h, err := s.readHeader(pos, limit)
	if err != nil {
		return nil, h, err
	}
	if err := checkBatchHeader(h, limit-pos); err != nil {
		return nil, h, err
	}
	if int64(cap(*buf)) < h.size() {
		*buf = make([]byte, h.size())
	}
	b := (*buf)[:h.size()]
	if _, err := s.log.ReadAt(b, pos); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, h, err
	}
	return b, h, nil
}

// lastProducerBatches maps each producer id to the last offset of its last
// data batch in the log: what a pass keeps, possibly emptied, so the
// producer's state can be rebuilt from the log after cleaning, when it
// does not know which producers are still active
// (CleanOptions.ActiveProducers).
func lastProducerBatches(segs []cleanSegment) (map[int64]int64, error) {
	last := make(map[int64]int64)
	for _, s := range segs {
		for pos := int64(0); pos < s.size; {
			h, err := s.seg.readHeader(pos, s.size)
			if err != nil {
				return nil, err
			}
			if h.ProducerID >= 0 && h.Attributes&attrControl == 0 {
				last[h.ProducerID] = h.lastOffset()
			}
			pos += h.size()
		}
	}
	return last, nil
}

// lastOfProducer reports whether h is the batch its producer's state
// needs kept (Kafka's isBatchLastRecordOfProducer): for a producer still
// in the partition's producer state, the data batch ending at its last
// data offset, or, when it has none at its epoch, its markers of that
// epoch; for an expired producer, nothing. Without the producer state,
// the last data batch of every producer id in the log.
func (p *cleanPass) lastOfProducer(h BatchHeader, control bool) bool {
	if h.ProducerID < 0 {
		return false
	}
	if !p.activeKnown {
		return !control && p.lastData[h.ProducerID] == h.lastOffset()
	}
	a, ok := p.active[h.ProducerID]
	switch {
	case !ok:
		return false
	case a.LastDataOffset >= 0:
		return h.lastOffset() == a.LastDataOffset
	default:
		return control && h.ProducerEpoch == a.Epoch
	}
}

// groupSegments splits segs into runs of consecutive segments that are
// rewritten into one: together at most segment.bytes of log, at most
// segment.index.bytes of offset index, and offsets relative to the first
// base fitting an int32 (Kafka's groupSegmentsBySize).
func groupSegments(segs []cleanSegment, cfg Config) [][]cleanSegment {
	var groups [][]cleanSegment
	for len(segs) > 0 {
		n, size, idx := 1, segs[0].size, segs[0].seg.index.sizeBytes()
		for n < len(segs) {
			next := segs[n]
			if size+next.size > cfg.SegmentBytes || idx+next.seg.index.sizeBytes() > int64(cfg.SegmentIndexBytes) ||
				!fitsRelativeOffset(next.end-1, segs[0].seg.base) {
				break
			}
			size += next.size
			idx += next.seg.index.sizeBytes()
			n++
		}
		groups = append(groups, segs[:n])
		segs = segs[n:]
	}
	return groups
}

// txnTracker follows transactions through the batches of a pass, in
// offset order (Kafka's CleanedTransactionMetadata): which batches belong
// to aborted transactions, and whether a marker may go because its
// transaction has no data left.
type txnTracker struct {
	aborted          []AbortedTxn // by first offset; consumed as offsets pass
	ongoingAborted   map[int64]*abortedState
	ongoingCommitted map[int64]bool
	cleanedIndex     []AbortedTxn // aborted transactions whose marker stays, for the new .txnindex
}

type abortedState struct {
	txn      AbortedTxn
	observed bool // a batch of it was read in this pass
}

// newTxnTracker tracks the aborted transactions still open at from.
func newTxnTracker(aborted []AbortedTxn, from int64) *txnTracker {
	t := &txnTracker{ongoingAborted: map[int64]*abortedState{}, ongoingCommitted: map[int64]bool{}}
	for _, a := range aborted {
		if a.LastOffset >= from {
			t.aborted = append(t.aborted, a)
		}
	}
	return t
}

func (t *txnTracker) consumeUpTo(offset int64) {
	for len(t.aborted) > 0 && t.aborted[0].FirstOffset <= offset {
		a := t.aborted[0]
		t.aborted = t.aborted[1:]
		if _, ok := t.ongoingAborted[a.ProducerID]; !ok {
			t.ongoingAborted[a.ProducerID] = &abortedState{txn: a}
		}
	}
}

// onBatch reads a data batch and reports whether it is aborted data.
func (t *txnTracker) onBatch(h BatchHeader) bool {
	t.consumeUpTo(h.lastOffset())
	if h.Attributes&attrTransactional == 0 {
		return false
	}
	if a := t.ongoingAborted[h.ProducerID]; a != nil {
		a.observed = true
		return true
	}
	t.ongoingCommitted[h.ProducerID] = true
	return false
}

// onControl reads a marker and reports whether it may be removed (once its
// delete horizon has passed): its transaction has no data batch left.
func (t *txnTracker) onControl(h BatchHeader, typ int) bool {
	t.consumeUpTo(h.lastOffset())
	switch typ {
	case controlAbort:
		a := t.ongoingAborted[h.ProducerID]
		delete(t.ongoingAborted, h.ProducerID)
		if a != nil && a.observed {
			t.cleanedIndex = append(t.cleanedIndex, a.txn)
			return false
		}
		return true
	case controlCommit:
		if t.ongoingCommitted[h.ProducerID] {
			delete(t.ongoingCommitted, h.ProducerID)
			return false
		}
		return true
	}
	return false
}
