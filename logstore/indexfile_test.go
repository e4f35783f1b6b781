package logstore

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
)

// segIndexes is a copy of one segment's in-memory index entries.
type segIndexes struct {
	base    int64
	next    int64 // the base offset of the next segment, or the log end offset
	offsets []offsetIndexEntry
	times   []timeIndexEntry
	txns    []AbortedTxn
}

// indexesOf copies the index entries of every segment of l. It works on a
// closed log too: Close leaves the entries in memory.
func indexesOf(l *Log) []segIndexes {
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	out := make([]segIndexes, len(l.segments))
	for i, s := range l.segments {
		next := l.logEnd
		if i+1 < len(l.segments) {
			next = l.segments[i+1].base
		}
		out[i] = segIndexes{base: s.base, next: next, offsets: slices.Clone(s.index.entries),
			times: slices.Clone(s.timeIndex.entries), txns: slices.Clone(s.txnIndex.entries)}
	}
	return out
}

// indexesOnDisk decodes the .index, .timeindex and .txnindex files of the
// segment at base.
func indexesOnDisk(t *testing.T, dir string, base int64) segIndexes {
	t.Helper()
	read := func(suffix string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, segmentName(base)+suffix))
		if err != nil && !(suffix == txnIndexSuffix && errors.Is(err, fs.ErrNotExist)) {
			t.Fatalf("read %s of segment %d: %v", suffix, base, err)
		}
		return b
	}
	out := segIndexes{base: base}
	b := read(indexSuffix)
	if len(b)%offsetIndexEntrySize != 0 {
		t.Fatalf("segment %d: .index of %d bytes", base, len(b))
	}
	for ; len(b) > 0; b = b[offsetIndexEntrySize:] {
		out.offsets = append(out.offsets, offsetIndexEntry{relOffset: int32(binary.BigEndian.Uint32(b)), position: int32(binary.BigEndian.Uint32(b[4:]))})
	}
	b = read(timeIndexSuffix)
	if len(b)%timeIndexEntrySize != 0 {
		t.Fatalf("segment %d: .timeindex of %d bytes", base, len(b))
	}
	for ; len(b) > 0; b = b[timeIndexEntrySize:] {
		out.times = append(out.times, timeIndexEntry{timestamp: int64(binary.BigEndian.Uint64(b)), relOffset: int32(binary.BigEndian.Uint32(b[8:]))})
	}
	for b = read(txnIndexSuffix); len(b) >= txnIndexEntrySize; b = b[txnIndexEntrySize:] {
		out.txns = append(out.txns, decodeAbortedTxn(b))
	}
	return out
}

// sameEntries compares the entries of two copies (not base or next).
func sameEntries(a, b segIndexes) bool {
	return slices.Equal(a.offsets, b.offsets) && slices.Equal(a.times, b.times) && slices.Equal(a.txns, b.txns)
}

// checkIndexes verifies that every offset-index entry points at the batch
// it names, that every time-index entry names an offset of the segment,
// and that a read at every offset finds the batch holding it.
func checkIndexes(t *testing.T, l *Log) {
	t.Helper()
	l.segsMu.RLock()
	for _, s := range l.segments {
		for _, ie := range s.index.entries {
			h, err := s.readHeader(int64(ie.position), s.size)
			if err != nil || h.lastOffset() != s.base+int64(ie.relOffset) {
				t.Fatalf("segment %d: index entry %+v points at batch [%d,%d], %v", s.base, ie, h.BaseOffset, h.lastOffset(), err)
			}
		}
		for _, te := range s.timeIndex.entries {
			if off := s.base + int64(te.relOffset); off >= s.nextOffset {
				t.Fatalf("segment %d: time index entry %+v past the segment end %d", s.base, te, s.nextOffset)
			}
		}
	}
	l.segsMu.RUnlock()
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		r, err := l.Read(off, 1, math.MaxInt64, true)
		if err != nil || len(r.Data) == 0 {
			t.Fatalf("Read(%d): %d bytes, %v", off, len(r.Data), err)
		}
		if h := parseHeader(r.Data); off < h.BaseOffset || off > h.lastOffset() {
			t.Fatalf("Read(%d) returned batch [%d,%d]", off, h.BaseOffset, h.lastOffset())
		}
	}
}

// indexTestConfig makes small segments with an index entry every couple
// of batches.
func indexTestConfig() Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 3000
	cfg.IndexIntervalBytes = 150
	cfg.FileDeleteDelayMs = 0
	return cfg
}

// appendVaried appends n batches of 1-3 records with growing timestamps.
func appendVaried(t *testing.T, l *Log, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		end := l.LogEndOffset()
		mustAppend(t, l, simpleBatch(t, 1+i%3, 1000+10*end), 1)
	}
}

// TestIndexesWrittenAtCleanClose: appends keep new index entries in memory
// only; Close writes every entry, so a clean reopen trusts the files, reads
// nothing but the files and finds exactly the entries the log had.
func TestIndexesWrittenAtCleanClose(t *testing.T) {
	e := newTestEnv(t)
	cfg := indexTestConfig()
	l := e.openLog(cfg)
	appendVaried(t, l, 150)
	// A truncation inside the active segment, a deleted first segment and
	// an aborted transaction: each changes index files.
	if err := l.TruncateTo(l.LogEndOffset() - 4); err != nil {
		t.Fatal(err)
	}
	appendVaried(t, l, 20)
	if _, err := l.DeleteRecordsBefore(l.Segments()[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	mustAbort(t, l, AbortedTxn{ProducerID: 7, FirstOffset: l.LogEndOffset() - 3, LastOffset: l.LogEndOffset() - 1, LastStableOffset: l.LogEndOffset()})
	if n := len(l.Segments()); n < 5 {
		t.Fatalf("only %d segments", n)
	}

	// Appends do not write index files: the active segment's entries are
	// not in its file yet.
	active := indexesOf(l)[len(l.Segments())-1]
	if onDisk := indexesOnDisk(t, e.partDir(), active.base); len(active.offsets) == 0 || len(onDisk.offsets) >= len(active.offsets) {
		t.Fatalf("active segment: %d entries in memory, %d in the file before Close", len(active.offsets), len(onDisk.offsets))
	}

	e.close()
	want := indexesOf(l)
	for _, s := range want {
		if got := indexesOnDisk(t, e.partDir(), s.base); !sameEntries(got, s) {
			t.Fatalf("segment %d after Close: file holds %+v, memory %+v", s.base, got, s)
		}
	}
	assertNoStrayIndexFiles(t, e.partDir())

	d := e.open()
	l = e.openLog(cfg)
	if !d.HadCleanShutdown() || d.RecoveryStats().SegmentsScanned != 0 {
		t.Fatalf("clean reopen: clean %v, stats %+v", d.HadCleanShutdown(), d.RecoveryStats())
	}
	got := indexesOf(l)
	if len(got) != len(want) {
		t.Fatalf("%d segments after reopen, %d before", len(got), len(want))
	}
	for i := range want {
		if !sameEntries(got[i], want[i]) {
			t.Fatalf("segment %d after reopen: %+v, want %+v", want[i].base, got[i], want[i])
		}
	}
	checkIndexes(t, l)
	// Timestamps grow with offsets: the first record newer than a batch's
	// max timestamp is the next batch's first.
	hs := readAll(t, l, l.LogStartOffset())
	for i := 1; i < len(hs); i++ {
		if off, _, ok := l.OffsetForTimestamp(hs[i-1].MaxTimestamp + 1); !ok || off != hs[i].BaseOffset {
			t.Fatalf("OffsetForTimestamp(%d) = %d %v, want %d", hs[i-1].MaxTimestamp+1, off, ok, hs[i].BaseOffset)
		}
	}
	e.close()
}

// assertNoStrayIndexFiles fails if an index file has no .log: a deleted
// segment's indexes must not be written again after it was renamed.
func assertNoStrayIndexFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make(map[string]bool)
	for _, e := range entries {
		names[e.Name()] = true
	}
	for name := range names {
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if stem, ok := strings.CutSuffix(name, suf); ok && !names[stem+logSuffix] {
				t.Fatalf("%s has no %s", name, stem+logSuffix)
			}
		}
	}
}

// TestIndexesAfterCrash: a crash loses the index entries not yet written;
// recovery rebuilds the segments past the recovery point from the .log and
// trusts the ones below it, whose files a flush wrote whole.
func TestIndexesAfterCrash(t *testing.T) {
	for _, tt := range []struct {
		name       string
		checkpoint bool // Dir.Checkpoint between two rounds of appends
	}{
		{"never flushed", false},
		{"flushed, then more segments", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := indexTestConfig()
			l := e.openLog(cfg)
			appendVaried(t, l, 100)
			mustAbort(t, l, AbortedTxn{ProducerID: 7, FirstOffset: 1, LastOffset: 2, LastStableOffset: 3})
			if tt.checkpoint {
				if err := e.dir.Checkpoint(nil); err != nil {
					t.Fatal(err)
				}
			}
			rp := l.RecoveryPoint()
			appendVaried(t, l, 100)
			want, wantInfo := indexesOf(l), l.Segments()
			leo := l.LogEndOffset()
			e.crash()

			trusted := 0
			for _, s := range want {
				if s.next > rp || s.next == leo {
					break
				}
				trusted++
				if got := indexesOnDisk(t, e.partDir(), s.base); !sameEntries(got, s) {
					t.Fatalf("segment %d below the recovery point %d: file holds %+v, memory had %+v", s.base, rp, got, s)
				}
			}
			if tt.checkpoint && trusted == 0 {
				t.Fatal("no segment below the recovery point")
			}
			last := want[len(want)-1]
			if onDisk := indexesOnDisk(t, e.partDir(), last.base); len(onDisk.offsets) >= len(last.offsets) {
				t.Fatalf("active segment: the crash kept all %d index entries; the test exercises nothing", len(last.offsets))
			}

			d := e.open()
			l = e.openLog(cfg)
			if got := d.RecoveryStats().SegmentsScanned; got != int64(len(want)-trusted) {
				t.Fatalf("recovered %d segments, want %d", got, len(want)-trusted)
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("LEO %d after recovery, want %d", l.LogEndOffset(), leo)
			}
			got := indexesOf(l)
			for i, w := range want {
				g := got[i]
				if i < trusted {
					if !sameEntries(g, w) {
						t.Fatalf("trusted segment %d: %+v, want %+v", w.base, g, w)
					}
					continue
				}
				// Rebuilt from the .log: the same offset index; the time
				// index lacks the entry a roll adds, and the broker
				// replays the aborted transactions.
				if !slices.Equal(g.offsets, w.offsets) || len(g.times) > len(w.times) || !slices.Equal(g.times, w.times[:len(g.times)]) {
					t.Fatalf("recovered segment %d: %+v, want %+v", w.base, g, w)
				}
			}
			if gotInfo := l.Segments(); !slices.Equal(gotInfo, wantInfo) {
				t.Fatalf("segments after recovery %+v, want %+v", gotInfo, wantInfo)
			}
			checkIndexes(t, l)
			// The rebuilt entries are on disk after the next clean close.
			e.close()
			for _, s := range got {
				if onDisk := indexesOnDisk(t, e.partDir(), s.base); !slices.Equal(onDisk.offsets, s.offsets) {
					t.Fatalf("segment %d after close: %+v, want %+v", s.base, onDisk.offsets, s.offsets)
				}
			}
		})
	}
}

// indexLossFS simulates a power loss for index files: it records the
// content of every .index, .timeindex and .txnindex file as of its last
// fsync, and lose puts that content back (an index file never fsynced
// becomes empty). Other files keep what was written, as after a process
// crash, so a test with it checks that index files reach stable storage
// before a restart trusts them.
type indexLossFS struct {
	FS
	mu      sync.Mutex
	durable map[string][]byte
}

type indexLossFile struct {
	File
	fs   *indexLossFS
	name string
}

func isIndexFile(name string) bool {
	return strings.HasSuffix(name, indexSuffix) || strings.HasSuffix(name, timeIndexSuffix) || strings.HasSuffix(name, txnIndexSuffix)
}

func (f *indexLossFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &indexLossFile{File: file, fs: f, name: name}, nil
}

func (f *indexLossFS) Rename(oldpath, newpath string) error {
	if err := f.FS.Rename(oldpath, newpath); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.durable[oldpath]; ok {
		f.durable[newpath] = b
		delete(f.durable, oldpath)
	}
	return nil
}

func (f *indexLossFS) Remove(name string) error {
	f.mu.Lock()
	delete(f.durable, name)
	f.mu.Unlock()
	return f.FS.Remove(name)
}

func (f *indexLossFile) Sync() error {
	if err := f.File.Sync(); err != nil || !isIndexFile(f.name) {
		return err
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	b := make([]byte, st.Size())
	if _, err := f.File.ReadAt(b, 0); err != nil && len(b) > 0 {
		return err
	}
	f.fs.mu.Lock()
	f.fs.durable[f.name] = b
	f.fs.mu.Unlock()
	return nil
}

// lose resets every index file under root to its content at its last fsync.
func (f *indexLossFS) lose(t *testing.T, root string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isIndexFile(path) {
			return err
		}
		return os.WriteFile(path, f.durable[path], 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIndexesDurableBeforeTrusted: after a power loss that drops every
// index write not fsynced, the segments a restart trusts (below the
// checkpointed recovery point, or all of them after a clean shutdown) still
// have complete index files. That covers an aborted transaction recorded in
// a segment the recovery point had already passed, as the broker does when
// it replays markers after a restart: the next flush fsyncs it.
func TestIndexesDurableBeforeTrusted(t *testing.T) {
	for _, clean := range []bool{false, true} {
		name := map[bool]string{false: "crash", true: "clean shutdown"}[clean]
		t.Run(name, func(t *testing.T) {
			e := newTestEnv(t)
			lfs := &indexLossFS{FS: OSFS{}, durable: make(map[string][]byte)}
			e.fs = lfs
			cfg := indexTestConfig()
			l := e.openLog(cfg)
			appendVaried(t, l, 100)
			if err := e.dir.Checkpoint(nil); err != nil {
				t.Fatal(err)
			}
			// A late aborted transaction in the second segment, well below
			// the recovery point, then a checkpoint without new data.
			second := l.Segments()[1].BaseOffset
			mustAbort(t, l, AbortedTxn{ProducerID: 7, FirstOffset: second, LastOffset: second + 1, LastStableOffset: second + 2})
			if err := e.dir.Checkpoint(nil); err != nil {
				t.Fatal(err)
			}
			appendVaried(t, l, 50)
			if err := e.dir.Checkpoint(nil); err != nil {
				t.Fatal(err)
			}
			rp := l.RecoveryPoint()
			appendVaried(t, l, 50)
			leo := l.LogEndOffset()
			if clean {
				e.close()
			} else {
				e.crash()
			}
			want := indexesOf(l)
			lfs.lose(t, e.path)

			d := e.open()
			l = e.openLog(cfg)
			if d.HadCleanShutdown() != clean || l.LogEndOffset() != leo {
				t.Fatalf("reopen: clean %v, LEO %d, want %v, %d", d.HadCleanShutdown(), l.LogEndOffset(), clean, leo)
			}
			got := indexesOf(l)
			for i, w := range want {
				if !clean && (w.next > rp || w.next == leo) {
					break // recovered from the .log
				}
				if !sameEntries(got[i], w) {
					t.Fatalf("trusted segment %d after power loss: %+v, want %+v", w.base, got[i], w)
				}
			}
			if txns := l.AbortedTxns(second, second+2); len(txns) != 1 {
				t.Fatalf("aborted transactions after power loss: %+v", txns)
			}
			checkIndexes(t, l)
			e.close()
		})
	}
}

// TestIndexWriteErrorIsSticky: an index file that cannot be written fails
// the flush like any write error: the log is read-only, the directory does
// not claim a clean shutdown and the next open recovers.
func TestIndexWriteErrorIsSticky(t *testing.T) {
	e := newTestEnv(t)
	ffs := &faultFS{FS: OSFS{}}
	e.fs = ffs
	cfg := indexTestConfig()
	l := e.openLog(cfg)
	appendVaried(t, l, 20)
	if segs := indexesOf(l); len(segs) != 1 || len(segs[0].offsets) == 0 {
		t.Fatalf("want one segment with index entries, have %+v", segs)
	}
	ffs.failIndexWrites.Store(true)
	if err := l.Flush(); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Flush with failing index writes: %v", err)
	}
	if l.RecoveryPoint() != 0 {
		t.Fatalf("recovery point moved to %d", l.RecoveryPoint())
	}
	ffs.failIndexWrites.Store(false)
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 1); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("append after a failed index write: %v", err)
	}
	leo := l.LogEndOffset()
	if err := e.dir.Close(nil); !errors.Is(err, ErrKafkaStorage) {
		t.Fatalf("Close: %v", err)
	}
	d := e.open()
	l = e.openLog(cfg)
	if d.HadCleanShutdown() || d.RecoveryStats().SegmentsScanned == 0 || l.LogEndOffset() != leo {
		t.Fatalf("reopen: clean %v, stats %+v, LEO %d want %d", d.HadCleanShutdown(), d.RecoveryStats(), l.LogEndOffset(), leo)
	}
	checkIndexes(t, l)
	e.close()
}

// TestRolledSegmentIndexesWritten: a roll writes the old segment's
// entries (including its final time-index entry) to its files, so only
// the active segment's recent entries wait for a flush.
func TestRolledSegmentIndexesWritten(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(indexTestConfig())
	appendVaried(t, l, 60)
	segs := indexesOf(l)
	if len(segs) < 3 {
		t.Fatalf("%d segments", len(segs))
	}
	for _, s := range segs[:len(segs)-1] {
		if got := indexesOnDisk(t, e.partDir(), s.base); !sameEntries(got, s) {
			t.Fatalf("rolled segment %d: file holds %+v, memory %+v", s.base, got, s)
		}
	}
	if !reflect.DeepEqual(indexesOnDisk(t, e.partDir(), segs[len(segs)-1].base), segIndexes{base: segs[len(segs)-1].base}) {
		t.Fatal("the active segment's index files were written before a flush")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	last := segs[len(segs)-1]
	if got := indexesOnDisk(t, e.partDir(), last.base); !sameEntries(got, last) {
		t.Fatalf("active segment after Flush: file holds %+v, memory %+v", got, last)
	}
	e.close()
}
