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
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestImageTestcontainersJava builds the image with deploy/build-image.sh
// (buildah, no daemon), runs it with podman as
// org.testcontainers.kafka.KafkaContainer runs apache/kafka: its
// environment, its command in place of the image's CMD (wait for the
// start script, then run it), the start script copied in once the
// container runs and calling /etc/kafka/docker/run, its wait for
// "Transitioning from RECOVERY to RUNNING"; then a franz-go client produces and consumes through a group,
// and the container is checked to run as uid 65532 with its data in the
// /var/lib/sluice volume. The container shares the host's network (as
// testcontainers' host mode does) so that no network plugin is needed.
//
// It is skipped when buildah, podman or a static busybox is missing
// (apt-get install buildah podman busybox-static), or when podman cannot
// run a container here.
func TestImageTestcontainersJava(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is a Linux image")
	}
	for _, tool := range []string{"buildah", "podman"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: apt-get install buildah podman busybox-static to run this test", tool)
		}
	}
	tag := fmt.Sprintf("localhost/sluice-test:%d", os.Getpid())
	build := exec.Command("./build-image.sh", tag)
	out, err := build.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 {
		t.Skipf("build-image.sh cannot build here:\n%s", out)
	}
	if err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("podman", "rmi", "-f", tag).Run() })
	t.Logf("built %s", bytes.TrimSpace(out))

	plain, broker, controller := freePort(t), freePort(t), freePort(t)
	name := fmt.Sprintf("sluice-test-%d", os.Getpid())
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
	const starter = "/tmp/testcontainers_start.sh"
	args = append(args, tag, "sh", "-c", "while [ ! -f "+starter+" ]; do sleep 0.1; done; "+starter)
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

	script := filepath.Join(t.TempDir(), "testcontainers_start.sh")
	body := fmt.Sprintf("#!/bin/bash\nexport KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:%d,BROKER://localhost:%d\n/etc/kafka/docker/run \n", plain, broker)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("podman", "cp", script, name+":"+starter).CombinedOutput(); err != nil {
		t.Fatalf("podman cp: %v\n%s", err, out)
	}

	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
		if bytes.Contains(logs, []byte("Transitioning from RECOVERY to RUNNING")) {
			for _, v := range []string{"KAFKA_PROCESS_ROLES", "KAFKA_CONTROLLER_QUORUM_VOTERS", "CLUSTER_ID"} {
				if !bytes.Contains(logs, []byte(v)) {
					t.Errorf("no log line about the ignored %s", v)
				}
			}
			break
		}
		if state, _ := exec.Command("podman", "inspect", "--format", "{{.State.Status}}", name).Output(); strings.TrimSpace(string(state)) != "running" {
			t.Fatalf("the container is %s before the readiness line; log:\n%s", bytes.TrimSpace(state), logs)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readiness line within 2 minutes; log:\n%s", logs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	produceConsume(t, fmt.Sprintf("127.0.0.1:%d", plain))

	if out, err := exec.Command("podman", "exec", name, "id", "-u").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "65532" {
		t.Errorf("podman exec id -u: %q, %v; want 65532", out, err)
	}
	if out, err := exec.Command("podman", "exec", name, "ls", "/var/lib/sluice").CombinedOutput(); err != nil || !strings.Contains(string(out), "tc-topic-0") {
		t.Errorf("/var/lib/sluice holds %q (%v), want the topic's partition directory", out, err)
	}
	out, err = exec.Command("podman", "inspect", "--format", "{{range .Mounts}}{{.Destination}} {{end}}", name).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/var/lib/sluice") {
		t.Errorf("mounts %q (%v), want the /var/lib/sluice volume", out, err)
	}
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
