package logstore

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand"
	"path/filepath"
	"testing"
)

// cleanSteps are the points of a pass where cleanHooks is called, in
// order; the first two are before the commit point (<base>.log.swap).
var cleanSteps = []struct {
	name      string
	committed bool
}{
	{"cleaned", false},        // .cleaned files written and fsynced
	{"swap-partial", false},   // index files renamed .swap, .log not yet
	{"swap", true},            // all .swap, nothing replaced yet
	{"deleted-partial", true}, // first old segment renamed .deleted
	{"deleted", true},         // every old segment renamed .deleted
	{"final-partial", true},   // index files at final names, .log.swap not yet
	{"done", true},            // .swap renamed to final names
}

// crashLog builds a log whose cleanable segments form one group, and
// returns its records and the records one pass leaves.
func crashLog(t *testing.T) (*testEnv, *Log, []keyedRecord) {
	env := newTestEnv(t)
	cfg := compactConfig()
	l := env.openLog(cfg)
	rng := rand.New(rand.NewSource(8))
	workload(t, l, rng, 1500, 60, 5, 3, 1_700_000_000_000)
	cfg.SegmentBytes = 1 << 20 // one group
	l.SetConfig(cfg)
	return env, l, readRecords(t, l)
}

func reopenCopy(t *testing.T, path string) (*Dir, *Log) {
	d, err := OpenDir(path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	l, err := d.Open(testTP, testTopicID, compactConfig())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return d, l
}

// A kill at each step of the swap (the directory copied as it is at that
// moment, then opened as after a crash) leaves the old segments or the new
// one, never a mix, a loss or a duplicate, and no cleaner files.
func TestCleanCrashAtEachStep(t *testing.T) {
	env, l, before := crashLog(t)
	_ = env
	// The records the pass leaves, from a twin run without a crash.
	twinEnv, twin, _ := crashLog(t)
	_ = twinEnv
	if _, err := newTestCleaner(t, 1<<20).Clean(twin, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs}); err != nil {
		t.Fatal(err)
	}
	after := readRecords(t, twin)
	if fmt.Sprint(after) == fmt.Sprint(before) {
		t.Fatal("the pass changed nothing")
	}

	snaps := map[string]string{}
	cleanHooks = func(step string) error {
		dst := filepath.Join(t.TempDir(), "data")
		copyDir(t, env.path, dst)
		snaps[step] = dst
		return nil
	}
	defer func() { cleanHooks = nil }()
	if _, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs}); err != nil {
		t.Fatal(err)
	}
	cleanHooks = nil
	for _, step := range cleanSteps {
		t.Run(step.name, func(t *testing.T) {
			path, ok := snaps[step.name]
			if !ok {
				t.Fatalf("step %s never reached", step.name)
			}
			d, l := reopenCopy(t, path)
			defer d.Close(nil)
			got := readRecords(t, l)
			want := before
			if step.committed {
				want = after
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after a crash at %s: %d records, want the %d of the %s segments", step.name, len(got), len(want),
					map[bool]string{false: "old", true: "cleaned"}[step.committed])
			}
			if left := leftovers(t, filepath.Join(path, testTP.String())); len(left) > 0 {
				t.Fatalf("cleaner files left: %v", left)
			}
			checkIndexFiles(t, l)
		})
	}
}

// An I/O error at each step: before the commit point the pass is undone
// and the log goes on; after it the log is read-only, and reopening
// completes the swap.
func TestCleanFailureAtEachStep(t *testing.T) {
	for _, step := range cleanSteps {
		if step.name == "done" {
			continue // nothing can fail after the last rename
		}
		t.Run(step.name, func(t *testing.T) {
			env, l, before := crashLog(t)
			cleanHooks = func(s string) error {
				if s == step.name {
					return errInjected
				}
				return nil
			}
			_, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
			cleanHooks = nil
			if !errors.Is(err, errInjected) && !errors.Is(err, ErrKafkaStorage) {
				t.Fatalf("Clean = %v, want the injected error", err)
			}
			if !step.committed {
				if got := readRecords(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
					t.Fatal("records changed by a pass that failed before its commit point")
				}
				if left := leftovers(t, env.partDir()); len(left) > 0 {
					t.Fatalf("cleaner files left: %v", left)
				}
				appendAt(t, l, simpleKeyed(t))
				env.close()
			} else {
				if _, err := l.AppendAsFollower(simpleKeyed(t)); !errors.Is(err, ErrKafkaStorage) {
					t.Fatalf("append after a failed swap = %v, want the sticky storage error", err)
				}
				env.crash()
			}
			l = env.openLog(compactConfig())
			got := readRecords(t, l)
			if step.committed && len(got) >= len(before) {
				t.Fatalf("reopened with %d records, want the swap completed (fewer than %d)", len(got), len(before))
			}
			if left := leftovers(t, env.partDir()); len(left) > 0 {
				t.Fatalf("cleaner files left: %v", left)
			}
			checkIndexFiles(t, l)
			// And a new pass over the recovered log works.
			if _, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func simpleKeyed(t testing.TB) []byte {
	return makeProducerBatch(t, 0, txnSpec{ProducerID: -1, Epoch: -1, BaseSequence: -1},
		[]testRecord{{Timestamp: 1_700_000_000_000, Key: []byte("k"), Value: []byte("v")}})
}

// A follower truncation while a pass runs abandons the pass: the log is
// left as the truncation made it, without cleaner files, and the next
// pass cleans it.
func TestCleanAbandonedByTruncation(t *testing.T) {
	env, l, before := crashLog(t)
	cut := l.LogEndOffset() - 3
	cleanHooks = func(step string) error {
		if step == "cleaned" {
			if err := l.TruncateTo(cut); err != nil {
				t.Errorf("TruncateTo: %v", err)
			}
		}
		return nil
	}
	st, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	cleanHooks = nil
	if err != nil {
		t.Fatalf("Clean: %v", err)
	}
	if st.SegmentsAfter != 0 {
		t.Fatalf("%d segments swapped in after a truncation", st.SegmentsAfter)
	}
	var want []keyedRecord
	for _, r := range before {
		if r.Offset < l.LogEndOffset() {
			want = append(want, r)
		}
	}
	if got := readRecords(t, l); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%d records after an abandoned pass, want %d", len(got), len(want))
	}
	if left := leftovers(t, env.partDir()); len(left) > 0 {
		t.Fatalf("cleaner files left: %v", left)
	}
	if _, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs}); err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, want, readRecords(t, l), l.Segments()[len(l.Segments())-1].BaseOffset, false)
}

// Closing the log while a pass runs ends the pass with ErrLogClosed (so
// the manager does not mark the log uncleanable); the reopened log holds
// the old segments or, when the pass had committed its *.swap files, the
// cleaned one, and no cleaner files.
func TestCleanLogClosedDuringPass(t *testing.T) {
	env, l, before := crashLog(t)
	cleanHooks = func(step string) error {
		if step == "cleaned" {
			env.close()
		}
		return nil
	}
	_, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs})
	cleanHooks = nil
	if !errors.Is(err, ErrLogClosed) {
		t.Fatalf("Clean = %v, want ErrLogClosed", err)
	}
	l = env.openLog(compactConfig())
	if left := leftovers(t, env.partDir()); len(left) > 0 {
		t.Fatalf("cleaner files left after reopening: %v", left)
	}
	if got := readRecords(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
		checkCompacted(t, before, got, l.Segments()[len(l.Segments())-1].BaseOffset, false)
	}
	checkIndexFiles(t, l)
}

// A pass stopped (broker shutdown) ends with ErrCleanStopped, leaves the
// log as it was and no cleaner files, and does not make the log
// uncleanable.
func TestCleanStopped(t *testing.T) {
	env, l, before := crashLog(t)
	stop := make(chan struct{})
	close(stop)
	_, err := newTestCleaner(t, 1<<20).Clean(l, CleanOptions{DeleteRetentionMs: testDeleteRetentionMs, Stop: stop})
	if !errors.Is(err, ErrCleanStopped) {
		t.Fatalf("Clean = %v, want ErrCleanStopped", err)
	}
	if got := readRecords(t, l); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatal("a stopped pass changed the log")
	}
	if left := leftovers(t, env.partDir()); len(left) > 0 {
		t.Fatalf("cleaner files left: %v", left)
	}
	env.dir.FinishCleaning(testTP, err)
	if u := env.dir.Uncleanable(); len(u) != 0 {
		t.Fatalf("Uncleanable = %v after a stopped pass", u)
	}
}
