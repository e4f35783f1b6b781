package logstore

import (
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestMoveLogWhileAppending moves a log between two directories while a
// writer appends: every acknowledged batch is in the moved log, the same
// *Log keeps working, the old directory is gone once due, and a reopen of
// the destination finds everything.
func TestMoveLogWhileAppending(t *testing.T) {
	src, dst := newTestEnv(t), newTestEnv(t)
	dst.clock = src.clock
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.FileDeleteDelayMs = 0
	l := src.openLog(cfg)
	dd := dst.open()
	for i := 0; i < 100; i++ {
		mustAppend(t, l, simpleBatch(t, 5, int64(i)), 1)
	}
	var wg sync.WaitGroup
	stopWriter := make(chan struct{})
	var appended int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for appended < 3000 {
			select {
			case <-stopWriter:
				return
			default:
			}
			mustAppend(t, l, simpleBatch(t, 5, 1000), 1)
			appended++
		}
	}()
	err := src.dir.MoveLog(testTP, dd, nil, nil)
	close(stopWriter)
	wg.Wait()
	if err != nil {
		t.Fatalf("MoveLog: %v", err)
	}
	if dd.Log(testTP) != l || src.dir.Log(testTP) != nil {
		t.Fatal("the log is not registered in the destination only")
	}
	want := int64(5 * (100 + appended))
	if l.LogEndOffset() != want || len(readAll(t, l, 0)) != 100+appended {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), want)
	}
	mustAppend(t, l, simpleBatch(t, 5, 2000), 1)
	if _, err := src.dir.RemoveDueDeletes(src.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src.partDir()); !os.IsNotExist(err) {
		t.Fatalf("old directory still there: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(src.path, "*-delete"))
	if len(left) != 0 {
		t.Fatalf("old directory not removed: %v", left)
	}
	src.close()
	dst.close()
	l2 := dst.openLog(cfg)
	if l2.LogEndOffset() != want+5 || len(readAll(t, l2, 0)) != 101+appended {
		t.Fatalf("reopened log end %d, want %d", l2.LogEndOffset(), want+5)
	}
	dst.close()
}

// readFaultFS fails every ReadAt of a .log file while failReads is set.
type readFaultFS struct {
	faultFS
	failReads atomic.Bool
}

type readFaultFile struct {
	File
	fs   *readFaultFS
	name string
}

func (f *readFaultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.faultFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &readFaultFile{File: file, fs: f, name: name}, nil
}

func (f *readFaultFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fs.failReads.Load() && strings.HasSuffix(f.name, logSuffix) {
		return 0, errInjected
	}
	return f.File.ReadAt(p, off)
}

// TestStorageErrorsReachTheDirOwner: a failed write and a failed read of a
// log are reported through Options.OnStorageError (the broker takes the
// directory offline on them); a read past the end is not.
func TestStorageErrorsReachTheDirOwner(t *testing.T) {
	e := newTestEnv(t)
	ffs := &readFaultFS{faultFS: faultFS{FS: OSFS{}}}
	var reported atomic.Int32
	d, err := OpenDir(e.path, Options{FS: ffs, Now: e.clock.Now, Logger: slog.New(slog.DiscardHandler),
		OnStorageError: func(tp TopicPartition, err error) {
			if tp != testTP || !errors.Is(err, ErrKafkaStorage) {
				t.Errorf("reported %s: %v", tp, err)
			}
			reported.Add(1)
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.dir = d
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 2, 1), 0)
	if _, err := l.Read(5, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) || reported.Load() != 0 {
		t.Fatalf("read past the end: %v, %d reports", err, reported.Load())
	}
	ffs.failReads.Store(true)
	if _, err := l.Read(0, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrKafkaStorage) || reported.Load() != 1 {
		t.Fatalf("failed read: %v, %d reports", err, reported.Load())
	}
	ffs.failReads.Store(false)
	ffs.failWrites.Store(true)
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 0); !errors.Is(err, ErrKafkaStorage) || reported.Load() != 2 {
		t.Fatalf("failed write: %v, %d reports", err, reported.Load())
	}
	ffs.failWrites.Store(false)
	e.crash()
}
