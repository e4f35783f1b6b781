package compat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/config"
)

// This file holds the kafka-configs-keyset check: every broker and topic
// config key Apache Kafka 4.4.0 defines is one DescribeConfigs of sluice
// lists too (issue 16, problem 4). It starts a real Kafka 4.4.0 broker (KRaft,
// one node, loopback) from the jars `compat/kafkatools/fetch.sh 4.4.0` keeps
// in their own cache directory, runs kafka-configs.sh --describe --all against
// it and against sluice for broker 1 and for a topic, and compares the key
// sets with each other and with the golden file
// compat/testdata/kafka-4.4.0-configs.txt that config's unit tests read.
//
// The golden file is written from the live Kafka 4.4.0 broker by the same
// code, with types and read-only flags from a DescribeConfigs request
// (kafka-configs.sh prints neither) and a dynamic broker key's update mode
// (per-broker or cluster-wide, which no request tells) from Kafka's own
// DynamicBrokerConfig.dynamicConfigUpdateModes(), printed by jshell:
//
//	SLUICE_COMPAT=1 SLUICE_UPDATE_GOLDEN=1 go test ./compat -run TestCompatConfigsKeyset -count=1 -v
//
// The row needs java (17 or newer) and, the first time, mvn: it runs
// `compat/kafkatools/fetch.sh 4.4.0` itself, which returns at once when the
// jars are cached. TestCompatConfigsKeyset runs it on its own;
// javaConfigsKeysetRow is the row for TestCompat's list.

// keysetKafkaVersion is the Kafka release whose key set sluice follows.
const keysetKafkaVersion = "4.4.0"

// goldenConfigsPath is the golden file, relative to the repository root.
var goldenConfigsPath = filepath.Join("compat", "testdata", "kafka-"+keysetKafkaVersion+"-configs.txt")

// goldenKey is one line of the golden file.
type goldenKey struct {
	resource string // broker or topic
	name     string
	typ      string // boolean, string, int, short, long, double, list, class, password
	update   string // broker: read-only, per-broker or cluster-wide; topic: dynamic
	def      string // Kafka's default; "null" for none
}

func (k goldenKey) line() string {
	return strings.Join([]string{k.resource, k.name, k.typ, k.update, k.def}, "\t")
}

var configTypeNames = map[kmsg.ConfigType]string{
	kmsg.ConfigTypeBoolean: "boolean", kmsg.ConfigTypeString: "string", kmsg.ConfigTypeInt: "int",
	kmsg.ConfigTypeShort: "short", kmsg.ConfigTypeLong: "long", kmsg.ConfigTypeDouble: "double",
	kmsg.ConfigTypeList: "list", kmsg.ConfigTypeClass: "class", kmsg.ConfigTypePassword: "password",
}

// describeKeys asks addr for every config of broker 1 and of topic with a
// DescribeConfigs request, and returns one goldenKey per config: the default
// is the DEFAULT_CONFIG synonym's value for a broker key and the topic's
// value for a topic config (the topic sets none, and the broker's file sets
// no log.* key, so that is Kafka's default).
func describeKeys(ctx context.Context, addr, topic string) ([]goldenKey, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, javaNodeID}, {kmsg.ConfigResourceTypeTopic, topic}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, res)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var out []goldenKey
	for _, res := range resp.Resources {
		if res.ErrorCode != 0 {
			return nil, fmt.Errorf("DescribeConfigs %s: error %d %v", res.ResourceName, res.ErrorCode, res.ErrorMessage)
		}
		resource := "broker"
		if res.ResourceType == kmsg.ConfigResourceTypeTopic {
			resource = "topic"
		}
		for _, c := range res.Configs {
			k := goldenKey{resource: resource, name: c.Name, typ: configTypeNames[c.ConfigType], update: "dynamic", def: "null"}
			if c.ReadOnly {
				k.update = "read-only"
			}
			if resource == "topic" {
				if c.Value != nil {
					k.def = *c.Value
				}
			} else {
				for _, s := range c.ConfigSynonyms {
					if s.Source == kmsg.ConfigSourceDefaultConfig && s.Name == c.Name && s.Value != nil {
						k.def = *s.Value
					}
				}
			}
			if k.typ == "" {
				return nil, fmt.Errorf("DescribeConfigs %s %s: unknown config type %d", resource, c.Name, c.ConfigType)
			}
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b goldenKey) int {
		return strings.Compare(a.resource+" "+a.name, b.resource+" "+b.name)
	})
	return out, nil
}

// writeGolden writes keys to the golden file under root.
func writeGolden(root string, keys []goldenKey) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Every broker and topic config key Apache Kafka %s defines, as its DescribeConfigs\n", keysetKafkaVersion)
	b.WriteString("# answers for broker 1 and for a topic with no configs set. Interface facts (names, types,\n")
	b.WriteString("# read-only or dynamic, defaults) that sluice's config table follows; written by\n")
	b.WriteString("#   SLUICE_COMPAT=1 SLUICE_UPDATE_GOLDEN=1 go test ./compat -run TestCompatConfigsKeyset -count=1\n")
	b.WriteString("# Columns (tab-separated): resource, name, type, update mode (broker keys: read-only,\n")
	b.WriteString("# per-broker or cluster-wide; topic configs: dynamic), default (null: none).\n")
	for _, k := range keys {
		b.WriteString(k.line() + "\n")
	}
	return os.WriteFile(filepath.Join(root, goldenConfigsPath), []byte(b.String()), 0o644)
}

// readGolden reads the golden file under root.
func readGolden(root string) ([]goldenKey, error) {
	f, err := os.Open(filepath.Join(root, goldenConfigsPath))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []goldenKey
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			return nil, fmt.Errorf("%s: cannot parse %q", goldenConfigsPath, line)
		}
		out = append(out, goldenKey{resource: f[0], name: f[1], typ: f[2], update: f[3], def: f[4]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, errors.New(goldenConfigsPath + " lists no key")
	}
	return out, nil
}

// javaConfigsKeysetRow is the kafka-configs-keyset row.
func javaConfigsKeysetRow() row {
	return row{name: "kafka-configs-keyset", tools: []string{"java"}, timeout: 5 * time.Minute, run: runConfigsKeyset}
}

// TestCompatConfigsKeyset runs the kafka-configs-keyset row alone, the way
// TestCompat runs each of its rows.
func TestCompatConfigsKeyset(t *testing.T) {
	if os.Getenv("SLUICE_COMPAT") != "1" {
		t.Skip("set SLUICE_COMPAT=1 to run the compat rows (builds ./cmd/sluice; needs java)")
	}
	root, logDir := compatDirs(t)
	bin := compatBroker(t, root, logDir)
	r := javaConfigsKeysetRow()
	res := runRow(t, r, bin, root, filepath.Join(logDir, r.name))
	fmt.Printf("compat row: %s\n", res)
}

// keysetTopic is the topic both brokers describe.
const keysetTopic = "compat-keyset"

// runConfigsKeyset fetches Kafka 4.4.0, starts it, and compares the key
// sets kafka-configs.sh --describe --all prints for broker 1 and a topic on
// Kafka, on sluice and in the golden file.
func runConfigsKeyset(ctx context.Context, env *rowEnv) error {
	start := time.Now()
	out, err := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "kafkatools", "fetch.sh"), keysetKafkaVersion).Output()
	if err != nil {
		return fmt.Errorf("compat/kafkatools/fetch.sh %s: %w", keysetKafkaVersion, err)
	}
	libs := strings.TrimSpace(string(out[bytes.LastIndexByte(bytes.TrimSpace(out), '\n')+1:]))
	env.t.Logf("Kafka %s jars in %s (%.1fs)", keysetKafkaVersion, libs, time.Since(start).Seconds())

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

	for _, addr := range []string{kafka.addr, env.broker.addr} {
		err := createTopic(ctx, addr, keysetTopic, 1)
		// sluice's data of a kept row directory has the last run's topic;
		// only its config keys are described.
		if err != nil && !(addr == env.broker.addr && errors.Is(err, kerr.TopicAlreadyExists)) {
			return err
		}
	}
	if os.Getenv("SLUICE_UPDATE_GOLDEN") == "1" {
		keys, err := describeKeys(ctx, kafka.addr, keysetTopic)
		if err != nil {
			return err
		}
		modes, err := kafkaUpdateModes(ctx, libs)
		if err != nil {
			return err
		}
		for i, k := range keys {
			if k.resource == "broker" && k.update == "dynamic" {
				if keys[i].update = modes[k.name]; keys[i].update == "" {
					return fmt.Errorf("Kafka %s: %s is dynamic but has no update mode", keysetKafkaVersion, k.name)
				}
			}
		}
		if err := writeGolden(env.root, keys); err != nil {
			return err
		}
		env.t.Logf("wrote %s: %d keys", goldenConfigsPath, len(keys))
	}
	golden, err := readGolden(env.root)
	if err != nil {
		return err
	}

	// sluice's extras: keys Kafka 4.4 does not list, each documented.
	extras := map[string]map[string]bool{"broker": {}, "topic": {}}
	for _, k := range config.BrokerKeys() {
		if k.Extra != "" {
			extras["broker"][k.Name] = true
		}
	}
	for _, k := range config.TopicKeys() {
		if k.Extra != "" {
			extras["topic"][k.Name] = true
		}
	}

	for _, ent := range []struct{ resource, typ, name, heading string }{
		{"broker", "brokers", javaNodeID, "All configs for broker " + javaNodeID + " are:"},
		{"topic", "topics", keysetTopic, "All configs for topic " + keysetTopic + " are:"},
	} {
		want := map[string]bool{}
		for _, k := range golden {
			if k.resource == ent.resource {
				want[k.name] = true
			}
		}
		sets := map[string]map[string]bool{}
		for who, addr := range map[string]string{"Kafka " + keysetKafkaVersion: kafka.addr, "sluice": env.broker.addr} {
			out, err := kafka44Tool(ctx, env, libs, "kafka-configs.sh", "--bootstrap-server", addr,
				"--describe", "--all", "--entity-type", ent.typ, "--entity-name", ent.name)
			if err != nil {
				return fmt.Errorf("%s: %w", who, err)
			}
			entries, err := parseConfigs(out, ent.heading)
			if err != nil {
				return fmt.Errorf("%s: %w", who, err)
			}
			sets[who] = map[string]bool{}
			for k := range entries {
				sets[who][k] = true
			}
		}
		kafkaSet, sluiceSet := sets["Kafka "+keysetKafkaVersion], sets["sluice"]
		if d := setDiff(kafkaSet, want, nil); d != "" {
			return fmt.Errorf("%s keys: Kafka %s and %s differ: %s", ent.resource, keysetKafkaVersion, goldenConfigsPath, d)
		}
		if d := setDiff(sluiceSet, kafkaSet, extras[ent.resource]); d != "" {
			return fmt.Errorf("%s keys: sluice and Kafka %s differ: %s", ent.resource, keysetKafkaVersion, d)
		}
		env.t.Logf("%s keys: Kafka %s %d, sluice %d (%d sluice only)", ent.resource, keysetKafkaVersion, len(kafkaSet), len(sluiceSet), len(extras[ent.resource]))
	}
	return nil
}

// setDiff describes how got differs from want, allowing the extra names in
// got; "" when it does not.
func setDiff(got, want, extra map[string]bool) string {
	var more, less []string
	for k := range got {
		if !want[k] && !extra[k] {
			more = append(more, k)
		}
	}
	for k := range want {
		if !got[k] {
			less = append(less, k)
		}
	}
	for k := range extra {
		if !got[k] {
			less = append(less, k+" (sluice only)")
		}
	}
	if len(more)+len(less) == 0 {
		return ""
	}
	slices.Sort(more)
	slices.Sort(less)
	return fmt.Sprintf("%d extra %v, %d missing %v", len(more), more, len(less), less)
}

// kafkaUpdateModes returns the update mode (per-broker, cluster-wide) of
// every dynamic broker key of the Kafka whose jars are in libs, as its
// DynamicBrokerConfig reports them, by running jshell (part of the JDK).
func kafkaUpdateModes(ctx context.Context, libs string) (map[string]string, error) {
	jars, err := filepath.Glob(filepath.Join(libs, "*.jar"))
	if err != nil || len(jars) == 0 {
		return nil, fmt.Errorf("no jars in %s", libs)
	}
	script := `var m = org.apache.kafka.server.config.DynamicBrokerConfig.dynamicConfigUpdateModes();
for (var e : m.entrySet()) System.out.println("mode\t" + e.getKey() + "\t" + e.getValue());
/exit
`
	cmd := exec.CommandContext(ctx, "jshell", "--class-path", strings.Join(jars, string(os.PathListSeparator)), "-")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("jshell: %w", err)
	}
	modes := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Split(strings.TrimSpace(line), "\t"); len(f) == 3 && f[0] == "mode" {
			modes[f[1]] = f[2]
		}
	}
	if len(modes) == 0 {
		return nil, fmt.Errorf("jshell printed no update modes: %s", firstLine(string(out)))
	}
	return modes, nil
}

// kafka44Broker is the Kafka 4.4.0 broker a keyset row runs.
type kafka44Broker struct {
	addr string
	cmd  *exec.Cmd
	log  *os.File
}

// startKafka44 formats and starts one Kafka 4.4.0 node (broker and
// controller, KRaft) on free loopback ports, with its files under the row's
// directory, and waits until it answers Metadata.
func startKafka44(ctx context.Context, env *rowEnv, libs string) (*kafka44Broker, error) {
	client, err := freePort()
	if err != nil {
		return nil, err
	}
	ctrl, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(env.dir, "kafka-"+keysetKafkaVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", client)
	props := strings.Join([]string{
		"process.roles=broker,controller",
		"node.id=" + javaNodeID,
		fmt.Sprintf("controller.quorum.voters=%s@127.0.0.1:%d", javaNodeID, ctrl),
		fmt.Sprintf("listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", addr, ctrl),
		"advertised.listeners=PLAINTEXT://" + addr,
		"controller.listener.names=CONTROLLER",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"log.dirs=" + filepath.Join(dir, "data"),
		// One node: the internal topics cannot have three replicas.
		"offsets.topic.replication.factor=1",
		"transaction.state.log.replication.factor=1",
		"transaction.state.log.min.isr=1",
		"share.coordinator.state.topic.replication.factor=1",
		"share.coordinator.state.topic.min.isr=1",
	}, "\n") + "\n"
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(props), 0o644); err != nil {
		return nil, err
	}
	var id [16]byte
	rand.Read(id[:])
	clusterID := "k" + base64.RawURLEncoding.EncodeToString(id[:])[1:]
	bin := filepath.Join(env.root, "compat", "bin")
	format := exec.CommandContext(ctx, filepath.Join(bin, "kafka-storage.sh"), "format", "-t", clusterID, "-c", propsPath)
	format.Env = append(os.Environ(), "SLUICE_KAFKA_LIBS="+libs)
	if out, err := format.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("kafka-storage.sh format (Kafka %s): %w\n%s", keysetKafkaVersion, err, out)
	}
	logFile, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(bin, "kafka-server-start.sh"), propsPath)
	cmd.Env = append(os.Environ(), "SLUICE_KAFKA_LIBS="+libs, "KAFKA_HEAP_OPTS=-Xmx512M -Xms256M")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	bindToParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	k := &kafka44Broker{addr: addr, cmd: cmd, log: logFile}

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		k.stop()
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	err = pollUntil(ctx, 2*time.Minute, func() error {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		md, err := adm.BrokerMetadata(rctx)
		if err == nil && (len(md.Brokers) != 1 || md.Controller < 0) {
			err = fmt.Errorf("metadata lists %d brokers, controller %d", len(md.Brokers), md.Controller)
		}
		return err
	})
	if err != nil {
		k.stop()
		return nil, fmt.Errorf("Kafka %s did not start within 2 minutes (see %s): %w", keysetKafkaVersion, logFile.Name(), err)
	}
	return k, nil
}

// stop stops the broker: SIGTERM, then SIGKILL after 30 s.
func (k *kafka44Broker) stop() {
	k.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { k.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		k.cmd.Process.Kill()
		<-done
	}
	k.log.Close()
}

// kafka44Tool is kafkaTool with Kafka 4.4.0's jars (libs) on the class path.
func kafka44Tool(ctx context.Context, env *rowEnv, libs, tool string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, javaToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(env.root, "compat", "bin", tool), args...)
	cmd.Env = append(os.Environ(), "SLUICE_KAFKA_LIBS="+libs)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	n := toolRun.Add(1)
	logPath := filepath.Join(env.dir, fmt.Sprintf("tool-%02d-%s.log", n, strings.TrimSuffix(tool, ".sh")))
	_ = os.WriteFile(logPath, []byte(fmt.Sprintf("$ %s %s\n# Kafka %s, exit: %v, %.1fs\n--- stdout\n%s\n--- stderr\n%s",
		tool, strings.Join(args, " "), keysetKafkaVersion, err, time.Since(start).Seconds(), stdout.String(), stderr.String())), 0o644)
	env.t.Logf("%s %s: %.1fs (%s)", tool, strings.Join(args, " "), time.Since(start).Seconds(), logPath)
	if err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %v: %s", tool, firstArg(args), err, toolProblem(stderr.String()+"\n"+stdout.String()))
	}
	return stdout.String(), nil
}
