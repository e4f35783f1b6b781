package logstore

import (
	"encoding/binary"
	"sort"
)

// timeIndexEntrySize is the size of one .timeindex entry: int64 timestamp,
// int32 offset relative to the segment's base offset.
const timeIndexEntrySize = 12

// timeIndex is a segment's time index: (max timestamp so far, offset of the
// batch that reached it). An entry is added only when the segment's max
// timestamp grows, so timestamps and offsets are both strictly increasing
// and a binary search on either works. As with offsetIndex, entries live
// in memory and are appended to the file (no preallocation) when the
// segment is flushed, rolled, truncated or closed; entries are guarded by
// the Log's segsMu, the file by appendMu.
type timeIndex struct {
	file       indexFile
	base       int64
	entries    []timeIndexEntry
	maxEntries int
}

type timeIndexEntry struct {
	timestamp int64
	relOffset int32
}

func newTimeIndex(dir string, base int64, maxBytes int32) *timeIndex {
	return &timeIndex{file: indexFile{dir: dir, base: base, suffix: timeIndexSuffix, entrySize: timeIndexEntrySize}, base: base,
		maxEntries: maxIndexEntries(maxBytes, timeIndexEntrySize)}
}

// load reads the file; false means it must be rebuilt (see offsetIndex.load).
func (x *timeIndex) load(fsys FS, nextOffset int64) (bool, error) {
	buf, err := x.file.readAll(fsys)
	if err != nil {
		return false, err
	}
	if len(buf)%timeIndexEntrySize != 0 {
		return false, nil
	}
	entries := make([]timeIndexEntry, 0, len(buf)/timeIndexEntrySize)
	for i := 0; i < len(buf); i += timeIndexEntrySize {
		e := timeIndexEntry{
			timestamp: int64(binary.BigEndian.Uint64(buf[i:])),
			relOffset: int32(binary.BigEndian.Uint32(buf[i+8:])),
		}
		if e.relOffset < 0 || x.base+int64(e.relOffset) >= nextOffset {
			return false, nil
		}
		if n := len(entries); n > 0 && (e.timestamp <= entries[n-1].timestamp || e.relOffset < entries[n-1].relOffset) {
			return false, nil
		}
		entries = append(entries, e)
	}
	x.entries = entries
	x.file.loaded(len(entries))
	return true, nil
}

func (x *timeIndex) full() bool { return len(x.entries) >= x.maxEntries }

// last returns the newest entry, or ok=false if there is none.
func (x *timeIndex) last() (timestamp, offset int64, ok bool) {
	if len(x.entries) == 0 {
		return -1, -1, false
	}
	e := x.entries[len(x.entries)-1]
	return e.timestamp, x.base + int64(e.relOffset), true
}

// maybeAppend adds (timestamp, offset) in memory if timestamp is larger
// than the last entry's: the index records growth of the max timestamp
// only. persist writes it to the file.
func (x *timeIndex) maybeAppend(timestamp, offset int64) {
	if n := len(x.entries); n > 0 {
		last := x.entries[n-1]
		if timestamp <= last.timestamp || offset-x.base < int64(last.relOffset) {
			return
		}
	}
	if timestamp < 0 || !fitsRelativeOffset(offset, x.base) {
		return
	}
	x.entries = append(x.entries, timeIndexEntry{timestamp: timestamp, relOffset: int32(offset - x.base)})
}

// persist writes the entries not yet in the file and, with sync set,
// fsyncs it. Lock should be held (appendMu).
func (x *timeIndex) persist(fsys FS, sync bool) error {
	return x.file.persist(fsys, len(x.entries), func(dst []byte, i int) {
		binary.BigEndian.PutUint64(dst[0:], uint64(x.entries[i].timestamp))
		binary.BigEndian.PutUint32(dst[8:], uint32(x.entries[i].relOffset))
	}, sync)
}

// lookup returns the offset of the last entry whose timestamp is <= target,
// or the segment's base offset if there is none: every record before that
// offset is older than the entry and thus not a candidate for ">= target"
// unless equal, which the caller handles by scanning the batch at the offset.
func (x *timeIndex) lookup(target int64) int64 {
	i := sort.Search(len(x.entries), func(i int) bool { return x.entries[i].timestamp > target })
	if i == 0 {
		return x.base
	}
	return x.base + int64(x.entries[i-1].relOffset)
}

// truncateToOffset drops entries for offsets >= offset, in memory and in
// the file.
func (x *timeIndex) truncateToOffset(fsys FS, offset int64) error {
	i := sort.Search(len(x.entries), func(i int) bool { return x.base+int64(x.entries[i].relOffset) >= offset })
	if err := x.file.truncate(fsys, i); err != nil {
		return err
	}
	x.entries = x.entries[:i]
	return nil
}

// reset empties the index and its file (see offsetIndex.reset).
func (x *timeIndex) reset(fsys FS) error {
	if err := x.file.reset(fsys); err != nil {
		return err
	}
	x.entries = nil
	return nil
}
