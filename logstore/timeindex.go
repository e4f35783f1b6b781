package logstore

import (
	"encoding/binary"
	"os"
	"sort"
)

// timeIndexEntrySize is the size of one .timeindex entry: int64 timestamp,
// int32 offset relative to the segment's base offset.
const timeIndexEntrySize = 12

// timeIndex is a segment's time index: (max timestamp so far, offset of the
// batch that reached it). An entry is added only when the segment's max
// timestamp grows, so timestamps and offsets are both strictly increasing
// and a binary search on either works. As with offsetIndex, entries are
// appended (no preallocation) and mirrored in memory; guarded by the Log's
// segsMu.
type timeIndex struct {
	file       File
	path       string
	base       int64
	entries    []timeIndexEntry
	maxEntries int
}

type timeIndexEntry struct {
	timestamp int64
	relOffset int32
}

func openTimeIndex(fsys FS, path string, base int64, maxBytes int32) (*timeIndex, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &timeIndex{file: f, path: path, base: base, maxEntries: maxIndexEntries(maxBytes, timeIndexEntrySize)}, nil
}

// load reads the file; false means it must be rebuilt (see offsetIndex.load).
func (x *timeIndex) load(nextOffset int64) (bool, error) {
	st, err := x.file.Stat()
	if err != nil {
		return false, err
	}
	if st.Size()%timeIndexEntrySize != 0 {
		return false, nil
	}
	buf := make([]byte, st.Size())
	if _, err := x.file.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		return false, err
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

// maybeAppend adds (timestamp, offset) if timestamp is larger than the last
// entry's: the index records growth of the max timestamp only.
func (x *timeIndex) maybeAppend(timestamp, offset int64) error {
	if n := len(x.entries); n > 0 {
		last := x.entries[n-1]
		if timestamp <= last.timestamp || offset-x.base < int64(last.relOffset) {
			return nil
		}
	}
	if timestamp < 0 || !fitsRelativeOffset(offset, x.base) {
		return nil
	}
	var buf [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(buf[0:], uint64(timestamp))
	binary.BigEndian.PutUint32(buf[8:], uint32(offset-x.base))
	if _, err := x.file.WriteAt(buf[:], int64(len(x.entries))*timeIndexEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, timeIndexEntry{timestamp: timestamp, relOffset: int32(offset - x.base)})
	return nil
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

// truncateToOffset drops entries for offsets >= offset.
func (x *timeIndex) truncateToOffset(offset int64) error {
	i := sort.Search(len(x.entries), func(i int) bool { return x.base+int64(x.entries[i].relOffset) >= offset })
	if i == len(x.entries) {
		return nil
	}
	if err := x.file.Truncate(int64(i) * timeIndexEntrySize); err != nil {
		return err
	}
	x.entries = x.entries[:i]
	return nil
}

func (x *timeIndex) reset() error {
	if err := x.file.Truncate(0); err != nil {
		return err
	}
	x.entries = nil
	return nil
}
