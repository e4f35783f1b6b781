//go:build unix

package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestFileCacheConcurrentReadsAndEviction runs readers (copying reads, and
// sendfile's way: SyscallConn().Control with pread on the descriptor it
// lends) and appenders over more logs than the cache's budget, so files are
// evicted and reopened under them all the time. Every read must return
// whole batches of the log it asked (timestamps encode the log), and no
// descriptor may be closed under a reader. Meant for -race.
func TestFileCacheConcurrentReadsAndEviction(t *testing.T) {
	const logs = 48
	files := NewFileCache(minFileBudget)
	d, err := OpenDir(filepath.Join(t.TempDir(), "data"), Options{FileCache: files, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 400
	ls := make([]*Log, logs)
	for i := range ls {
		if ls[i], err = d.Open(TopicPartition{Topic: "race", Partition: int32(i)}, [16]byte{}, cfg); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, ls[i], simpleBatch(t, 2, int64(1_000_000*i)), 0)
	}
	stamp := func(i int) int64 { return int64(1_000_000 * i) }

	var wg, readers sync.WaitGroup
	var failed atomic.Value
	fail := func(err error) { failed.CompareAndSwap(nil, err) }
	stop := make(chan struct{})
	for w := 0; w < 2; w++ { // appenders, each owning every other log
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for n := 0; n < 300; n++ {
				i := 2*r.Intn(logs/2) + w
				if _, err := ls[i].AppendAsLeader(simpleBatch(t, 1+r.Intn(3), stamp(i)+int64(n)), 0); err != nil {
					fail(err)
					return
				}
			}
		}(w)
	}
	check := func(i int, data []byte) error {
		for b := data; len(b) > 0; {
			h := parseHeader(b)
			if int64(len(b)) < h.size() || batchCRC(b[:h.size()]) != h.CRC {
				return errors.New("torn or corrupt batch")
			}
			if h.BaseTimestamp/1_000_000 != int64(i) {
				return errors.New("a batch of another log")
			}
			b = b[h.size():]
		}
		return nil
	}
	for w := 0; w < 4; w++ { // readers
		readers.Add(1)
		go func(w int) {
			defer readers.Done()
			r := rand.New(rand.NewSource(int64(100 + w)))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.Intn(logs)
				l := ls[i]
				off := r.Int63n(l.LogEndOffset())
				sl, err := l.ReadSlice(off, 1<<20, math.MaxInt64, true)
				if err != nil {
					fail(err)
					return
				}
				if sl.Size == 0 {
					continue
				}
				var data []byte
				if w%2 == 0 {
					data, err = sl.Bytes()
				} else {
					data, err = preadControl(sl)
				}
				if err == nil {
					err = check(i, data)
				}
				if err != nil {
					fail(err)
					return
				}
			}
		}(w)
	}
	wg.Wait() // the appenders
	close(stop)
	readers.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	st := files.Stats()
	t.Logf("cache: %+v", st)
	if st.Evictions == 0 {
		t.Fatal("no evictions: the test did not test eviction")
	}
	for i, l := range ls {
		for _, h := range readAll(t, l, 0) {
			if h.BaseTimestamp/1_000_000 != int64(i) {
				t.Fatalf("log %d holds a batch stamped %d", i, h.BaseTimestamp)
			}
		}
	}
}

// preadControl reads a slice as sendfile does: through the descriptor
// SyscallConn's Control lends, with pread(2) standing for sendfile(2).
func preadControl(sl Slice) ([]byte, error) {
	sc, ok := sl.File.(syscall.Conn)
	if !ok {
		return nil, errors.New("segment file is not a syscall.Conn")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	data := make([]byte, sl.Size)
	var rerr error
	if err := raw.Control(func(fd uintptr) {
		n, err := syscall.Pread(int(fd), data, sl.Pos)
		if err == nil && int64(n) < sl.Size {
			err = errors.New("short pread")
		}
		rerr = err
	}); err != nil {
		return nil, err
	}
	return data, rerr
}

// TestFileCacheCloseWaitsForReaders: closing a file (its segment deleted)
// while an operation holds its descriptor leaves the descriptor open until
// that operation ends; later operations fail as on a closed file.
func TestFileCacheCloseWaitsForReaders(t *testing.T) {
	c := NewFileCache(minFileBudget)
	name := filepath.Join(t.TempDir(), segmentName(0)+logSuffix)
	h, err := openCached(c, OSFS{}, name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteAt([]byte("hello"), 0); err != nil {
		t.Fatal(err)
	}
	f, err := h.acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "hello" {
		t.Fatalf("read under Close: %q %v", buf, err)
	}
	h.release()
	if _, err := f.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("descriptor still open after the last release: %v", err)
	}
	if _, err := h.ReadAt(buf, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
	if c.Stats().Open != 0 {
		t.Fatalf("cache %+v after Close", c.Stats())
	}
}

// shortFS fails opens of .log files with EMFILE while short is set.
type shortFS struct {
	FS
	short atomic.Bool
}

func (f *shortFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if f.short.Load() && filepath.Ext(name) == logSuffix {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return f.FS.OpenFile(name, flag, perm)
}

// TestFileCacheReopenShortOfDescriptors: a segment file that cannot be
// reopened for want of descriptors fails the read or append with
// KAFKA_STORAGE_ERROR, but it is no storage failure: OnStorageError is not
// called, the log stays writable, and once descriptors are back reads and
// appends work and nothing was lost. A file that is gone, on the other
// hand, is a storage error, and its log's data is not recreated.
func TestFileCacheReopenShortOfDescriptors(t *testing.T) {
	files := NewFileCache(minFileBudget)
	efs := &shortFS{FS: OSFS{}}
	var storageErrors atomic.Int32
	d, err := OpenDir(filepath.Join(t.TempDir(), "data"), Options{FS: efs, FileCache: files, Logger: slog.New(slog.DiscardHandler),
		OnStorageError: func(TopicPartition, error) { storageErrors.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close(nil)
	cfg := DefaultConfig()
	l, err := d.Open(TopicPartition{Topic: "b", Partition: 0}, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simpleBatch(t, 2, 5), 0)
	want, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	others := make([]*Log, 0, 2*minFileBudget)
	evict := func() {
		for i := 0; cachedOf(l.segments[0].log).isOpen(); i++ {
			if i == len(others) {
				o, err := d.Open(TopicPartition{Topic: "c", Partition: int32(i)}, [16]byte{}, cfg)
				if err != nil {
					t.Fatal(err)
				}
				others = append(others, o)
			}
			mustAppend(t, others[i%len(others)], simpleBatch(t, 1, 1), 0)
			if i > 10*minFileBudget {
				t.Fatal("segment never evicted")
			}
		}
	}
	evict()
	efs.short.Store(true)
	if _, err := l.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrKafkaStorage) || !isFileBudgetError(err) {
		t.Fatalf("read short of descriptors: %v", err)
	}
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 6), 0); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("append short of descriptors: %v", err)
	}
	efs.short.Store(false)
	if n := storageErrors.Load(); n != 0 {
		t.Fatalf("OnStorageError called %d times for a shortage of descriptors", n)
	}
	mustAppend(t, l, simpleBatch(t, 1, 7), 0)
	got, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil || !bytes.Equal(got.Data[:len(want.Data)], want.Data) || l.LogEndOffset() != 3 {
		t.Fatalf("after the shortage: %v, LEO %d", err, l.LogEndOffset())
	}

	// The file removed behind the log's back: a storage error, reported.
	evict()
	if err := os.Remove(l.segments[0].path(logSuffix)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrKafkaStorage) || isFileBudgetError(err) {
		t.Fatalf("read of a removed file: %v", err)
	}
	if storageErrors.Load() == 0 {
		t.Fatal("a removed segment file was not reported as a storage error")
	}
	if _, err := os.Stat(l.segments[0].path(logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the removed file was recreated: %v", err)
	}
}

// isOpen reports whether the file holds a descriptor now.
func (h *cachedFile) isOpen() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f != nil
}
