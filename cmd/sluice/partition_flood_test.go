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
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// capacityLine is the broker's start-up statement of how many partition
// replicas it can hold.
var capacityLine = regexp.MustCompile(`msg="partition replica capacity".* max_partition_replicas=(\d+) open_file_limit=(\d+) file_cache_budget=(\d+)`)

// startAtFileLimit starts the binary under an open-file limit of limit
// (soft and hard), with extra arguments, and waits for it to be ready.
func startAtFileLimit(t *testing.T, dir string, limit int, extra ...string) *sluiceProc {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	args := append([]string{"-c", `ulimit -n "$0" && exec "$@"`, strconv.Itoa(limit), sluiceBin,
		"--override", "listeners=PLAINTEXT://" + addr, "--override", "log.dirs=" + dir}, extra...)
	p := spawnCmd(t, addr, t.TempDir(), exec.Command("/bin/sh", args...))
	p.dir = dir
	p.waitReady()
	return p
}

// capacityOf parses the start-up capacity line: the replicas the node
// takes, its open-file limit and its file cache's budget.
func capacityOf(t *testing.T, p *sluiceProc) (replicas, fileLimit, budget int) {
	t.Helper()
	m := capacityLine.FindStringSubmatch(p.stderr.String())
	if m == nil {
		t.Fatalf("no start-up line saying how many partition replicas the node can hold:\n%s", tail(p.stderr.String(), 2000))
	}
	replicas, _ = strconv.Atoi(m[1])
	fileLimit, _ = strconv.Atoi(m[2])
	budget, _ = strconv.Atoi(m[3])
	t.Logf("start-up: %s", strings.TrimSpace(m[0]))
	return replicas, fileLimit, budget
}

// createTopicsAtOnce sends one CreateTopics for topics of n partitions at
// RF 1 and returns each topic's error code and message.
func createTopicsAtOnce(t *testing.T, p *sluiceProc, n int32, names ...string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 90000
	for _, name := range names {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, n, 1
		req.Topics = append(req.Topics, rt)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := req.RequestWith(ctx, p.client())
	if err != nil {
		t.Fatalf("CreateTopics: %v", err)
	}
	out := map[string]string{}
	for _, st := range resp.Topics {
		msg := ""
		if st.ErrorMessage != nil {
			msg = *st.ErrorMessage
		}
		if st.ErrorCode == 0 {
			out[st.Topic] = ""
		} else {
			out[st.Topic] = fmt.Sprintf("%v %q", kerr.ErrorForCode(st.ErrorCode), msg)
		}
	}
	return out
}

// descriptorCounts is a process's open descriptors: all of them, and the
// segment .log files of partitions under dir among them.
func descriptorCounts(t *testing.T, pid int, dir string) (all, segmentLogs int) {
	t.Helper()
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		t.Skipf("cannot list %s: %v", fdDir, err)
	}
	for _, e := range entries {
		all++
		target, err := os.Readlink(fdDir + "/" + e.Name())
		if err == nil && strings.HasPrefix(target, dir) && strings.HasSuffix(target, ".log") && !strings.Contains(target, "__cluster_metadata") {
			segmentLogs++
		}
	}
	return all, segmentLogs
}

// watchPeakDescriptors samples a process's open descriptors until the test
// ends; the returned function reports the most seen.
func watchPeakDescriptors(t *testing.T, pid int) func() int {
	var mu sync.Mutex
	peak := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
				mu.Lock()
				peak = max(peak, len(entries))
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// TestPartitionFloodAtLowFileLimit is issue 14's problem 7 after issue
// 22's file-descriptor budget: a node whose open-file limit is 256 is asked
// for 3 × 400 partitions in one CreateTopics. Issue 14's node (one
// descriptor per replica) would have run out of descriptors, so it refused
// every replica beyond 192 with POLICY_VIOLATION; since segment files are
// opened through a file cache of half the limit, a replica at rest holds no
// descriptor. Now all three topics are created, the node goes on accepting
// new connections, a producer writes to every partition and a consumer
// reads every record back, and the node's open files stay within the
// limit, its segment files within the cache's budget.
func TestPartitionFloodAtLowFileLimit(t *testing.T) {
	const fileLimit, perTopic = 256, 400
	names := []string{"flood-0", "flood-1", "flood-2"}
	dir := t.TempDir()
	p := startAtFileLimit(t, dir, fileLimit)
	peak := watchPeakDescriptors(t, p.pid())

	for name, err := range createTopicsAtOnce(t, p, perTopic, names...) {
		if err != "" {
			t.Errorf("%s: %s, want it created: the open-file limit no longer caps partition replicas", name, err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// New connections are accepted: each of 16 new clients is answered.
	for i := range 16 {
		cl := p.client()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil {
			t.Fatalf("new client %d after the flood: %v\nstderr:\n%s", i, err, tail(p.stderr.String(), 2000))
		}
	}

	// A producer writes one record to every partition; a consumer reads
	// every one back.
	var recs []*kgo.Record
	for _, name := range names {
		for i := range int32(perTopic) {
			recs = append(recs, &kgo.Record{Topic: name, Partition: i, Value: fmt.Appendf(nil, "%s/%d", name, i)})
		}
	}
	p.produce(recs...)
	for _, name := range names {
		ends := p.endOffsets(name)
		got := p.consumeAll(name, ends)
		for i := range int32(perTopic) {
			if rs := got[i]; len(rs) != 1 || string(rs[0].Value) != fmt.Sprintf("%s/%d", name, i) {
				t.Errorf("%s[%d]: %d records (end offset %d), want its one record", name, i, len(rs), ends[i])
			}
		}
	}

	replicas, limit, budget := capacityOf(t, p)
	if limit != fileLimit {
		t.Errorf("start-up line names an open-file limit of %d, want %d", limit, fileLimit)
	}
	if replicas < 3*perTopic {
		t.Errorf("start-up line says the node takes %d partition replicas, fewer than the %d it holds", replicas, 3*perTopic)
	}
	all, logs := descriptorCounts(t, p.pid(), dir)
	t.Logf("%d partitions with a record each at an open-file limit of %d: %d descriptors open (%d segment .log files, budget %d), at most %d seen",
		3*perTopic, fileLimit, all, logs, budget, peak())
	if logs > budget {
		t.Errorf("%d segment files open at rest, over the file cache's budget of %d", logs, budget)
	}
	if all >= fileLimit || peak() >= fileLimit {
		t.Errorf("%d descriptors open now, %d at most, at an open-file limit of %d", all, peak(), fileLimit)
	}
	if strings.Contains(p.stderr.String(), "too many open files") {
		t.Errorf("the node ran out of descriptors:\n%s", tail(p.stderr.String(), 2000))
	}
}

// TestPartitionFloodMaxBrokerPartitions: max.broker.partitions (KIP-578's
// name) still caps the partition replicas a node takes: at 150, of 3 × 100
// partitions asked in one CreateTopics the first topic is created and the
// two that do not fit get POLICY_VIOLATION naming the limit; the node goes
// on serving new clients.
func TestPartitionFloodMaxBrokerPartitions(t *testing.T) {
	names := []string{"flood-0", "flood-1", "flood-2"}
	p := startAtFileLimit(t, t.TempDir(), 256, "--override", "max.broker.partitions=150")
	for name, err := range createTopicsAtOnce(t, p, 100, names...) {
		switch {
		case name == "flood-0" && err != "":
			t.Errorf("%s: %s, want it created: 100 partition replicas fit", name, err)
		case name != "flood-0" && (!strings.HasPrefix(err, kerr.PolicyViolation.Message) || !strings.Contains(err, "max.broker.partitions=150")):
			t.Errorf("%s: %q, want POLICY_VIOLATION naming max.broker.partitions=150", name, err)
		default:
			t.Logf("%s: %s", name, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
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
	if replicas, _, _ := capacityOf(t, p); replicas != 150 {
		t.Errorf("start-up line says the node takes %d partition replicas, want 150", replicas)
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestPartitionReplicaDescriptors measures what partition replicas cost
// in open files since segment files are opened through the file cache
// (broker/partition_capacity.go: nothing at rest, the segment files of all
// replicas together at most the cache's budget, half the open-file limit):
// a node at an open-file limit of 256 is given 2,000 partitions, one
// record is produced to each, and the node's open descriptors are counted
// before and after. Issue 14's node needed one each and could not hold
// more than 192 at this limit.
func TestPartitionReplicaDescriptors(t *testing.T) {
	const fileLimit, partitions = 256, 2000
	dir := t.TempDir()
	p := startAtFileLimit(t, dir, fileLimit)
	peak := watchPeakDescriptors(t, p.pid())
	before := openDescriptors(t, p.pid())
	if err := createTopicsAtOnce(t, p, partitions, "fd")["fd"]; err != "" {
		t.Fatalf("create %d partitions at an open-file limit of %d: %s", partitions, fileLimit, err)
	}
	var recs []*kgo.Record
	for i := range int32(partitions) {
		recs = append(recs, &kgo.Record{Topic: "fd", Partition: i, Value: []byte("v")})
	}
	p.produce(recs...)
	after, logs := descriptorCounts(t, p.pid(), dir)
	_, _, budget := capacityOf(t, p)
	t.Logf("%d open descriptors before, %d after %d partitions with a record each (%d segment .log files, budget %d), at most %d seen: %.3f per replica",
		before, after, partitions, logs, budget, peak(), float64(after-before)/partitions)
	if logs > budget {
		t.Errorf("%d segment files open at rest, over the file cache's budget of %d", logs, budget)
	}
	if after >= fileLimit || peak() >= fileLimit {
		t.Errorf("%d descriptors open now, %d at most, at an open-file limit of %d", after, peak(), fileLimit)
	}
	if strings.Contains(p.stderr.String(), "too many open files") {
		t.Errorf("the node ran out of descriptors:\n%s", tail(p.stderr.String(), 2000))
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
