package compat

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file holds the kafka-api-versions-4.4 row (issue 20, acceptance
// point 1): kafka-broker-api-versions.sh, from Kafka 4.4.0's jars, run
// against a real Kafka 4.4.0 broker (a default KRaft node, started as the
// kafka-configs-keyset row starts it) and against sluice, its output
// parsed and compared key by key, version range by version range. Both
// answers are from the client listener, the one the tool's
// --bootstrap-server names.
//
// Every difference must be listed, with its reason, in
// compat/api_versions_known_diff.txt; one that is not fails the row. A
// listed difference that no longer shows (a key landed with Kafka's
// range) is reported, so that its line is deleted and the list shrinks. The
// row logs the whole comparison as a table.
//
// The row then checks the one family sluice lists and a default Kafka does
// not, client telemetry (KIP-714, broker/telemetry.go): a Kafka 4.4 Java
// producer asks sluice for its client instance id, which it gets only
// through GetTelemetrySubscriptions, and logs no warning about telemetry.
//
// TestCompatAPIVersions44 runs the row on its own; javaAPIVersions44Row is
// the row for TestCompat's list.

// apiVersionsKnownDiffPath is the list of known differences, relative to
// the repository root.
var apiVersionsKnownDiffPath = filepath.Join("compat", "api_versions_known_diff.txt")

// notListed is how a key a broker does not list is written, in the known
// differences and in the table.
const notListed = "none"

// javaAPIVersions44Row is the kafka-api-versions-4.4 row.
func javaAPIVersions44Row() row {
	return row{name: "kafka-api-versions-4.4", tools: []string{"java"}, timeout: 4 * time.Minute, run: runAPIVersions44}
}

// TestCompatAPIVersions44 runs the kafka-api-versions-4.4 row alone, the
// way TestCompat runs each of its rows.
func TestCompatAPIVersions44(t *testing.T) {
	if os.Getenv("SLUICE_COMPAT") != "1" {
		t.Skip("set SLUICE_COMPAT=1 to run the compat rows (builds ./cmd/sluice; needs java)")
	}
	root, logDir := compatDirs(t)
	bin := compatBroker(t, root, logDir)
	r := javaAPIVersions44Row()
	res := runRow(t, r, bin, root, filepath.Join(logDir, r.name))
	fmt.Printf("compat row: %s\n", res)
}

// apiRange is one key as kafka-broker-api-versions.sh prints it for a
// broker: its name and version range, or notListed.
type apiRange struct {
	name  string
	rng   string // "0-13", "0-0", or notListed
	known bool   // the line was parsed (false: the tool did not print the key)
}

// parseAPIVersions parses the tool's output for the one broker it
// describes: "host:port (id: 1 rack: null isFenced: false) -> (" then one
// "\tName(key): lo to hi [usable: n]," line per key (a single version is
// printed alone; a key the broker does not list is "UNSUPPORTED"), then
// ")".
func parseAPIVersions(out string) (map[int]apiRange, error) {
	keys := map[int]apiRange{}
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in:
			in = strings.HasSuffix(line, " -> (")
			continue
		case line == ")":
			if len(keys) == 0 {
				return nil, fmt.Errorf("no api key in %q", out)
			}
			return keys, nil
		}
		m := matchAPIVersionLine(line)
		if m == nil {
			return nil, fmt.Errorf("cannot parse line %q", line)
		}
		key, _ := strconv.Atoi(m[2])
		r := apiRange{name: m[1], rng: notListed, known: true}
		if m[3] != "UNSUPPORTED" {
			hi := m[4]
			if m[5] != "" {
				hi = m[5]
			}
			r.rng = m[4] + "-" + hi
		}
		keys[key] = r
	}
	return nil, fmt.Errorf("no complete broker listing in %q", out)
}

// knownDiff is one line of the known differences: a key whose ranges
// differ as written, and why.
type knownDiff struct {
	key           int
	name          string
	kafka, sluice string
	reason        string
}

// knownDiffLine is "76 ShareGroupHeartbeat kafka=1-1 sluice=none: reason".
var knownDiffLine = regexp.MustCompile(`^(\d+) (\w+) kafka=(\S+) sluice=(\S+): (.+)$`)

// readKnownDiffs reads the known differences under root.
func readKnownDiffs(root string) (map[int]knownDiff, error) {
	data, err := os.ReadFile(filepath.Join(root, apiVersionsKnownDiffPath))
	if err != nil {
		return nil, err
	}
	diffs := map[int]knownDiff{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := knownDiffLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("%s:%d: cannot parse %q", apiVersionsKnownDiffPath, i+1, line)
		}
		key, _ := strconv.Atoi(m[1])
		if _, dup := diffs[key]; dup {
			return nil, fmt.Errorf("%s:%d: key %d listed twice", apiVersionsKnownDiffPath, i+1, key)
		}
		diffs[key] = knownDiff{key: key, name: m[2], kafka: m[3], sluice: m[4], reason: m[5]}
	}
	return diffs, nil
}

// apiComparison is the outcome of comparing the two listings against the
// known differences.
type apiComparison struct {
	table    []string // one line per key: key, name, Kafka 4.4, sluice, verdict
	unlisted []string // differences not in the list: each fails the row
	stale    []string // listed differences that no longer show
}

// compareAPIVersions compares Kafka's and sluice's listings key by key.
func compareAPIVersions(kafka, sluice map[int]apiRange, known map[int]knownDiff) apiComparison {
	var c apiComparison
	keys := map[int]bool{}
	for k := range kafka {
		keys[k] = true
	}
	for k := range sluice {
		keys[k] = true
	}
	for k := range known {
		keys[k] = true
	}
	sorted := make([]int, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	c.table = append(c.table, fmt.Sprintf("%-4s %-40s %-10s %-10s %s", "key", "name", "Kafka 4.4", "sluice", ""))
	for _, k := range sorted {
		kr, sr := kafka[k], sluice[k]
		if !kr.known {
			kr.rng = notListed
		}
		if !sr.known {
			sr.rng = notListed
		}
		name := kr.name
		if name == "" {
			name = sr.name
		}
		d, listed := known[k]
		if name == "" {
			name = d.name
		}
		verdict := "same"
		switch {
		case kr.rng == sr.rng && listed:
			verdict = "same (listed as differing: delete its line)"
			c.stale = append(c.stale, fmt.Sprintf("%d %s kafka=%s sluice=%s: now both %s", k, name, d.kafka, d.sluice, kr.rng))
		case kr.rng == sr.rng:
		case listed && d.kafka == kr.rng && d.sluice == sr.rng:
			verdict = "known: " + d.reason
		case listed:
			verdict = fmt.Sprintf("DIFFERENT, listed as kafka=%s sluice=%s", d.kafka, d.sluice)
			c.unlisted = append(c.unlisted, fmt.Sprintf("%d %s: Kafka 4.4 %s, sluice %s; %s lists kafka=%s sluice=%s", k, name, kr.rng, sr.rng, apiVersionsKnownDiffPath, d.kafka, d.sluice))
		default:
			verdict = "DIFFERENT, not listed"
			c.unlisted = append(c.unlisted, fmt.Sprintf("%d %s: Kafka 4.4 %s, sluice %s", k, name, kr.rng, sr.rng))
		}
		if kr.rng == notListed && sr.rng == notListed && !listed {
			continue // a key the tool knows that neither broker lists
		}
		c.table = append(c.table, fmt.Sprintf("%-4d %-40s %-10s %-10s %s", k, name, kr.rng, sr.rng, verdict))
	}
	return c
}

// runAPIVersions44 fetches Kafka 4.4.0, starts it, runs
// kafka-broker-api-versions.sh against it and against sluice, compares the
// two, and checks that a Java producer gets its client instance id from
// sluice.
func runAPIVersions44(ctx context.Context, env *rowEnv) error {
	start := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "kafkatools", "fetch.sh"), keysetKafkaVersion).Output()
	if err != nil {
		return fmt.Errorf("compat/kafkatools/fetch.sh %s: %w", keysetKafkaVersion, err)
	}
	libs := strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))
	env.t.Logf("Kafka %s jars in %s (%.1fs)", keysetKafkaVersion, libs, time.Since(start).Seconds())
	known, err := readKnownDiffs(env.root)
	if err != nil {
		return err
	}

	// A kept row directory (SLUICE_COMPAT_LOGDIR) holds the last run's
	// Kafka data, formatted with another cluster id.
	if err := os.RemoveAll(filepath.Join(env.dir, "kafka-"+keysetKafkaVersion)); err != nil {
		return err
	}
	start = time.Now()
	kafka, err := startKafka44(ctx, env, libs)
	if err != nil {
		return err
	}
	defer kafka.stop()
	env.t.Logf("Kafka %s started in %.1fs", keysetKafkaVersion, time.Since(start).Seconds())

	listings := map[string]map[int]apiRange{}
	for who, addr := range map[string]string{"Kafka " + keysetKafkaVersion: kafka.addr, "sluice": env.broker.addr} {
		out, err := kafka44Tool(ctx, env, libs, "kafka-broker-api-versions.sh", "--bootstrap-server", addr)
		if err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
		if listings[who], err = parseAPIVersions(out); err != nil {
			return fmt.Errorf("%s: %w", who, err)
		}
	}
	c := compareAPIVersions(listings["Kafka "+keysetKafkaVersion], listings["sluice"], known)
	env.t.Logf("kafka-broker-api-versions.sh, Kafka %s and sluice:\n%s", keysetKafkaVersion, strings.Join(c.table, "\n"))
	for _, s := range c.stale {
		// Printed as well as logged, so that it shows without -v.
		fmt.Printf("api versions: a difference %s lists no longer shows, delete its line: %s\n", apiVersionsKnownDiffPath, s)
		env.t.Logf("listed difference no longer shows: %s", s)
	}
	if len(c.unlisted) > 0 {
		return fmt.Errorf("%d difference(s) between Kafka %s's and sluice's API versions not in %s: %s",
			len(c.unlisted), keysetKafkaVersion, apiVersionsKnownDiffPath, strings.Join(c.unlisted, "; "))
	}

	// Client telemetry: sluice lists it where a default Kafka does not
	// (broker/telemetry.go), so a Java client uses it against sluice.
	if listings["sluice"][71].rng == notListed {
		return nil // the comparison above already judged this
	}
	return checkJavaClientInstanceID(ctx, env, libs)
}

// clientInstanceIDJava is a Java program (run from source) that starts a
// producer with Kafka's defaults (enable.metrics.push=true), asks for its
// client instance id (KIP-714), which the producer learns only from a
// GetTelemetrySubscriptions answer, and prints it.
const clientInstanceIDJava = `import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class ClientInstanceId {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            System.out.println("client instance id: " + producer.clientInstanceId(Duration.ofSeconds(30)));
        }
    }
}
`

// checkJavaClientInstanceID runs clientInstanceIDJava against sluice with
// Kafka 4.4.0's client and checks that it got an id and that nothing was
// logged about telemetry (the tools log warnings and errors to stderr).
func checkJavaClientInstanceID(ctx context.Context, env *rowEnv, libs string) error {
	src := filepath.Join(env.dir, "ClientInstanceId.java")
	if err := os.WriteFile(src, []byte(clientInstanceIDJava), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, javaToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Xmx256M", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+filepath.Join(env.root, "compat", "kafkatools", "log4j2.properties"),
		"-cp", filepath.Join(libs, "*"), src, env.broker.addr)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	logPath := filepath.Join(env.dir, "client-instance-id.log")
	_ = os.WriteFile(logPath, []byte(fmt.Sprintf("$ java %s %s\n# exit: %v, %.1fs\n--- stdout\n%s\n--- stderr\n%s",
		src, env.broker.addr, err, time.Since(start).Seconds(), stdout.String(), stderr.String())), 0o644)
	env.t.Logf("Java producer's client instance id: %.1fs (%s)", time.Since(start).Seconds(), logPath)
	if err != nil {
		return fmt.Errorf("Java producer's clientInstanceId: %v: %s", err, toolProblem(stderr.String()+"\n"+stdout.String()))
	}
	id := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(stdout.String()), "client instance id:"))
	if id == "" || id == "null" || strings.Contains(id, "\n") {
		return fmt.Errorf("Java producer's clientInstanceId printed %q", stdout.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(strings.ToLower(line), "telemetry") {
			return fmt.Errorf("Java producer logged about telemetry: %s", line)
		}
	}
	env.t.Logf("Java producer's client instance id from sluice: %s", id)
	return nil
}

// TestAPIVersionsComparison checks the row's parsing and comparison, and
// that the committed list of known differences parses, without Java.
func TestAPIVersionsComparison(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readKnownDiffs(root); err != nil {
		t.Fatal(err)
	}
	listing := func(lines ...string) map[int]apiRange {
		t.Helper()
		out := "127.0.0.1:9092 (id: 1 rack: null isFenced: false) -> (\n" + strings.Join(lines, ",\n") + "\n)\n"
		keys, err := parseAPIVersions(out)
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	kafka := listing("\tProduce(0): 0 to 13 [usable: 13]", "\tOffsetCommit(8): 2 to 10 [usable: 10]",
		"\tDescribeTopicPartitions(75): 0 [usable: 0]", "\tShareFetch(78): 1 to 2 [usable: 2]",
		"\tGetTelemetrySubscriptions(71): UNSUPPORTED", "\tStreamsGroupHeartbeat(88): 0 to 1 [usable: 1]")
	sluice := listing("\tProduce(0): 0 to 13 [usable: 13]", "\tOffsetCommit(8): 0 to 10 [usable: 10]",
		"\tDescribeTopicPartitions(75): 0 [usable: 0]", "\tShareFetch(78): UNSUPPORTED",
		"\tGetTelemetrySubscriptions(71): 0 [usable: 0]", "\tStreamsGroupHeartbeat(88): 0 to 1 [usable: 1]")
	if r := kafka[75]; r.rng != "0-0" || r.name != "DescribeTopicPartitions" {
		t.Fatalf("a single version parsed as %+v", r)
	}
	known := map[int]knownDiff{
		71: {key: 71, name: "GetTelemetrySubscriptions", kafka: notListed, sluice: "0-0", reason: "receiver"},
		78: {key: 78, name: "ShareFetch", kafka: "1-2", sluice: "0-2", reason: "wrong range listed"},
		88: {key: 88, name: "StreamsGroupHeartbeat", kafka: "0-1", sluice: notListed, reason: "landed since"},
	}
	c := compareAPIVersions(kafka, sluice, known)
	wantUnlisted := []string{
		"8 OffsetCommit: Kafka 4.4 2-10, sluice 0-10",
		"78 ShareFetch: Kafka 4.4 1-2, sluice none; compat/api_versions_known_diff.txt lists kafka=1-2 sluice=0-2",
	}
	if !slices.Equal(c.unlisted, wantUnlisted) {
		t.Errorf("unlisted differences %q, want %q", c.unlisted, wantUnlisted)
	}
	if want := []string{"88 StreamsGroupHeartbeat kafka=0-1 sluice=none: now both 0-1"}; !slices.Equal(c.stale, want) {
		t.Errorf("stale entries %q, want %q", c.stale, want)
	}
	if len(c.table) != 7 {
		t.Errorf("table of %d lines (header and six keys), want 7:\n%s", len(c.table), strings.Join(c.table, "\n"))
	}
}
