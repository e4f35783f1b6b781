package logstore

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReopenManyLogsTimed measures a restart of a log directory holding
// SLUICE_REOPEN_LOGS small logs (default 200): OpenDir, then Open of
// every partition as the broker's first reconcile does, after a clean
// Close and after a crash (Abandon), with each of the
// SLUICE_REOPEN_THREADS recovery thread counts (default 0,2; 0 turns
// loading at OpenDir off: each log is loaded by its Dir.Open, one at a
// time, as before num.recovery.threads.per.data.dir). It asserts only that every log comes
// back with its records; the times are logged (go test -v), for the
// before/after figures of the start-up path, not checked.
func TestReopenManyLogsTimed(t *testing.T) {
	n := 200
	if s := os.Getenv("SLUICE_REOPEN_LOGS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "data")
	opts := Options{Logger: slog.New(slog.DiscardHandler)}
	threads := []int{0, 2} // 0: no loading at OpenDir, each log loaded by its Dir.Open
	if s := os.Getenv("SLUICE_REOPEN_THREADS"); s != "" {
		threads = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			threads = append(threads, n)
		}
	}
	tps := make([]TopicPartition, n)
	for i := range tps {
		tps[i] = TopicPartition{Topic: fmt.Sprintf("t%d", i/100), Partition: int32(i % 100)}
	}
	id := [16]byte{7}
	batch := simpleBatch(t, 1, 1_700_000_000_000)
	start := time.Now()
	d, err := OpenDir(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range tps {
		l, err := d.Open(tp, id, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, batch, 1)
	}
	if err := d.Close(nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("created %d logs with one batch each in %v", n, time.Since(start))
	reopen := func(what string) {
		start := time.Now()
		d, err := OpenDir(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		opened := time.Since(start)
		for _, tp := range tps {
			l, err := d.Open(tp, id, DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != 1 {
				t.Fatalf("%s: %s ends at %d, want 1", what, tp, l.LogEndOffset())
			}
		}
		t.Logf("%s reopen of %d logs (%d recovery threads; 0: each loaded by Dir.Open): OpenDir %v, OpenDir+Open of every log %v, segments scanned %d",
			what, n, opts.RecoveryThreads, opened, time.Since(start), d.RecoveryStats().SegmentsScanned)
		if what == "crash" {
			d.Abandon()
			return
		}
		start = time.Now()
		if err := d.Close(nil); err != nil {
			t.Fatal(err)
		}
		t.Logf("clean close of %d logs: %v", n, time.Since(start))
	}
	defer func() { loadAtOpenDir = true }()
	for _, n := range threads {
		opts.RecoveryThreads = n
		loadAtOpenDir = n > 0
		reopen("clean")
		reopen("clean")
		d, err = OpenDir(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		d.Abandon()
		reopen("crash")
		d, err = OpenDir(path, opts) // recovered: closes clean for the next round
		if err != nil {
			t.Fatal(err)
		}
		for _, tp := range tps {
			if _, err := d.Open(tp, id, DefaultConfig()); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Close(nil); err != nil {
			t.Fatal(err)
		}
	}
}
