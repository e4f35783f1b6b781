package compat

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestKgoExclusions checks kgo_excluded.txt parses (it may list nothing:
// the share tests are gated in kgo_share_test.go) and that the -skip
// pattern built from it, plus a sample name, skips exactly the listed
// tests. It needs no broker.
func TestKgoExclusions(t *testing.T) {
	names, err := readExclusions(kgoExcludedFile)
	if err != nil {
		t.Fatal(err)
	}
	names = append(names, "TestGroupETL")
	skip := regexp.MustCompile(skipPattern(names))
	for _, name := range names {
		if !skip.MatchString(name) {
			t.Errorf("pattern does not skip %s", name)
		}
	}
	for _, name := range []string{"TestPing", "TestGroupETLX", "XTestGroupETL", "TestIssue10"} {
		if skip.MatchString(name) {
			t.Errorf("pattern skips %s, which is not listed", name)
		}
	}
}

func TestReadTestEvents(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Test":"TestA"}`,
		`{"Action":"pass","Test":"TestA","Elapsed":0.1}`,
		`{"Action":"run","Test":"TestB"}`,
		`{"Action":"run","Test":"TestB/sub"}`,
		`{"Action":"output","Test":"TestB/sub","Output":"    b_test.go:12: boom\n"}`,
		`{"Action":"fail","Test":"TestB/sub","Elapsed":0.2}`,
		`{"Action":"fail","Test":"TestB","Elapsed":0.2}`,
		`{"Action":"skip","Test":"TestC"}`,
		`# some build error`,
		`{"Action":"output","Output":"FAIL\n"}`,
		`{"Action":"fail","Elapsed":1}`,
	}, "\n")
	var events int
	sum := readTestEvents(strings.NewReader(stream), func(testEvent) { events++ })
	if events != 10 {
		t.Errorf("saw %d events, want 10", events)
	}
	if sum.passed != 1 || sum.skipped != 1 || strings.Join(sum.failed, ",") != "TestB/sub,TestB" {
		t.Errorf("passed %d skipped %d failed %v", sum.passed, sum.skipped, sum.failed)
	}
	if got, want := sum.firstFailure(), "TestB/sub: b_test.go:12: boom"; got != want {
		t.Errorf("firstFailure %q, want %q", got, want)
	}
	if got := sum.firstPanic(); got != "" {
		t.Errorf("firstPanic %q, want none", got)
	}

	// A timeout: the running test gets no fail event, only output.
	stream = strings.Join([]string{
		`{"Action":"run","Test":"TestA"}`,
		`{"Action":"pass","Test":"TestA"}`,
		`{"Action":"run","Test":"TestHang"}`,
		`{"Action":"pause","Test":"TestHang"}`,
		`{"Action":"run","Test":"TestWaiting"}`,
		`{"Action":"pause","Test":"TestWaiting"}`,
		`{"Action":"cont","Test":"TestHang"}`,
		`{"Action":"output","Test":"TestHang","Output":"panic: test timed out after 10m0s\n"}`,
		`{"Action":"output","Test":"TestHang","Output":"\trunning tests:\n"}`,
		`{"Action":"output","Test":"TestHang","Output":"\t\tTestHang (10m0s)\n"}`,
		`{"Action":"output","Test":"TestHang","Output":"\n"}`,
		`{"Action":"output","Output":"FAIL\n"}`,
		`{"Action":"fail"}`,
	}, "\n")
	sum = readTestEvents(strings.NewReader(stream), func(testEvent) {})
	if got := sum.firstPanic(); got != "panic: test timed out after 10m0s" {
		t.Errorf("firstPanic %q", got)
	}
	if got := sum.unfinished(); len(got) != 1 || got[0] != "TestHang" {
		t.Errorf("unfinished %v, want [TestHang]", got)
	}
}

func TestCheckKcatOutput(t *testing.T) {
	// A well-formed read-back: each key in one partition, messages in
	// production order at offsets from 0.
	lines := make(map[int][]string)
	for i := range kcatMessages {
		k, v := kcatMessage(i)
		p := (i % kcatKeys) % kcatPartitions
		lines[p] = append(lines[p], k+" "+v)
	}
	build := func(mutate func(p int, o int, kv string) string) []byte {
		var b strings.Builder
		for p := range kcatPartitions {
			for o, kv := range lines[p] {
				if l := mutate(p, o, kv); l != "" {
					b.WriteString(l + "\n")
				}
			}
		}
		return []byte(b.String())
	}
	line := func(p, o int, kv string) string { return strconv.Itoa(p) + " " + strconv.Itoa(o) + " " + kv }
	if err := checkKcatOutput(build(line)); err != nil {
		t.Fatalf("good output rejected: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(p, o int, kv string) string
	}{
		{"missing message", func(p, o int, kv string) string {
			if p == 2 && o == len(lines[2])-1 {
				return ""
			}
			return line(p, o, kv)
		}},
		{"offset gap", func(p, o int, kv string) string {
			if p == 1 && o >= 10 {
				o++
			}
			return line(p, o, kv)
		}},
		{"out of order", func(p, o int, kv string) string {
			if p == 3 && (o == 7 || o == 8) {
				kv = lines[3][15-o]
			}
			return line(p, o, kv)
		}},
		{"wrong key", func(p, o int, kv string) string {
			if p == 0 && o == 5 {
				kv = "key-x " + strings.Fields(kv)[1]
			}
			return line(p, o, kv)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkKcatOutput(build(tc.mutate)); err == nil {
				t.Error("bad output accepted")
			}
		})
	}
}

func TestRaceReport(t *testing.T) {
	dir := t.TempDir()
	log := dir + "/broker.log"
	b := &broker{logPath: log}
	if err := os.WriteFile(log, []byte("sluice ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.raceReport(); err != nil {
		t.Fatalf("clean log: %v", err)
	}
	racy := "sluice ready\n==================\nWARNING: DATA RACE\nWrite at 0x00c000123 by goroutine 7:\n  github.com/sluicedev/sluice/broker.(*partition).append()\n      /x/broker/partition.go:10 +0x1\n\nPrevious read at 0x00c000123 by goroutine 8:\n==================\nmore\n"
	if err := os.WriteFile(log, []byte(racy), 0o644); err != nil {
		t.Fatal(err)
	}
	err := b.raceReport()
	if err == nil {
		t.Fatal("race not reported")
	}
	want := "broker data race: Write at 0x00c000123 by goroutine 7: github.com/sluicedev/sluice/broker.(*partition).append()"
	if got := firstLine(err.Error()); got != want {
		t.Errorf("first line %q, want %q", got, want)
	}
}
