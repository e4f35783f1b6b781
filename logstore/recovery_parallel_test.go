package logstore

import (
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateFS holds every read of a partition.metadata until want of them are
// in flight at once (or a generous timeout passes, so a loader with fewer
// goroutines fails the test instead of hanging it), and records the most
// seen in flight.
type gateFS struct {
	FS
	want int

	mu       sync.Mutex
	cond     *sync.Cond
	inFlight int
	most     int
}

func (g *gateFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if filepath.Base(name) != partitionMetadataFile {
		return g.FS.OpenFile(name, flag, perm)
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.cond.Broadcast()
	deadline := time.Now().Add(10 * time.Second)
	for g.inFlight < g.want && g.most < g.want && time.Now().Before(deadline) {
		go func() { time.Sleep(100 * time.Millisecond); g.cond.Broadcast() }()
		g.cond.Wait()
	}
	g.mu.Unlock()
	f, err := g.FS.OpenFile(name, flag, perm)
	g.mu.Lock()
	g.inFlight--
	g.mu.Unlock()
	return f, err
}

// TestParallelRecoveryAtOpenDir: with num.recovery.threads.per.data.dir=4
// OpenDir recovers every log of a crashed directory with four goroutines
// at once (no more): each torn tail is cut before OpenDir returns, every log
// then opens with exactly the batches that were whole, and a log whose
// partition.metadata cannot be read is offline from OpenDir on, its files
// untouched, and keeps the directory unclean at the next start.
func TestParallelRecoveryAtOpenDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	logger := slog.New(slog.DiscardHandler)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2 * int64(len(simpleBatch(t, 2, 0))) // three segments each
	cfg.IndexIntervalBytes = 10
	const n = 40
	tp := func(i int) TopicPartition { return TopicPartition{Topic: "rec", Partition: int32(i)} }
	bad := tp(7)
	d, err := OpenDir(path, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l, err := d.Open(tp(i), testTopicID, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for b := range 5 {
			mustAppend(t, l, simpleBatch(t, 2, int64(100*i+b)), int32(b/2))
			if b == 1 {
				if err := d.Checkpoint(nil); err != nil { // recovery points past the first segment
					t.Fatal(err)
				}
			}
		}
	}
	d.Abandon()

	// Odd partitions lose the last 3 bytes of their last batch.
	lastSeg := func(i int) string {
		segs, err := filepath.Glob(filepath.Join(path, tp(i).String(), "*"+logSuffix))
		if err != nil || len(segs) != 3 {
			t.Fatalf("%s: segments %v %v", tp(i), segs, err)
		}
		return segs[2]
	}
	wantCut := int64(0)
	sizes := map[int]int64{}
	for i := 1; i < n; i += 2 {
		if tp(i) == bad {
			continue
		}
		st, err := os.Stat(lastSeg(i))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(lastSeg(i), st.Size()-3); err != nil {
			t.Fatal(err)
		}
		wantCut += st.Size() - 3 // the torn batch, the segment's only one
		sizes[i] = st.Size()
	}
	badMeta := filepath.Join(path, bad.String(), partitionMetadataFile)
	if err := os.Remove(badMeta); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(badMeta, 0o755); err != nil {
		t.Fatal(err)
	}
	badBefore := partitionFiles(t, filepath.Join(path, bad.String()))

	gate := &gateFS{FS: OSFS{}, want: 4}
	gate.cond = sync.NewCond(&gate.mu)
	d, err = OpenDir(path, Options{FS: gate, Logger: logger, RecoveryThreads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if d.HadCleanShutdown() {
		t.Fatal("a crash reported as a clean shutdown")
	}
	if gate.most != 4 {
		t.Fatalf("OpenDir read partition.metadata with at most %d goroutines at once, want 4", gate.most)
	}
	st := d.RecoveryStats()
	if st.BytesTruncated != wantCut || st.SegmentsScanned < n-1 {
		t.Fatalf("after OpenDir: %+v, want %d bytes cut and every log's tail scanned", st, wantCut)
	}
	for i := range sizes {
		if fi, err := os.Stat(lastSeg(i)); err != nil || fi.Size() != 0 {
			t.Fatalf("%s: last segment %d bytes after OpenDir (%v), want the torn batch cut", tp(i), fi.Size(), err)
		}
	}
	if err := d.Offline(bad); !errors.Is(err, ErrLogOffline) || !strings.Contains(err.Error(), filepath.Join(path, bad.String())) {
		t.Fatalf("the log that fails to load: Offline = %v, want ErrLogOffline naming its directory", err)
	}
	check := func(d *Dir) {
		t.Helper()
		for i := range n {
			l, err := d.Open(tp(i), testTopicID, cfg)
			if tp(i) == bad {
				if !errors.Is(err, ErrLogOffline) {
					t.Fatalf("Open of the offline log: %v", err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			want := int64(10)
			if i%2 == 1 {
				want = 8
			}
			if l.LogEndOffset() != want || len(readAll(t, l, 0)) != int(want/2) {
				t.Fatalf("%s: log end %d, want %d", tp(i), l.LogEndOffset(), want)
			}
			// The recovered middle segment is indexed at the log's own
			// index.interval.bytes (an entry after its first batch), not the one it
			// was loaded with.
			if segs := l.Segments(); len(segs) != 3 || segs[1].IndexEntries != 1 {
				t.Fatalf("%s: segments %+v, want three, the middle one indexed", tp(i), segs)
			}
		}
	}
	check(d)
	if err := d.Close(nil); err != nil {
		t.Fatal(err)
	}
	if after := partitionFiles(t, filepath.Join(path, bad.String())); !maps.Equal(badBefore, after) {
		t.Fatal("the offline log's files changed")
	}
	d, err = OpenDir(path, Options{Logger: logger, RecoveryThreads: 4})
	if err != nil {
		t.Fatal(err)
	}
	if d.HadCleanShutdown() {
		t.Fatal("a start with an unrecovered offline log was closed as clean")
	}
	check(d)
	if err := d.Close(nil); err != nil {
		t.Fatal(err)
	}
}
