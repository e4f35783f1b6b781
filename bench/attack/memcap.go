package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// memCap keeps the broker inside a memory limit, so an attack that makes it
// allocate without bound kills the broker (a finding) and not the machine.
// It is a cgroup when the harness can make one (cgroup v2 memory.max, else
// cgroup v1 memory.limit_in_bytes, both as root), else GOMEMLIMIT plus an
// address-space rlimit (prlimit), which are weaker: GOMEMLIMIT only makes
// the collector work harder, and the rlimit counts reserved address space.
type memCap struct {
	limit int64
	dir   string // the cgroup directory, "" without one
	v2    bool
	how   string // for the report
}

// newMemCap makes a cgroup for the broker below the harness's own, limited
// to limit bytes.
func newMemCap(limit int64) *memCap {
	m := &memCap{limit: limit}
	name := fmt.Sprintf("sluice-attack-%d", os.Getpid())
	if dir, err := m.tryV2(name); err == nil {
		m.dir, m.v2 = dir, true
		m.how = fmt.Sprintf("cgroup v2 memory.max=%d MiB (%s)", limit>>20, dir)
		return m
	}
	if dir, err := m.tryV1(name); err == nil {
		m.dir = dir
		m.how = fmt.Sprintf("cgroup v1 memory.limit_in_bytes=%d MiB (%s)", limit>>20, dir)
		return m
	} else {
		m.how = fmt.Sprintf("GOMEMLIMIT=%d MiB and RLIMIT_AS=%d MiB (no writable cgroup: %v)", limit>>20, 2*limit>>20, err)
	}
	return m
}

// ownCgroup returns this process's cgroup path for a v1 controller
// ("memory"), or the v2 path for controller "".
func ownCgroup(controller string) (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2], nil
			}
		}
	}
	return "", fmt.Errorf("no %q cgroup in /proc/self/cgroup", controller)
}

func (m *memCap) tryV2(name string) (string, error) {
	root := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		return "", err
	}
	own, err := ownCgroup("")
	if err != nil {
		return "", err
	}
	// A v2 cgroup with processes cannot hand controllers to children,
	// so the broker's cgroup is a sibling of the harness's own.
	parent := filepath.Join(root, filepath.Dir(own))
	ctl, err := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if err != nil || !strings.Contains(string(ctl), "memory") {
		return "", fmt.Errorf("memory controller not enabled in %s", parent)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(m.limit, 10)), 0); err != nil {
		os.Remove(dir)
		return "", err
	}
	_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0)
	return dir, nil
}

func (m *memCap) tryV1(name string) (string, error) {
	own, err := ownCgroup("memory")
	if err != nil {
		return "", err
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", own, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(m.limit, 10)), 0); err != nil {
		os.Remove(dir)
		return "", err
	}
	// Without swap accounting this file is absent; with it, no swap.
	_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(m.limit, 10)), 0)
	return dir, nil
}

// env is what the broker's environment needs for the cap.
func (m *memCap) env() []string {
	if m.dir != "" {
		return nil
	}
	return []string{fmt.Sprintf("GOMEMLIMIT=%dMiB", m.limit>>20)}
}

// admit puts the started broker process under the cap.
func (m *memCap) admit(pid int) error {
	if m.dir != "" {
		return os.WriteFile(filepath.Join(m.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	}
	lim := syscall.Rlimit{Cur: uint64(2 * m.limit), Max: uint64(2 * m.limit)}
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_AS), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("prlimit: %w", errno)
	}
	return nil
}

// oomKills is how many processes the kernel's OOM killer ended in the
// cgroup so far (0 without a cgroup).
func (m *memCap) oomKills() int64 {
	if m.dir == "" {
		return 0
	}
	file, key := "memory.oom_control", "oom_kill"
	if m.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(m.dir, file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// remove deletes the cgroup once no process is left in it.
func (m *memCap) remove() error {
	if m.dir == "" {
		return nil
	}
	err := os.Remove(m.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
