package logstore

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// indexFile is the on-disk copy of one of a segment's index files (.index,
// .timeindex, .txnindex). The entries live in memory, where lookups read
// them; the file is opened only while it is read, written, truncated or
// fsynced, so a segment keeps no descriptor open for its indexes and holds
// one for its .log alone (10,000 partitions must fit a broker's open-file
// limit).
//
// Appending an entry does not touch the file: persist writes the entries
// not yet in it with one WriteAt, and the segment calls it when it is
// flushed (with an fsync, before the recovery point passes it), rolled,
// truncated or closed. (The .txnindex also persists each entry as it is
// added, without an fsync: aborts are rare.) Truncation goes to the file
// at once, so the file never holds an entry that memory no longer has:
// what is on disk is always a prefix of the entries in memory.
//
// Concurrency: the fields are written with the Log's appendMu held (or by
// the sole owner of the segment while a log is opened).
type indexFile struct {
	// The file's name is <dir>/<20-digit base><suffix>, built when the
	// file is opened: dir is the log's own path string and suffix a
	// constant, so a segment holds no path string of its own (a node
	// holds a segment for each of its replicas).
	dir       string
	base      int64
	suffix    string
	entrySize int64
	// written is the number of leading entries the file holds: it holds
	// exactly those, once load, reset or persist has run.
	written int
	// unsynced is set when the file changed since its last fsync.
	unsynced bool
}

// name is the file's path.
func (f *indexFile) name() string { return filepath.Join(f.dir, segmentName(f.base)) + f.suffix }

// readAll reads the whole file, creating it empty if it does not exist.
func (f *indexFile) readAll(fsys FS) ([]byte, error) {
	file, err := fsys.OpenFile(f.name(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	if _, err := file.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

// loaded records that the file holds exactly n entries (load trusted it).
func (f *indexFile) loaded(n int) { f.written, f.unsynced = n, false }

// dirty reports whether persist with sync set has work to do for an index
// of n entries.
func (f *indexFile) dirty(n int) bool { return f.written != n || f.unsynced }

// persist brings the file up to the n entries in memory: it writes entries
// [written, n), each encoded by encode into a slice of entrySize bytes, in
// one WriteAt, and with sync set fsyncs the file. It opens the file only
// when there is something to do.
func (f *indexFile) persist(fsys FS, n int, encode func(dst []byte, i int), sync bool) error {
	if f.written == n && !(sync && f.unsynced) {
		return nil
	}
	if f.written > n { // entries were dropped without truncate: cut the file too
		if err := f.truncate(fsys, n); err != nil {
			return err
		}
	}
	file, err := fsys.OpenFile(f.name(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if f.written < n {
		buf := make([]byte, int64(n-f.written)*f.entrySize)
		for i := f.written; i < n; i++ {
			encode(buf[int64(i-f.written)*f.entrySize:], i)
		}
		f.unsynced = true
		if _, err := file.WriteAt(buf, int64(f.written)*f.entrySize); err != nil {
			file.Close()
			return err
		}
		f.written = n
	}
	if sync {
		if err := file.Sync(); err != nil {
			file.Close()
			return err
		}
		f.unsynced = false
	}
	return file.Close()
}

// truncate cuts the file to n entries if it holds more; entries past
// written exist only in memory and need no file access.
func (f *indexFile) truncate(fsys FS, n int) error {
	if n >= f.written {
		return nil
	}
	return f.truncateFile(fsys, n, os.O_RDWR)
}

// reset empties the file, creating it if needed, whatever it held before
// (a rebuild, or a new segment over files of an earlier incarnation).
func (f *indexFile) reset(fsys FS) error {
	return f.truncateFile(fsys, 0, os.O_RDWR|os.O_CREATE)
}

func (f *indexFile) truncateFile(fsys FS, n int, flag int) error {
	file, err := fsys.OpenFile(f.name(), flag, 0o644)
	if err != nil {
		return err
	}
	f.unsynced = true
	if err := file.Truncate(int64(n) * f.entrySize); err != nil {
		file.Close()
		return err
	}
	f.written = n
	return file.Close()
}
