// Package deploy holds the container image of sluice (Containerfile,
// image/, build-image.sh); this file is its test: the image built and
// started by a real container runtime, as the testcontainers Kafka
// modules start apache/kafka, and a Kafka client against it.
package deploy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The image is built once for the package's tests (buildImage).
var (
	buildOnce sync.Once
	builtTag  string
	buildSkip string // why the tests skip, when they do
	buildErr  error
)

// buildImage builds the image with deploy/build-image.sh (buildah, no
// daemon) under a tag of this test process, or skips t when the tools are
// missing (apt-get install buildah podman busybox-static).
func buildImage(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the image is a Linux image")
	}
	for _, tool := range []string{"buildah", "podman"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: apt-get install buildah podman busybox-static to run this test", tool)
		}
	}
	buildOnce.Do(func() {
		tag := fmt.Sprintf("localhost/sluice-test:%d", os.Getpid())
		out, err := exec.Command("./build-image.sh", tag).CombinedOutput()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit) && exit.ExitCode() == 2:
			buildSkip = fmt.Sprintf("build-image.sh cannot build here:\n%s", out)
		case err != nil:
			buildErr = fmt.Errorf("build-image.sh: %v\n%s", err, out)
		default:
			builtTag = tag
		}
	})
	if buildSkip != "" {
		t.Skip(buildSkip)
	}
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtTag
}

// TestMain removes the image the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtTag != "" {
		exec.Command("podman", "rmi", "-f", builtTag).Run()
	}
	os.Exit(code)
}

// startContainer runs the image with podman as the testcontainers Kafka
// modules run theirs: env, the image's CMD replaced by command (a sh -c
// loop waiting for the start script), the start script copied in to
// starter once the container runs, then a wait for the readiness line. The
// container shares the host's network (as testcontainers' host mode does)
// so that no network plugin is needed. It returns the container's name;
// it is removed with its volume when t ends.
func startContainer(t *testing.T, env map[string]string, command, starter, script string) string {
	t.Helper()
	tag := buildImage(t)
	name := fmt.Sprintf("sluice-test-%d-%s", os.Getpid(), strings.ToLower(t.Name()))
	args := []string{"run", "-d", "--name", name, "--network", "host"}
	// Rootful podman asks the runtime for 1048576 open files and 4194304
	// processes, which a machine whose root lacks CAP_SYS_RESOURCE (a
	// sandboxed VM, this project's CI) refuses ("setrlimit RLIMIT_NPROC:
	// Operation not permitted"); what a one-node broker needs is far less.
	var nofile syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &nofile); err != nil {
		t.Fatal(err)
	}
	n := min(nofile.Max, 65536)
	args = append(args, "--ulimit", fmt.Sprintf("nofile=%d:%d", n, n), "--ulimit", "nproc=4096:4096")
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, tag, "sh", "-c", command)
	if _, err := exec.LookPath("runc"); err == nil {
		// crun (podman's default on Debian) refuses cgroups v1/v2 hybrid
		// mode, which this machine has; runc runs on v1, hybrid and v2.
		args = append([]string{"--runtime", "runc"}, args...)
	}
	if out, err := exec.Command("podman", args...).CombinedOutput(); err != nil {
		t.Skipf("podman cannot run a container here: podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
			t.Logf("container log:\n%s", logs)
		}
		exec.Command("podman", "rm", "-f", "-v", name).Run()
	})

	local := filepath.Join(t.TempDir(), "start.sh")
	if err := os.WriteFile(local, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("podman", "cp", local, name+":"+starter).CombinedOutput(); err != nil {
		t.Fatalf("podman cp: %v\n%s", err, out)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
		if bytes.Contains(logs, []byte("Transitioning from RECOVERY to RUNNING")) {
			return name
		}
		if state, _ := exec.Command("podman", "inspect", "--format", "{{.State.Status}}", name).Output(); strings.TrimSpace(string(state)) != "running" {
			t.Fatalf("the container is %s before the readiness line; log:\n%s", bytes.TrimSpace(state), logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readiness line within 2 minutes; log:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logsContain fails t unless the container's log has each of want.
func logsContain(t *testing.T, name string, want ...string) {
	t.Helper()
	logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
	for _, w := range want {
		if !bytes.Contains(logs, []byte(w)) {
			t.Errorf("no log line about the ignored %s", w)
		}
	}
}

// checkUserAndVolume checks that the broker runs as uid 65532 and keeps
// its data in the /var/lib/sluice volume.
func checkUserAndVolume(t *testing.T, name string) {
	t.Helper()
	if out, err := exec.Command("podman", "exec", name, "id", "-u").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "65532" {
		t.Errorf("podman exec id -u: %q, %v; want 65532", out, err)
	}
	if out, err := exec.Command("podman", "exec", name, "ls", "/var/lib/sluice").CombinedOutput(); err != nil || !strings.Contains(string(out), "tc-topic-0") {
		t.Errorf("/var/lib/sluice holds %q (%v), want the topic's partition directory", out, err)
	}
	out, err := exec.Command("podman", "inspect", "--format", "{{range .Mounts}}{{.Destination}} {{end}}", name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/var/lib/sluice") {
		t.Errorf("mounts %q (%v), want the /var/lib/sluice volume", out, err)
	}
}

// TestImageTestcontainersJava runs the image as
// org.testcontainers.kafka.KafkaContainer runs apache/kafka: KafkaHelper's
// environment, its command, the start script its containerIsStarting
// copies in (calling /etc/kafka/docker/run), its wait for "Transitioning
// from RECOVERY to RUNNING"; then a franz-go client produces and consumes
// through a group, and the broker runs as uid 65532 with its data in the
// /var/lib/sluice volume.
func TestImageTestcontainersJava(t *testing.T) {
	plain, broker, controller := freePort(t), freePort(t), freePort(t)
	env := map[string]string{
		"CLUSTER_ID":                                     "4L6g3nShT-eMCtK--X86sw",
		"KAFKA_LISTENERS":                                fmt.Sprintf("PLAINTEXT://:%d,BROKER://:%d,CONTROLLER://:%d", plain, broker, controller),
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":           "BROKER:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"KAFKA_INTER_BROKER_LISTENER_NAME":               "BROKER",
		"KAFKA_PROCESS_ROLES":                            "broker,controller",
		"KAFKA_CONTROLLER_LISTENER_NAMES":                "CONTROLLER",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 fmt.Sprintf("1@localhost:%d", controller),
		"KAFKA_NODE_ID":                                  "1",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":         "1",
		"KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS":             "1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
		"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR":            "1",
		"KAFKA_LOG_FLUSH_INTERVAL_MESSAGES":              "9223372036854775807",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS":         "0",
	}
	const starter = "/tmp/testcontainers_start.sh"
	script := fmt.Sprintf("#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:%d,BROKER://localhost:%d\n/etc/kafka/docker/run \n", plain, broker)
	name := startContainer(t, env, "while [ ! -f "+starter+" ]; do sleep 0.1; done; "+starter, starter, script)
	logsContain(t, name, "KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "CLUSTER_ID")
	produceConsume(t, fmt.Sprintf("127.0.0.1:%d", plain))
	checkUserAndVolume(t, name)
}

// TestImageTestcontainersGo runs the image as testcontainers-go's kafka
// module runs confluentinc/confluent-local: its environment, its command
// running the start script with bash, and the script, which as the
// container's user edits /etc/confluent/docker/configure with sed -i,
// appends to it, empties ensure, then runs configure and launch.
func TestImageTestcontainersGo(t *testing.T) {
	public, broker, controller := freePort(t), freePort(t), freePort(t)
	listeners := fmt.Sprintf("PLAINTEXT://0.0.0.0:%d,BROKER://0.0.0.0:%d,CONTROLLER://0.0.0.0:%d", public, broker, controller)
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
		"KAFKA_CONTROLLER_QUORUM_VOTERS":                 fmt.Sprintf("1@localhost:%d", controller),
	}
	const starter = "/usr/sbin/testcontainers_start.sh"
	script := fmt.Sprintf(`#!/bin/bash
source /etc/confluent/docker/bash-config
export KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://127.0.0.1:%d,BROKER://localhost:%d${EXTRA_ADVERTISED_LISTENERS:+,${EXTRA_ADVERTISED_LISTENERS}}"
echo Starting Kafka KRaft mode
sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure
echo 'kafka-storage format --ignore-formatted -t "$(kafka-storage random-uuid)" -c /etc/kafka/kafka.properties' >> /etc/confluent/docker/configure
echo '' > /etc/confluent/docker/ensure
/etc/confluent/docker/configure
/etc/confluent/docker/launch
`, public, broker)
	name := startContainer(t, env, "while [ ! -f "+starter+" ]; do sleep 0.1; done; bash "+starter, starter, script)
	logsContain(t, name, "KAFKA_REST_BOOTSTRAP_SERVERS")
	produceConsume(t, fmt.Sprintf("127.0.0.1:%d", public))
	checkUserAndVolume(t, name)
}

// TestImageTestcontainersPython runs the image as testcontainers-python's
// KafkaContainer().with_kraft() runs confluentinc/cp-kafka: its
// environment, its command running /tc-start.sh with sh, and the script
// (sed -i and echo on /etc/confluent/docker/configure, $(hostname -i),
// configure, launch); it waits for "Kafka Server started" too.
func TestImageTestcontainersPython(t *testing.T) {
	port, broker, controller := freePort(t), freePort(t), freePort(t)
	env := map[string]string{
		"KAFKA_LISTENERS":                        fmt.Sprintf("PLAINTEXT://0.0.0.0:%d,BROKER://0.0.0.0:%d,CONTROLLER://0.0.0.0:%d", port, broker, controller),
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
		"KAFKA_CONTROLLER_QUORUM_VOTERS":         fmt.Sprintf("1@localhost:%d", controller),
		"KAFKA_CONTROLLER_LISTENER_NAMES":        "CONTROLLER",
	}
	const starter = "/tc-start.sh"
	script := fmt.Sprintf(`#!/bin/bash
sed -i '/KAFKA_ZOOKEEPER_CONNECT/d' /etc/confluent/docker/configure
echo 'kafka-storage format --ignore-formatted -t q2a1cNDfQkGNn4ktW2kfmQ== -c /etc/kafka/kafka.properties' >> /etc/confluent/docker/configure
export KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:%d,BROKER://$(hostname -i):%d
. /etc/confluent/docker/bash-config
/etc/confluent/docker/configure
/etc/confluent/docker/launch
`, port, broker)
	name := startContainer(t, env, "while [ ! -f "+starter+" ]; do sleep 0.1; done; sh "+starter, starter, script)
	deadline := time.Now().Add(30 * time.Second)
	for {
		logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
		if bytes.Contains(logs, []byte("Kafka Server started")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no \"Kafka Server started\" line; log:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}
	produceConsume(t, fmt.Sprintf("127.0.0.1:%d", port))
	checkUserAndVolume(t, name)
}

// produceConsume produces three records through bootstrap and reads them
// back through a consumer group, committing its offsets.
func produceConsume(t *testing.T, bootstrap string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "tc-topic"
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

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
