package logstore

import (
	"fmt"
	"path/filepath"
)

// cleanerCheckpointFile is Kafka's cleaner-offset-checkpoint: per
// partition, the first dirty offset (where the next cleaning pass starts
// mapping), in the same text format as the other offset checkpoints.
const cleanerCheckpointFile = "cleaner-offset-checkpoint"

// CleanerCheckpoints reads the cleaner-offset-checkpoint file; a missing
// file is empty.
func (d *Dir) CleanerCheckpoints() (map[TopicPartition]int64, error) {
	m, err := readOffsetCheckpoint(d.fsys, filepath.Join(d.path, cleanerCheckpointFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	return m, nil
}

// updateCleanerCheckpoint sets (offset >= 0) or removes (offset < 0) tp's
// entry and rewrites the file atomically.
func (d *Dir) updateCleanerCheckpoint(tp TopicPartition, offset int64) error {
	d.ckMu.Lock()
	defer d.ckMu.Unlock()
	return d.updateCleanerCheckpointLocked(tp, offset)
}

// updateCleanerCheckpointLocked: Lock should be held (ckMu).
func (d *Dir) updateCleanerCheckpointLocked(tp TopicPartition, offset int64) error {
	path := filepath.Join(d.path, cleanerCheckpointFile)
	m, err := readOffsetCheckpoint(d.fsys, path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrKafkaStorage, err)
	}
	if offset < 0 {
		if _, ok := m[tp]; !ok {
			return nil
		}
		delete(m, tp)
	} else {
		m[tp] = offset
	}
	if err := writeOffsetCheckpoint(d.fsys, path, m); err != nil {
		return fmt.Errorf("%w: write %s: %v", ErrKafkaStorage, cleanerCheckpointFile, err)
	}
	return nil
}

// ForgetCleanerCheckpoint drops tp's entry (the partition was deleted).
func (d *Dir) ForgetCleanerCheckpoint(tp TopicPartition) error {
	return d.updateCleanerCheckpoint(tp, -1)
}

// CleanLog runs one cleaning pass over tp's open log from its checkpointed
// first dirty offset (opts.FirstDirty is ignored) and checkpoints where the
// pass ended. A checkpointed offset outside [log start, log end] (the log
// was truncated or its start moved) restarts from the log start, as
// Kafka's LogCleanerManager does.
func (d *Dir) CleanLog(c *Cleaner, tp TopicPartition, opts CleanOptions) (CleanStats, error) {
	l := d.Log(tp)
	if l == nil {
		return CleanStats{}, fmt.Errorf("%w: %s is not open", ErrLogClosed, tp)
	}
	cks, err := d.CleanerCheckpoints()
	if err != nil {
		return CleanStats{}, err
	}
	first, ok := cks[tp]
	if !ok || first < l.LogStartOffset() || first > l.LogEndOffset() {
		first = l.LogStartOffset()
	}
	opts.FirstDirty = first
	stats, err := c.Clean(l, opts)
	if err != nil {
		return stats, err
	}
	if stats.EndOffset != first || !ok {
		if err := d.updateCleanerCheckpoint(tp, stats.EndOffset); err != nil {
			return stats, err
		}
	}
	return stats, nil
}
