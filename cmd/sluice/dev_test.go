package main

// dev_test.go tests `sluice dev` as a developer uses it: the dev process
// started from the built binary, a client at its bootstrap string, a child
// kill -9'd by its printed pid, and SIGTERM to the dev process.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// devNodeLine matches the line sluice dev prints for each node.
var devNodeLine = regexp.MustCompile(`^node (\d+): pid (\d+), kafka (\S+), log (\S+)$`)

// devProc is a running `sluice dev`: its printed lines as they come.
type devProc struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	mu     sync.Mutex
	lines  []string
	linec  chan string
	done   chan struct{}
}

func startDev(t *testing.T, args ...string) *devProc {
	t.Helper()
	d := &devProc{stderr: &lockedBuffer{}, linec: make(chan string, 100), done: make(chan struct{})}
	d.cmd = exec.Command(sluiceBin, append([]string{"dev"}, args...)...)
	d.cmd.Dir = t.TempDir()
	d.cmd.Stderr = d.stderr
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.mu.Lock()
			d.lines = append(d.lines, sc.Text())
			d.mu.Unlock()
			d.linec <- sc.Text()
		}
		d.cmd.Wait()
		close(d.done)
	}()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Signal(syscall.SIGKILL)
			<-d.done
		}
		if t.Failed() {
			d.mu.Lock()
			t.Logf("sluice dev stdout:\n%s\nstderr:\n%s", strings.Join(d.lines, "\n"), d.stderr.String())
			d.mu.Unlock()
		}
	})
	return d
}

// waitLine returns the first printed line with the prefix, failing the
// test if the dev process exits or two minutes pass first.
func (d *devProc) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	l, err := d.tryLine(prefix)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tryLine is waitLine returning its failure.
func (d *devProc) tryLine(prefix string) (string, error) {
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l := <-d.linec:
			if strings.HasPrefix(l, prefix) {
				return l, nil
			}
		case <-d.done:
			return "", fmt.Errorf("sluice dev exited before printing %q; stderr:\n%s", prefix, d.stderr.String())
		case <-timeout:
			return "", fmt.Errorf("sluice dev printed no %q line", prefix)
		}
	}
}

// pids returns the node id → pid of every "node N: pid P" line so far.
func (d *devProc) pids() map[int]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := map[int]int{}
	for _, l := range d.lines {
		if g := devNodeLine.FindStringSubmatch(l); g != nil {
			id, _ := strconv.Atoi(g[1])
			pid, _ := strconv.Atoi(g[2])
			m[id] = pid
		}
	}
	return m
}

// processGone reports whether pid no longer runs (signal 0 fails; an
// exited child of the dev process is reaped by it).
func processGone(pid int) bool {
	return syscall.Kill(pid, 0) != nil
}

// Issue 21: `sluice dev --nodes 3` prints a bootstrap string once the
// cluster is formed; a topic at RF 3 takes acks=all produce, keeps taking
// it after one child is kill -9'd (the dev process reports the death and
// restarts nothing), and a consumer reads every acknowledged record. SIGTERM
// to the dev process stops every child. The time to ready is logged.
func TestDevThreeNodes(t *testing.T) {
	var d *devProc
	var bootstrap, data string
	start := time.Now()
	for attempt := 1; ; attempt++ {
		// Four ports per node from the base; a free port for the base
		// says nothing of the eleven after it, so a clash (refused up front,
		// or a node that could not bind) starts again on another base.
		start = time.Now()
		data = t.TempDir()
		d = startDev(t, "--nodes", "3", "--base-port", strconv.Itoa(freePort(t)), "--data", data)
		l, err := d.tryLine("bootstrap: ")
		if err == nil {
			bootstrap = strings.TrimPrefix(l, "bootstrap: ")
			break
		}
		if attempt < 5 && (strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "exited before it was ready")) {
			t.Logf("attempt %d: %v", attempt, err)
			continue
		}
		t.Fatal(err)
	}
	console := d.waitLine(t, "console: ")
	ready := d.waitLine(t, "sluice dev ready:")
	t.Logf("time to ready: %s as the test saw it; %q", time.Since(start).Round(time.Millisecond), ready)
	seeds := strings.Split(bootstrap, ",")
	if len(seeds) != 3 {
		t.Fatalf("bootstrap %q: want 3 addresses", bootstrap)
	}
	pids := d.pids()
	if len(pids) != 3 {
		t.Fatalf("node pids %v: want 3", pids)
	}
	// The console URL printed answers with the cluster's three brokers up.
	consoleURL := strings.Fields(strings.TrimPrefix(console, "console: "))[0]
	waitFor(t, "the console at "+consoleURL+" showing three brokers up", func() error {
		resp, err := http.Get(consoleURL + "api/cluster")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var c struct {
			Brokers []struct{ State string } `json:"brokers"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			return fmt.Errorf("%s: %v", resp.Status, err)
		}
		up := 0
		for _, b := range c.Brokers {
			if b.State == "up" {
				up++
			}
		}
		if up != 3 {
			return fmt.Errorf("%d of %d brokers up", up, len(c.Brokers))
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	adm := kadm.NewClient(newClient())
	resp, err := adm.CreateTopic(ctx, 3, 3, nil, "dev")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic dev at RF 3: %v", err)
	}
	waitFor(t, "every partition of dev with three in-sync replicas", func() error {
		md, err := adm.Metadata(ctx, "dev")
		if err != nil {
			return err
		}
		for p, pd := range md.Topics["dev"].Partitions {
			if pd.Leader < 0 || len(pd.ISR) != 3 {
				return fmt.Errorf("partition %d: leader %d, ISR %v", p, pd.Leader, pd.ISR)
			}
		}
		if len(md.Topics["dev"].Partitions) != 3 {
			return fmt.Errorf("%d partitions", len(md.Topics["dev"].Partitions))
		}
		return nil
	})

	producer := newClient(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic("dev"), kgo.RecordDeliveryTimeout(time.Minute))
	sent := map[string]bool{}
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			v := "v" + strconv.Itoa(i)
			if err := producer.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			sent[v] = true
		}
	}
	produce(0, 100)

	// kill -9 one child: the dev process reports it and restarts nothing.
	if err := syscall.Kill(pids[2], syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 node 2 (pid %d): %v", pids[2], err)
	}
	report := d.waitLine(t, "node 2 (pid "+strconv.Itoa(pids[2])+")")
	t.Logf("dev reported: %s", report)
	if !strings.Contains(report, "not restarted") {
		t.Errorf("report %q does not say the node is not restarted", report)
	}
	produce(100, 300)

	consumeAll := func(seeds []string) {
		t.Helper()
		consumer := newClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("dev"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		got := map[string]bool{}
		for len(got) < len(sent) {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("consumed %d of %d records: %v", len(got), len(sent), err)
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
		}
		for v := range sent {
			if !got[v] {
				t.Errorf("acknowledged %s not consumed", v)
			}
		}
	}
	consumeAll(seeds)
	t.Logf("produced and consumed %d records at RF 3 acks=all, node 2 killed after 100", len(sent))

	// SIGTERM to the dev process stops the two children left.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("sluice dev did not exit after SIGTERM")
	}
	if code := d.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("sluice dev exit code %d after SIGTERM, want 0", code)
	}
	for id, pid := range pids {
		if !processGone(pid) {
			t.Errorf("node %d (pid %d) still runs after sluice dev exited", id, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}

	// A second run over the same data directory, with no other flag,
	// restarts the same cluster on the same ports, node 2 included, and
	// every record is still there.
	start = time.Now()
	d = startDev(t, "--data", data)
	again := strings.TrimPrefix(d.waitLine(t, "bootstrap: "), "bootstrap: ")
	t.Logf("restart over the same --data: ready after %s as the test saw it", time.Since(start).Round(time.Millisecond))
	if again != bootstrap {
		t.Errorf("restart bootstrap %q, want %q", again, bootstrap)
	}
	consumeAll(strings.Split(again, ","))
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
	case <-time.After(time.Minute):
		t.Fatalf("restarted sluice dev did not exit after SIGTERM")
	}
}

// Issue 21: sluice dev refuses --nodes 0 and a port in use, saying which.
func TestDevRefusesBadFlags(t *testing.T) {
	out, err := exec.Command(sluiceBin, "dev", "--nodes", "0", "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "at least 1 node") {
		t.Errorf("--nodes 0: err %v, output %q", err, out)
	}
	port := freePort(t)
	ln, lerr := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer ln.Close()
	out, err = exec.Command(sluiceBin, "dev", "--nodes", "1", "--base-port", strconv.Itoa(port), "--data", t.TempDir()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "in use") || !strings.Contains(string(out), strconv.Itoa(port)) {
		t.Errorf("port %d in use: err %v, output %q", port, err, out)
	}
}

// Issue 21: a kill -9 of the dev process itself leaves no node running:
// on Linux the kernel sends each node SIGTERM when its parent dies. A node
// counts as gone once /proc shows no such process or a zombie (the orphan
// is init's to reap, which a container's init may never do).
func TestDevKill9OfDevStopsNodes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	var d *devProc
	for attempt := 1; ; attempt++ {
		d = startDev(t, "--nodes", "2", "--base-port", strconv.Itoa(freePort(t)), "--data", t.TempDir())
		_, err := d.tryLine("bootstrap: ")
		if err == nil {
			break
		}
		if attempt < 5 && (strings.Contains(err.Error(), "in use") || strings.Contains(err.Error(), "exited before it was ready")) {
			t.Logf("attempt %d: %v", attempt, err)
			continue
		}
		t.Fatal(err)
	}
	pids := d.pids()
	if len(pids) != 2 {
		t.Fatalf("node pids %v: want 2", pids)
	}
	t.Cleanup(func() {
		// A node left behind by a failure is killed, if that pid is still ours.
		for _, pid := range pids {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.HasPrefix(string(b), sluiceBin) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	for id, pid := range pids {
		waitFor(t, fmt.Sprintf("node %d (pid %d) gone", id, pid), func() error {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				return nil // no such process
			}
			// pid (comm) S ...: the state follows the last ')'.
			if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return nil
			}
			return fmt.Errorf("still running: %s", b)
		})
	}
}
