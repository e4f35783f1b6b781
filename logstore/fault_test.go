package logstore

import (
	"errors"
	"io/fs"
	"math"
	"strings"
	"sync/atomic"
	"testing"
)

var errInjected = errors.New("injected I/O error")

// faultFS wraps a filesystem; while failWrites is set, WriteAt on .log
// files writes half of the data and then fails, like a disk that fills up
// or dies mid-write; failIndexWrites does the same to .index and
// .timeindex files.
type faultFS struct {
	FS
	failWrites      atomic.Bool
	failIndexWrites atomic.Bool
}

type faultFile struct {
	File
	fs   *faultFS
	name string
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	isIndex := strings.HasSuffix(f.name, indexSuffix) || strings.HasSuffix(f.name, timeIndexSuffix)
	if f.fs.failWrites.Load() && strings.HasSuffix(f.name, logSuffix) || f.fs.failIndexWrites.Load() && isIndex {
		n, _ := f.File.WriteAt(p[:len(p)/2], off)
		return n, errInjected
	}
	return f.File.WriteAt(p, off)
}

func TestWriteErrorIsSticky(t *testing.T) {
	e := newTestEnv(t)
	ffs := &faultFS{FS: OSFS{}}
	e.fs = ffs
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 2, 1), 0)

	ffs.failWrites.Store(true)
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 0); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("failed write: %v", err)
	}
	ffs.failWrites.Store(false)
	for name, op := range map[string]func() error{
		"append":   func() error { _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 0); return err },
		"follower": func() error { _, err := l.AppendAsFollower(simpleBatch(t, 1, 1)); return err },
		"truncate": func() error { return l.TruncateTo(0) },
		"delete":   func() error { _, err := l.DeleteRecordsBefore(1); return err },
	} {
		if err := op(); !errors.Is(err, ErrKafkaStorage) {
			t.Fatalf("%s after a failed write: %v", name, err)
		}
	}
	// Reads of what was acknowledged still work.
	if r, err := l.Read(0, 1<<20, math.MaxInt64, true); err != nil || parseHeader(r.Data).RecordCount != 2 {
		t.Fatalf("read after failure: %v", err)
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	// A restart recovers and the log is writable again.
	e.crash()
	e.open()
	l = e.openLog(DefaultConfig())
	if l.LogEndOffset() != 2 {
		t.Fatalf("LEO after recovery %d", l.LogEndOffset())
	}
	mustAppend(t, l, simpleBatch(t, 1, 1), 0)
	e.close()
}

// TestFailedLogPreventsCleanShutdown: a Dir whose log failed a write must
// not claim a clean shutdown, or the next start would skip recovery.
func TestFailedLogPreventsCleanShutdown(t *testing.T) {
	e := newTestEnv(t)
	ffs := &faultFS{FS: OSFS{}}
	e.fs = ffs
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 2, 1), 0)
	ffs.failWrites.Store(true)
	l.AppendAsLeader(simpleBatch(t, 1, 1), 0)
	ffs.failWrites.Store(false)
	if err := e.dir.Close(nil); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Close: %v", err)
	}
	d := e.open()
	if d.HadCleanShutdown() {
		t.Fatal("clean shutdown claimed after a failed write")
	}
	e.openLog(DefaultConfig())
	if d.RecoveryStats().SegmentsScanned != 1 {
		t.Fatalf("stats %+v", d.RecoveryStats())
	}
	e.close()
}
