package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Java rows run Apache Kafka's own command-line tools through the
// launchers in compat/bin/, which take their jars from the cache that
// compat/kafkatools/fetch.sh fills (scripts/test-all.sh runs it). A tool run
// costs a JVM start (about a second), so each row makes the few invocations
// its check needs and does setup and cross-checks with franz-go instead.
// The rows with a Java app of their own (compat/streams/, compat/share/)
// build it with its build.sh through runBuildScript.

// kafkaVersion is the Kafka release in compat/kafkatools/pom.xml.
const kafkaVersion = "4.1.1"

// javaToolTimeout bounds one tool invocation. The tools retry a broker
// they cannot reach for a long time; a row should fail well before that.
const javaToolTimeout = 60 * time.Second

// javaNodeID is the node id every row's broker gets (broker_test.go), so it
// is the only correct Leader, Replicas, Isr and broker entity in tool output.
const javaNodeID = "1"

// kafkaLibsDir is where fetch.sh keeps the jars; the launchers read the same
// variables.
func kafkaLibsDir() string {
	if d := os.Getenv("SLUICE_KAFKA_LIBS"); d != "" {
		return d
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sluice", "kafka-"+kafkaVersion, "libs")
}

// javaClusterRow is javaRow against a cluster of three sluice processes
// (cluster_test.go).
func javaClusterRow(name string, timeout time.Duration, run func(ctx context.Context, env *rowEnv) error) row {
	r := javaRow(name, timeout, run)
	r.nodes = 3
	return r
}

// javaRow builds a row that runs Kafka's tools. Besides java on PATH it
// needs the fetched jars; without them the row fails, naming the fix.
func javaRow(name string, timeout time.Duration, run func(ctx context.Context, env *rowEnv) error) row {
	return row{
		name:    name,
		tools:   []string{"java"},
		timeout: timeout,
		run: func(ctx context.Context, env *rowEnv) error {
			libs := kafkaLibsDir()
			if _, err := os.Stat(filepath.Join(libs, ".complete")); err != nil {
				return fmt.Errorf("Kafka %s's jars are not in %s (a missing tool fails the row): run compat/kafkatools/fetch.sh", kafkaVersion, libs)
			}
			return run(ctx, env)
		},
	}
}

// toolRun counts invocations so that each one's log file has its own name.
var toolRun atomic.Int64

// kafkaTool runs compat/bin/<tool> with args and stdin (may be nil) and
// returns its stdout. A non-zero exit is an error whose first line names the
// tool and the first line of its stderr that reports a problem. Every run's
// command line, stdout and stderr are kept in the row's directory.
func kafkaTool(ctx context.Context, env *rowEnv, stdin io.Reader, tool string, args ...string) (string, error) {
	stdout, _, err := kafkaToolOutput(ctx, env, stdin, tool, args...)
	return stdout, err
}

// kafkaToolOutput is kafkaTool returning stderr as well, for the tools that
// report a failed operation on stderr and still exit 0.
func kafkaToolOutput(ctx context.Context, env *rowEnv, stdin io.Reader, tool string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, javaToolTimeout)
	defer cancel()
	path := filepath.Join(env.root, "compat", "bin", tool)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = stdin
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)

	n := toolRun.Add(1)
	logPath := filepath.Join(env.dir, fmt.Sprintf("tool-%02d-%s.log", n, strings.TrimSuffix(tool, ".sh")))
	var log bytes.Buffer
	fmt.Fprintf(&log, "$ %s %s\n# exit: %v, %.1fs\n--- stdout\n%s\n--- stderr\n%s", tool, strings.Join(args, " "), err, elapsed.Seconds(), stdout.String(), stderr.String())
	_ = os.WriteFile(logPath, log.Bytes(), 0o644)
	env.t.Logf("%s %s: %.1fs (%s)", tool, strings.Join(args, " "), elapsed.Seconds(), logPath)

	if ctx.Err() == context.DeadlineExceeded {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: no exit within %s; stderr: %s", tool, firstArg(args), javaToolTimeout, toolProblem(stderr.String()))
	}
	if err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %v: %s", tool, firstArg(args), err, toolProblem(stderr.String()+"\n"+stdout.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// firstArg names an invocation in an error: the first argument that is an
// action (--create, --describe, ...) rather than a connection option.
func firstArg(args []string) string {
	for i, a := range args {
		switch a {
		case "--bootstrap-server", "--broker-list":
			continue
		}
		if i > 0 && (args[i-1] == "--bootstrap-server" || args[i-1] == "--broker-list") {
			continue
		}
		return a
	}
	return ""
}

var problemLine = regexp.MustCompile(`(?i)error|exception|fail`)

// toolProblem picks the line of a tool's output that explains a failure: the
// first that mentions an error or exception, else the first non-empty one.
func toolProblem(out string) string {
	first := ""
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if problemLine.MatchString(line) {
			return line
		}
		if first == "" {
			first = line
		}
	}
	if first == "" {
		return "(no output)"
	}
	return first
}

// newAdmin returns a franz-go client and admin client for the row's broker;
// close the client when done.
func newAdmin(env *rowEnv, opts ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(env.broker.addr)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

// produceTo writes count records with the given key and value prefixes to
// one partition of topic through franz-go, record i at timestamp
// base+i seconds, and waits for every ack.
func produceTo(ctx context.Context, cl *kgo.Client, topic string, partition int32, count int, prefix string, base time.Time) error {
	recs := make([]*kgo.Record, 0, count)
	for i := range count {
		recs = append(recs, &kgo.Record{
			Topic:     topic,
			Partition: partition,
			Key:       fmt.Appendf(nil, "%s-key-%d", prefix, i),
			Value:     fmt.Appendf(nil, "%s-value-%d", prefix, i),
			Timestamp: base.Add(time.Duration(i) * time.Second),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce to %s-%d: %w", topic, partition, err)
	}
	return nil
}

// manualPartitions is the producer option produceTo needs.
func manualPartitions() kgo.Opt { return kgo.RecordPartitioner(kgo.ManualPartitioner()) }

// consumeAll reads partitions 0..partitions-1 of topic from the start up to
// their end offsets at the time of the call, with franz-go.
func consumeAll(ctx context.Context, env *rowEnv, topic string, partitions int32) ([]*kgo.Record, error) {
	admCl, adm, err := newAdmin(env)
	if err != nil {
		return nil, err
	}
	defer admCl.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("franz-go ListEndOffsets: %w", err)
	}
	want := 0
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		o, ok := ends.Lookup(topic, p)
		if !ok || o.Err != nil {
			return nil, fmt.Errorf("franz-go ListEndOffsets %s-%d: %v", topic, p, o.Err)
		}
		want += int(o.Offset)
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.broker.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(recs) < want {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return recs, fmt.Errorf("franz-go read %d of %d records of %s: %w", len(recs), want, topic, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return recs, fmt.Errorf("franz-go fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		recs = append(recs, fetches.Records()...)
	}
	return recs, nil
}

// runBuildScript runs a compat app's build script (compat/streams/build.sh,
// compat/share/build.sh; root is the repository) and returns the libs
// directory it prints on its last line. A failure is reported with the
// problem the script printed.
func runBuildScript(ctx context.Context, root, script string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(root, filepath.FromSlash(script)), args...).Output()
	if err != nil {
		msg := err.Error()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg = toolProblem(string(ee.Stderr))
		}
		return "", fmt.Errorf("%s: %s", strings.Join(append([]string{script}, args...), " "), msg)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
