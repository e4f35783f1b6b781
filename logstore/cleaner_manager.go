package logstore

import (
	"errors"
	"math"
	"time"
)

// This file chooses which log to clean next, as Kafka's
// LogCleanerManager.grabFilthiestCompactedLog does, for the broker's
// cleaner goroutines (log.cleaner.threads of them, each with its own
// Cleaner). A log is a candidate when its cleanup.policy includes
// compact, no other goroutine is cleaning it and no pass failed on it
// (then it is uncleanable until the Dir is reopened, and logged). Its
// cleanable section runs from the checkpointed first dirty offset to the
// first uncleanable offset: the smallest of the active segment's base, the
// caller's bound (high watermark, first unstable offset) and the base of
// the first segment holding a record newer than now - min.compaction.lag.ms.
// The candidate with the highest dirty ratio (dirty bytes / all bytes from
// the log start to the first uncleanable offset) at or above
// min.cleanable.dirty.ratio is chosen; a log whose first dirty segment
// was rolled more than max.compaction.lag.ms ago is chosen first whatever
// its ratio.
//
// When no log is cleanable that way, the manager picks, of the logs whose
// last pass left tombstones or transaction markers with a delete horizon
// and whose latest such horizon has passed, the one with the highest
// ratio, and the pass rewrites its cleaned section (CleanOptions.Recheck)
// so they go: KIP-534's rescheduling, without which a compacted topic that
// gets no new writes keeps its tombstones forever. (Kafka's shipped
// LogCleanerManager, 3.1 to 4.x, only sets the horizons; sluice does what
// the KIP describes.) The horizons are kept in memory, as Kafka's are: after
// a restart a log is rescheduled for them only once a pass has run on it.

// CleanCandidate describes what the manager found of one log.
type CleanCandidate struct {
	TP               TopicPartition
	FirstDirty       int64
	FirstUncleanable int64
	CleanBytes       int64
	DirtyBytes       int64
	Ratio            float64
	MustClean        bool // past max.compaction.lag.ms
	// CompactionDelayMs is how long past max.compaction.lag.ms the
	// earliest dirty segment is (0 if not past it).
	CompactionDelayMs int64
	// DeleteHorizonDue: chosen only because the latest delete horizon of
	// its last pass has passed; the pass must rewrite the cleaned section.
	DeleteHorizonDue bool
}

// PreCleanStats describes what one choice saw across the logs, for the
// cleaner's metrics (Kafka's max-dirty-percent and
// max-compaction-delay-secs).
type PreCleanStats struct {
	DirtiestRatio        float64 // highest dirty ratio of a compacted log
	MaxCompactionDelayMs int64   // largest CompactionDelayMs
	CleanableLogs        int     // logs cleanable by ratio or max lag
}

// cleanableSection computes a log's candidate entry; ok is false when the
// log has nothing cleanable.
func (l *Log) cleanableSection(firstDirty, bound int64, now time.Time) (CleanCandidate, bool) {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	if l.closed || !l.cfg.Value().Compact {
		return CleanCandidate{}, false
	}
	cfg := l.cfg.Value()
	nowMs := now.UnixMilli()
	if firstDirty < l.logStart || firstDirty > l.logEnd {
		firstDirty = l.logStart
	}
	c := CleanCandidate{TP: l.tp, FirstDirty: firstDirty}
	uncleanable := min(l.active().base, bound)
	for _, s := range l.segments {
		if s.base >= uncleanable {
			break
		}
		if cfg.MinCompactionLagMs > 0 && s.maxTimestamp >= 0 && s.maxTimestamp > nowMs-cfg.MinCompactionLagMs {
			uncleanable = s.base
			break
		}
	}
	c.FirstUncleanable = uncleanable
	for i, s := range l.segments {
		end := l.logEnd
		if i+1 < len(l.segments) {
			end = l.segments[i+1].base
		}
		switch {
		case end <= firstDirty:
			c.CleanBytes += s.size
		case end <= uncleanable:
			c.DirtyBytes += s.size
			if cfg.MaxCompactionLagMs != math.MaxInt64 && s.rollTimestampOrModified() < nowMs-cfg.MaxCompactionLagMs {
				c.MustClean = true
				c.CompactionDelayMs = max(c.CompactionDelayMs, nowMs-cfg.MaxCompactionLagMs-s.rollTimestampOrModified())
			}
		}
	}
	if c.CleanBytes+c.DirtyBytes > 0 {
		c.Ratio = float64(c.DirtyBytes) / float64(c.CleanBytes+c.DirtyBytes)
	}
	if c.DirtyBytes == 0 {
		return c, false
	}
	return c, c.MustClean || c.Ratio >= cfg.MinCleanableDirtyRatio
}

// rollTimestampOrModified is the segment's first batch timestamp, or its
// last-modified time without one (Kafka's estimate of when the segment's
// data was written, for max.compaction.lag.ms).
func (s *segment) rollTimestampOrModified() int64 {
	if s.rollTimestamp >= 0 {
		return s.rollTimestamp
	}
	return s.lastModified.UnixMilli()
}

// ChooseLogToClean picks the dirtiest cleanable compacted log (see the
// file comment) and marks it in progress; the caller must call
// FinishCleaning with it. bound gives each partition's first offset that
// may not be cleaned (the minimum of its high watermark and last stable
// offset; 0 for a partition the caller does not know, so nothing of it is
// cleaned); nil means no bound but the active segment. ok is false when no log needs cleaning.
func (d *Dir) ChooseLogToClean(now time.Time, bound func(TopicPartition) int64) (CleanCandidate, bool, error) {
	c, ok, _, err := d.chooseLogToClean(now, bound)
	return c, ok, err
}

func (d *Dir) chooseLogToClean(now time.Time, bound func(TopicPartition) int64) (CleanCandidate, bool, PreCleanStats, error) {
	var pre PreCleanStats
	cks, err := d.CleanerCheckpoints()
	if err != nil {
		return CleanCandidate{}, false, pre, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var best, due CleanCandidate
	found, foundDue := false, false
	nowMs := now.UnixMilli()
	for tp, l := range d.logs {
		if d.cleaning[tp] || d.uncleanable[tp] != nil {
			continue
		}
		first, ok := cks[tp]
		if !ok {
			first = -1
		}
		b := int64(math.MaxInt64)
		if bound != nil {
			b = bound(tp)
		}
		c, ok := l.cleanableSection(first, b, now)
		pre.DirtiestRatio = max(pre.DirtiestRatio, c.Ratio)
		pre.MaxCompactionDelayMs = max(pre.MaxCompactionDelayMs, c.CompactionDelayMs)
		if !ok {
			// A log the caller bounds at 0 (not hosted) is left alone: a
			// pass's zero UpperBound would mean no bound at all.
			if h, has := d.deleteHorizons[tp]; has && h <= nowMs && c.CleanBytes+c.DirtyBytes > 0 && c.FirstUncleanable > 0 &&
				l.Config().Compact && (!foundDue || c.Ratio > due.Ratio) {
				due, foundDue = c, true
			}
			continue
		}
		pre.CleanableLogs++
		if !found || (c.MustClean && !best.MustClean) || (c.MustClean == best.MustClean && c.Ratio > best.Ratio) {
			best, found = c, true
		}
	}
	if !found && foundDue {
		best, found = due, true
		best.DeleteHorizonDue = true
	}
	if found {
		if d.cleaning == nil {
			d.cleaning = map[TopicPartition]bool{}
		}
		d.cleaning[best.TP] = true
	}
	return best, found, pre, nil
}

// FinishCleaning ends what ChooseLogToClean started. A pass that failed
// (other than because the log was closed or the pass was stopped) marks the log uncleanable until
// the Dir is reopened, as Kafka marks a partition uncleanable; the other
// logs go on.
func (d *Dir) FinishCleaning(tp TopicPartition, passErr error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.cleaning, tp)
	if passErr != nil && !errors.Is(passErr, ErrLogClosed) && !errors.Is(passErr, ErrCleanStopped) {
		if d.uncleanable == nil {
			d.uncleanable = map[TopicPartition]error{}
		}
		d.uncleanable[tp] = passErr
		d.logger.Error("logstore: log marked uncleanable", "partition", tp.String(), "err", passErr)
	}
}

// Uncleanable lists the logs a pass failed on, with the error.
func (d *Dir) Uncleanable() map[TopicPartition]error {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[TopicPartition]error, len(d.uncleanable))
	for tp, err := range d.uncleanable {
		out[tp] = err
	}
	return out
}

// CleanOnce chooses a log, runs one pass over it with c (from its
// checkpoint, up to the chosen first uncleanable offset, with the log's
// delete.retention.ms and opts' throttle) and checkpoints the result. ok
// is false when no log needed cleaning.
func (d *Dir) CleanOnce(c *Cleaner, now time.Time, bound func(TopicPartition) int64, opts CleanOptions) (CleanStats, TopicPartition, bool, error) {
	r, err := d.CleanNext(c, now, bound, opts)
	return r.Stats, r.Candidate.TP, r.Chosen, err
}

// CleanResult is what CleanNext did.
type CleanResult struct {
	Chosen     bool           // a log needed cleaning and a pass ran on it
	Candidate  CleanCandidate // what the manager saw of it
	Pre        PreCleanStats  // what the manager saw of all logs
	Stats      CleanStats
	RatioAfter float64 // the log's dirty ratio after the pass
}

// CleanNext is CleanOnce, reporting what the manager saw too.
func (d *Dir) CleanNext(c *Cleaner, now time.Time, bound func(TopicPartition) int64, opts CleanOptions) (CleanResult, error) {
	cand, ok, pre, err := d.chooseLogToClean(now, bound)
	r := CleanResult{Chosen: ok, Candidate: cand, Pre: pre}
	if err != nil || !ok {
		return r, err
	}
	l := d.Log(cand.TP)
	var st CleanStats
	if l == nil {
		err = ErrLogClosed
	} else {
		opts.UpperBound, opts.DeleteRetentionMs, opts.Now = cand.FirstUncleanable, l.Config().DeleteRetentionMs, now
		opts.Recheck = opts.Recheck || cand.DeleteHorizonDue
		st, err = d.CleanLog(c, cand.TP, opts)
		if err == nil {
			d.noteDeleteHorizon(cand, st)
			if after, _ := l.cleanableSection(st.EndOffset, cand.FirstUncleanable, now); after.CleanBytes+after.DirtyBytes > 0 {
				r.RatioAfter = after.Ratio
			}
		}
	}
	r.Stats = st
	d.FinishCleaning(cand.TP, err)
	return r, err
}

// noteDeleteHorizon records the latest delete horizon a pass left in the
// log. A pass that rewrote the cleaned section (or was chosen to) knows
// every horizon left; one abandoned part way only adds to what was known;
// one that rewrote nothing leaves it as it was.
func (d *Dir) noteDeleteHorizon(cand CleanCandidate, st CleanStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, had := d.deleteHorizons[cand.TP]
	h := st.LatestDeleteHorizon
	switch {
	case st.Abandoned:
		if had {
			h = max(h, old)
		}
	case st.SegmentsBefore == 0 && !cand.DeleteHorizonDue:
		return
	}
	if h < 0 {
		delete(d.deleteHorizons, cand.TP)
		return
	}
	if d.deleteHorizons == nil {
		d.deleteHorizons = map[TopicPartition]int64{}
	}
	d.deleteHorizons[cand.TP] = h
}
