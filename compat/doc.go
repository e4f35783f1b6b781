// Package compat checks sluice against real Kafka clients and tools.
//
// Everything lives in the package's tests. TestCompat builds ./cmd/sluice,
// and for each row starts a fresh broker process on a free loopback port with
// a temporary log directory, waits for the line that says it is ready, and
// runs the row against it:
//
//   - kgo: franz-go's own integration suite (github.com/twmb/franz-go/pkg/kgo
//     at the version in go.mod), minus the tests listed in kgo_excluded.txt
//     and, while the cluster does not serve share groups, its share-group
//     tests (kgo_share_test.go);
//   - librdkafka-suite, librdkafka-suite-txn: librdkafka v2.15.1's own
//     integration tests (quick mode; librdkafka/suite_tests.txt), built from
//     source by librdkafka/build.sh into a cache outside the repository,
//     against one node and, for its transactions test, three, minus the
//     tests listed in librdkafka_suite_excluded.txt (TestCompatLibrdkafka);
//   - kcat: a 100,000-message keyed round trip through kcat (librdkafka);
//   - kafka-*: Apache Kafka 4.1.1's command-line tools (java_*_test.go),
//     run through the launchers in compat/bin/ from jars that
//     compat/kafkatools/fetch.sh fetches with Maven into a cache outside
//     the repository.
//
// Each row reports its name, PASS, FAIL or SKIP, its duration and its first
// failure line (for SKIP, the reason). A tool a row needs that is not on
// PATH fails the row: a row never skips for want of a tool, only when the
// build under test cannot do what it tests yet (rowSkipped: a feature level
// whose supported max is still 0).
//
// TestCompat runs only when SLUICE_COMPAT=1, so `go test ./...` on a machine
// without kcat or Java still passes; scripts/test-all.sh sets it. See
// README.md in this directory for the variables that tune a run.
package compat
