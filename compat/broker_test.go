package compat

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// readyTimeout bounds how long a freshly started broker may take to print its
// ready line.
const readyTimeout = 60 * time.Second

// stopTimeout bounds how long a broker may take to exit after SIGTERM before
// it is killed.
const stopTimeout = 15 * time.Second

// readyLine matches the line the broker prints once it serves requests
// ("sluice ready: listening on ..."), and not its other lines that mention
// readiness, such as a cluster node's "joining the cluster; ready once ...".
var readyLine = regexp.MustCompile(`^sluice ready:`)

// broker is one sluice process started for a row.
type broker struct {
	// id is the broker's node.id.
	id int32
	// addr is the host:port of the broker's PLAINTEXT listener.
	addr string
	// logPath holds everything the process wrote to stdout and stderr.
	logPath string

	cmd    *exec.Cmd
	ready  chan struct{} // closed once the process has printed its ready line
	exited chan struct{} // closed once the process has exited
	// waitErr is the process's exit status; read it only after exited is
	// closed.
	waitErr error
	// stopping is set before the harness signals the process, so that an
	// exit afterwards is not reported as a crash.
	stopping bool
	mu       sync.Mutex

	// bin, dir and props are what spawnBroker was given, so that
	// broker.restart can start the same node again.
	bin, dir string
	props    []string
}

// startBroker starts bin as node 1 with a single PLAINTEXT listener on a free
// loopback port and a log directory under dir, then waits until it prints
// its ready line. Extra overrides are Kafka properties as key=value.
func startBroker(ctx context.Context, bin, dir string, overrides []string) (*broker, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	b, err := spawnBroker(bin, dir, 1, addr, append([]string{"listeners=PLAINTEXT://" + addr}, overrides...))
	if err != nil {
		return nil, err
	}
	if err := b.waitReady(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

// spawnBroker starts bin as node id, serving Kafka clients on addr, with its
// data in dir/data and its output in dir/broker.log, and returns without
// waiting for it to be ready. props are Kafka properties as key=value after
// log.dirs and node.id; they must name the listeners.
func spawnBroker(bin, dir string, id int32, addr string, props []string) (*broker, error) {
	return spawnBrokerLog(bin, dir, id, addr, props, os.O_TRUNC)
}

// spawnBrokerLog is spawnBroker opening broker.log with logFlag: O_TRUNC
// for a first start, O_APPEND for a restart (broker.restart).
func spawnBrokerLog(bin, dir string, id int32, addr string, props []string, logFlag int) (*broker, error) {
	origProps := props
	logDirs := filepath.Join(dir, "data")
	if err := os.MkdirAll(logDirs, 0o755); err != nil {
		return nil, err
	}
	props = append([]string{
		"log.dirs=" + logDirs,
		fmt.Sprintf("node.id=%d", id),
	}, props...)
	var args []string
	for _, p := range props {
		args = append(args, "--override", p)
	}

	logPath := filepath.Join(dir, "broker.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|logFlag, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "# %s %s\n", bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	bindToParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}

	b := &broker{id: id, addr: addr, logPath: logPath, cmd: cmd, ready: make(chan struct{}), exited: make(chan struct{}),
		bin: bin, dir: dir, props: origProps}
	var readyOnce sync.Once
	var logMu sync.Mutex
	var copiers sync.WaitGroup
	scan := func(r io.Reader) {
		defer copiers.Done()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			fmt.Fprintln(logFile, line)
			logMu.Unlock()
			if readyLine.MatchString(line) {
				readyOnce.Do(func() { close(b.ready) })
			}
		}
		// A line longer than the buffer ends the scan; keep draining so
		// the broker never blocks on a full pipe.
		io.Copy(io.Discard, r)
	}
	copiers.Add(2)
	go scan(stdout)
	go scan(stderr)
	go func() {
		copiers.Wait() // Wait must not run before the pipes are drained
		b.waitErr = cmd.Wait()
		logFile.Close()
		close(b.exited)
	}()
	return b, nil
}

// waitReady waits until the broker has printed its ready line and accepts
// connections. On failure it stops the broker (unless it has exited) and
// returns an error with the log's last lines.
func (b *broker) waitReady(ctx context.Context) error {
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-b.ready:
	case <-b.exited:
		return fmt.Errorf("broker exited before it was ready: %v; last output: %q\n%s",
			b.waitErr, tail(b.logPath, 1), tail(b.logPath, 20))
	case <-timer.C:
		b.stop()
		return fmt.Errorf("broker printed no ready line within %s; last output: %q\n%s",
			readyTimeout, tail(b.logPath, 1), tail(b.logPath, 20))
	case <-ctx.Done():
		b.stop()
		return ctx.Err()
	}

	// The ready line should mean the listener accepts; check, so that a row
	// failing on its first request points at the right cause.
	conn, err := net.DialTimeout("tcp", b.addr, 5*time.Second)
	if err != nil {
		b.stop()
		return fmt.Errorf("broker said ready but %s does not accept: %w", b.addr, err)
	}
	conn.Close()
	return nil
}

// crashed reports a non-nil error if the process exited without being asked
// to.
func (b *broker) crashed() error {
	select {
	case <-b.exited:
	default:
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return nil
	}
	return fmt.Errorf("broker exited during the row: %v", b.waitErr)
}

// raceReport returns an error naming the first data race the broker's race
// detector reported, if it was built with -race and found one.
func (b *broker) raceReport() error {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return err
	}
	i := bytes.Index(data, []byte("WARNING: DATA RACE"))
	if i < 0 {
		return nil
	}
	report := data[i:]
	if end := bytes.Index(report, []byte("\n==================")); end >= 0 {
		report = report[:end]
	}
	// The line after the warning names the access, e.g. "Write at ... by
	// goroutine 7:", and the one after that the function.
	lines := strings.SplitN(string(report), "\n", 4)
	first := "broker data race"
	if len(lines) >= 3 {
		first += ": " + strings.TrimSpace(lines[1]) + " " + strings.TrimSpace(lines[2])
	}
	return fmt.Errorf("%s\n%s", first, report)
}

// stop sends SIGTERM, waits up to stopTimeout, then kills. It returns an
// error if the broker had already crashed or did not stop in time.
func (b *broker) stop() error {
	crash := b.crashed()
	b.mu.Lock()
	b.stopping = true
	b.mu.Unlock()
	if crash != nil {
		return crash
	}
	select {
	case <-b.exited:
		return nil
	default:
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-b.exited:
		return nil
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		<-b.exited
		return fmt.Errorf("broker did not exit within %s of SIGTERM; killed", stopTimeout)
	}
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before the broker binds it; that shows as a failed start, not a hang.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of the file at path, for failure messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// buildBroker compiles ./cmd/sluice from the module at root into dir, with the
// race detector when SLUICE_COMPAT_RACE=1. When SLUICE_BIN names a binary,
// that one is used instead.
func buildBroker(ctx context.Context, root, dir string) (string, error) {
	if bin := os.Getenv("SLUICE_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("SLUICE_BIN: %w", err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "sluice")
	args := []string{"build", "-o", bin}
	if os.Getenv("SLUICE_COMPAT_RACE") == "1" {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/sluice")...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
	}
	return bin, nil
}

// repoRoot finds the directory of the sluice module's go.mod, walking up from
// the working directory (the package directory under go test).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/sluicedev/sluice\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of github.com/sluicedev/sluice above the working directory")
		}
		dir = parent
	}
}
