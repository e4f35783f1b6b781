package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// row is one compatibility check: a client or tool run against a fresh
// broker. Add a row by writing a constructor in its own file and listing it
// in allRows.
type row struct {
	// name is the row's subtest name: `go test -run 'TestCompat/kcat'`
	// runs one row.
	name string
	// tools are programs the row runs; each must be on PATH. A missing
	// one fails the row.
	tools []string
	// timeout bounds the whole row, broker start and stop included.
	timeout time.Duration
	// overrides are extra broker properties (key=value) for this row,
	// given to every node.
	overrides []string
	// nodes is how many sluice processes the row runs against: 0 or 1
	// for a single broker, n > 1 for a cluster of n processes that are
	// all raft voters (cluster_test.go).
	nodes int
	// cluster runs a one-node row as a cluster of one (quorum voters and
	// gossip, cluster_test.go) rather than a lone broker, so that the row
	// can add nodes to it (rowEnv.addNode).
	cluster bool
	// start, when set, starts the row's nodes in place of the harness's
	// PLAINTEXT broker or cluster (a row with its own listeners, e.g. the
	// kgo-security rows); each node's addr is the one clients bootstrap
	// from. On failure it leaves no process running.
	start func(ctx context.Context, bin, dir string, logf func(string, ...any)) ([]*broker, error)
	// run performs the check. The first line of a returned error is the
	// row's "first failure line"; later lines are detail.
	run func(ctx context.Context, env *rowEnv) error
}

// rowEnv is what a row gets to work with.
type rowEnv struct {
	t *testing.T
	// broker is the row's single broker, or node 1 of its cluster.
	broker *broker
	// nodes are the row's brokers, node id i+1 at index i; one for a
	// single-broker row.
	nodes []*broker
	// bootstrap is every node's client address, in node order.
	bootstrap []string
	root      string // repository root, the directory of go.mod
	dir       string // scratch directory for this row, kept if logs are kept
}

// allRows lists the rows in the order they run.
func allRows() []row {
	rows := []row{
		kgoSuiteRow(),
		// The kgo suite over TLS, with its SCRAM and OAUTHBEARER tests
		// (kgo_security_test.go, issue 19).
		kgoSecurityRow(),
		kafkagoRow(),
		kcatRoundTripRow(),
		kcatMetadataRow(),
		pythonConfluentRow(),
		// Every compression codec through librdkafka, checked on disk
		// (librdkafka_codecs_test.go).
		kcatCodecsRow(),
		pythonCodecsRow(),
		pythonWheelCodecsRow(),
		// Every client producing to a topic the broker auto-creates
		// (autocreate_test.go).
		autoCreateRow(),
		faultDetectedRow(),
		// Kafka's Java tools (java_*_test.go).
		javaAPIVersionsRow(),
		javaTopicsRow(),
		javaConfigsRow(),
		javaConfigsKeysetRow(),
		javaAPIVersions44Row(), // against Kafka 4.4.0 (java_api_versions_test.go)
		javaQuotasConfigsRow(),
		javaGetOffsetsRow(),
		javaDeleteRecordsRow(),
		javaLogDirsRow(),
		javaLogDirsJBODRow(), // several log dirs, a replica moved between them (java_log_dirs_test.go, issue 20)
		javaConsoleRow(),
		javaDumpLogRow(),
		javaProducerPerfRow(),
		javaVerifiableProducerRow(),
		javaConsumerPerfRow(),
		javaVerifiableConsumerRow(),
		// Consumer groups (java_consumer_groups_test.go,
		// kcat_group_test.go, python_group_test.go).
		javaConsumerGroupsRow(),
		javaConsoleGroupRow(),
		kcatGroupRow(),
		pythonGroupRow(),
		// Feature levels with Kafka 4.4's kafka-features.sh
		// (java_features_test.go, issue 20).
		javaFeaturesRow(),
		javaFeaturesRF3Row(),
		// Three-node clusters (cluster_test.go).
		kgoSuiteRF3Row(),
		kgoSecurityRF3Row(),
		javaTopicsRF3Row(),
		javaConsoleRF3Row(),
		// Leader balance (java_leader_election_test.go).
		javaLeaderElectionRow(),
		javaLeaderElectionUncleanRow(),
		// Eligible leader replicas in kafka-topics.sh --describe
		// (java_elr_test.go, KIP-966).
		javaELRRow(),
		// Growing a one-node cluster and moving partitions
		// (java_reassign_test.go).
		javaReassignRow(),
		// Transactions (java_transactions_test.go).
		javaTransactionsRow(),
		javaTxnCopierRow(),
		// Transactions v2 with the Java producer (java_txn_v2_test.go).
		javaTxnV2Row(),
		javaTxnV2RF3Row(),
		// Quorum and cluster tools (java_quorum_test.go, issue 20).
		javaMetadataQuorumRow(),
		javaMetadataQuorumRF3Row(),
		// KafkaShareConsumer (4.4.0) on three nodes, a member and a
		// broker killed (java_share_consumer_test.go, issue 20).
		javaShareConsumerRow(),
		// kafka-share-groups.sh's offset commands (4.4.0) on one node
		// (java_share_offsets_test.go, issue 20).
		javaShareOffsetsRow(),
		// kafka-client-metrics.sh (4.4.0) and the Java producer's pushed
		// metrics on /metrics (java_client_metrics_test.go, KIP-714).
		javaClientMetricsRow(),
		// A million keyed records cleaned on three nodes
		// (java_compaction_test.go, issue 17).
		javaCompactionRow(),
		// Client byte-rate quotas measured with the perf tools
		// (java_quota_perf_test.go, issue 18).
		javaQuotaPerfRow(),
		kafkaStreamsRow(),                // Kafka Streams, exactly_once_v2, with a compacted changelog (streams_test.go)
		kafkaStreamsProtocolRow(),        // Kafka Streams 4.4, group.protocol=streams, kill -9 of the coordinator (streams_protocol_test.go)
		kafkaStreamsProtocolOneNodeRow(), // the same on one node, with kafka-streams-groups.sh --delete
		// SASL_SSL with SCRAM-SHA-512 and the authorizer, issue 19
		// (java_security_test.go, kcat_security_test.go,
		// python_security_test.go).
		javaScramUsersRow(),
		javaAclsRow(),
		kcatSecurityRow(),
		pythonSecurityRow(),
		// A Prometheus server scraping a three-node cluster, asked
		// PromQL (prometheus_test.go, issue 21).
		prometheusRow(),
	}
	return rows
}

// result is what a row reports.
type result struct {
	name    string
	passed  bool
	skipped bool // the row's run returned rowSkipped; first is the reason
	elapsed time.Duration
	first   string // first failure line; empty on success
}

// rowSkipped is what a row's run returns when the build it runs against
// cannot do what the row tests yet (a feature level it does not support,
// say): the row is reported SKIP with the reason, its nodes stopped and
// checked as for a pass.
type rowSkipped struct{ reason string }

func (e rowSkipped) Error() string { return "skipped: " + e.reason }

func (r result) String() string {
	status := "PASS"
	if r.skipped {
		status = "SKIP"
	} else if !r.passed {
		status = "FAIL"
	}
	return fmt.Sprintf("%-26s %s %8.1fs  %s", r.name, status, r.elapsed.Seconds(), r.first)
}

// compatDirs returns the repository root and the directory where a compat
// test keeps its broker binary and logs: SLUICE_COMPAT_LOGDIR, created if
// need be, or a temporary directory.
func compatDirs(t *testing.T) (root, logDir string) {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	logDir = os.Getenv("SLUICE_COMPAT_LOGDIR")
	if logDir == "" {
		logDir = t.TempDir()
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, logDir
}

// compatBroker builds the broker the rows run (or takes SLUICE_BIN) into
// logDir and returns its path.
func compatBroker(t *testing.T, root, logDir string) string {
	t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	bin, err := buildBroker(ctx, root, logDir)
	cancel()
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Logf("broker binary %s (%.1fs)", bin, time.Since(start).Seconds())
	return bin
}

// TestCompat runs every row against a freshly built sluice. It is skipped
// unless SLUICE_COMPAT=1 (scripts/test-all.sh sets it).
func TestCompat(t *testing.T) {
	if os.Getenv("SLUICE_COMPAT") != "1" {
		t.Skip("set SLUICE_COMPAT=1 to run the compat rows (builds ./cmd/sluice; needs kcat)")
	}
	root, logDir := compatDirs(t)
	bin := compatBroker(t, root, logDir)

	var results []result
	for _, r := range allRows() {
		t.Run(r.name, func(t *testing.T) {
			res := runRow(t, r, bin, root, filepath.Join(logDir, r.name))
			results = append(results, res)
			// Printed as well as logged, so that the line shows
			// without -v and reads the same in every row.
			fmt.Printf("compat row: %s\n", res)
			if res.skipped {
				t.Skip(res.first)
			}
		})
	}

	passed, failed, skipped := 0, 0, 0
	fmt.Println("compat summary:")
	for _, res := range results {
		fmt.Printf("  %s\n", res)
		switch {
		case res.skipped:
			skipped++
		case res.passed:
			passed++
		default:
			failed++
		}
	}
	fmt.Printf("compat rows: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if os.Getenv("SLUICE_COMPAT_LOGDIR") != "" {
		fmt.Printf("compat logs: %s\n", logDir)
	}
}

// runRow checks the row's tools, starts its broker or cluster, runs the row
// and stops every node. It fails t on any failure and returns the row's
// result.
func runRow(t *testing.T, r row, bin, root, dir string) result {
	start := time.Now()
	res := result{name: r.name}
	fail := func(err error) result {
		res.elapsed = time.Since(start)
		res.first = firstLine(err.Error())
		t.Errorf("row %s: %v", r.name, err)
		return res
	}

	for _, tool := range r.tools {
		if _, err := exec.LookPath(tool); err != nil {
			return fail(fmt.Errorf("%s is not on PATH (a missing tool fails the row): %w", tool, err))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	var nodes []*broker
	if r.start != nil {
		formStart := time.Now()
		var err error
		if nodes, err = r.start(ctx, bin, dir, t.Logf); err != nil {
			return fail(fmt.Errorf("starting the row's nodes: %w", err))
		}
		for _, b := range nodes {
			t.Logf("node %d on %s, log %s", b.id, b.addr, b.logPath)
		}
		t.Logf("%d node(s) ready in %.1fs", len(nodes), time.Since(formStart).Seconds())
	} else if r.nodes <= 1 && !r.cluster {
		b, err := startBroker(ctx, bin, dir, r.overrides)
		if err != nil {
			return fail(fmt.Errorf("starting broker: %w", err))
		}
		t.Logf("broker on %s, log %s", b.addr, b.logPath)
		nodes = []*broker{b}
	} else {
		formStart := time.Now()
		var err error
		n := max(r.nodes, 1)
		nodes, err = startCluster(ctx, bin, dir, n, r.overrides, t.Logf)
		if err != nil {
			return fail(fmt.Errorf("starting a %d-node cluster: %w", n, err))
		}
		for _, b := range nodes {
			t.Logf("node %d on %s, log %s", b.id, b.addr, b.logPath)
		}
		t.Logf("cluster of %d formed in %.1fs", len(nodes), time.Since(formStart).Seconds())
	}

	env := &rowEnv{t: t, broker: nodes[0], nodes: nodes, bootstrap: addrsOf(nodes), root: root, dir: dir}
	runErr := r.run(ctx, env)
	nodes = env.nodes // the row may have added or restarted nodes
	if runErr == nil && ctx.Err() != nil {
		runErr = fmt.Errorf("row timed out after %s", r.timeout)
	}
	crashErr := crashedAny(nodes)
	stopErr := stopAll(nodes)
	if raceErr := raceAny(nodes); raceErr != nil && crashErr == nil {
		// A race explains odd failures after it; lead with it.
		if runErr != nil {
			raceErr = fmt.Errorf("%w\nrow error: %v", raceErr, runErr)
		}
		runErr = raceErr
	}
	switch {
	case crashErr != nil:
		// A crash explains every failure after it; lead with it.
		if runErr != nil {
			crashErr = fmt.Errorf("%w\nrow error: %v", crashErr, runErr)
		}
		runErr = crashErr
	case runErr == nil && stopErr != nil:
		runErr = stopErr
	}
	var skip rowSkipped
	if errors.As(runErr, &skip) && stopErr != nil {
		runErr = stopErr
	} else if errors.As(runErr, &skip) {
		res.skipped, res.first = true, skip.reason
		res.elapsed = time.Since(start)
		return res
	}
	if runErr != nil {
		t.Logf("%s", logTails(nodes, 40))
		return fail(runErr)
	}
	res.passed = true
	res.elapsed = time.Since(start)
	return res
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
