package logstore

// The aborted-transaction index (.txnindex): one per segment, holding every
// transaction aborted by a marker in that segment, in marker order, so a
// read_committed fetch can tell the consumer which records to drop without
// the broker decoding anything. The file is created with its first entry;
// most segments have none. Like Kafka, the broker decides what goes in (it
// owns the producer state, package txn): logstore stores, truncates,
// deletes and queries the entries.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

const (
	txnIndexSuffix    = ".txnindex"
	txnIndexEntrySize = 34 // frozen: Kafka's AbortedTxn
	txnIndexVersion   = 0
)

// AbortedTxn is one aborted transaction: producer ProducerID wrote its
// first record at FirstOffset and the ABORT marker at LastOffset.
// LastStableOffset is the last stable offset when the marker was written
// (the first offset of the oldest transaction of another producer still
// open then, or LastOffset+1), which lets AbortedTxns stop searching early.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// txnIndex is a segment's .txnindex. Each entry is written to the file as
// it is added (aborts are rare, so this is off the append path), by a
// descriptor opened for that write; the segment fsyncs the file when it is
// flushed (see indexFile). Concurrency: entries is guarded by the owning
// Log's segsMu; the file is written with appendMu held.
type txnIndex struct {
	fsys    FS
	file    indexFile // the file exists once written > 0 or an existing file was loaded
	entries []AbortedTxn
}

// openTxnIndex loads the segment's .txnindex if it exists. A torn last
// entry (a crash mid-write) or an entry of an unknown version ends the
// file: it is truncated there. The file is closed again before returning.
func openTxnIndex(fsys FS, dir string, base int64) (*txnIndex, error) {
	x := &txnIndex{fsys: fsys, file: indexFile{dir: dir, base: base, suffix: txnIndexSuffix, entrySize: txnIndexEntrySize}}
	f, err := fsys.OpenFile(x.file.name(), os.O_RDWR, 0o644)
	if err != nil {
		if isNotExist(err) {
			return x, nil
		}
		return nil, err
	}
	if err := x.load(f); err != nil {
		f.Close()
		return nil, err
	}
	return x, f.Close()
}

// load reads the entries from f, truncating a torn or unknown tail.
func (x *txnIndex) load(f File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	buf := make([]byte, st.Size())
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	n := 0
	for ; (n+1)*txnIndexEntrySize <= len(buf); n++ {
		b := buf[n*txnIndexEntrySize:]
		if int16(binary.BigEndian.Uint16(b)) != txnIndexVersion {
			break
		}
		x.entries = append(x.entries, decodeAbortedTxn(b))
	}
	x.file.loaded(n)
	if int64(n*txnIndexEntrySize) != st.Size() {
		x.file.unsynced = true
		if err := f.Truncate(int64(n * txnIndexEntrySize)); err != nil {
			return err
		}
	}
	return nil
}

func decodeAbortedTxn(b []byte) AbortedTxn {
	be := binary.BigEndian
	return AbortedTxn{
		ProducerID:       int64(be.Uint64(b[2:])),
		FirstOffset:      int64(be.Uint64(b[10:])),
		LastOffset:       int64(be.Uint64(b[18:])),
		LastStableOffset: int64(be.Uint64(b[26:])),
	}
}

func encodeAbortedTxn(dst []byte, e AbortedTxn) {
	be := binary.BigEndian
	be.PutUint16(dst[0:], txnIndexVersion)
	be.PutUint64(dst[2:], uint64(e.ProducerID))
	be.PutUint64(dst[10:], uint64(e.FirstOffset))
	be.PutUint64(dst[18:], uint64(e.LastOffset))
	be.PutUint64(dst[26:], uint64(e.LastStableOffset))
}

// persist writes the entries not yet in the file, creating it, and with
// sync set fsyncs it. Lock should be held (appendMu).
func (x *txnIndex) persist(sync bool) error {
	return x.file.persist(x.fsys, len(x.entries), func(dst []byte, i int) { encodeAbortedTxn(dst, x.entries[i]) }, sync)
}

// truncateFrom drops the entries whose marker is at or after offset, in
// memory and in the file. Callers hold segsMu for writing (or own the
// segment).
func (x *txnIndex) truncateFrom(offset int64) error {
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(x.entries) {
		return nil
	}
	if err := x.file.truncate(x.fsys, n); err != nil {
		return err
	}
	x.entries = x.entries[:n]
	return nil
}

// reset empties the index (recovery rebuilds it through the broker). A
// file that exists is truncated, none is created.
func (x *txnIndex) reset() error {
	if err := x.file.truncate(x.fsys, 0); err != nil {
		return err
	}
	x.entries = nil
	return nil
}

// AppendAbortedTxn records an aborted transaction in the index of the
// segment holding its marker. Entries arrive in marker order; one whose
// marker is not after the segment's last entry is already there and is
// skipped, so the broker may replay the log's markers after a restart or
// a truncation without duplicating entries.
func (l *Log) AppendAbortedTxn(e AbortedTxn) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if e.LastOffset < l.segments[0].base || e.LastOffset >= l.logEnd {
		return fmt.Errorf("%w: aborted transaction marker at %d outside [%d, %d)", ErrOffsetOutOfRange, e.LastOffset, l.segments[0].base, l.logEnd)
	}
	seg := l.segments[l.floorSegment(e.LastOffset)]
	x := seg.txnIndex
	if n := len(x.entries); n > 0 && x.entries[n-1].LastOffset >= e.LastOffset {
		return nil
	}
	l.segsMu.Lock()
	x.entries = append(x.entries, e)
	l.segsMu.Unlock()
	if err := x.persist(false); err != nil {
		return l.fail("txn index append", err)
	}
	return nil
}

// AbortedTxns returns the aborted transactions that overlap the offsets
// [fetchOffset, upperBound): those whose marker is at or after fetchOffset
// and whose first record is below upperBound, in marker order. As Kafka's
// collectAbortedTransactions it searches from the segment holding
// fetchOffset and stops at the first entry whose last stable offset reaches
// upperBound: no later entry can start below it. The caller owns the slice.
func (l *Log) AbortedTxns(fetchOffset, upperBound int64) []AbortedTxn {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	if l.closed {
		return nil
	}
	var out []AbortedTxn
	for _, s := range l.segments[l.floorSegment(fetchOffset):] {
		for _, e := range s.txnIndex.entries {
			if e.LastOffset >= fetchOffset && e.FirstOffset < upperBound {
				out = append(out, e)
			}
			if e.LastStableOffset >= upperBound {
				return out
			}
		}
	}
	return out
}
