package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoPackage is franz-go's client package; its tests are an integration suite
// that runs against whatever broker KGO_SEEDS names. The version is the one in
// our go.mod.
const kgoPackage = "github.com/twmb/franz-go/pkg/kgo"

// kgoExcludedFile lists the suite's tests that need features sluice does not
// have yet; the path is relative to this package's directory.
const kgoExcludedFile = "kgo_excluded.txt"

// kgoExcludedClusterFile lists the tests the three-node row skips on top
// of kgoExcludedFile, each with the reason it cannot pass reliably against
// a cluster.
const kgoExcludedClusterFile = "kgo_excluded_rf3.txt"

// kgoSuiteTimeout is go test's -timeout for the suite: a healthy run takes a
// minute or two, so this only bounds a hang. SLUICE_COMPAT_KGO_TIMEOUT (a Go
// duration) overrides it.
func kgoSuiteTimeout() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("SLUICE_COMPAT_KGO_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 10 * time.Minute
}

// kgoSuiteRow runs the suite against one broker, every topic with
// replication factor 1.
func kgoSuiteRow() row { return kgoRow("kgo", 1) }

// kgoSuiteRF3Row runs the suite against a three-node cluster, every topic
// the suite creates with replication factor 3 and the client seeded with
// all three nodes.
func kgoSuiteRF3Row() row { return kgoRow("kgo-rf3", 3) }

// kgoRow is a row running the suite against nodes sluice processes, with
// KGO_TEST_RF=nodes.
func kgoRow(name string, nodes int) row {
	return row{
		name:  name,
		tools: []string{"go"},
		nodes: nodes,
		// A margin over the suite's own -timeout for compiling the
		// suite and for the brokers' start and stop.
		timeout: kgoSuiteTimeout() + 3*time.Minute,
		run: func(ctx context.Context, env *rowEnv) error {
			return runKgoSuite(ctx, env, nodes)
		},
	}
}

// runKgoSuite runs `go test -json` on the kgo package against the row's
// brokers, creating topics with replication factor rf, and fails on any
// failed test, on a non-zero exit, or when no test passed.
func runKgoSuite(ctx context.Context, env *rowEnv, rf int) error {
	_, err := runKgoSuiteEnv(ctx, env, rf, nil, nil, nil)
	return err
}

// runKgoSuiteEnv is runKgoSuite with more KGO_ variables (key=value) in the
// suite's environment and the tests of more exclusion files skipped; it
// returns the suite's events as well, once the suite has run. clientOpts
// are what the row's own clients need to talk to its nodes (TLS): the
// share-group tests run only when the cluster serves share groups
// (kgo_share_test.go), and must pass when they run.
func runKgoSuiteEnv(ctx context.Context, env *rowEnv, rf int, extraEnv, moreExclusionFiles []string, clientOpts []kgo.Opt) (*testSummary, error) {
	excluded, err := readExclusions(kgoExcludedFile)
	if err != nil {
		return nil, err
	}
	shareLeftOut, err := kgoShareExclusions(ctx, env, clientOpts...)
	if err != nil {
		return nil, err
	}
	excluded = append(excluded, shareLeftOut...)
	for _, file := range moreExclusionFiles {
		more, err := readExclusions(file)
		if err != nil {
			return nil, err
		}
		excluded = append(excluded, more...)
	}
	if rf > 1 {
		more, err := readExclusions(kgoExcludedClusterFile)
		if err != nil {
			return nil, err
		}
		excluded = append(excluded, more...)
	}
	args := []string{
		"test", "-json", "-count=1",
		"-timeout", kgoSuiteTimeout().String(),
		"-skip", skipPattern(excluded),
		kgoPackage,
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = env.root
	seeds := strings.Join(env.bootstrap, ",")
	cmd.Env = append(kgoEnv(seeds, rf), extraEnv...)
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	rawPath := filepath.Join(env.dir, "kgo-test.json")
	raw, err := os.Create(rawPath)
	if err != nil {
		return nil, err
	}
	defer raw.Close()

	env.t.Logf("go %s (KGO_SEEDS=%s KGO_TEST_RF=%d)", strings.Join(args, " "), seeds, rf)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go test %s: %w", kgoPackage, err)
	}
	sum := readTestEvents(io.TeeReader(stdout, raw), func(ev testEvent) {
		// Progress for whoever watches the log: each failed
		// top-level test, and each slow one, as it finishes.
		topLevel := ev.Test != "" && !strings.Contains(ev.Test, "/")
		if topLevel && (ev.Action == "fail" || ev.Action == "pass" && ev.Elapsed >= 5) {
			env.t.Logf("kgo %s %s (%.1fs)", ev.Action, ev.Test, ev.Elapsed)
		}
	})
	waitErr := cmd.Wait()

	unfinished := sum.unfinished()
	env.t.Logf("kgo: %d passed, %d failed, %d skipped, %d unfinished (raw events: %s)",
		sum.passed, len(sum.failed), sum.skipped, len(unfinished), rawPath)
	if len(sum.failed) == 0 && waitErr == nil {
		if sum.passed == 0 {
			return sum, fmt.Errorf("go test %s ran no test\n%s", kgoPackage, stderr.String())
		}
		return sum, checkShareTestsRan(sum, shareLeftOut)
	}

	return sum, sum.failure("", "go test "+kgoPackage, waitErr, rawPath, stderr.String())
}

// maxDetailedTests bounds how many tests' output a failure message carries.
const maxDetailedTests = 8

// failure is the error a suite row returns when its go test run failed or
// exited non-zero: the first line names the first failure (or panic, or
// the exit) after prefix, then the counts, the failed tests and the last
// lines of each one's output; what names the run when only its exit
// failed; the rest of the output is in rawPath.
func (s *testSummary) failure(prefix, what string, waitErr error, rawPath, stderr string) error {
	unfinished := s.unfinished()
	var msg strings.Builder
	msg.WriteString(prefix)
	panicLine := s.firstPanic()
	switch {
	case len(s.failed) > 0:
		msg.WriteString(s.firstFailure())
	case panicLine != "":
		msg.WriteString(panicLine)
	default:
		fmt.Fprintf(&msg, "%s: %v", what, waitErr)
	}
	fmt.Fprintf(&msg, " [%d passed, %d failed", s.passed, len(s.failed))
	if len(unfinished) > 0 {
		fmt.Fprintf(&msg, ", unfinished: %s", strings.Join(unfinished, " "))
	}
	msg.WriteString("]")
	if len(s.failed) > 0 {
		fmt.Fprintf(&msg, "\nfailed: %s", strings.Join(s.failed, " "))
	}
	if panicLine != "" && len(s.failed) > 0 {
		fmt.Fprintf(&msg, "\nthen: %s", panicLine)
	}
	for i, name := range append(slices.Clone(s.failed), unfinished...) {
		if i == maxDetailedTests {
			fmt.Fprintf(&msg, "\n(further tests' output in %s)", rawPath)
			break
		}
		fmt.Fprintf(&msg, "\n--- %s output:\n%s", name, s.lastOutput(name, 25))
	}
	if waitErr != nil && len(s.failed) == 0 {
		fmt.Fprintf(&msg, "\n--- package output:\n%s%s", s.packageTail(40), stderr)
	}
	return errors.New(msg.String())
}

// kgoEnv is the environment of the suite: ours, less any KGO_ variable that
// would change what the suite does, plus the seed brokers (comma-separated)
// and the replication factor of the topics the suite creates.
func kgoEnv(seeds string, rf int) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KGO_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"KGO_SEEDS="+seeds,
		"KGO_TEST_RF="+strconv.Itoa(rf),
		// Only the excluded group and transaction ETL tests read
		// this; kept modest in case one is re-enabled on 2 cores.
		"KGO_TEST_RECORDS=50000",
	)
}

// readExclusions reads test names, one per line; '#' starts a comment.
func readExclusions(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	valid := regexp.MustCompile(`^(Test|Fuzz|Example)\w*$`)
	var names []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !valid.MatchString(line) {
			return nil, fmt.Errorf("%s:%d: %q is not a test name", path, n, line)
		}
		if slices.Contains(names, line) {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, line)
		}
		names = append(names, line)
	}
	return names, sc.Err()
}

// skipPattern is the -skip expression that skips exactly the named top-level
// tests (and so their subtests).
func skipPattern(names []string) string {
	if len(names) == 0 {
		return "^$"
	}
	return "^(" + strings.Join(names, "|") + ")$"
}

// testEvent is one line of `go test -json` (cmd/test2json).
type testEvent struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// testSummary is what the row needs from the event stream.
type testSummary struct {
	passed, skipped int               // top-level tests
	failed          []string          // top-level and subtests, in the order they failed
	started         []string          // top-level tests, in the order they started
	state           map[string]string // top-level test -> last of run/pause/cont/pass/fail/skip
	output          map[string][]string
	pkgOutput       []string // output not attributed to a test
	allOutput       []string // every output line, in order
}

func readTestEvents(r io.Reader, each func(testEvent)) *testSummary {
	sum := &testSummary{output: make(map[string][]string), state: make(map[string]string)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			// Not an event (a build error printed as is): keep it.
			sum.pkgOutput = append(sum.pkgOutput, sc.Text())
			sum.allOutput = append(sum.allOutput, sc.Text())
			continue
		}
		each(ev)
		topLevel := ev.Test != "" && !strings.Contains(ev.Test, "/")
		if topLevel && slices.Contains([]string{"run", "pause", "cont", "pass", "fail", "skip"}, ev.Action) {
			sum.state[ev.Test] = ev.Action
		}
		switch ev.Action {
		case "run":
			if topLevel {
				sum.started = append(sum.started, ev.Test)
			}
		case "output":
			line := strings.TrimRight(ev.Output, "\n")
			sum.allOutput = append(sum.allOutput, line)
			if ev.Test == "" {
				sum.pkgOutput = append(sum.pkgOutput, line)
			} else {
				sum.output[ev.Test] = append(sum.output[ev.Test], line)
			}
		case "pass":
			if topLevel {
				sum.passed++
			}
		case "skip":
			if topLevel {
				sum.skipped++
			}
		case "fail":
			if ev.Test != "" {
				sum.failed = append(sum.failed, ev.Test)
			}
		}
	}
	return sum
}

// fileLine matches a t.Error/t.Fatal line such as "    foo_test.go:42: msg".
var fileLine = regexp.MustCompile(`^\s+\w+\.go:\d+: `)

// firstFailure is the first t.Error/t.Fatal line of the first failed test,
// prefixed with the test's name; or the test's name alone.
func (s *testSummary) firstFailure() string {
	if len(s.failed) == 0 {
		return ""
	}
	// Subtests fail before their parents; a parent's own message, if any,
	// is still found because every failed test is searched in order.
	for _, name := range s.failed {
		for _, line := range s.output[name] {
			if fileLine.MatchString(line) {
				return name + ": " + strings.TrimSpace(line)
			}
		}
	}
	return "--- FAIL: " + s.failed[0]
}

// firstPanic returns the first line of a panic or fatal error, such as
// go test's "panic: test timed out after 10m0s", or "".
func (s *testSummary) firstPanic() string {
	for _, line := range s.allOutput {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			return line
		}
	}
	return ""
}

// unfinished lists the tests that were running when the binary panicked or
// timed out: those go test's timeout panic lists under "running tests:", or
// else the top-level tests that started and never finished.
func (s *testSummary) unfinished() []string {
	var names []string
	for i, line := range s.allOutput {
		if strings.TrimSpace(line) != "running tests:" {
			continue
		}
		for _, l := range s.allOutput[i+1:] {
			f := strings.Fields(l)
			if len(f) != 2 || !strings.HasPrefix(f[1], "(") {
				break
			}
			names = append(names, f[0])
		}
		return names
	}
	for _, name := range s.started {
		if st := s.state[name]; st == "run" || st == "cont" {
			names = append(names, name)
		}
	}
	return names
}

// lastOutput returns up to n of a test's last output lines, a run of equal
// lines shown once with its count.
func (s *testSummary) lastOutput(test string, n int) string {
	var lines []string
	var prev string
	repeats := 0
	flush := func() {
		if repeats > 0 {
			lines = append(lines, fmt.Sprintf("    (previous line repeated %d more times)", repeats))
		}
		repeats = 0
	}
	for i, line := range s.output[test] {
		if i > 0 && line == prev {
			repeats++
			continue
		}
		flush()
		lines = append(lines, line)
		prev = line
	}
	flush()
	if len(lines) > n {
		lines = append([]string{"    ... " + strconv.Itoa(len(lines)-n) + " earlier lines in the raw log"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// packageTail returns up to n of the last lines not attributed to a test.
func (s *testSummary) packageTail(n int) string {
	lines := s.pkgOutput
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
