package logstore

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// offsetIndexEntrySize is the size of one .index entry: int32 offset
// relative to the segment's base offset, int32 position in the .log file.
const offsetIndexEntrySize = 8

// offsetIndex is a segment's sparse offset index. Kafka preallocates and
// mmaps the file; sluice appends entries to the file and keeps a copy in
// memory for lookups, so the file never contains trailing zero entries and
// its size is always a multiple of the entry size.
//
// The entry offset is the last offset of the batch that starts at the entry's
// position (as Kafka writes it for v2 batches, and as kafka-dump-log.sh
// checks it). So for any target >= entry offset, scanning may start there.
//
// Concurrency: entries is guarded by the owning Log's segsMu.
type offsetIndex struct {
	file       File
	path       string
	base       int64
	entries    []offsetIndexEntry
	maxEntries int
}

type offsetIndexEntry struct {
	relOffset int32
	position  int32
}

func openOffsetIndex(fsys FS, path string, base int64, maxBytes int32) (*offsetIndex, error) {
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &offsetIndex{file: f, path: path, base: base, maxEntries: maxIndexEntries(maxBytes, offsetIndexEntrySize)}, nil
}

func maxIndexEntries(maxBytes int32, entrySize int) int {
	n := int(maxBytes) / entrySize
	if n < 1 {
		n = 1
	}
	return n
}

// load reads the file into memory. It reports false when the file cannot be
// trusted (partial entry, offsets or positions not increasing, a position
// at or past logSize); the caller then rebuilds it from the log.
func (x *offsetIndex) load(logSize int64) (bool, error) {
	st, err := x.file.Stat()
	if err != nil {
		return false, err
	}
	if st.Size()%offsetIndexEntrySize != 0 {
		return false, nil
	}
	buf := make([]byte, st.Size())
	if _, err := x.file.ReadAt(buf, 0); err != nil && len(buf) > 0 {
		return false, err
	}
	entries := make([]offsetIndexEntry, 0, len(buf)/offsetIndexEntrySize)
	for i := 0; i < len(buf); i += offsetIndexEntrySize {
		e := offsetIndexEntry{
			relOffset: int32(binary.BigEndian.Uint32(buf[i:])),
			position:  int32(binary.BigEndian.Uint32(buf[i+4:])),
		}
		if e.relOffset < 0 || e.position < 0 || int64(e.position) >= logSize {
			return false, nil
		}
		if n := len(entries); n > 0 && (e.relOffset <= entries[n-1].relOffset || e.position <= entries[n-1].position) {
			return false, nil
		}
		entries = append(entries, e)
	}
	x.entries = entries
	return true, nil
}

func (x *offsetIndex) full() bool { return len(x.entries) >= x.maxEntries }

// append adds an entry at the end of the file. Callers guarantee offset and
// position grow.
func (x *offsetIndex) append(offset, position int64) error {
	if !fitsRelativeOffset(offset, x.base) {
		return fmt.Errorf("index %s: offset %d not relative to %d", x.path, offset, x.base)
	}
	var buf [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(buf[0:], uint32(offset-x.base))
	binary.BigEndian.PutUint32(buf[4:], uint32(position))
	if _, err := x.file.WriteAt(buf[:], int64(len(x.entries))*offsetIndexEntrySize); err != nil {
		return err
	}
	x.entries = append(x.entries, offsetIndexEntry{relOffset: int32(offset - x.base), position: int32(position)})
	return nil
}

// lookup returns the position to start scanning from for target: the
// position of the last entry whose offset is <= target, or 0.
func (x *offsetIndex) lookup(target int64) int64 {
	rel := target - x.base
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].relOffset) > rel })
	if i == 0 {
		return 0
	}
	return int64(x.entries[i-1].position)
}

// truncateToPosition drops entries at or past position (the log was cut there).
func (x *offsetIndex) truncateToPosition(position int64) error {
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].position) >= position })
	return x.truncateEntries(i)
}

func (x *offsetIndex) truncateEntries(n int) error {
	if n == len(x.entries) {
		return nil
	}
	if err := x.file.Truncate(int64(n) * offsetIndexEntrySize); err != nil {
		return err
	}
	x.entries = x.entries[:n]
	return nil
}

// reset empties the index, before a rebuild.
func (x *offsetIndex) reset() error {
	if err := x.file.Truncate(0); err != nil {
		return err
	}
	x.entries = nil
	return nil
}

func (x *offsetIndex) sizeBytes() int64 { return int64(len(x.entries)) * offsetIndexEntrySize }
