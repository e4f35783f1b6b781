package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// This file owns the file-descriptor budget: segment .log files are opened
// through a FileCache, which keeps at most its budget of them open and
// closes the least recently used idle ones to open another (100,000
// partitions at one descriptor a segment exceed any sensible open-file
// limit, and most of their segments are cold).
//
// A segment holds a cachedFile, a handle that stands for its .log whether
// or not a descriptor is open: every ReadAt, WriteAt, Truncate, Sync and
// Stat acquires the descriptor (reopening the file by its path when it was
// closed), uses it and releases it, so a descriptor in use is never closed;
// sendfile holds it for the whole transfer through SyscallConn. Eviction is
// the clock algorithm (LRU's usual approximation): a file used since the
// hand last passed gets a second chance, so a log being appended to or read
// keeps its active segment open while it is hot, and eviction costs no
// global lock on the read and write paths.
//
// A reopen never creates or truncates: the flags drop O_CREATE, O_TRUNC
// and O_EXCL, and the reopened file must be the one first opened (same
// device and inode), or the read fails rather than read another file that
// took the name. A reopen that fails for want of descriptors (EMFILE,
// ENFILE) or memory is no fault of the files: the cache closes more idle
// files and tries once more, and if that fails too the operation returns
// an error matching ErrKafkaStorage but not the log's: the log stays
// writable and OnStorageError is not called (see isFileBudgetError). Any
// other reopen failure (the file gone, an I/O error) is a storage error
// and takes the usual path.
//
// A file written or opened since its last Sync is "dirty": Sync reopens it
// if it was closed meanwhile (fsync through a new descriptor flushes the
// same inode's pages), and skips a clean file without opening it. Closing
// a descriptor does not fsync; Linux reports a writeback error that
// nobody has seen to the next fsync of the file, from any descriptor.

// minFileBudget is the smallest budget a FileCache takes: below it a
// compaction or a move, which hold a few files at once per log, would
// thrash.
const minFileBudget = 16

// FileCache bounds the segment .log files open at once across the Dirs that
// share it (the process's open-file limit is what it protects, so the
// default is one cache for the process; see Options.FileCache).
type FileCache struct {
	budget int

	mu   sync.Mutex
	open []*cachedFile // files holding (or opening) a descriptor, clock order
	hand int

	opens, evictions, overBudget atomic.Int64
}

// NewFileCache returns a cache that keeps at most budget segment files
// open (at least 16). Files in use when the budget is reached are not
// closed: the cache goes over budget until they are released, and counts
// it (FileCacheStats.OverBudget).
func NewFileCache(budget int) *FileCache {
	return &FileCache{budget: max(budget, minFileBudget)}
}

var (
	defaultCacheOnce sync.Once
	defaultCache     *FileCache
)

// DefaultFileCache is the process's cache, used by every Dir opened without
// Options.FileCache: its budget is half the soft RLIMIT_NOFILE (the Go
// runtime raises the soft limit to the hard one at start), leaving the
// other half for sockets, index and checkpoint writes and the runtime.
func DefaultFileCache() *FileCache {
	defaultCacheOnce.Do(func() { defaultCache = NewFileCache(openFileLimit() / 2) })
	return defaultCache
}

// FileCacheStats describes a FileCache.
type FileCacheStats struct {
	Budget     int   // files kept open at most (while idle)
	Open       int   // segment files holding a descriptor now
	Opens      int64 // descriptors opened, first opens and reopens
	Evictions  int64 // idle descriptors closed to stay within the budget
	OverBudget int64 // opens that found every open file in use
}

// Stats reports the cache's figures.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	n := len(c.open)
	c.mu.Unlock()
	return FileCacheStats{Budget: c.budget, Open: n, Opens: c.opens.Load(), Evictions: c.evictions.Load(),
		OverBudget: c.overBudget.Load()}
}

// admit reserves a slot for h, which is about to open its descriptor,
// evicting idle files to stay within the budget. The caller holds h.mu.
func (c *FileCache) admit(h *cachedFile) {
	c.mu.Lock()
	var victims []File
	if len(c.open) >= c.budget {
		victims = c.evictLocked(len(c.open) - c.budget + 1)
		if len(c.open) >= c.budget {
			c.overBudget.Add(1)
		}
	}
	h.slot = int32(len(c.open))
	c.open = append(c.open, h)
	c.mu.Unlock()
	closeAll(victims)
}

// shed closes up to n idle files whatever their use bits: an open failed
// for want of descriptors. The caller holds no cachedFile lock but its own.
func (c *FileCache) shed(n int) {
	c.mu.Lock()
	for _, h := range c.open {
		if h.mu.TryLock() {
			h.used = false
			h.mu.Unlock()
		}
	}
	victims := c.evictLocked(n)
	c.mu.Unlock()
	closeAll(victims)
}

// evictLocked takes the descriptors of up to n idle files out of the cache
// (two turns of the clock at most) and returns them to close once c.mu is
// released. A file whose lock is held is busy and skipped: the evictor
// never waits for a cachedFile under c.mu (lock order: cachedFile.mu, then
// FileCache.mu). Lock should be held (c.mu).
func (c *FileCache) evictLocked(n int) []File {
	var victims []File
	for steps := 2 * len(c.open); n > 0 && steps > 0 && len(c.open) > 0; steps-- {
		if c.hand >= len(c.open) {
			c.hand = 0
		}
		h := c.open[c.hand]
		if !h.mu.TryLock() {
			c.hand++
			continue
		}
		switch {
		case h.refs > 0 || h.f == nil:
			c.hand++
		case h.used:
			h.used = false
			c.hand++
		default:
			victims = append(victims, h.f)
			h.f = nil
			c.removeLocked(h)
			c.evictions.Add(1)
			n--
		}
		h.mu.Unlock()
	}
	return victims
}

// remove takes h out of the open set. The caller holds h.mu.
func (c *FileCache) remove(h *cachedFile) {
	c.mu.Lock()
	c.removeLocked(h)
	c.mu.Unlock()
}

// removeLocked: Lock should be held (c.mu and h.mu).
func (c *FileCache) removeLocked(h *cachedFile) {
	i := int(h.slot)
	if i < 0 {
		return
	}
	last := len(c.open) - 1
	c.open[i] = c.open[last]
	c.open[i].slot = int32(i)
	c.open[last] = nil
	c.open = c.open[:last]
	h.slot = -1
}

func closeAll(files []File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// cachedFile is a segment's .log: a path and, while cached, a descriptor.
// It implements File, and syscall.Conn for sendfile.
type cachedFile struct {
	c    *FileCache
	fsys FS
	flag int32 // reopen flags: the open's without O_CREATE, O_TRUNC, O_EXCL
	perm fs.FileMode

	mu    sync.Mutex
	path  string
	f     File  // nil while evicted (or closed)
	refs  int32 // operations using f, plus one while pinned
	slot  int32 // index in c.open, -1 if not there; guarded by c.mu and mu
	id    fileID
	used  bool // acquired since the clock hand last passed
	dirty bool // opened, written or truncated since the last Sync
	// pinned: the descriptor stays open until Close (a segment renamed for
	// deletion or moved away, whose name may be taken by another file).
	pinned bool
	// retired: the segment left the log; a reopen that finds no file
	// reports the file closed (the segment was deleted), not an error.
	retired bool
	closed  bool
}

var (
	_ File         = (*cachedFile)(nil)
	_ syscall.Conn = (*cachedFile)(nil)
)

// openCached opens name through c and returns its handle, holding the
// descriptor (it was just opened, and is likely used next).
func openCached(c *FileCache, fsys FS, name string, flag int, perm fs.FileMode) (*cachedFile, error) {
	h := &cachedFile{c: c, fsys: fsys, flag: int32(flag &^ (os.O_CREATE | os.O_TRUNC | os.O_EXCL)), perm: perm,
		path: name, slot: -1, dirty: true}
	h.mu.Lock()
	defer h.mu.Unlock()
	c.admit(h)
	f, err := fsys.OpenFile(name, flag, perm)
	if err != nil && descriptorShortage(err) {
		c.shed(max(c.budget/8, 1))
		f, err = fsys.OpenFile(name, flag, perm)
	}
	if err != nil {
		c.remove(h)
		return nil, err
	}
	c.opens.Add(1)
	h.f, h.used = f, true
	if st, err := f.Stat(); err == nil {
		h.id = fileIDOf(st)
	}
	return h, nil
}

// acquire returns the descriptor, reopening the file if it was evicted;
// release must follow.
func (h *cachedFile) acquire() (File, error) { return h.acquireFor(false) }

// acquireFor is acquire, marking the file dirty for a write.
func (h *cachedFile) acquireFor(write bool) (File, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, os.ErrClosed
	}
	if h.f == nil {
		if err := h.reopenLocked(); err != nil {
			return nil, err
		}
	}
	h.refs++
	h.used = true
	h.dirty = h.dirty || write
	return h.f, nil
}

// reopenLocked opens the evicted file again. Lock should be held (h.mu).
func (h *cachedFile) reopenLocked() error {
	h.c.admit(h)
	f, err := h.fsys.OpenFile(h.path, int(h.flag), h.perm)
	if err != nil && descriptorShortage(err) {
		h.c.shed(max(h.c.budget/8, 1))
		f, err = h.fsys.OpenFile(h.path, int(h.flag), h.perm)
	}
	if err == nil {
		if st, serr := f.Stat(); serr != nil {
			err = serr
		} else if !h.id.same(fileIDOf(st)) {
			err = fmt.Errorf("%w: %s is not the file this segment opened", errFileReplaced, h.path)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		h.c.remove(h)
		if h.retired && (isNotExist(err) || errors.Is(err, errFileReplaced)) {
			return os.ErrClosed // deleted, as the segment was
		}
		if descriptorShortage(err) {
			return &fileBudgetError{path: h.path, err: err}
		}
		return fmt.Errorf("reopen %s: %w", h.path, err)
	}
	h.c.opens.Add(1)
	h.f = f
	return nil
}

var errFileReplaced = errors.New("file replaced")

// release ends an acquire; the last release of a closed file closes it.
func (h *cachedFile) release() {
	h.mu.Lock()
	h.refs--
	var f File
	if h.refs == 0 && h.closed && h.f != nil {
		f = h.f
		h.f = nil
		h.c.remove(h)
	}
	h.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}

// pin keeps the descriptor open until Close (best effort: a file that
// cannot be opened now is left as it is).
func (h *cachedFile) pin() {
	if h.pinnedAlready() {
		return
	}
	if _, err := h.acquire(); err != nil {
		return
	}
	h.mu.Lock()
	if h.pinned {
		h.refs-- // pinned meanwhile; cannot reach 0: the pin holds a ref
	}
	h.pinned = true
	h.mu.Unlock()
}

func (h *cachedFile) pinnedAlready() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pinned
}

// retire marks the file as belonging to a segment that left its log and
// pins its descriptor; rename, if set, is its new path.
func (h *cachedFile) retire(rename string) {
	h.pin()
	h.mu.Lock()
	h.retired = true
	if rename != "" {
		h.path = rename
	}
	h.mu.Unlock()
}

// renamed records the file's new path after a rename.
func (h *cachedFile) renamed(path string) {
	h.mu.Lock()
	h.path = path
	h.mu.Unlock()
}

// ReadAt reads through the descriptor, reopening the file if needed.
func (h *cachedFile) ReadAt(p []byte, off int64) (int, error) {
	f, err := h.acquire()
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.ReadAt(p, off)
}

// WriteAt writes through the descriptor, reopening the file if needed.
func (h *cachedFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := h.acquireFor(true)
	if err != nil {
		return 0, err
	}
	defer h.release()
	return f.WriteAt(p, off)
}

// Truncate truncates through the descriptor.
func (h *cachedFile) Truncate(size int64) error {
	f, err := h.acquireFor(true)
	if err != nil {
		return err
	}
	defer h.release()
	return f.Truncate(size)
}

func (h *cachedFile) markDirty() {
	h.mu.Lock()
	h.dirty = true
	h.mu.Unlock()
}

// Sync fsyncs the file if it was opened, written or truncated since its
// last Sync, reopening it if it was evicted meanwhile.
func (h *cachedFile) Sync() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return os.ErrClosed
	}
	if !h.dirty {
		h.mu.Unlock()
		return nil
	}
	h.dirty = false
	h.mu.Unlock()
	f, err := h.acquire()
	if err == nil {
		err = f.Sync()
		h.release()
	}
	if err != nil {
		h.markDirty()
	}
	return err
}

// Stat stats through the descriptor.
func (h *cachedFile) Stat() (fs.FileInfo, error) {
	f, err := h.acquire()
	if err != nil {
		return nil, err
	}
	defer h.release()
	return f.Stat()
}

// Close closes the file for good: at once, or at the last release of an
// operation still using it. Later operations fail with os.ErrClosed.
func (h *cachedFile) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return os.ErrClosed
	}
	h.closed = true
	if h.pinned {
		h.pinned = false
		h.refs--
	}
	var f File
	if h.refs == 0 && h.f != nil {
		f = h.f
		h.f = nil
		h.c.remove(h)
	}
	h.mu.Unlock()
	if f != nil {
		return f.Close()
	}
	return nil
}

// SyscallConn lets sendfile(2) use the descriptor: Control acquires it
// (reopening the file if needed) for the whole call, so it is not closed
// under the transfer.
func (h *cachedFile) SyscallConn() (syscall.RawConn, error) {
	f, err := h.acquire()
	if err != nil {
		return nil, err
	}
	_, ok := f.(syscall.Conn)
	h.release()
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return cachedRawConn{h}, nil
}

// cachedRawConn is a cachedFile's syscall.RawConn; only Control is used.
type cachedRawConn struct{ h *cachedFile }

func (r cachedRawConn) Control(fn func(fd uintptr)) error {
	f, err := r.h.acquire()
	if err != nil {
		return err
	}
	defer r.h.release()
	sc, ok := f.(syscall.Conn)
	if !ok {
		return errors.ErrUnsupported
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	return raw.Control(fn)
}

func (r cachedRawConn) Read(func(fd uintptr) bool) error  { return errors.ErrUnsupported }
func (r cachedRawConn) Write(func(fd uintptr) bool) error { return errors.ErrUnsupported }

// fileBudgetError is a reopen that failed for want of descriptors or
// memory: nothing was read or written, and the files are as they were.
type fileBudgetError struct {
	path string
	err  error
}

func (e *fileBudgetError) Error() string {
	return fmt.Sprintf("reopen %s: %v (open-file budget)", e.path, e.err)
}
func (e *fileBudgetError) Unwrap() error { return e.err }

// isFileBudgetError reports whether err is a reopen that failed for want
// of descriptors: the operation did nothing, and the files are fine.
func isFileBudgetError(err error) bool {
	var fb *fileBudgetError
	return errors.As(err, &fb)
}

// descriptorShortage reports whether an open failed for want of
// descriptors or kernel memory (EMFILE, ENFILE, ENOMEM), which says
// nothing about the file.
func descriptorShortage(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOMEM)
}

// fileRenamed tells f's handle, if it has one, that the file was renamed.
func fileRenamed(f File, path string) {
	if h := cachedOf(f); h != nil {
		h.renamed(path)
	}
}

// retireFile pins the descriptor of a segment file leaving its log (see
// cachedFile.retire); rename is its new path, or "" if unchanged.
func retireFile(f File, rename string) {
	if h := cachedOf(f); h != nil {
		h.retire(rename)
	}
}

// cachingFS is a Dir's filesystem: segment .log files (and the .log.cleaned
// of a segment being compacted), which the package opens read-write, are
// opened through the Dir's FileCache; everything else passes through.
type cachingFS struct {
	FS
	files *FileCache
}

func (c cachingFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if flag&os.O_RDWR == 0 || !(strings.HasSuffix(name, logSuffix) || strings.HasSuffix(name, logSuffix+cleanedSuffix)) {
		return c.FS.OpenFile(name, flag, perm)
	}
	return openCached(c.files, c.FS, name, flag, perm)
}

// cachedOf returns f's handle, nil for a file not opened through a cache.
func cachedOf(f File) *cachedFile {
	h, _ := f.(*cachedFile)
	return h
}
