package logstore

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

const epochCheckpointFile = "leader-epoch-checkpoint"

// epochEntry says: leader epoch Epoch wrote its first record at StartOffset.
type epochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader-epoch cache (KIP-101): the start offset of every
// leader epoch that wrote to this log, persisted in leader-epoch-checkpoint
// after every change. Followers use it, through OffsetForLeaderEpoch, to
// find where their log diverges from the leader's instead of truncating
// blindly to a high watermark.
//
// Concurrency: mu is a leaf lock; it may be taken with any Log lock held.
type epochCache struct {
	mu   sync.Mutex
	fsys FS
	// dir is the log's directory (the Log's own path string, so it costs
	// no allocation); the file's path is built when it is read or written.
	dir     string
	entries []epochEntry // epochs and start offsets strictly increasing
}

// path is the leader-epoch-checkpoint file's path.
func (c *epochCache) path() string { return filepath.Join(c.dir, epochCheckpointFile) }

func openEpochCache(fsys FS, dir string) (*epochCache, error) {
	c := &epochCache{fsys: fsys, dir: dir}
	data, err := readWholeFile(fsys, c.path())
	if err != nil {
		if isNotExist(err) {
			return c, nil
		}
		return nil, err
	}
	lines, err := parseCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.path(), err)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s: bad entry %q", c.path(), l)
		}
		var e epochEntry
		if _, err := fmt.Sscan(f[0], &e.Epoch); err != nil {
			return nil, fmt.Errorf("%s: bad epoch %q", c.path(), l)
		}
		if _, err := fmt.Sscan(f[1], &e.StartOffset); err != nil {
			return nil, fmt.Errorf("%s: bad offset %q", c.path(), l)
		}
		c.entries = append(c.entries, e)
	}
	return c, nil
}

// persistLocked writes the checkpoint. Lock should be held.
func (c *epochCache) persistLocked() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeFileAtomic(c.fsys, c.path(), formatCheckpoint(lines))
}

// assign records that epoch starts at startOffset if epoch is newer than
// the latest known. An entry that conflicts (same or later epoch, or a start
// offset at or past startOffset) is dropped first, as Kafka does, so the
// cache stays monotonic even after an unclean leader election.
func (c *epochCache) assign(epoch int32, startOffset int64) error {
	if epoch < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 {
		last := c.entries[n-1]
		if last.Epoch == epoch && last.StartOffset <= startOffset {
			return nil
		}
		if last.Epoch > epoch {
			return nil // an older epoch cannot append after a newer one
		}
	}
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Epoch < epoch && e.StartOffset < startOffset {
			kept = append(kept, e)
		}
	}
	c.entries = append(kept, epochEntry{Epoch: epoch, StartOffset: startOffset})
	return c.persistLocked()
}

// latest returns the newest epoch, -1 if none.
func (c *epochCache) latest() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == 0 {
		return -1
	}
	return c.entries[len(c.entries)-1].Epoch
}

// endOffsetFor answers OffsetForLeaderEpoch (KIP-101, KIP-279):
//   - requested is the latest epoch: (latest, logEndOffset);
//   - otherwise, with H the first epoch above requested: (the largest epoch
//     <= requested, H's start offset) — or (requested, H's start) when no
//     epoch <= requested is known (the log was truncated from the start);
//   - no epoch above requested (requested is newer than anything here), or
//     an empty cache: (-1, -1).
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if requested < 0 || len(c.entries) == 0 {
		return -1, -1
	}
	if c.entries[len(c.entries)-1].Epoch == requested {
		return requested, logEndOffset
	}
	hi := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].Epoch > requested })
	if hi == len(c.entries) {
		return -1, -1
	}
	if hi == 0 {
		return requested, c.entries[0].StartOffset
	}
	return c.entries[hi-1].Epoch, c.entries[hi].StartOffset
}

// truncateFromEnd drops epochs that start at or after endOffset (the log
// was truncated to endOffset).
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	for n > 0 && c.entries[n-1].StartOffset >= endOffset {
		n--
	}
	if n == len(c.entries) {
		return nil
	}
	c.entries = c.entries[:n]
	return c.persistLocked()
}

// truncateFromStart forgets epochs wholly below startOffset; the epoch that
// covers startOffset is kept, its start moved up to startOffset.
func (c *epochCache) truncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if i == 0 {
		return nil
	}
	if i == 1 && c.entries[0].StartOffset == startOffset {
		return nil
	}
	rest := append([]epochEntry{{Epoch: c.entries[i-1].Epoch, StartOffset: startOffset}}, c.entries[i:]...)
	c.entries = rest
	return c.persistLocked()
}

func (c *epochCache) snapshot() []epochEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]epochEntry(nil), c.entries...)
}

// epochFor returns the epoch of the last entry starting at or below offset.
func (c *epochCache) epochFor(offset int64) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := sort.Search(len(c.entries), func(i int) bool { return c.entries[i].StartOffset > offset })
	if i == 0 {
		return -1
	}
	return c.entries[i-1].Epoch
}
