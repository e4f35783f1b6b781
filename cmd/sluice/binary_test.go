package main

// The tests of this package run the real binary as a subprocess: they build
// it once in TestMain, start it on a free loopback port with a temporary log
// directory, wait for its "sluice ready:" line and drive it with franz-go,
// stopping it with SIGTERM or SIGKILL the way an operator or a crash would.
// They assert only on what a client (or an operator reading the log and
// the process status) observes, never on elapsed time; every wait polls
// for a condition with a generous deadline.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// sluiceBin is the binary built by TestMain.
var sluiceBin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sluice-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdtemp:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sluiceBin = filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-o", sluiceBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/sluice:", err)
		return 1
	}
	return m.Run()
}

// waitTimeout bounds every wait for the broker or a client; it is generous
// because the tests run on small, busy CI machines.
const waitTimeout = 30 * time.Second

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a subprocess's stderr while it runs.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// sluiceProc is one running sluice process.
type sluiceProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	dir    string
	stderr *lockedBuffer
	stdout *lockedBuffer // every line the process printed
	ready  string        // the "sluice ready:" line
	readyc chan string   // receives the ready line
	done   chan struct{} // closed when the process has exited
	err    error         // cmd.Wait's result, set before done is closed
}

// startSluice starts the binary serving on 127.0.0.1:port with its log in
// dir, plus any extra arguments, and waits for its ready line. A process
// still running when the test ends is killed.
func startSluice(t *testing.T, dir string, port int, extra ...string) *sluiceProc {
	t.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	args := append([]string{
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + dir,
	}, extra...)
	p := startProc(t, addr, t.TempDir(), args...)
	p.dir = dir
	return p
}

// startProc starts the binary in the working directory cwd with exactly
// the given arguments and waits for a ready line naming addr.
func startProc(t *testing.T, addr, cwd string, args ...string) *sluiceProc {
	t.Helper()
	p := spawnProc(t, addr, cwd, args...)
	p.waitReady()
	return p
}

// spawnProc starts the binary like startProc but does not wait for it to
// be ready (nodes of a cluster must start together); call waitReady.
func spawnProc(t *testing.T, addr, cwd string, args ...string) *sluiceProc {
	t.Helper()
	return spawnCmd(t, addr, cwd, exec.Command(sluiceBin, args...))
}

// spawnCmd is spawnProc for a command that runs the binary some other way
// (through a shell that lowers a limit first, say); it must exec the
// binary in the same process so that signals reach it.
func spawnCmd(t *testing.T, addr, cwd string, cmd *exec.Cmd) *sluiceProc {
	t.Helper()
	p := &sluiceProc{t: t, addr: addr, stderr: &lockedBuffer{}, stdout: &lockedBuffer{}, done: make(chan struct{}), readyc: make(chan string, 1)}
	p.cmd = cmd
	p.cmd.Dir = cwd
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start sluice: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			p.stdout.Write([]byte(line + "\n"))
			if strings.HasPrefix(line, "sluice ready:") {
				select {
				case p.readyc <- line:
				default:
				}
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("sluice pid %d stderr:\n%s", p.cmd.Process.Pid, p.stderr.String())
		}
	})
	return p
}

// waitReady waits for the process's ready line, which must name its address.
func (p *sluiceProc) waitReady() {
	p.t.Helper()
	if err := p.tryReady(); err != nil {
		p.t.Fatal(err)
	}
}

// tryReady is waitReady returning its failure instead of failing the test.
func (p *sluiceProc) tryReady() error {
	select {
	case p.ready = <-p.readyc:
	case <-p.done:
		return fmt.Errorf("sluice exited before it was ready (%v); stdout:\n%s\nstderr:\n%s", p.err, p.stdout.String(), p.stderr.String())
	case <-time.After(waitTimeout):
		return fmt.Errorf("sluice not ready; stderr:\n%s", p.stderr.String())
	}
	if !strings.Contains(p.ready, p.addr) {
		return fmt.Errorf("ready line %q does not name %s", p.ready, p.addr)
	}
	return nil
}

// runToFailure runs the binary with args until it exits (waitTimeout at
// most) and fails the test unless it exited non-zero without saying it was
// ready; it returns the exit code and what the binary wrote to stderr.
func runToFailure(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Dir = t.TempDir()
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sluice %v was still running after %s; stderr:\n%s", args, waitTimeout, errOut.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() <= 0 {
		t.Fatalf("sluice %v: want a non-zero exit, got %v; stdout %q stderr %q", args, err, out.String(), errOut.String())
	}
	if strings.Contains(out.String(), "sluice ready:") {
		t.Errorf("stdout says ready although start-up failed: %q", out.String())
	}
	return exitErr.ExitCode(), errOut.String()
}

// pid is the process id.
func (p *sluiceProc) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL and waits for the process to be gone. Killing an
// exited process is a no-op.
func (p *sluiceProc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// terminate sends SIGTERM and returns the exit code once the process has
// exited.
func (p *sluiceProc) terminate() int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.t.Fatalf("sluice did not exit after SIGTERM; stderr:\n%s", p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// recoveryLine matches the broker's start-up summary of its log directory.
var recoveryLine = regexp.MustCompile(`msg="log dir opened".* clean_shutdown=(\w+) .*segments_scanned=(\d+) bytes_truncated=(\d+)`)

// recoveryStats is what the broker logged about opening its log directory.
type recoveryStats struct {
	cleanShutdown   bool
	segmentsScanned int64
	bytesTruncated  int64
}

// recovery parses the "log dir opened" line from the process's log.
func (p *sluiceProc) recovery() recoveryStats {
	p.t.Helper()
	// The line is logged before the ready line is printed, but stderr is
	// copied from its pipe by another goroutine, so it may lag.
	var m []string
	waitFor(p.t, "the \"log dir opened\" line", func() error {
		if m = recoveryLine.FindStringSubmatch(p.stderr.String()); m == nil {
			return fmt.Errorf("not in the log:\n%s", p.stderr.String())
		}
		return nil
	})
	scanned, _ := strconv.ParseInt(m[2], 10, 64)
	truncated, _ := strconv.ParseInt(m[3], 10, 64)
	return recoveryStats{cleanShutdown: m[1] == "true", segmentsScanned: scanned, bytesTruncated: truncated}
}

// client connects a franz-go client to the process; it is closed when the
// test ends.
func (p *sluiceProc) client(opts ...kgo.Opt) *kgo.Client {
	p.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(p.addr)}, opts...)...)
	if err != nil {
		p.t.Fatalf("kgo.NewClient: %v", err)
	}
	p.t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic with the given number of partitions.
func (p *sluiceProc) createTopic(topic string, partitions int32) {
	p.t.Helper()
	adm := kadm.NewClient(p.client())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		p.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// endOffsets lists the log end offset of every partition of topic.
func (p *sluiceProc) endOffsets(topic string) map[int32]int64 {
	p.t.Helper()
	adm := kadm.NewClient(p.client())
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	lo, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		p.t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := make(map[int32]int64)
	lo.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// consumeAll reads every record of the given partitions from offset 0 up to
// (not including) the given end offsets.
func (p *sluiceProc) consumeAll(topic string, ends map[int32]int64) map[int32][]*kgo.Record {
	p.t.Helper()
	start := make(map[int32]kgo.Offset)
	out := make(map[int32][]*kgo.Record)
	for part, end := range ends {
		if end > 0 {
			start[part] = kgo.NewOffset().At(0)
		}
	}
	if len(start) == 0 {
		return out
	}
	cl := p.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	remaining := len(start)
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			p.t.Fatalf("consuming %s: timed out with %d partitions short of %v", topic, remaining, ends)
		}
		fs.EachError(func(_ string, part int32, err error) {
			p.t.Fatalf("consuming %s[%d]: %v", topic, part, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			end := ends[r.Partition]
			if r.Offset >= end {
				p.t.Errorf("consumed %s[%d]@%d at or past the listed end offset %d", topic, r.Partition, r.Offset, end)
				return
			}
			out[r.Partition] = append(out[r.Partition], r)
			if r.Offset == end-1 {
				remaining--
			}
		})
	}
	return out
}

// produceTo produces one record to a given partition and returns its offset.
func (p *sluiceProc) produceTo(topic string, partition int32, key, value string) int64 {
	p.t.Helper()
	r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(key), Value: []byte(value)}
	p.produce(r)
	return r.Offset
}

// produce produces records, with acks=all, to the partitions they name,
// and waits for all of them to be acknowledged.
func (p *sluiceProc) produce(rs ...*kgo.Record) {
	p.t.Helper()
	cl := p.client(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		p.t.Fatalf("produce: %v", err)
	}
}

// assertNothingListening checks that no process accepts connections on addr.
func assertNothingListening(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		t.Errorf("something still accepts connections on %s", addr)
		return
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Logf("dial %s: %v (expected connection refused)", addr, err)
	}
}

// waitFor polls cond until it returns nil or the deadline passes.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
