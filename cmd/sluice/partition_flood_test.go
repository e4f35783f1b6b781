package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// capacityLine is the broker's start-up statement of how many partition
// replicas it can hold.
var capacityLine = regexp.MustCompile(`msg="partition replica capacity".* max_partition_replicas=(\d+) open_file_limit=(\d+)`)

// TestPartitionFloodAtLowFileLimit is issue 14's problem 7 at a small
// scale: a broker whose open-file limit is 256 is asked for 3 × 100
// partitions in one CreateTopics. Each partition replica holds a file
// descriptor, so the old code accepted the request and ran out of
// descriptors (partitions failed to open, accept4 failed: no new client
// could connect). Now the broker says at start-up how many partition
// replicas it can hold (192 of 256 files), creates the first topic, which
// fits, refuses the two that do not with POLICY_VIOLATION, and goes on
// accepting connections and serving a producer.
func TestPartitionFloodAtLowFileLimit(t *testing.T) {
	const fileLimit = 256
	dir := t.TempDir()
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := spawnCmd(t, addr, t.TempDir(), exec.Command("/bin/sh", "-c", `ulimit -n "$0" && exec "$@"`,
		strconv.Itoa(fileLimit), sluiceBin, "--override", "listeners=PLAINTEXT://"+addr, "--override", "log.dirs="+dir))
	p.waitReady()

	flooder := p.client()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	var names []string
	for i := range 3 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("flood-%d", i), 100, 1
		req.Topics = append(req.Topics, rt)
		names = append(names, rt.Topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, flooder)
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	for _, st := range resp.Topics {
		msg := ""
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		switch {
		case st.Topic == "flood-0" && st.ErrorCode != 0:
			t.Errorf("%s: %v %q, want it created: 100 partition replicas fit", st.Topic, kerr.ErrorForCode(st.ErrorCode), msg)
		case st.Topic != "flood-0" && st.ErrorCode != kerr.PolicyViolation.Code:
			t.Errorf("%s: %v %q, want POLICY_VIOLATION", st.Topic, kerr.ErrorForCode(st.ErrorCode), msg)
		default:
			t.Logf("%s: %v %q", st.Topic, kerr.ErrorForCode(st.ErrorCode), msg)
		}
	}

	// A new client connects, creates a topic, and produces to it.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := p.client(kgo.RecordRetries(3))
	adm := kadm.NewClient(cl)
	cr, err := adm.CreateTopic(ctx, 1, 1, nil, "after-flood")
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("a new client after the flood: create topic: %v\nstderr:\n%s", err, tail(p.stderr.String(), 2000))
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "after-flood", Value: []byte("still serving")}).FirstErr(); err != nil {
		t.Fatalf("a new client after the flood: produce: %v\nstderr:\n%s", err, tail(p.stderr.String(), 2000))
	}
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names[1:] {
		if topics.Has(name) {
			t.Errorf("topic %s was created", name)
		}
	}

	m := capacityLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no start-up line saying how many partition replicas the node can hold:\n%s", tail(p.stderr.String(), 2000))
	}
	capacity, _ := strconv.Atoi(m[1])
	if limit, _ := strconv.Atoi(m[2]); limit != fileLimit {
		t.Errorf("start-up line names an open-file limit of %d, want %d", limit, fileLimit)
	}
	if capacity <= 0 || capacity >= fileLimit {
		t.Errorf("capacity %d partition replicas at an open-file limit of %d", capacity, fileLimit)
	}
	t.Logf("start-up: %s", strings.TrimSpace(m[0]))
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestPartitionReplicaDescriptors measures what a partition replica costs
// in open files, the figure the broker's capacity is computed from
// (broker/partition_capacity.go: one each): 500 partitions are created on
// a node, one record produced to each, and the node's open descriptors
// counted before and after.
func TestPartitionReplicaDescriptors(t *testing.T) {
	const partitions = 500
	const slack = 16 // connections and files opened for a moment
	p := startSluice(t, t.TempDir(), freePort(t))
	before := openDescriptors(t, p.pid())
	p.createTopic("fd", partitions)
	var recs []*kgo.Record
	for i := range int32(partitions) {
		recs = append(recs, &kgo.Record{Topic: "fd", Partition: i, Value: []byte("v")})
	}
	p.produce(recs...)
	after := openDescriptors(t, p.pid())
	t.Logf("%d open descriptors before, %d after %d partitions with a record each: %.3f per replica",
		before, after, partitions, float64(after-before)/partitions)
	if after-before > partitions+slack {
		t.Errorf("%d partitions took %d descriptors", partitions, after-before)
	}
}

// openDescriptors counts a process's open file descriptors.
func openDescriptors(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("cannot list /proc/%d/fd: %v", pid, err)
	}
	return len(entries)
}
