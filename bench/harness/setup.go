package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// repoRoot finds the sluice repository from the working directory: the
// nearest directory upwards whose go.mod is sluice's. `go run
// ./bench/harness` runs in the root, the smoke test in bench/harness.
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
			return "", errors.New("not inside the sluice repository (no go.mod of github.com/sluicedev/sluice above the working directory)")
		}
		dir = parent
	}
}

// goBuild builds ./cmd/sluice into bin.
func goBuild(ctx context.Context, root, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
	}
	return nil
}

// raiseFileLimit lifts the limit on open files for the brokers the harness
// starts: a broker holding 10,000 partitions keeps a descriptor or more
// open per segment (Kafka's documentation asks for 100,000). As root it
// sets both limits to the kernel's maximum (fs.nr_open), otherwise the soft
// limit to the hard one. Go raises its own soft limit at start but gives
// a child the limit it was started with unless the program sets one
// itself, as here.
func raiseFileLimit(logf func(string, ...any)) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if data, err := os.ReadFile("/proc/sys/fs/nr_open"); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err == nil && n > lim.Max {
			want := syscall.Rlimit{Cur: n, Max: n}
			if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want) == nil {
				logf("open-file limit for the brokers: %d", n)
				return
			}
		}
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		logf("cannot raise the open-file limit: %v", err)
	}
	logf("open-file limit for the brokers: %d", lim.Cur)
}
