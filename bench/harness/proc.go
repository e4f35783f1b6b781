package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one broker process the harness started: a sluice binary, or a
// Kafka JVM (compat/bin/kafka-server-start.sh execs into java, so the pid is
// the JVM's own and /proc/<pid> describes the broker, not a shell).
type proc struct {
	cmd     *exec.Cmd
	started time.Time // just before exec: the origin of cold-start times
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed

	mu       sync.Mutex
	stopping bool // the harness asked it to end: its exit is no crash
}

// spawn starts name with args in dir, its stdout and stderr appended to
// logPath, and returns at once. The kernel kills the child if the harness
// dies first, so an interrupted run leaves no broker holding a port.
func spawn(name string, args, env []string, dir, logPath string) (*proc, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(logFile, "# %s %s %s\n", time.Now().Format(time.RFC3339Nano), name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &proc{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// alive reports whether the process has not exited.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// exitErr says how the process ended, with the tail of its log, or nil
// while it runs or when the harness ended it.
func (p *proc) exitErr() error {
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	if stopping || p.alive() {
		return nil
	}
	return fmt.Errorf("process %d exited (%v); log tail:\n%s", p.pid(), p.waitErr, tail(p.logPath, 15))
}

// kill ends the process as kill -9 does and waits for it.
func (p *proc) kill() {
	p.markStopping()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// stop sends SIGTERM (a controlled shutdown for both brokers) and waits up
// to timeout before killing the process.
func (p *proc) stop(timeout time.Duration) error {
	if err := p.exitErr(); err != nil {
		return err
	}
	p.markStopping()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("process %d did not exit within %s of SIGTERM; killed", p.pid(), timeout)
	}
}

// markStopping records that the harness is ending the process.
func (p *proc) markStopping() {
	p.mu.Lock()
	p.stopping = true
	p.mu.Unlock()
}

// memory returns the process's resident set size now (VmRSS) and its peak
// since start (VmHWM), in bytes, from /proc/<pid>/status.
func (p *proc) memory() (rss, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid()))
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %q: %w", key, val, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	if rss == 0 || peak == 0 {
		return 0, 0, errors.New("no VmRSS / VmHWM in /proc status")
	}
	return rss, peak, nil
}

// openFiles returns how many descriptors the process has open and its
// soft limit on them (/proc/<pid>/fd and /proc/<pid>/limits), so a run
// shows whether raiseFileLimit reached the brokers and how close they
// came to it.
func (p *proc) openFiles() (open, limit int, err error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.pid()))
	if err != nil {
		return 0, 0, err
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", p.pid()))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			if limit, err = strconv.Atoi(f[0]); err != nil {
				return 0, 0, fmt.Errorf("limits: %q: %w", line, err)
			}
			return len(fds), limit, nil
		}
	}
	return 0, 0, errors.New("no Max open files in /proc limits")
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times. It is
// 100 on every Linux architecture Go supports; reading it with sysconf
// would need cgo.
const clockTicks = 100

// cpuTime returns the CPU time the process has used so far, user plus
// system, from /proc/<pid>/stat.
func (p *proc) cpuTime() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid()))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces;
	// the fields after its closing parenthesis start at field 3 (state).
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 13 {
		return 0, errors.New("short /proc stat")
	}
	// utime and stime are fields 14 and 15, so 11 and 12 here.
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// reservedPorts are the ports the harness never uses: the ones developers
// and other tools on this machine run their own brokers on.
var reservedPorts = map[int]bool{9092: true, 9093: true, 9094: true, 9095: true, 9096: true, 9097: true, 19092: true, 29092: true}

// freePorts finds n distinct free loopback ports, each free for UDP as well
// (serf gossips over both), none of them reserved. Every port is held until
// all are found. Another process may still take one before the broker binds
// it; that shows as a failed start.
func freePorts(n int) ([]int, error) {
	var held []func() error
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free loopback ports")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", ln.Addr().String())
		if err != nil || reservedPorts[port] {
			ln.Close()
			if pc != nil {
				pc.Close()
			}
			continue
		}
		held = append(held, ln.Close, pc.Close)
		ports = append(ports, port)
	}
	return ports, nil
}
