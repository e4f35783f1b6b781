package logstore

// Producer-state snapshot files, <offset, 20 digits>.snapshot: the
// broker's producer table (package txn encodes it, in Kafka's format) as it
// stood after every batch below offset was applied. logstore only stores
// them: the broker writes one when a segment rolls and at clean shutdown,
// and reads the newest one at or below the log end offset when it rebuilds
// the table, replaying the batches after it (ScanBatches). They follow the
// log: truncation removes those past the new end, retention those below
// the first remaining segment, crash recovery those past the first
// recovered segment (whose aborted-transaction index the broker rebuilds
// by replaying from a snapshot before it).

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

const snapshotSuffix = ".snapshot"

func (l *Log) snapshotPath(offset int64) string {
	return filepath.Join(l.path, segmentName(offset)+snapshotSuffix)
}

// listSnapshots returns the offsets of the snapshot files in path, sorted.
func listSnapshots(fsys FS, path string) ([]int64, error) {
	entries, err := fsys.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if name := e.Name(); strings.HasSuffix(name, snapshotSuffix) {
			if off, ok := parseSegmentName(strings.TrimSuffix(name, snapshotSuffix)); ok {
				out = append(out, off)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// WriteProducerSnapshot stores data as the producer snapshot at offset,
// replacing one already there. The file is written atomically and fsynced.
func (l *Log) WriteProducerSnapshot(offset int64, data []byte) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return ErrLogClosed
	}
	if err := writeFileAtomic(l.fsys, l.snapshotPath(offset), data); err != nil {
		return fmt.Errorf("%w: write producer snapshot %d of %s: %v", ErrKafkaStorage, offset, l.tp, err)
	}
	if i, found := slices.BinarySearch(l.snapshots, offset); !found {
		l.snapshots = slices.Insert(l.snapshots, i, offset)
	}
	return nil
}

// LatestProducerSnapshot returns the newest producer snapshot whose offset
// is at or below atOrBelow; ok is false when there is none.
func (l *Log) LatestProducerSnapshot(atOrBelow int64) (offset int64, data []byte, ok bool, err error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, nil, false, ErrLogClosed
	}
	i, found := slices.BinarySearch(l.snapshots, atOrBelow)
	if found {
		i++
	}
	if i == 0 {
		return 0, nil, false, nil
	}
	offset = l.snapshots[i-1]
	data, err = readWholeFile(l.fsys, l.snapshotPath(offset))
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, false, fmt.Errorf("%w: read producer snapshot %d of %s: %v", ErrKafkaStorage, offset, l.tp, err)
	}
	return offset, data, true, nil
}

// DeleteProducerSnapshot removes the snapshot at offset (the broker found
// it unreadable).
func (l *Log) DeleteProducerSnapshot(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.deleteSnapshotsLocked(func(o int64) bool { return o == offset })
}

// ProducerSnapshotOffsets lists the offsets of the snapshots, oldest first.
func (l *Log) ProducerSnapshotOffsets() []int64 {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return slices.Clone(l.snapshots)
}

// deleteSnapshotsLocked removes the snapshots whose offset matches gone.
// Lock should be held (appendMu).
func (l *Log) deleteSnapshotsLocked(gone func(offset int64) bool) error {
	var errs []error
	kept := l.snapshots[:0]
	for _, o := range l.snapshots {
		if !gone(o) {
			kept = append(kept, o)
			continue
		}
		if err := l.fsys.Remove(l.snapshotPath(o)); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		}
	}
	l.snapshots = kept
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: delete producer snapshot of %s: %v", ErrKafkaStorage, l.tp, err)
	}
	return nil
}
