package compat

// Checks of the librdkafka-suite rows' files and parsers that need no
// broker and no librdkafka build.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLibrdkafkaSuiteFiles checks that the tests file and the allow-list
// parse, that every run entry is unique and every left-out one has a
// reason, and that the allow-list names only tests the rows run.
func TestLibrdkafkaSuiteFiles(t *testing.T) {
	run, leftOut, err := readLibrdkafkaTests(librdkafkaSuiteTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(run) < 50 {
		t.Errorf("%d tests to run, want the suite's quick subset (about 100)", len(run))
	}
	if _, ok := leftOut[librdkafkaSuiteTxnTest]; !ok {
		t.Errorf("%s is not left out of the one-node row", librdkafkaSuiteTxnTest)
	}
	if _, err := readLibrdkafkaAllowList(librdkafkaSuiteExcludedFile); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	for _, bad := range []string{
		"0001_multiobj\n",                        // no reason
		"0001_multiobj # x\n0001_multiobj # y\n", // twice
		"0999_nosuch # x\n",                      // not a test the rows run
		"0097_ssl_verify # x\n",                  // left out: it cannot fail
		"multiobj # x\n",                         // not a name
	} {
		path := filepath.Join(dir, "allow.txt")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readLibrdkafkaAllowList(path); err == nil {
			t.Errorf("allow-list %q accepted", bad)
		}
	}
}

// TestLibrdkafkaSuiteParse checks the readers of test-runner's output: the
// JSON report, the summary table and the failure lines.
func TestLibrdkafkaSuiteParse(t *testing.T) {
	report := `{ "id": "x_bare", "mode": "bare", "scenario": "default", "date": "x", "git_version": "HEAD", "broker_version": "4.1.1", "tests": {"<MAIN>": {"name": "<MAIN>", "state": "PASSED", "known_issue": false, "extra": "", "duration": 4.4, "report": [ ] }, "0045_subscribe_update": {"name": "0045_subscribe_update", "state": "FAILED", "known_issue": false, "extra": "", "duration": 3.2, "report": [ ] }, "0045_resubscribe_with_regex": {"name": "0045_resubscribe_with_regex", "state": "PASSED", "known_issue": false, "extra": "", "duration": 1.5, "report": [ { "a": 1 } ] }}, "tests_run": 2, "tests_passed": 1, "tests_failed": 1, "duration": 4.4}`
	got := parseRdkReport([]byte(report))
	if len(got) != 2 || got["0045_subscribe_update"].state != "FAILED" || got["0045_resubscribe_with_regex"].state != "PASSED" ||
		got["0045_resubscribe_with_regex"].secs != 1.5 {
		t.Errorf("report parsed as %+v", got)
	}

	out := "\x1b[36m[0011_produce_batch          /  3.408s] TEST FAILURE\n" +
		"\x1b[31m### Test \"0011_produce_batch (test_message_single_partition_record_fail:629)\" failed at 0011-produce_batch.c:718:test_message_single_partition_record_fail() at Wed Dec  2 00:14:33 2026: ###\n" +
		"Test assertion failed: \"invalid_record_fail_cnt == 10\": \n" +
		"\x1b[33m[0016_client_swname         /  0.001s] SKIPPING TEST: no JMX\n" +
		"TEST 20261202001426 (bare, scenario default) SUMMARY\n" +
		"|\x1b[32m 0001_multiobj                            |     PASSED |   1.127s \x1b[0m|\n" +
		"|\x1b[31m 0011_produce_batch                       |     FAILED |   3.408s \x1b[0m|\x1b[31m Test assertion failed\x1b[0m\n"
	msg := rdkFailure(out, "0011_produce_batch")
	want := `(test_message_single_partition_record_fail:629) 0011-produce_batch.c:718:test_message_single_partition_record_fail(): Test assertion failed: "invalid_record_fail_cnt == 10":`
	if msg != want {
		t.Errorf("failure %q, want %q", msg, want)
	}
	if msg := rdkFailure(out, "0016_client_swname"); msg != "no JMX" {
		t.Errorf("skip reason %q", msg)
	}
	sum := parseRdkSummary(out)
	if sum["0001_multiobj"].state != "PASSED" || sum["0011_produce_batch"].state != "FAILED" ||
		!strings.HasPrefix(sum["0011_produce_batch"].msg, "Test assertion failed") {
		t.Errorf("summary parsed as %+v", sum)
	}
}
