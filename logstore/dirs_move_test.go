package logstore

import (
	"os"
	"path/filepath"
	"sync"
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
