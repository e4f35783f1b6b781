package logstore

import (
	"path/filepath"
	"sync"
)

// This file owns the part of Dir.Open that touches the disk before the
// Dir's lock is taken: a new partition's directory and its
// partition.metadata. Written there, with the fsyncs Kafka's durability
// asks for (the file's contents, then the rename in the partition
// directory, then the new directory's entry in the log directory), those
// flushes no longer run one after the other under the Dir's lock: callers
// opening many new partitions at once (the broker's log opener) flush
// concurrently, which the filesystem commits together, and the log
// directory is flushed once for all the partition directories created
// meanwhile (openSync). openLog then finds the file in place and writes
// nothing.

// openSync coalesces the fsyncs of the log directory asked for by
// concurrent Opens of new partitions: a caller waits for one flush that
// started after its directory was created, and one flush serves every
// caller waiting for it.
type openSync struct {
	mu              sync.Mutex
	cond            *sync.Cond
	running         bool
	started, done   uint64
	err             error
	syncs, requests uint64 // for tests: flushes made, and asked for
}

// syncLogDir returns once the log directory has been fsynced by a flush
// that started after the call.
func (d *Dir) syncLogDir() error {
	s := &d.opening
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	s.requests++
	target := s.started + 1
	for s.done < target {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		n := s.started
		s.mu.Unlock()
		err := syncDir(d.fsys, d.path)
		s.mu.Lock()
		s.running = false
		s.done, s.err = n, err
		s.syncs++
		s.cond.Broadcast()
	}
	return s.err
}

// needsMetadata reports whether an Open of tp with a topic id may have to
// write partition.metadata: the Dir is open, tp is neither open nor
// offline.
func (d *Dir) needsMetadata(tp TopicPartition) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.closed && d.offline[tp] == nil && d.logs[tp] == nil
}

// prepareMetadata creates tp's directory and its partition.metadata naming
// topicID if the directory has none, durably: the file written under a
// temporary name and fsynced, renamed, the partition directory fsynced and,
// when the directory is new, the log directory (syncLogDir). Any failure
// is left for openLog, which writes the file again under the Dir's lock
// and reports it as Open always did; a file already there, whatever it
// says, is openLog's to check too.
func (d *Dir) prepareMetadata(tp TopicPartition, topicID [16]byte) {
	path := filepath.Join(d.path, tp.String())
	created := false
	if _, err := d.fsys.Stat(path); err != nil {
		if !isNotExist(err) {
			return
		}
		if err := d.fsys.MkdirAll(path, 0o755); err != nil {
			return
		}
		created = true
	} else if _, err := d.fsys.Stat(filepath.Join(path, partitionMetadataFile)); !isNotExist(err) {
		return // there, or unreadable: openLog decides
	}
	if err := writeFileAtomic(d.fsys, filepath.Join(path, partitionMetadataFile), partitionMetadata(topicID)); err != nil {
		return
	}
	if created {
		// A failed flush leaves the entry as durable as Open left it
		// before it flushed the log directory at all; the log opens.
		_ = d.syncLogDir()
	}
}
