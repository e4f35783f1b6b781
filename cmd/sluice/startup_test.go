package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStartupErrors runs the binary with configurations it must refuse: each
// run exits non-zero before serving, prints exactly one line that names the
// offending key, and leaves nothing listening on the configured port.
func TestStartupErrors(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "plain-file")
	if err := os.WriteFile(notADir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	badTOML := filepath.Join(t.TempDir(), "sluice.toml")
	if err := os.WriteFile(badTOML, []byte("num.partitions = 3\n\n[log]\nsegmnt.bytes = 1048576\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		key  string // the key the message must name
	}{
		{name: "unknown key", args: []string{"--override", "log.segmnt.bytes=1"}, key: "log.segmnt.bytes"},
		{name: "bad value", args: []string{"--override", "num.partitions=abc"}, key: "num.partitions"},
		{name: "log dir under a regular file", args: []string{"--override", "log.dirs=" + filepath.Join(notADir, "data")}, key: "log.dirs"},
		{name: "unknown key in TOML file", args: []string{"--config", badTOML}, key: "log.segmnt.bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
			args := append([]string{
				"--override", "listeners=PLAINTEXT://" + addr,
				"--override", "log.dirs=" + filepath.Join(t.TempDir(), "data"),
			}, tc.args...) // later overrides win
			code, stderr := runToFailure(t, args...)
			msg := strings.TrimSpace(stderr)
			if lines := strings.Split(msg, "\n"); len(lines) != 1 {
				t.Errorf("want one line of error, got %d:\n%s", len(lines), msg)
			}
			if !strings.Contains(msg, tc.key) {
				t.Errorf("message does not name %q: %q", tc.key, msg)
			}
			t.Logf("exit %d: %s", code, msg)
			assertNothingListening(t, addr)
		})
	}
}

// TestStartsWithoutConfig runs the binary with no --config and no log.dirs:
// it serves with its defaults, keeping data in ./sluice-data of its working
// directory. Only listeners is set, so parallel test runs do not fight over
// port 9092.
func TestStartsWithoutConfig(t *testing.T) {
	t.Parallel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	cwd := t.TempDir()
	p := startProc(t, addr, cwd, "--override", "listeners=PLAINTEXT://"+addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cl := p.client(kgo.DefaultProduceTopic("no-config"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("hello")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "sluice-data", "no-config-0")); err != nil {
		t.Errorf("default log dir ./sluice-data not used: %v", err)
	}
	if code := p.terminate(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0; stderr:\n%s", code, p.stderr.String())
	}
}

// TestCleanStop stops the broker with SIGTERM while a producer is sending:
// the process exits 0, leaves the clean-shutdown marker, every acknowledged
// record is there after a restart, and the restart recovers nothing.
func TestCleanStop(t *testing.T) {
	t.Parallel()
	dir, port := t.TempDir(), freePort(t)
	const topic = "clean-stop"
	p := startSluice(t, dir, port)
	p.createTopic(topic, 2)

	prod := p.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	ctx, cancel := context.WithCancel(context.Background())
	var (
		mu    sync.Mutex
		acked = map[int32]map[int64]string{}
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			v := fmt.Sprintf("v%d", i)
			prod.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				if acked[r.Partition] == nil {
					acked[r.Partition] = map[int64]string{}
				}
				acked[r.Partition][r.Offset] = string(r.Value)
				mu.Unlock()
			})
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, m := range acked {
			n += len(m)
		}
		return n
	}
	waitFor(t, "producer acknowledged", func() error {
		if n := count(); n < 500 {
			return fmt.Errorf("only %d records acknowledged", n)
		}
		return nil
	})

	code := p.terminate()
	cancel()
	prod.Close() // fails whatever was still buffered
	wg.Wait()
	if code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0; stderr:\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("no clean-shutdown marker after SIGTERM: %v", err)
	}

	p2 := startSluice(t, dir, port)
	rs := p2.recovery()
	t.Logf("acknowledged %d records; restart after SIGTERM: %+v", count(), rs)
	if !rs.cleanShutdown || rs.segmentsScanned != 0 || rs.bytesTruncated != 0 {
		t.Errorf("restart after a clean stop recovered the log: %+v", rs)
	}
	ends := p2.endOffsets(topic)
	got := p2.consumeAll(topic, ends)
	mu.Lock()
	defer mu.Unlock()
	for part, offs := range acked {
		byOffset := map[int64]string{}
		for _, r := range got[part] {
			byOffset[r.Offset] = string(r.Value)
		}
		for off, v := range offs {
			if byOffset[off] != v {
				t.Errorf("acknowledged %s[%d]@%d = %q, read back %q", topic, part, off, v, byOffset[off])
			}
		}
	}
	if code := p2.terminate(); code != 0 {
		t.Errorf("second SIGTERM: exit %d", code)
	}
}
