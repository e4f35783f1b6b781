package logstore

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestEndOffsetForEpoch(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	if ep, off := l.EndOffsetForEpoch(0); ep != -1 || off != -1 {
		t.Fatalf("empty cache: %d %d", ep, off)
	}
	// epoch 1 at 0, epoch 3 at 4, epoch 6 at 7; LEO 10.
	for _, a := range []struct {
		n     int
		epoch int32
	}{{2, 1}, {2, 1}, {3, 3}, {3, 6}} {
		mustAppend(t, l, simpleBatch(t, a.n, 1), a.epoch)
	}
	tests := []struct {
		name      string
		requested int32
		wantEpoch int32
		wantEnd   int64
	}{
		{"latest", 6, 6, 10},
		{"exact older", 3, 3, 7},
		{"first", 1, 1, 4},
		{"gap between epochs", 2, 1, 4},
		{"gap below latest", 5, 3, 7},
		{"below all", 0, 0, 0},
		{"above all", 7, -1, -1},
		{"undefined", -1, -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, off := l.EndOffsetForEpoch(tc.requested)
			if ep != tc.wantEpoch || off != tc.wantEnd {
				t.Fatalf("EndOffsetForEpoch(%d) = %d,%d want %d,%d", tc.requested, ep, off, tc.wantEpoch, tc.wantEnd)
			}
		})
	}
	for off, want := range map[int64]int32{0: 1, 3: 1, 4: 3, 6: 3, 7: 6, 100: 6} {
		if got := l.EpochForOffset(off); got != want {
			t.Fatalf("EpochForOffset(%d) = %d, want %d", off, got, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(e.partDir(), epochCheckpointFile))
	if err != nil || string(data) != "0\n3\n1 0\n3 4\n6 7\n" {
		t.Fatalf("leader-epoch-checkpoint %q %v", data, err)
	}
	e.close()
}

func TestEpochCacheAssign(t *testing.T) {
	e := newTestEnv(t)
	os.MkdirAll(e.path, 0o755)
	c, err := openEpochCache(OSFS{}, e.path)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		epoch int32
		start int64
		want  []epochEntry
	}{
		{1, 0, []epochEntry{{1, 0}}},
		{1, 5, []epochEntry{{1, 0}}},           // same epoch: no change
		{3, 5, []epochEntry{{1, 0}, {3, 5}}},   // new epoch
		{2, 9, []epochEntry{{1, 0}, {3, 5}}},   // older epoch ignored
		{4, 5, []epochEntry{{1, 0}, {4, 5}}},   // same start: replaces
		{5, 3, []epochEntry{{1, 0}, {5, 3}}},   // start below: conflicting entries dropped
		{-1, 10, []epochEntry{{1, 0}, {5, 3}}}, // no epoch
	}
	for i, s := range steps {
		if err := c.assign(s.epoch, s.start); err != nil {
			t.Fatal(err)
		}
		got := c.snapshot()
		if len(got) != len(s.want) {
			t.Fatalf("step %d: %v want %v", i, got, s.want)
		}
		for j := range got {
			if got[j] != s.want[j] {
				t.Fatalf("step %d: %v want %v", i, got, s.want)
			}
		}
	}
	c2, err := openEpochCache(OSFS{}, e.path)
	if err != nil || len(c2.snapshot()) != 2 || c2.latest() != 5 {
		t.Fatalf("reload: %v %v", c2.snapshot(), err)
	}
}

func TestTruncateTo(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	b := simpleBatch(t, 2, 1)
	cfg.SegmentBytes = 3 * int64(len(b))
	cfg.IndexIntervalBytes = 1
	l := e.openLog(cfg)
	for i := 0; i < 8; i++ { // offsets 0..15, segments at 0, 6, 12
		mustAppend(t, l, simpleBatch(t, 2, int64(100+i)), int32(i/2))
	}
	if err := l.TruncateTo(9); err != nil {
		t.Fatal(err)
	}
	// Offset 9 is inside batch [8,9]: it goes too.
	if l.LogEndOffset() != 8 || len(l.Segments()) != 2 {
		t.Fatalf("LEO %d segments %+v", l.LogEndOffset(), l.Segments())
	}
	// Epochs 2 (from 8) and 3 (from 12) are gone.
	if l.LatestEpoch() != 1 {
		t.Fatalf("epoch cache not trimmed: latest %d", l.LatestEpoch())
	}
	if ep, off := l.EndOffsetForEpoch(1); ep != 1 || off != 8 {
		t.Fatalf("EndOffsetForEpoch(1) %d %d", ep, off)
	}
	if _, ts := l.MaxTimestamp(); ts != 104 {
		t.Fatalf("max timestamp after truncate %d", ts)
	}
	if res := mustAppend(t, l, b, 9); res.FirstOffset != 8 {
		t.Fatalf("append after truncate at %d", res.FirstOffset)
	}
	readAll(t, l, 0)
	if err := l.TruncateTo(6); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 6 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	if r, err := l.Read(6, 100, math.MaxInt64, true); err != nil || len(r.Data) != 0 {
		t.Fatalf("read at new LEO: %d bytes %v", len(r.Data), err)
	}
	e.close()
	e.open()
	l = e.openLog(cfg)
	if l.LogEndOffset() != 6 || l.LatestEpoch() != 1 {
		t.Fatalf("after reopen LEO %d epoch %d", l.LogEndOffset(), l.LatestEpoch())
	}
	readAll(t, l, 0)
	e.close()
}

func TestTruncateFully(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 4, 1), 0)
	if _, err := l.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 2 || l.LogEndOffset() != 2 || l.LatestEpoch() != -1 {
		t.Fatalf("start %d end %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.LatestEpoch())
	}
	if res := mustAppend(t, l, simpleBatch(t, 1, 1), 1); res.FirstOffset != 2 {
		t.Fatalf("append at %d", res.FirstOffset)
	}
	e.close()
}
