// env_test.go tests container mode (--env, env.go) the way the
// testcontainers Kafka modules drive an apache/kafka or Confluent container:
// the module's environment variables, its overridden command (a sh loop
// waiting for a start script the module copies in after the container
// started), the start script itself calling the image's scripts from
// deploy/image, the module's wait regexp on the output, then a kgo client
// producing and consuming through the advertised listener. No container
// runtime runs here: the image's paths (/etc/kafka/docker,
// /etc/confluent/docker, /usr/local/bin/sluice) are rewritten to a temporary
// directory and the test binary, and the modules' fixed ports 9092–9094 to
// free ones, since the test shares the host's network.
package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestEnvKeyName(t *testing.T) {
	for name, want := range map[string]string{
		"KAFKA_LOG_RETENTION_MS":                      "log.retention.ms",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":      "offsets.topic.replication.factor",
		"KAFKA_ABC___DEF":                             "abc-def",
		"KAFKA_ABC__DEF":                              "abc_def",
		"KAFKA_LISTENER_NAME_BROKER_PLAIN_SASL__JAAS": "listener.name.broker.plain.sasl_jaas",
	} {
		if got := envKeyName(name); got != want {
			t.Errorf("envKeyName(%s) = %q, want %q", name, got, want)
		}
	}
}

// imageScript reads a script of deploy/image with the image's absolute
// paths pointed at root and the test binary.
func imageScript(t *testing.T, rel, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "image", rel))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/usr/local/bin/sluice", sluiceBin)
	return strings.ReplaceAll(s, "/etc/", root+"/etc/")
}

// containerRun starts command under sh -c with exactly env (plus PATH) in
// a new process group, as the module's overridden command, writes script to
// scriptPath once started (as the module copies its start script in), and
// waits for readyRE on the output as the module's wait strategy does.
func containerRun(t *testing.T, env map[string]string, command, scriptPath, script string, readyRE *regexp.Regexp) *sluiceProc {
	t.Helper()
	cmd := exec.Command("sh", "-c", command)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	sort.Strings(cmd.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := spawnCmd(t, "", t.TempDir(), cmd)
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	tmp := scriptPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, scriptPath); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for !readyRE.MatchString(p.stdout.String()) {
		select {
		case <-p.done:
			t.Fatalf("exited before the ready line (%v); stdout:\n%s\nstderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no line matching %s; stdout:\n%s\nstderr:\n%s", readyRE, p.stdout.String(), p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// produceConsume writes records through bootstrap and reads them back, as
// a client of the container would.
func produceConsume(t *testing.T, bootstrap string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	topic := "tc-topic"
	prod, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 3 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v" + strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce through %s: %v", bootstrap, err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ConsumeTopics(topic), kgo.ConsumerGroup("tc-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []string
	for len(got) < 3 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %v before the deadline", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "v0,v1,v2" {
		t.Fatalf("consumed %v, want v0,v1,v2", got)
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit through the group: %v", err)
	}
}

// TestContainerEnvJavaModule is org.testcontainers.kafka.KafkaContainer
// (testcontainers-java 1.20+, for apache/kafka images): KafkaHelper's
// environment, command and wait strategy, and the start script its
// containerIsStarting writes.
func TestContainerEnvJavaModule(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/kafka/docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/kafka/docker/run"), []byte(imageScript(t, "kafka/run", root)), 0o755); err != nil {
		t.Fatal(err)
	}
	plain, broker, controller := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	env := map[string]string{
		"CLUSTER_ID":                                     "4L6g3nShT-eMCtK--X86sw",
		"KAFKA_LISTENERS":                                "PLAINTEXT://:" + plain + ",BROKER://:" + broker + ",CONTROLLER://:" + controller,
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":               "BROKER",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:" + controller,
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":             "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_LOG_FLUSH_INTERVAL_MESSAGES":              "9223372036854775807",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_LOG_DIRS":                                 filepath.Join(root, "data"),
	}
	starter := filepath.Join(root, "testcontainers_start.sh")
	command := "while [ ! -f " + starter + " ]; do sleep 0.1; done; " + starter
	script := "#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:" + plain + ",BROKER://localhost:" + broker + "\n" +
		root + "/etc/kafka/docker/run \n"
	p := containerRun(t, env, command, starter, script, regexp.MustCompile(`.*Transitioning from RECOVERY to RUNNING.*`))
	for _, v := range []string{"KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "CLUSTER_ID"} {
		if !strings.Contains(p.stderr.String(), v) {
			t.Errorf("no log line about the ignored %s; stderr:\n%s", v, p.stderr.String())
		}
	}
	produceConsume(t, "127.0.0.1:"+plain)
}

// TestContainerEnvGoModule is testcontainers-go's kafka module (written for
// confluentinc/confluent-local): its environment, its sh entrypoint and
// command, its start script sourcing and editing /etc/confluent/docker, and
// its wait regexp.
func TestContainerEnvGoModule(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/confluent/docker")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bash-config", "configure", "ensure", "launch"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(imageScript(t, "confluent/"+f, root)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	public, broker, controller := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	listeners := "PLAINTEXT://0.0.0.0:" + public + ",BROKER://0.0.0.0:" + broker + ",CONTROLLER://0.0.0.0:" + controller
	env := map[string]string{
		"KAFKA_LISTENERS":                                listeners,
		"KAFKA_REST_BOOTSTRAP_SERVERS":                   listeners,
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":               "BROKER",
		"KAFKA_BROKER_ID":                                "1",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":             "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_LOG_FLUSH_INTERVAL_MESSAGES":              "9223372036854775807",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 "1@localhost:" + controller,
		"KAFKA_LOG_DIRS":                                 filepath.Join(root, "data"),
	}
	starter := filepath.Join(root, "testcontainers_start.sh")
	command := "while [ ! -f " + starter + " ]; do sleep 0.1; done; bash " + starter
	script := strings.ReplaceAll(`#!/bin/bash
source /etc/confluent/docker/bash-config
export KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://127.0.0.1:`+public+`,BROKER://localhost:`+broker+`${EXTRA_ADVERTISED_LISTENERS:+,${EXTRA_ADVERTISED_LISTENERS}}"
echo Starting Kafka KRaft mode
sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure
echo 'kafka-storage format --ignore-formatted -t "$(kafka-storage random-uuid)" -c /etc/kafka/kafka.properties' >> /etc/confluent/docker/configure
echo '' > /etc/confluent/docker/ensure
/etc/confluent/docker/configure
/etc/confluent/docker/launch`, "/etc/confluent/", root+"/etc/confluent/")
	p := containerRun(t, env, command, starter, script, regexp.MustCompile(`.*Transitioning from RECOVERY to RUNNING.*`))
	if !strings.Contains(p.stderr.String(), "KAFKA_REST_BOOTSTRAP_SERVERS") {
		t.Errorf("no log line about the ignored KAFKA_REST_BOOTSTRAP_SERVERS; stderr:\n%s", p.stderr.String())
	}
	produceConsume(t, "127.0.0.1:"+public)
}

// TestContainerEnvRefusesUnknown: a KAFKA_* variable naming no property
// stops the start with an error naming the variable, as an unknown key in
// sluice.toml does; --override still wins over the environment.
func TestContainerEnvRefusesUnknown(t *testing.T) {
	cmd := exec.Command(sluiceBin, "--env")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"KAFKA_LOG_SEGMNT_BYTES=1000"}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown key "log.segmnt.bytes" (in environment variable KAFKA_LOG_SEGMNT_BYTES)`) {
		t.Fatalf("err %v, output:\n%s", err, out)
	}

	cmd = exec.Command(sluiceBin, "--env")
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"KAFKA_LOG_SEGMENT_BYTES=abc"}
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "log.segment.bytes") || !strings.Contains(string(out), "KAFKA_LOG_SEGMENT_BYTES") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}

	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd = exec.Command(sluiceBin, "--env", "--override", "listeners=PLAINTEXT://"+addr)
	cmd.Env = []string{"KAFKA_LISTENERS=PLAINTEXT://127.0.0.1:1", "KAFKA_LOG_DIRS=" + t.TempDir()}
	p := spawnCmd(t, addr, t.TempDir(), cmd)
	p.waitReady()
}

// TestContainerEnvPythonModule is testcontainers-python's KafkaContainer
// with_kraft() (written for confluentinc/cp-kafka): its environment, its
// command running the start script with sh, the script's sed, echo,
// $(hostname -i) and the Confluent scripts, and its wait regexp; the regexp
// of its default (ZooKeeper) mode must match too.
func TestContainerEnvPythonModule(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/confluent/docker")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"bash-config", "configure", "ensure", "launch"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(imageScript(t, "confluent/"+f, root)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port, broker, controller := strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t)), strconv.Itoa(freePort(t))
	env := map[string]string{
		"KAFKA_LISTENERS":                        "PLAINTEXT://0.0.0.0:" + port + ",BROKER://0.0.0.0:" + broker + ",CONTROLLER://0.0.0.0:" + controller,
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":   "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":       "BROKER",
		"KAFKA_BROKER_ID":                        "1",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":     "1",
		"KAFKA_LOG_FLUSH_INTERVAL_MESSAGES":      "10000000",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
		"CLUSTER_ID":                             "q2a1cNDfQkGNn4ktW2kfmQ==",
		"KAFKA_NODE_ID":                          "1",
		"KAFKA_PROCESS_ROLES":                    "broker,controller",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":         "1@localhost:" + controller,
		"KAFKA_CONTROLLER_LISTENER_NAMES":        "CONTROLLER",
		"KAFKA_LOG_DIRS":                         filepath.Join(root, "data"),
	}
	starter := filepath.Join(root, "tc-start.sh")
	command := "while [ ! -f " + starter + " ]; do sleep 0.1; done; sh " + starter
	script := strings.ReplaceAll(`#!/bin/bash
sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure
echo 'kafka-storage format --ignore-formatted -t q2a1cNDfQkGNn4ktW2kfmQ== -c /etc/kafka/kafka.properties' >> /etc/confluent/docker/configure
export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:`+port+`,BROKER://$(hostname -i):`+broker+`
. /etc/confluent/docker/bash-config
/etc/confluent/docker/configure
/etc/confluent/docker/launch`, "/etc/confluent/", root+"/etc/confluent/")
	p := containerRun(t, env, command, starter, script, regexp.MustCompile(`.*Kafka Server started.*`))
	if zk := regexp.MustCompile(`.*\[KafkaServer id=\d+\] started.*`); !zk.MatchString(p.stdout.String()) {
		t.Errorf("no line matching %s; stdout:\n%s", zk, p.stdout.String())
	}
	produceConsume(t, "127.0.0.1:"+port)
}
