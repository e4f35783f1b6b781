package logstore

import (
	"bufio"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestCleanKill9 kills (SIGKILL) a process that cleans a log over and
// over, at several moments, and checks after each kill that the reopened
// log holds only records it held before, in order, every key's latest
// record among them, and no cleaner files.
func TestCleanKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	env := newTestEnv(t)
	cfg := compactConfig()
	l := env.openLog(cfg)
	rng := rand.New(rand.NewSource(9))
	workload(t, l, rng, 4000, 300, 5, 3, 1_700_000_000_000)
	before := readRecords(t, l)
	env.close()
	all := map[string]bool{}
	latest := map[string]keyedRecord{}
	for _, r := range before {
		all[fmt.Sprint(r)] = true
		latest[r.Key] = r
	}
	for i, delay := range []time.Duration{0, 3 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCleanKill9Child$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SLUICE_CLEAN_CHILD="+env.path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for sc.Scan() && sc.Text() != "cleaning" {
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()

		l = env.openLog(cfg)
		got := readRecords(t, l)
		seen := map[string]bool{}
		for _, r := range got {
			if !all[fmt.Sprint(r)] {
				t.Fatalf("kill %d: record %+v was never written", i, r)
			}
			seen[r.Key+"@"+fmt.Sprint(r.Offset)] = true
		}
		for k, r := range latest {
			if !seen[k+"@"+fmt.Sprint(r.Offset)] {
				t.Fatalf("kill %d (after %v): latest record of %s (offset %d) lost", i, delay, k, r.Offset)
			}
		}
		if left := leftovers(t, env.partDir()); len(left) > 0 {
			t.Fatalf("kill %d: cleaner files left: %v", i, left)
		}
		checkIndexFiles(t, l)
		t.Logf("kill after %v: %d records", delay, len(got))
		env.close()
	}
}

// TestCleanKill9Child is the process TestCleanKill9 kills: it cleans the
// log in SLUICE_CLEAN_CHILD until it is killed.
func TestCleanKill9Child(t *testing.T) {
	path := os.Getenv("SLUICE_CLEAN_CHILD")
	if path == "" {
		t.Skip("run by TestCleanKill9")
	}
	d, err := OpenDir(path, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Open(testTP, testTopicID, compactConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCleaner(50*offsetMapSlotSize, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("cleaning")
	for first := int64(0); ; {
		st, err := c.Clean(l, CleanOptions{FirstDirty: first, DeleteRetentionMs: 1 << 40, Recheck: true})
		if err != nil {
			t.Fatal(err)
		}
		first = st.EndOffset
		if first == l.Segments()[len(l.Segments())-1].BaseOffset {
			first = 0
		}
	}
}
