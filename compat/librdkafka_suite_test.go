package compat

// The librdkafka-suite rows: librdkafka's own integration test suite (its
// tests/ directory and test-runner, v2.15.1, built from source by
// librdkafka/build.sh into a cache outside the repository) against sluice.
// librdkafka/suite_tests.txt says which tests run and why the others do
// not; librdkafka_suite_excluded.txt is the allow-list of tests that may
// fail on sluice, each with its reason.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// librdkafkaSuiteTestsFile lists the tests the rows run (relative to
	// this package's directory).
	librdkafkaSuiteTestsFile = "librdkafka/suite_tests.txt"
	// librdkafkaSuiteExcludedFile is the allow-list: tests allowed to
	// fail on sluice, one per line with its reason.
	librdkafkaSuiteExcludedFile = "librdkafka_suite_excluded.txt"
	// librdkafkaSuiteBuild builds (or finds in its cache) test-runner and
	// prints its directory as its last line.
	librdkafkaSuiteBuild = "librdkafka/build.sh"
	// librdkafkaSuiteKafkaVersion is the suite's TEST_KAFKA_VERSION: the
	// Kafka release whose protocol sluice serves. The suite skips tests
	// whose TEST_BRKVER range does not admit it.
	librdkafkaSuiteKafkaVersion = "4.1.1"
	// librdkafkaSuiteTxnTest is the transactional test that needs three
	// brokers (its topics have replication factor 3).
	librdkafkaSuiteTxnTest = "0103_transactions"
	// librdkafkaSuiteTestTimeout bounds one test-runner process (one test
	// number); the suite's own timeouts are shorter, so this only bounds a
	// hang.
	librdkafkaSuiteTestTimeout = 6 * time.Minute
)

// librdkafkaSuiteBrokerProps are the broker settings of the suite's default
// scenario (tests/scenarios/default.json: auto-created topics with 4
// partitions) that differ from sluice's defaults.
var librdkafkaSuiteBrokerProps = []string{"num.partitions=4"}

// librdkafkaSuiteAuthzProps turn the one-node row's authorizer on, as
// librdkafka's test environment (trivup) and the side-by-side Kafka run
// (kafkaSuiteProps) configure theirs: the StandardAuthorizer, allowing
// everything no ACL names, so that the suite's clients (ANONYMOUS on
// PLAINTEXT) need no super user, 0081_admin's ACL subtests have
// CreateAcls/DescribeAcls/DeleteAcls to talk to, and the tests that deny a
// principal with kafka-acls.sh (0109, 0115, 0119) see the denial.
var librdkafkaSuiteAuthzProps = []string{
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"allow.everyone.if.no.acl.found=true",
}

// librdkafkaSuiteRow runs the one-node subset of librdkafka's suite against
// one sluice node.
func librdkafkaSuiteRow() row {
	return row{
		name: "librdkafka-suite",
		// A cold cache builds librdkafka first (about 4 minutes on 2
		// cores; scripts/test-all.sh builds it in its setup step).
		timeout:   40 * time.Minute,
		overrides: append(slices.Clone(librdkafkaSuiteBrokerProps), librdkafkaSuiteAuthzProps...),
		run: func(ctx context.Context, env *rowEnv) error {
			return runLibrdkafkaSuiteRow(ctx, env, false)
		},
	}
}

// librdkafkaSuiteTxnRow runs the suite's transactional test 0103 against a
// three-node sluice cluster, without an authorizer: 0103 needs none, and
// the side-by-side Kafka run's three nodes go without one too.
func librdkafkaSuiteTxnRow() row {
	return row{
		name:      "librdkafka-suite-txn",
		nodes:     3,
		timeout:   20 * time.Minute,
		overrides: librdkafkaSuiteBrokerProps,
		run: func(ctx context.Context, env *rowEnv) error {
			return runLibrdkafkaSuiteRow(ctx, env, true)
		},
	}
}

// TestCompatLibrdkafka runs the librdkafka-suite rows as TestCompat runs
// its rows (same broker build, same runRow), skipped unless SLUICE_COMPAT=1.
// One row: -run 'TestCompatLibrdkafka/librdkafka-suite$'.
func TestCompatLibrdkafka(t *testing.T) {
	if os.Getenv("SLUICE_COMPAT") != "1" {
		t.Skip("set SLUICE_COMPAT=1 to run the compat rows (builds ./cmd/sluice and librdkafka's test-runner)")
	}
	root, logDir := compatDirs(t)
	bin := compatBroker(t, root, logDir)
	for _, r := range []row{librdkafkaSuiteRow(), librdkafkaSuiteTxnRow()} {
		t.Run(r.name, func(t *testing.T) {
			res := runRow(t, r, bin, root, filepath.Join(logDir, r.name))
			fmt.Printf("compat row: %s\n", res)
		})
	}
}

// runLibrdkafkaSuiteRow builds or finds test-runner, runs the row's tests
// against env's brokers and checks the outcome against the allow-list.
func runLibrdkafkaSuiteRow(ctx context.Context, env *rowEnv, txn bool) error {
	names, err := librdkafkaSuiteTests(txn)
	if err != nil {
		return err
	}
	allowed, err := readLibrdkafkaAllowList(librdkafkaSuiteExcludedFile)
	if err != nil {
		return err
	}
	testDir, err := buildLibrdkafkaSuite(ctx, env.root, env.dir, env.t.Logf)
	if err != nil {
		return err
	}
	s := &rdkSuite{
		testDir:   testDir,
		root:      env.root,
		dir:       env.dir,
		bootstrap: env.bootstrap,
		parallel:  librdkafkaSuiteParallel(),
		quick:     os.Getenv("SLUICE_LIBRDKAFKA_FULL") != "1",
		logf:      env.t.Logf,
	}
	start := time.Now()
	results, err := s.run(ctx, names)
	if err != nil {
		return err
	}
	env.t.Logf("librdkafka suite: %s in %.0fs", rdkCounts(results), time.Since(start).Seconds())
	return checkLibrdkafkaResults(results, allowed, env.t.Logf)
}

// librdkafkaSuiteTests returns the names the row runs: the entries of
// librdkafkaSuiteTestsFile not left out, narrowed by SLUICE_LIBRDKAFKA_TESTS
// (comma-separated test numbers, names or entries) when set; or, for the
// three-node row, the transactional test.
func librdkafkaSuiteTests(txn bool) ([]string, error) {
	run, _, err := readLibrdkafkaTests(librdkafkaSuiteTestsFile)
	if err != nil {
		return nil, err
	}
	if txn {
		return []string{librdkafkaSuiteTxnTest}, nil
	}
	if only := os.Getenv("SLUICE_LIBRDKAFKA_TESTS"); only != "" {
		var picked []string
		for _, n := range run {
			for _, w := range strings.Split(only, ",") {
				base, _, _ := strings.Cut(n, "/")
				if w = strings.TrimSpace(w); w != "" && (n == w || base == w || rdkNumber(n) == w) {
					picked = append(picked, n)
					break
				}
			}
		}
		run = picked
	}
	if len(run) == 0 {
		return nil, errors.New("no librdkafka test to run (SLUICE_LIBRDKAFKA_TESTS names none of the row's tests)")
	}
	return run, nil
}

// librdkafkaSuiteParallel is how many test-runner processes run at once:
// SLUICE_LIBRDKAFKA_PARALLEL, default 4 (the suite's own default is 5
// tests at once in one process; most of its tests spend their time waiting
// for session timeouts and rebalances, not on the CPU).
func librdkafkaSuiteParallel() int {
	if n, err := strconv.Atoi(os.Getenv("SLUICE_LIBRDKAFKA_PARALLEL")); err == nil && n > 0 {
		return n
	}
	return 4
}

// buildLibrdkafkaSuite runs librdkafkaSuiteBuild (instant once its cache
// is complete) and returns the directory holding test-runner.
func buildLibrdkafkaSuite(ctx context.Context, root, dir string, logf func(string, ...any)) (string, error) {
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "compat", librdkafkaSuiteBuild))
	logPath := filepath.Join(dir, "librdkafka-build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	defer logFile.Close()
	cmd.Stderr = logFile
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w\n%s", librdkafkaSuiteBuild, err, tail(logPath, 30))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	testDir := lines[len(lines)-1]
	if _, err := os.Stat(filepath.Join(testDir, "test-runner")); err != nil {
		return "", fmt.Errorf("%s printed %q, which holds no test-runner: %w", librdkafkaSuiteBuild, testDir, err)
	}
	logf("librdkafka test-runner in %s (%.1fs to build or find)", testDir, time.Since(start).Seconds())
	return testDir, nil
}

// rdkSuite runs librdkafka tests against a cluster.
type rdkSuite struct {
	testDir   string   // where test-runner is; ../src and ../src-cpp hold its libraries
	root      string   // the sluice repository, for compat/bin
	dir       string   // scratch: test.conf, one directory and log per test number
	bootstrap []string // the brokers' client addresses
	parallel  int
	quick     bool
	logf      func(string, ...any)
}

// rdkResult is one test's outcome, as test-runner's summary reports it.
type rdkResult struct {
	name  string
	state string // PASSED, FAILED, SKIPPED, or DNS (did not start)
	secs  float64
	// msg is the test's failure message (FAILED) or skip reason
	// (SKIPPED); the summary keeps its first failure only.
	msg string
	log string // the test-runner process's output
}

// run runs names, grouped by test number, s.parallel processes at a time,
// and returns one result per name in names' order. A process that exits
// without reporting a name (it crashed or hung) fails that name.
func (s *rdkSuite) run(ctx context.Context, names []string) ([]rdkResult, error) {
	conf, kafkaPath, err := s.setup()
	if err != nil {
		return nil, err
	}
	// One process per test number, or per NNNN_name/subtest entry.
	var keys []string
	byKey := make(map[string][]string)
	for _, n := range names {
		key := rdkNumber(n)
		if _, sub, ok := strings.Cut(n, "/"); ok {
			key += "/" + sub
		}
		if _, ok := byKey[key]; !ok {
			keys = append(keys, key)
		}
		byKey[key] = append(byKey[key], n)
	}

	got := make(map[string]rdkResult)
	var mu sync.Mutex
	work := make(chan string)
	var wg sync.WaitGroup
	for range max(s.parallel, 1) {
		wg.Go(func() {
			for key := range work {
				res := s.runProcess(ctx, key, byKey[key], conf, kafkaPath)
				mu.Lock()
				for _, r := range res {
					got[r.name] = r
					if r.state == "FAILED" {
						s.logf("librdkafka %s FAILED (%.1fs): %s", r.name, r.secs, r.msg)
					} else {
						s.logf("librdkafka %s %s (%.1fs) %s", r.name, r.state, r.secs, r.msg)
					}
				}
				mu.Unlock()
			}
		})
	}
	for _, key := range keys {
		select {
		case work <- key:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("librdkafka suite: %w", ctx.Err())
	}
	results := make([]rdkResult, 0, len(names))
	var tsv strings.Builder
	for _, n := range names {
		r := got[n]
		results = append(results, r)
		fmt.Fprintf(&tsv, "%s\t%s\t%.1f\t%s\n", r.name, r.state, r.secs, r.msg)
	}
	// One line per test, for comparing runs (the Kafka side by side).
	if err := os.WriteFile(filepath.Join(s.dir, "results.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return nil, err
	}
	return results, nil
}

// setup writes the suite's test.conf, links the source tree where tests
// look for it, and writes the KAFKA_PATH directory whose
// bin/ holds the Kafka tools some tests run (kafka-topics.sh to create a
// topic with configs, kafka-acls.sh to deny a principal), as they would
// find them in a Kafka distribution: compat/bin's launchers.
func (s *rdkSuite) setup() (conf, kafkaPath string, err error) {
	conf = filepath.Join(s.dir, "test.conf")
	// The suite's test.conf: only its bootstrap servers. Timeouts keep
	// the suite's default multiplier for 5 tests at a time (2.7).
	text := "bootstrap.servers=" + strings.Join(s.bootstrap, ",") + "\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return "", "", err
	}
	// Each process runs in its own directory under s.dir, where tests
	// expect the source tree one level up: 0053_stats validates its
	// statistics against ../src/statistics_schema.json.
	srcLink := filepath.Join(s.dir, "src")
	os.Remove(srcLink)
	if err := os.Symlink(filepath.Join(filepath.Dir(s.testDir), "src"), srcLink); err != nil {
		return "", "", err
	}
	kafkaPath = filepath.Join(s.dir, "kafka-path")
	bin := filepath.Join(kafkaPath, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", "", err
	}
	compatBin := filepath.Join(s.root, "compat", "bin")
	for _, tool := range []string{"kafka-topics.sh", "kafka-run-class.sh", "kafka-configs.sh"} {
		link := filepath.Join(bin, tool)
		os.Remove(link)
		if err := os.Symlink(filepath.Join(compatBin, tool), link); err != nil {
			return "", "", err
		}
	}
	// compat/bin has no kafka-acls.sh; Kafka 4.1's runs this class.
	acls := "#!/bin/sh\nexec " + filepath.Join(compatBin, "kafka-run-class.sh") + " org.apache.kafka.tools.AclCommand \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "kafka-acls.sh"), []byte(acls), 0o755); err != nil {
		return "", "", err
	}
	return conf, kafkaPath, nil
}

// runProcess runs one test-runner process, for the tests numbered key
// (NNNN) or for one subtest of one (NNNN/subtest, names then being the one
// entry NNNN_name/subtest), and returns the results of names.
func (s *rdkSuite) runProcess(ctx context.Context, key string, names []string, conf, kafkaPath string) []rdkResult {
	start := time.Now()
	num, sub, _ := strings.Cut(key, "/")
	file := "t-" + strings.ReplaceAll(key, "/", "-")
	dir := filepath.Join(s.dir, file)
	logPath := filepath.Join(s.dir, file+".log")
	fail := func(msg string) []rdkResult {
		var res []rdkResult
		for _, n := range names {
			res = append(res, rdkResult{name: n, state: "FAILED", secs: time.Since(start).Seconds(), msg: msg, log: logPath})
		}
		return res
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err.Error())
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return fail(err.Error())
	}
	defer logFile.Close()
	// The JSON report survives what the summary on stdout does not: a
	// failed test often leaves librdkafka threads behind, and test-runner
	// then aborts with its stdout still buffered.
	reportPath := filepath.Join(s.dir, file+".json")
	os.Remove(reportPath)

	// -L: no local (broker-less) tests; -E: no socket emulation; known
	// issues are left out by default; -Q: quick mode.
	args := []string{"-L", "-E"}
	if s.quick {
		args = append(args, "-Q")
	}
	tctx, cancel := context.WithTimeout(ctx, librdkafkaSuiteTestTimeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, filepath.Join(s.testDir, "test-runner"), args...)
	cmd.Dir = dir
	cmd.Env = append(s.env(num, conf, kafkaPath), "TEST_REPORT="+reportPath)
	if sub != "" {
		// test.c runs the subtests whose "function:line: ..." name
		// contains SUBTESTS; the colon keeps do_test_X from matching
		// do_test_X_more.
		cmd.Env = append(cmd.Env, "SUBTESTS="+sub+":")
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.WaitDelay = 5 * time.Second
	bindToParent(cmd)
	fmt.Fprintf(logFile, "# TESTS=%s SUBTESTS=%s %s %s\n", num, sub, cmd.Path, strings.Join(args, " "))
	runErr := cmd.Run()
	logFile.Sync()

	out, _ := os.ReadFile(logPath)
	report, _ := os.ReadFile(reportPath)
	states := parseRdkReport(report)
	if len(states) == 0 {
		// No report (test-runner died before its summary): its summary
		// table, if it reached stdout.
		states = parseRdkSummary(string(out))
	}
	var res []rdkResult
	for _, n := range names {
		base, _, _ := strings.Cut(n, "/")
		r, ok := states[base]
		switch {
		case !ok && tctx.Err() != nil && ctx.Err() == nil:
			r = rdkResult{state: "FAILED", msg: fmt.Sprintf("test-runner still running after %s: killed; last failure: %s",
				librdkafkaSuiteTestTimeout, rdkFailure(string(out), base))}
		case !ok:
			r = rdkResult{state: "FAILED", msg: fmt.Sprintf("test-runner reported no result (%v): %s", runErr, rdkFailure(string(out), base))}
		case r.state == "RUNNING":
			r.state = "FAILED"
			r.msg = "still running when test-runner stopped: " + rdkFailure(string(out), base)
		case r.state == "FAILED" || r.state == "SKIPPED":
			if m := rdkFailure(string(out), base); m != "" {
				r.msg = m
			}
		case r.state == "PASSED" && sub != "" && !strings.Contains(string(out), "[ "+sub+":"):
			// A SUBTESTS filter that matches nothing passes
			// trivially.
			r.state = "FAILED"
			r.msg = "subtest " + sub + " never started (is it still in the test, in quick mode?)"
		}
		r.name, r.log = n, logPath
		if r.secs == 0 {
			r.secs = time.Since(start).Seconds()
		}
		res = append(res, r)
	}
	return res
}

// env is test-runner's environment: ours, less variables of the suite's
// that would change what it runs, plus the test selection, test.conf, the
// broker version, and what the tests that run Kafka's tools need.
func (s *rdkSuite) env(num, conf, kafkaPath string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "TEST"), strings.HasPrefix(k, "KAFKA_"), strings.HasPrefix(k, "RDKAFKA_"),
			strings.HasPrefix(k, "BROKER"), k == "SUBTESTS", k == "ZK_ADDRESS", k == "CI", k == "LD_LIBRARY_PATH":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"TESTS="+num,
		"RDKAFKA_TEST_CONF="+conf,
		"TEST_KAFKA_VERSION="+librdkafkaSuiteKafkaVersion,
		"KAFKA_PATH="+kafkaPath,
		"BROKERS="+strings.Join(s.bootstrap, ","),
		"LD_LIBRARY_PATH="+filepath.Join(s.testDir, "..", "src")+":"+filepath.Join(s.testDir, "..", "src-cpp"),
	)
}

// rdkNumber is a test name's number: "0045" for "0045_subscribe_update".
func rdkNumber(name string) string {
	num, _, _ := strings.Cut(name, "_")
	return num
}

var (
	ansiEscape = regexp.MustCompile("\x1b\\[[0-9;]*m")
	// rdkSummaryLine is one line of test-runner's summary table:
	// "| 0001_multiobj | PASSED | 1.234s | message".
	rdkSummaryLine = regexp.MustCompile(`^\|\s*(\d{4}_\w+)\s*\|\s*(DNS|SKIPPED|RUNNING|PASSED|FAILED)\s*\|\s*([0-9.]+)s\s*\|\s?(.*)$`)
)

// parseRdkSummary reads test-runner's summary table from its output, by
// test name.
func parseRdkSummary(out string) map[string]rdkResult {
	res := make(map[string]rdkResult)
	for _, line := range strings.Split(ansiEscape.ReplaceAllString(out, ""), "\n") {
		m := rdkSummaryLine.FindStringSubmatch(strings.TrimRight(line, " \r"))
		if m == nil {
			continue
		}
		secs, _ := strconv.ParseFloat(m[3], 64)
		res[m[1]] = rdkResult{name: m[1], state: m[2], secs: secs, msg: strings.TrimSpace(m[4])}
	}
	return res
}

// parseRdkReport reads test-runner's JSON report (TEST_REPORT): each
// test's state and duration, by name.
func parseRdkReport(data []byte) map[string]rdkResult {
	var report struct {
		Tests map[string]struct {
			State    string  `json:"state"`
			Duration float64 `json:"duration"`
		} `json:"tests"`
	}
	res := make(map[string]rdkResult)
	if json.Unmarshal(data, &report) != nil {
		return res
	}
	for name, t := range report.Tests {
		if rdkName.MatchString(name) {
			res[name] = rdkResult{name: name, state: t.State, secs: t.Duration}
		}
	}
	return res
}

// rdkFailure is test name's first failure in test-runner's output (test.c
// prints `### Test "NAME (subtest:line)" failed at FILE:LINE:FUNC() at
// DATE: ###` and the message on the next line), or the reason it skipped
// itself, or else the output's last line.
func rdkFailure(out, name string) string {
	lines := strings.Split(strings.TrimRight(ansiEscape.ReplaceAllString(out, ""), "\n"), "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, `### Test "`+name) && strings.Contains(line, " failed at ") {
			where := line[strings.Index(line, " failed at ")+len(" failed at "):]
			if j := strings.Index(where, " at "); j >= 0 {
				where = where[:j]
			}
			sub := strings.TrimSuffix(strings.TrimPrefix(line[len(`### Test "`):strings.Index(line, " failed at ")], name), `"`)
			msg := strings.TrimSpace(sub + " " + where)
			if i+1 < len(lines) {
				msg += ": " + strings.TrimSpace(lines[i+1])
			}
			return msg
		}
	}
	for _, line := range lines {
		if strings.HasPrefix(line, "["+name+" ") {
			if _, reason, ok := strings.Cut(line, "SKIPPING TEST: "); ok {
				return strings.TrimSpace(reason)
			}
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// rdkCounts summarizes results: "80 passed, 3 failed, 2 skipped of 85".
func rdkCounts(results []rdkResult) string {
	n := make(map[string]int)
	for _, r := range results {
		n[r.state]++
	}
	s := fmt.Sprintf("%d passed, %d failed, %d skipped", n["PASSED"], n["FAILED"], n["SKIPPED"])
	if n["DNS"] > 0 {
		s += fmt.Sprintf(", %d not started", n["DNS"])
	}
	return s + fmt.Sprintf(" of %d", len(results))
}

// checkLibrdkafkaResults fails on a failed test the allow-list does not
// name, and says which listed tests passed (their lines can go). A test
// that did not start (DNS: test-runner filtered it out) fails too: the
// tests file promised it runs.
func checkLibrdkafkaResults(results []rdkResult, allowed map[string]string, logf func(string, ...any)) error {
	var failures, passedListed []string
	passed := 0
	for _, r := range results {
		reason, listed := allowed[r.name]
		switch r.state {
		case "PASSED":
			passed++
			if listed {
				passedListed = append(passedListed, r.name)
			}
		case "FAILED":
			if listed {
				logf("librdkafka %s failed as the allow-list expects (%s)", r.name, reason)
			} else {
				failures = append(failures, fmt.Sprintf("%s failed: %s (log %s)", r.name, r.msg, r.log))
			}
		case "DNS":
			failures = append(failures, fmt.Sprintf("%s did not run: test-runner filtered it out (log %s)", r.name, r.log))
		}
	}
	if len(passedListed) > 0 {
		logf("librdkafka: listed in %s but passed, delete their lines: %s", librdkafkaSuiteExcludedFile, strings.Join(passedListed, ", "))
		fmt.Printf("librdkafka-suite: allow-listed tests that passed (delete their lines from %s): %s\n",
			librdkafkaSuiteExcludedFile, strings.Join(passedListed, ", "))
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d librdkafka test(s) failed that %s does not list: %s", len(failures), librdkafkaSuiteExcludedFile, strings.Join(failures, "\n"))
	}
	if passed == 0 {
		return errors.New("no librdkafka test passed")
	}
	return nil
}

// rdkName matches a test name as tests/test.c spells it.
var rdkName = regexp.MustCompile(`^\d{4}_\w+$`)

// rdkEntry matches an entry of the tests file or the allow-list: a test
// name, or a test name and one of its subtests' function name.
var rdkEntry = regexp.MustCompile(`^\d{4}_\w+(/\w+)?$`)

// readLibrdkafkaTests reads librdkafkaSuiteTestsFile: the names to run, in
// order, and the left-out names with their reasons.
func readLibrdkafkaTests(path string) (run []string, leftOut map[string]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	leftOut = make(map[string]string)
	seen := make(map[string]bool)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, reason, _ := strings.Cut(sc.Text(), "#")
		line, reason = strings.TrimSpace(line), strings.TrimSpace(reason)
		if line == "" {
			continue
		}
		name, out := strings.CutPrefix(line, "-")
		name = strings.TrimSpace(name)
		if !rdkEntry.MatchString(name) {
			return nil, nil, fmt.Errorf("%s:%d: %q is not a test name (NNNN_name or NNNN_name/subtest)", path, n, name)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("%s:%d: %s listed twice", path, n, name)
		}
		seen[name] = true
		if out {
			if reason == "" {
				return nil, nil, fmt.Errorf("%s:%d: left-out %s has no reason", path, n, name)
			}
			leftOut[name] = reason
			continue
		}
		run = append(run, name)
	}
	return run, leftOut, sc.Err()
}

// readLibrdkafkaAllowList reads the allow-list: one test name per line and
// a '#' reason, by name.
func readLibrdkafkaAllowList(path string) (map[string]string, error) {
	run, leftOut, err := readLibrdkafkaTests(librdkafkaSuiteTestsFile)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	allowed := make(map[string]string)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, reason, _ := strings.Cut(sc.Text(), "#")
		line, reason = strings.TrimSpace(line), strings.TrimSpace(reason)
		if line == "" {
			continue
		}
		switch {
		case !rdkEntry.MatchString(line):
			return nil, fmt.Errorf("%s:%d: %q is not a test name (NNNN_name or NNNN_name/subtest)", path, n, line)
		case reason == "":
			return nil, fmt.Errorf("%s:%d: %s has no reason (a '#' comment on its line)", path, n, line)
		case allowed[line] != "":
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, line)
		case leftOut[line] != "" && line != librdkafkaSuiteTxnTest:
			return nil, fmt.Errorf("%s:%d: %s is left out of the rows (%s), so it cannot fail", path, n, line, librdkafkaSuiteTestsFile)
		case !slices.Contains(run, line) && line != librdkafkaSuiteTxnTest:
			return nil, fmt.Errorf("%s:%d: %s is not a test the rows run (%s)", path, n, line, librdkafkaSuiteTestsFile)
		}
		allowed[line] = reason
	}
	return allowed, sc.Err()
}
