package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLowFileLimitKeepsLogsThatFailToOpen is issue 13's problem 4 as an
// operator met it: a broker restarted with its open-file limit lowered
// below what its partitions need. The logs that fail to open ("too many
// open files") go offline; none is removed as an orphan. Restarted at the
// normal limit, every partition serves the record it had (the old code
// renamed the failed ones *-delete and they came back empty).
func TestLowFileLimitKeepsLogsThatFailToOpen(t *testing.T) {
	const topic, partitions, fileLimit = "wide", 120, 64
	dir := filepath.Join(t.TempDir(), "data")
	port := freePort(t)
	p := startSluice(t, dir, port)
	p.createTopic(topic, partitions)
	var recs []*kgo.Record
	for i := int32(0); i < partitions; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: i, Value: fmt.Appendf(nil, "v-%d", i)})
	}
	p.produce(recs...)
	if code := p.terminate(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM", code)
	}

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	limited := spawnCmd(t, addr, t.TempDir(), exec.Command("/bin/sh", "-c", `ulimit -n "$0" && exec "$@"`,
		strconv.Itoa(fileLimit), sluiceBin, "--override", "listeners=PLAINTEXT://"+addr, "--override", "log.dirs="+dir))
	limited.waitReady()
	waitFor(t, "logs failing to open at the lowered limit", func() error {
		if log := limited.stderr.String(); !strings.Contains(log, "too many open files") {
			return fmt.Errorf("no open failure logged:\n%s", log)
		}
		return nil
	})
	log := limited.stderr.String()
	if strings.Contains(log, "removing log of a partition") {
		t.Errorf("the broker removed partition logs at the lowered limit:\n%s", log)
	}
	t.Logf("%d of %d partition logs failed to open at %d open files", strings.Count(log, "partition log failed to open"), partitions, fileLimit)
	limited.terminate()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.Name(), "-delete"):
			t.Errorf("%s was scheduled for deletion", e.Name())
		case strings.HasPrefix(e.Name(), topic+"-"):
			found++
		}
	}
	if found != partitions {
		t.Errorf("%d partition directories on disk, want %d", found, partitions)
	}

	p = startSluice(t, dir, port)
	ends := p.endOffsets(topic)
	for i := int32(0); i < partitions; i++ {
		if ends[i] != 1 {
			t.Errorf("partition %d: end offset %d after the restart at the normal limit, want 1", i, ends[i])
		}
	}
	if t.Failed() {
		return
	}
	for part, rs := range p.consumeAll(topic, ends) {
		if len(rs) != 1 || string(rs[0].Value) != fmt.Sprintf("v-%d", part) {
			t.Errorf("partition %d: %d records, first %q", part, len(rs), rs[0].Value)
		}
	}
}
