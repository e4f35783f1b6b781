package compat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// kafkagoModule is segmentio/kafka-go, a Go client written without any help
// from franz-go or librdkafka. Its tests are an integration suite that
// expects a broker at localhost:9092, set up as the suite's own CI sets up
// Kafka (docker-compose.yml, .circleci/config.yml): topics auto-created,
// message.max.bytes 200000000, group.initial.rebalance.delay.ms 0, and a
// SASL listener on localhost:9093.
const kafkagoModule = "github.com/segmentio/kafka-go"

// kafkagoVersion is the version of the suite the row runs: the newest on the
// Go module proxy when the row was written. It is fetched into a throwaway
// module (kafkagoModuleDir), so sluice's go.mod does not depend on it.
const kafkagoVersion = "v0.4.51"

// kafkagoPackages are the suite's packages that talk to a broker, relative to
// the module root ("" is the root package, where almost all the integration
// tests live). The protocol/... packages are unit tests of the client's
// codecs and need no broker, so the row leaves them out.
var kafkagoPackages = []string{"", "compress", "topics", "sasl"}

// kafkagoExcludedFile is the row's allow-list: the suite's tests that the
// row skips, each with the reason; the path is relative to this package's
// directory.
const kafkagoExcludedFile = "kafkago_excluded.txt"

// kafkagoAddr is where the suite's tests find the broker: they dial
// "localhost:9092" and expect Metadata to name broker 1 at host "localhost",
// port 9092. The row's broker listens on this port and advertises that
// host, so the port must be free when the row runs. The SASL tests (the
// sasl package, TestUnsupportedSASLMechanism, the Writer's SASL/PLAIN
// subtest) dial the suite's SASL_PLAINTEXT listener on 9093, which must be
// free too.
const (
	kafkagoListen         = "127.0.0.1:9092"
	kafkagoAdvertised     = "localhost:9092"
	kafkagoSASLListen     = "127.0.0.1:9093"
	kafkagoSASLAdvertised = "localhost:9093"
)

// The users of the suite's Kafka 4 test environment
// (docker_compose_versions/docker-compose-400.yml, KAFKA_VERSION >= 4.0.0):
// a PLAIN user from the broker's JAAS text and one SCRAM user per
// mechanism, all three super users.
const (
	kafkagoPlainUser     = "adminplain"
	kafkagoPlainPassword = "admin-secret"
	kafkagoScram256User  = "adminscram256"
	kafkagoScram256Pass  = "admin-secret-256"
	kafkagoScram512User  = "adminscram512"
	kafkagoScram512Pass  = "admin-secret-512"
)

// kafkagoKafkaVersion is the suite's KAFKA_VERSION: the Kafka release whose
// protocol sluice serves (Kafka 4.1's, the release compat/'s Java tools come
// from). The suite skips tests of features older or newer than it.
const kafkagoKafkaVersion = "4.1.1"

// kafkagoTimeout is go test's -timeout for each package of the suite: a
// healthy run of the root package takes about three minutes, so this only
// bounds a hang.
const kafkagoTimeout = 10 * time.Minute

// kafkagoRow runs the kafka-go suite against one sluice node on
// localhost:9092.
func kafkagoRow() row {
	return row{
		name:  "kafka-go",
		tools: []string{"go"},
		// Every package's -timeout would be far too long in a row;
		// a healthy row takes a few minutes.
		timeout: kafkagoTimeout + 5*time.Minute,
		run:     runKafkagoSuite,
	}
}

// kafkagoBrokerProps are the broker settings of the suite's CI for Kafka 4
// (docker-compose-400.yml), on top of sluice's defaults
// (auto.create.topics.enable and delete.topic.enable are already true,
// num.partitions already 1): a PLAINTEXT listener on 9092 and a
// SASL_PLAINTEXT one on 9093 with PLAIN and both SCRAM mechanisms, named as
// there; the StandardAuthorizer allowing everything no ACL names, with the
// suite's three users as super users. The SCRAM users are created once the
// broker is up (kafkagoUsers), as the CI's image creates them.
var kafkagoBrokerProps = []string{
	"listeners=PLAIN://" + kafkagoListen + ",SASL://" + kafkagoSASLListen,
	"advertised.listeners=PLAIN://" + kafkagoAdvertised + ",SASL://" + kafkagoSASLAdvertised,
	"listener.security.protocol.map=PLAIN:PLAINTEXT,SASL:SASL_PLAINTEXT",
	"inter.broker.listener.name=PLAIN",
	"sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
	"listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required " +
		`username="` + kafkagoPlainUser + `" password="` + kafkagoPlainPassword + `" user_` + kafkagoPlainUser + `="` + kafkagoPlainPassword + `";`,
	"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"allow.everyone.if.no.acl.found=true",
	"super.users=User:" + kafkagoScram256User + ";User:" + kafkagoScram512User + ";User:" + kafkagoPlainUser,
	"message.max.bytes=200000000",
	"group.initial.rebalance.delay.ms=0",
}

// runKafkagoSuite replaces the row's broker by one on localhost:9092, runs
// `go test -json` on each of the suite's packages with the allow-listed
// tests skipped, and fails on any failed test, on a non-zero exit, or when
// no test passed.
func runKafkagoSuite(ctx context.Context, env *rowEnv) error {
	allowed, err := readKafkagoAllowList(kafkagoExcludedFile)
	if err != nil {
		return err
	}
	if err := kafkagoBroker(ctx, env); err != nil {
		return err
	}
	modDir, err := kafkagoModuleDir(env.dir)
	if err != nil {
		return err
	}

	var (
		passed, skipped int
		failures        []string // one error message per failing package
	)
	for _, pkg := range kafkagoPackages {
		sum, err := runKafkagoPackage(ctx, env, modDir, pkg, allowed[pkg])
		if sum != nil {
			passed += sum.passed
			skipped += sum.skipped
		}
		if err != nil {
			failures = append(failures, err.Error())
		}
		if ctx.Err() != nil {
			break
		}
	}
	env.t.Logf("kafka-go: %d tests passed, %d skipped by the suite itself, %d allow-listed, %d packages failed",
		passed, skipped, countAllowed(allowed), len(failures))
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "\n"))
	}
	if passed == 0 {
		return fmt.Errorf("go test %s ran no test", kafkagoModule)
	}
	return nil
}

// kafkagoBroker stops the broker the harness started on a free port and
// starts the same binary as node 1 on kafkagoListen, advertised as
// kafkagoAdvertised, with the suite's settings. The row's end-of-row checks
// (crash, data race, clean stop) then cover the new broker.
func kafkagoBroker(ctx context.Context, env *rowEnv) error {
	old := env.broker
	if err := old.stop(); err != nil {
		return fmt.Errorf("stopping the harness's broker: %w", err)
	}
	env.nodes = nil
	// Check the fixed port first, so that a busy port reads as what it
	// is rather than as a broker that would not start.
	ln, err := net.Listen("tcp", kafkagoListen)
	if err != nil {
		return fmt.Errorf("the kafka-go suite needs a broker on %s, and that port is taken: %w", kafkagoListen, err)
	}
	ln.Close()
	ln, err = net.Listen("tcp", kafkagoSASLListen)
	if err != nil {
		return fmt.Errorf("the kafka-go suite needs a SASL listener on %s, and that port is taken: %w", kafkagoSASLListen, err)
	}
	ln.Close()
	b, err := spawnBroker(old.bin, filepath.Join(env.dir, "node-9092"), 1, kafkagoListen, kafkagoBrokerProps)
	if err != nil {
		return err
	}
	env.broker, env.nodes, env.bootstrap = b, []*broker{b}, []string{b.addr}
	if err := b.waitReady(ctx); err != nil {
		return fmt.Errorf("starting the broker on %s: %w", kafkagoListen, err)
	}
	if err := kafkagoUsers(ctx); err != nil {
		return err
	}
	env.t.Logf("kafka-go: broker on %s (advertised %s), SASL_PLAINTEXT on %s (advertised %s), log %s",
		kafkagoListen, kafkagoAdvertised, kafkagoSASLListen, kafkagoSASLAdvertised, b.logPath)
	return nil
}

// kafkagoUsers creates the suite's SCRAM users with AlterUserScramCredentials
// over the PLAINTEXT listener (ANONYMOUS, allowed: no ACL names the
// cluster), as the CI's image does with kafka-configs.sh, then waits until
// each of the three users logs in on the SASL listener.
func kafkagoUsers(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkagoListen))
	if err != nil {
		return err
	}
	defer cl.Close()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	res, err := kadm.NewClient(cl).AlterUserSCRAMs(actx, nil, []kadm.UpsertSCRAM{
		{User: kafkagoScram256User, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: kafkagoScram256Pass},
		{User: kafkagoScram512User, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: kafkagoScram512Pass},
	})
	cancel()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("creating the suite's SCRAM users: %w", err)
	}
	for _, m := range []struct {
		user string
		mech sasl.Mechanism
	}{
		{kafkagoPlainUser, plain.Auth{User: kafkagoPlainUser, Pass: kafkagoPlainPassword}.AsMechanism()},
		{kafkagoScram256User, scram.Auth{User: kafkagoScram256User, Pass: kafkagoScram256Pass}.AsSha256Mechanism()},
		{kafkagoScram512User, scram.Auth{User: kafkagoScram512User, Pass: kafkagoScram512Pass}.AsSha512Mechanism()},
	} {
		err := pollUntil(ctx, 30*time.Second, func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(kafkagoSASLListen), kgo.SASL(m.mech), kgo.RequestRetries(0))
			if err != nil {
				return err
			}
			defer cl.Close()
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err = kmsg.NewPtrApiVersionsRequest().RequestWith(rctx, cl.SeedBrokers()[0])
			return err
		})
		if err != nil {
			return fmt.Errorf("%s's %s login on %s: %w", m.user, m.mech.Name(), kafkagoSASLListen, err)
		}
	}
	return nil
}

// kafkagoModuleDir writes a module under dir that requires the suite at
// kafkagoVersion and returns its directory. go test runs there with
// -mod=mod, which downloads the suite and its dependencies through the
// module proxy and checks them against the checksum database, as for any
// module.
func kafkagoModuleDir(dir string) (string, error) {
	modDir := filepath.Join(dir, "kafkago-module")
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return "", err
	}
	gomod := fmt.Sprintf("module sluicecompat/kafkago\n\ngo 1.23\n\nrequire %s %s\n", kafkagoModule, kafkagoVersion)
	if err := os.WriteFile(filepath.Join(modDir, "go.mod"), []byte(gomod), 0o644); err != nil {
		return "", err
	}
	return modDir, nil
}

// kafkagoEnv is the environment of the suite: ours, less any KAFKA_ variable
// and GOFLAGS/GOWORK setting that would change what it does, plus the
// variables its CI sets. KAFKA_SKIP_NETTEST=1 is set by the suite's CI for
// every Kafka version: it leaves out TestConn/nettest, golang.org/x/net's
// generic net.Conn conformance checks run over a Kafka connection, which
// the suite's authors found to fail against Kafka itself.
func kafkagoEnv() []string {
	var env []string
	goflags := ""
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "KAFKA_"), strings.HasPrefix(kv, "GOWORK="):
		case strings.HasPrefix(kv, "GOFLAGS="):
			goflags = strings.TrimPrefix(kv, "GOFLAGS=")
		default:
			env = append(env, kv)
		}
	}
	var flags []string
	for _, f := range strings.Fields(goflags) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	flags = append(flags, "-mod=mod")
	return append(env,
		"GOFLAGS="+strings.Join(flags, " "),
		"GOWORK=off",
		"KAFKA_VERSION="+kafkagoKafkaVersion,
		"KAFKA_SKIP_NETTEST=1",
	)
}

// runKafkagoPackage runs one package of the suite (pkg relative to the
// module root) with the allowed tests skipped. It returns the event summary
// and an error whose first line names the first failure.
func runKafkagoPackage(ctx context.Context, env *rowEnv, modDir, pkg string, allowed []string) (*testSummary, error) {
	path := kafkagoModule
	name := "root" // the root package, in log lines and file names
	if pkg != "" {
		path += "/" + pkg
		name = pkg
	}
	args := []string{
		"test", "-json", "-count=1",
		"-timeout", kafkagoTimeout.String(),
		"-skip", kafkagoSkipPattern(allowed),
		path,
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = modDir
	cmd.Env = kafkagoEnv()
	cmd.WaitDelay = 10 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	rawPath := filepath.Join(env.dir, "kafkago-"+strings.ReplaceAll(name, "/", "-")+".json")
	raw, err := os.Create(rawPath)
	if err != nil {
		return nil, err
	}
	defer raw.Close()

	env.t.Logf("go %s (KAFKA_VERSION=%s KAFKA_SKIP_NETTEST=1)", strings.Join(args, " "), kafkagoKafkaVersion)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("go test %s: %w", path, err)
	}
	sum := readTestEvents(io.TeeReader(stdout, raw), func(ev testEvent) {
		topLevel := ev.Test != "" && !strings.Contains(ev.Test, "/")
		if topLevel && (ev.Action == "fail" || ev.Action == "pass" && ev.Elapsed >= 10) {
			env.t.Logf("kafka-go/%s %s %s (%.1fs)", name, ev.Action, ev.Test, ev.Elapsed)
		}
	})
	waitErr := cmd.Wait()
	unfinished := sum.unfinished()
	env.t.Logf("kafka-go/%s: %d passed, %d failed, %d skipped, %d unfinished in %.0fs (raw events: %s)",
		name, sum.passed, len(sum.failed), sum.skipped, len(unfinished), time.Since(start).Seconds(), rawPath)
	if len(sum.failed) == 0 && waitErr == nil {
		return sum, nil
	}

	return sum, sum.failure("kafka-go/"+name+": ", "go test "+path, waitErr, rawPath, stderr.String())
}

// kafkagoEntry matches one allow-list entry: an optional package directory
// and a colon, a top-level test and optionally one subtest, as go test
// names them (spaces turned into underscores).
var kafkagoEntry = regexp.MustCompile(`^(?:([a-z0-9_/]+):)?(Test\w*)(?:/(\S+))?$`)

// readKafkagoAllowList reads the allow-list: one entry per line,
// `[package:]TestName[/SubtestName]`, '#' starting the reason. It returns
// the entries by package directory ("" for the root package), each as
// "TestName" or "TestName/SubtestName".
func readKafkagoAllowList(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byPkg := make(map[string][]string)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		reason := ""
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line, reason = line[:i], strings.TrimSpace(line[i+1:])
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		m := kafkagoEntry.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: %q is not [package:]TestName[/SubtestName]", path, n, line)
		}
		if reason == "" {
			return nil, fmt.Errorf("%s:%d: %s has no reason (a '#' comment on its line)", path, n, line)
		}
		pkg, top, sub := m[1], m[2], m[3]
		if pkg != "" && !slices.Contains(kafkagoPackages, pkg) {
			return nil, fmt.Errorf("%s:%d: package %q is not one the row runs %q", path, n, pkg, kafkagoPackages)
		}
		entry := top
		if sub != "" {
			entry += "/" + sub
		}
		for _, prev := range byPkg[pkg] {
			// A subtest next to its parent would never be reached:
			// go test's -skip takes the first alternative that
			// matches, and the parent's would win or lose
			// depending on order.
			if prev == entry || prev == top || strings.HasPrefix(prev, top+"/") && sub == "" {
				return nil, fmt.Errorf("%s:%d: %s overlaps %s listed before", path, n, line, prev)
			}
		}
		byPkg[pkg] = append(byPkg[pkg], entry)
	}
	return byPkg, sc.Err()
}

// countAllowed is the number of entries in the allow-list.
func countAllowed(byPkg map[string][]string) int {
	n := 0
	for _, entries := range byPkg {
		n += len(entries)
	}
	return n
}

// kafkagoSkipPattern is the -skip expression that skips exactly the listed
// tests and subtests: anchored alternatives at the top level, each split at
// '/' into one anchored element per level, the form go test matches level
// by level.
func kafkagoSkipPattern(entries []string) string {
	if len(entries) == 0 {
		return "^$"
	}
	var alts []string
	for _, e := range entries {
		var elems []string
		for _, part := range strings.Split(e, "/") {
			elems = append(elems, "^"+regexp.QuoteMeta(part)+"$")
		}
		alts = append(alts, strings.Join(elems, "/"))
	}
	return strings.Join(alts, "|")
}

// TestKafkagoAllowList checks kafkago_excluded.txt parses, that every entry
// has a reason and a package the row runs, and that the -skip expressions
// built from it have the shape go test matches level by level. It needs no
// broker.
func TestKafkagoAllowList(t *testing.T) {
	byPkg, err := readKafkagoAllowList(kafkagoExcludedFile)
	if err != nil {
		t.Fatal(err)
	}
	if countAllowed(byPkg) == 0 {
		t.Fatal("no entries read")
	}
	for pkg := range byPkg {
		if !slices.Contains(kafkagoPackages, pkg) {
			t.Errorf("entries for package %q, which the row does not run", pkg)
		}
	}
	got := kafkagoSkipPattern([]string{"TestA", "TestConn/test_delete_topics", "TestR/a.b#01"})
	want := `^TestA$|^TestConn$/^test_delete_topics$|^TestR$/^a\.b#01$`
	if got != want {
		t.Errorf("skip pattern %s, want %s", got, want)
	}
	if got := kafkagoSkipPattern(nil); got != "^$" {
		t.Errorf("empty skip pattern %s, want ^$", got)
	}

	dir := t.TempDir()
	for _, bad := range []string{
		"TestA\n",                        // no reason
		"sasl TestA # x\n",               // not the entry syntax
		"nosuchpkg:TestA # x\n",          // a package the row does not run
		"TestA # x\nTestA/b # y\n",       // a subtest of a listed test
		"TestA/b # x\nTestA # y\n",       // a test after one of its subtests
		"TestA/b # x\nTestA/b # again\n", // twice
	} {
		path := filepath.Join(dir, "allow.txt")
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readKafkagoAllowList(path); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
