package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// allServeOne reports whether the node at addr lists an end offset of 1 for
// each of the partitions of topic, without failing the test.
func allServeOne(addr, topic string, partitions int32) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return fmt.Errorf("no open failure logged and end offsets not listed: %w", err)
	}
	served := 0
	lo.Each(func(o kadm.ListedOffset) {
		if o.Offset == 1 {
			served++
		}
	})
	if served != int(partitions) {
		return fmt.Errorf("no open failure logged; %d of %d partitions serve their record", served, partitions)
	}
	return nil
}

// TestLowFileLimitKeepsLogsThatFailToOpen is issue 13's problem 4 as an
// operator met it: a broker restarted with its open-file limit lowered
// below what its partitions need. The logs that fail to open ("too many
// open files") go offline; none is removed as an orphan. Restarted at the
// normal limit, every partition serves the record it had (the old code
// renamed the failed ones *-delete and they came back empty). Since the
// file cache (issue 22) a low limit may no longer make any log fail to
// open: then every log serves its record at the lowered limit too.
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
	// Either some logs fail to open and are logged offline, or, since
	// segment files are opened through the file cache (a budget of half the
	// limit), every log opens and serves its record: both keep every log.
	waitFor(t, "logs failing to open, or every log served, at the lowered limit", func() error {
		if log := limited.stderr.String(); strings.Contains(log, "too many open files") {
			return nil
		}
		return allServeOne(limited.addr, topic, partitions)
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
