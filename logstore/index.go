package logstore

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// offsetIndexEntrySize is the size of one .index entry: int32 offset
// relative to the segment's base offset, int32 position in the .log file.
const offsetIndexEntrySize = 8

// offsetIndex is a segment's sparse offset index. Kafka preallocates and
// mmaps the file; sluice keeps the entries in memory for lookups and
// appends them to the file when the segment is flushed, rolled, truncated
// or closed (see indexFile), so the file never contains trailing zero
// entries and its size is always a multiple of the entry size.
//
// The entry offset is the last offset of the batch that starts at the entry's
// position (as Kafka writes it for v2 batches, and as kafka-dump-log.sh
// checks it). So for any target >= entry offset, scanning may start there.
//
// Concurrency: entries is guarded by the owning Log's segsMu; the file by
// appendMu (see indexFile).
type offsetIndex struct {
	file       indexFile
	base       int64
	entries    []offsetIndexEntry
	maxEntries int
}

type offsetIndexEntry struct {
	relOffset int32
	position  int32
}

// newOffsetIndex is the offset index of the segment at base in dir.
func newOffsetIndex(dir string, base int64, maxBytes int32) *offsetIndex {
	return &offsetIndex{file: indexFile{dir: dir, base: base, suffix: indexSuffix, entrySize: offsetIndexEntrySize}, base: base,
		maxEntries: maxIndexEntries(maxBytes, offsetIndexEntrySize)}
}

func maxIndexEntries(maxBytes int32, entrySize int) int {
	n := int(maxBytes) / entrySize
	if n < 1 {
		n = 1
	}
	return n
}

// load reads the file into memory, creating it empty if it is missing. It
// reports false when the file cannot be trusted (partial entry, offsets or
// positions not increasing, a position at or past logSize); the caller
// then rebuilds it from the log.
func (x *offsetIndex) load(fsys FS, logSize int64) (bool, error) {
	buf, err := x.file.readAll(fsys)
	if err != nil {
		return false, err
	}
	if len(buf)%offsetIndexEntrySize != 0 {
		return false, nil
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
	x.file.loaded(len(entries))
	return true, nil
}

func (x *offsetIndex) full() bool { return len(x.entries) >= x.maxEntries }

// append adds an entry in memory; persist writes it to the file. Callers
// guarantee offset and position grow.
func (x *offsetIndex) append(offset, position int64) error {
	if !fitsRelativeOffset(offset, x.base) {
		return fmt.Errorf("index %s: offset %d not relative to %d", x.file.name(), offset, x.base)
	}
	x.entries = append(x.entries, offsetIndexEntry{relOffset: int32(offset - x.base), position: int32(position)})
	return nil
}

// persist writes the entries not yet in the file and, with sync set,
// fsyncs it. Lock should be held (appendMu).
func (x *offsetIndex) persist(fsys FS, sync bool) error {
	return x.file.persist(fsys, len(x.entries), func(dst []byte, i int) {
		binary.BigEndian.PutUint32(dst[0:], uint32(x.entries[i].relOffset))
		binary.BigEndian.PutUint32(dst[4:], uint32(x.entries[i].position))
	}, sync)
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

// truncateToPosition drops entries at or past position (the log was cut
// there), in memory and in the file.
func (x *offsetIndex) truncateToPosition(fsys FS, position int64) error {
	i := sort.Search(len(x.entries), func(i int) bool { return int64(x.entries[i].position) >= position })
	if err := x.file.truncate(fsys, i); err != nil {
		return err
	}
	x.entries = x.entries[:i]
	return nil
}

// reset empties the index and its file, before a rebuild or in a new
// segment.
func (x *offsetIndex) reset(fsys FS) error {
	if err := x.file.reset(fsys); err != nil {
		return err
	}
	x.entries = nil
	return nil
}

func (x *offsetIndex) sizeBytes() int64 { return int64(len(x.entries)) * offsetIndexEntrySize }
