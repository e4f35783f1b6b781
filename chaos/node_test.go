//go:build linux

package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyTimeout bounds how long a node may take to print its ready
	// line; a node joining a cluster prints it once the quorum registered
	// it.
	readyTimeout = 90 * time.Second
	// stopTimeout bounds a SIGTERM stop before the node is killed.
	stopTimeout = 30 * time.Second
)

// node is one sluice process, run in its own network namespace through
// `ip netns exec`, which execs the binary in place: the process the test
// signals (SIGSTOP, SIGKILL, SIGTERM) is sluice itself.
type node struct {
	id   int32
	ns   string
	ip   string
	dir  string // holds data/ and broker.log
	bin  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	ready  chan struct{} // closed when the current process printed its ready line
	exited chan struct{} // closed when the current process has exited and its output is copied
	paused bool
}

// addr is the node's Kafka listener.
func (n *node) addr() string { return fmt.Sprintf("%s:%d", n.ip, kafkaPort) }

// dataDir is the node's log.dirs.
func (n *node) dataDir() string { return filepath.Join(n.dir, "data") }

func (n *node) logPath() string { return filepath.Join(n.dir, "broker.log") }

// start starts the process (again, after a stop or kill) without waiting for
// it to be ready. Its output is appended to broker.log by two goroutines
// that end when the process closes its pipes; a third waits for the exit.
func (n *node) start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		select {
		case <-n.exited:
		default:
			return fmt.Errorf("node %d is still running", n.id)
		}
	}
	logFile, err := os.OpenFile(n.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logFile, "# %s ip netns exec %s %s %s\n", time.Now().Format(time.RFC3339Nano), n.ns, n.bin, strings.Join(n.args, " "))
	cmd := exec.Command("ip", append([]string{"netns", "exec", n.ns, n.bin}, n.args...)...)
	cmd.Dir = n.dir
	// The kernel kills the node if the test process dies first, so an
	// interrupted run leaves no broker behind (removeStale deletes its
	// namespace on the next run).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start node %d: %w", n.id, err)
	}
	ready, exited := make(chan struct{}), make(chan struct{})
	n.cmd, n.ready, n.exited, n.paused = cmd, ready, exited, false

	var readyOnce sync.Once
	var logMu sync.Mutex
	var copiers sync.WaitGroup
	copyLines := func(r io.Reader) {
		defer copiers.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			fmt.Fprintln(logFile, line)
			logMu.Unlock()
			if strings.HasPrefix(line, "sluice ready:") {
				readyOnce.Do(func() { close(ready) })
			}
		}
		// A line longer than the buffer ends the scan; keep draining so
		// the node never blocks on a full pipe.
		io.Copy(io.Discard, r)
	}
	copiers.Add(2)
	go copyLines(stdout)
	go copyLines(stderr)
	go func() {
		copiers.Wait() // cmd.Wait must not run before the pipes are drained
		cmd.Wait()
		logFile.Close()
		close(exited)
	}()
	return nil
}

// waitReady waits until the current process printed its ready line.
func (n *node) waitReady(ctx context.Context) error {
	n.mu.Lock()
	ready, exited := n.ready, n.exited
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	select {
	case <-ready:
		return nil
	case <-exited:
		return fmt.Errorf("node %d exited before it was ready; last lines of %s:\n%s", n.id, n.logPath(), n.tail(20))
	case <-ctx.Done():
		return fmt.Errorf("node %d not ready: %w; last lines of %s:\n%s", n.id, ctx.Err(), n.logPath(), n.tail(20))
	}
}

// signal sends sig to the current process if it runs.
func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return errors.New("not started")
	}
	select {
	case <-n.exited:
		return fmt.Errorf("node %d is not running", n.id)
	default:
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return n.cmd.Process.Signal(sig)
}

// running reports whether the current process has not exited.
func (n *node) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// waitExit waits for the current process to exit, up to d.
func (n *node) waitExit(d time.Duration) bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-exited:
		return true
	case <-t.C:
		return false
	}
}

// kill is kill -9: the process dies without closing anything cleanly.
func (n *node) kill() {
	if n.running() {
		n.signal(syscall.SIGKILL)
		n.waitExit(stopTimeout)
	}
}

// stop is a clean stop: SIGCONT if paused, SIGTERM, and SIGKILL after
// stopTimeout. It reports whether the node exited by itself.
func (n *node) stop() bool {
	if !n.running() {
		return true
	}
	n.signal(syscall.SIGCONT)
	n.signal(syscall.SIGTERM)
	if n.waitExit(stopTimeout) {
		return true
	}
	n.kill()
	return false
}

// tail returns the last lines of the node's log, for error messages.
func (n *node) tail(lines int) string {
	b, err := os.ReadFile(n.logPath())
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// logHas reports whether the node's log contains s.
func (n *node) logHas(s string) bool {
	b, err := os.ReadFile(n.logPath())
	return err == nil && strings.Contains(string(b), s)
}
