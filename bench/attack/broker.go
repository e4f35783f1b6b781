package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// goBuild builds ./cmd/sluice of the repository at root into bin.
func goBuild(ctx context.Context, root, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
	}
	return nil
}

// repoRoot finds the sluice repository upwards from the working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module github.com/sluicedev/sluice\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the sluice repository")
		}
		dir = parent
	}
}

// broker is the one sluice node under attack: a process of the built
// binary on loopback, with its data in dir, under the memory cap. It is
// restarted on the same data after a crash.
type broker struct {
	bin, dir, addr string
	args           []string
	memCap         *memCap

	restarts int

	// mu guards the current process: the RSS sampler reads it while a
	// case may restart the broker.
	mu       sync.Mutex
	cur      *process
	oomStart int64 // the cgroup's OOM kill count when cur started
	stopping bool  // the harness ended cur: its exit is no crash
}

// process is one run of the broker binary.
type process struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // set before exited is closed
}

// current is the process of the latest start.
func (b *broker) current() *process {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur
}

// start launches the broker process and waits until it answers Metadata.
func (b *broker) start(ctx context.Context) error {
	logFile, err := os.OpenFile(filepath.Join(b.dir, "broker.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "# %s start %s %s\n", time.Now().Format(time.RFC3339Nano), b.bin, strings.Join(b.args, " "))
	cmd := exec.Command(b.bin, b.args...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), b.memCap.env()...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	oomStart := b.memCap.oomKills()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	b.mu.Lock()
	b.cur, b.oomStart, b.stopping = p, oomStart, false
	b.mu.Unlock()
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if err := b.memCap.admit(cmd.Process.Pid); err != nil {
		b.kill()
		return fmt.Errorf("memory cap: %w", err)
	}
	return b.waitReady(ctx, 90*time.Second)
}

// waitReady polls Metadata until the node lists itself and a controller.
func (b *broker) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if !b.alive() {
			return fmt.Errorf("broker exited while starting: %s", b.exitReason())
		}
		last = func() error {
			w, err := dialFrom(ctx, setupIP, b.addr, nil)
			if err != nil {
				return err
			}
			defer w.Close()
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 9
			resp, err := w.roundTrip(req, 5*time.Second)
			if err != nil {
				return err
			}
			m := resp.(*kmsg.MetadataResponse)
			if len(m.Brokers) == 0 || m.ControllerID < 0 {
				return errors.New("no broker or controller in metadata yet")
			}
			return nil
		}()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("broker not ready within %s: %v", timeout, last)
}

func (b *broker) pid() int { return b.current().cmd.Process.Pid }

// alive reports whether the process runs.
func (b *broker) alive() bool {
	select {
	case <-b.current().exited:
		return false
	default:
		return true
	}
}

// exitReason says how the process ended: OOM-killed by the cgroup, or its
// exit status with the Go runtime's fatal line from the log.
func (b *broker) exitReason() string {
	if b.alive() {
		return ""
	}
	b.mu.Lock()
	oomStart := b.oomStart
	b.mu.Unlock()
	if b.memCap.oomKills() > oomStart {
		return fmt.Sprintf("OOM-killed (cgroup limit %d MiB)", b.memCap.limit>>20)
	}
	reason := fmt.Sprint(b.current().waitErr)
	if line := fatalLine(filepath.Join(b.dir, "broker.log")); line != "" {
		reason += ": " + line
	}
	return reason
}

// fatalLine is the last "fatal error:" or "panic:" line of the log.
func fatalLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var last string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# ") && strings.Contains(line, " start ") {
			last = "" // a later start of the broker
		}
		if strings.HasPrefix(line, "fatal error:") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "runtime: out of memory") {
			last = line
		}
	}
	return last
}

// stop ends the broker with SIGTERM, killing it after timeout.
func (b *broker) stop(timeout time.Duration) {
	if !b.alive() {
		return
	}
	b.markStopping()
	p := b.current()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		b.kill()
	}
}

// kill ends the broker as kill -9 does.
func (b *broker) kill() {
	b.markStopping()
	p := b.current()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (b *broker) markStopping() {
	b.mu.Lock()
	b.stopping = true
	b.mu.Unlock()
}

// stoppedByHarness reports whether the harness ended the process.
func (b *broker) stoppedByHarness() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopping
}

// procStatus reads size fields of /proc/<pid>/status in bytes.
func (b *broker) procStatus(fields ...string) map[string]int64 {
	out := map[string]int64{}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.pid()))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if key == f {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
				out[f] = kb << 10
			}
		}
	}
	return out
}

// rss is the broker's resident set size now.
func (b *broker) rss() int64 { return b.procStatus("VmRSS")["VmRSS"] }

// resetPeak resets the kernel's peak RSS of the broker (VmHWM), so a
// case's peak is its own; writing 5 to clear_refs does that (Linux 4.0+).
func (b *broker) resetPeak() {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", b.pid()), []byte("5"), 0)
}

// peak is the broker's peak RSS since resetPeak.
func (b *broker) peak() int64 { return b.procStatus("VmHWM")["VmHWM"] }

// fds counts the broker's open descriptors, how many of them are sockets,
// and its soft limit.
func (b *broker) fds() (open, sockets, limit int) {
	dir := fmt.Sprintf("/proc/%d/fd", b.pid())
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, 0
	}
	for _, e := range ents {
		if t, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(t, "socket:") {
			sockets++
		}
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", b.pid())); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					limit, _ = strconv.Atoi(f[0])
				}
			}
		}
	}
	return len(ents), sockets, limit
}
