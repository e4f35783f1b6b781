package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file kills the real broker with SIGKILL at each step of a log
// cleaner swap (issue 17, acceptance 4). A binary built with
// -tags sluice_failpoints stops its cleaner at the step SLUICE_FAILPOINT
// names (logstore/failpoint_on.go) and says so on stderr; the test kills
// it there, restarts it on the same directory and reads the log back with
// a consumer.

// cleanKillSteps are the failpoints of a swap, in order, with the cleaner
// files the kill leaves in the partition directory: *.cleaned, *.swap and
// whether any *.deleted. committed: the <base>.log.swap exists, so the
// restart completes the swap; before that it undoes it.
var cleanKillSteps = []struct {
	name      string
	committed bool
	cleaned   int
	swap      int
	deleted   bool
}{
	{"cleaner.cleaned", false, 4, 0, false},
	{"cleaner.swap-partial", false, 2, 2, false},
	{"cleaner.swap", true, 0, 4, false},
	{"cleaner.deleted-partial", true, 0, 4, true},
	{"cleaner.deleted", true, 0, 4, true},
	{"cleaner.final-partial", true, 0, 1, true},
	{"cleaner.done", true, 0, 0, true},
}

// failpointBin is the binary built with -tags sluice_failpoints, next to
// sluiceBin (removed with it by TestMain).
var failpointBin struct {
	once sync.Once
	path string
	err  error
}

func failpointBinary(t *testing.T) string {
	t.Helper()
	failpointBin.once.Do(func() {
		failpointBin.path = filepath.Join(filepath.Dir(sluiceBin), "sluice-failpoints")
		build := exec.Command("go", "build", "-tags", "sluice_failpoints", "-o", failpointBin.path, ".")
		var out bytes.Buffer
		build.Stdout, build.Stderr = &out, &out
		if err := build.Run(); err != nil {
			failpointBin.err = fmt.Errorf("go build -tags sluice_failpoints ./cmd/sluice: %v\n%s", err, out.String())
		}
	})
	if failpointBin.err != nil {
		t.Fatal(failpointBin.err)
	}
	return failpointBin.path
}

// startFailpointSluice starts the failpoint binary like startSluice, with
// SLUICE_FAILPOINT set to failpoint ("" for none).
func startFailpointSluice(t *testing.T, dir string, port int, failpoint string, extra ...string) *sluiceProc {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{
		"--override", "listeners=PLAINTEXT://" + addr,
		"--override", "log.dirs=" + dir,
	}, extra...)
	cmd := exec.Command(failpointBinary(t), args...)
	cmd.Env = append(os.Environ(), "SLUICE_FAILPOINT="+failpoint)
	p := spawnCmd(t, addr, t.TempDir(), cmd)
	p.waitReady()
	p.dir = dir
	return p
}

// cleanerBackoffArgs sets log.cleaner.backoff.ms: 100 ms lets a pass
// start soon after the broker does, an hour keeps the cleaner idle.
func cleanerBackoffArgs(ms int) []string {
	return []string{"--override", fmt.Sprintf("log.cleaner.backoff.ms=%d", ms)}
}

// cleanAck is a record the broker acknowledged (acks=all); a nil value is
// a tombstone.
type cleanAck struct {
	key   string
	value []byte
}

// TestCleanerKill9AtEachStep builds a compacted topic whose inactive
// segments form one cleaner group, then for each step of the swap: starts
// the broker with the failpoint, waits until its cleaner is there, kills
// it with SIGKILL, lists what is on disk, restarts it and reads the log
// back. Before the commit point the restart must give back every record;
// from it on exactly the cleaned log (each key's latest record); never a
// lost acknowledged latest record, a duplicate or unknown offset, a
// changed end offset or a cleaner file. Then a restart with the cleaner
// running must complete a pass that leaves one record per key, and the
// log takes the next record at its old end offset.
func TestCleanerKill9AtEachStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the broker four times per step")
	}
	failpointBinary(t)
	port := freePort(t)
	template := t.TempDir()
	const topic = "compacted"
	acked, end, segments := buildCompactedLog(t, template, port, topic)
	latest := map[string]int64{}
	for off := int64(0); off < end; off++ {
		latest[acked[off].key] = off
	}
	t.Logf("template: %d records acknowledged, %d keys, %d segments", end, len(latest), segments)

	for _, step := range cleanKillSteps {
		t.Run(step.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			copyTree(t, template, dir)
			partDir := filepath.Join(dir, topic+"-0")

			// 1. The cleaner stops at the step; SIGKILL.
			p := startFailpointSluice(t, dir, port, step.name, cleanerBackoffArgs(100)...)
			p.waitFailpoint(step.name)
			p.kill()
			left := listCleanerFiles(t, partDir)
			t.Logf("killed at %s: %d .log, %d .cleaned, %d .swap %v, %d .deleted (of %d segments)",
				step.name, left.logs, len(left.cleaned), len(left.swap), append(left.cleaned, left.swap...),
				len(left.deleted), left.deletedSegments())
			if len(left.cleaned) != step.cleaned || len(left.swap) != step.swap || (len(left.deleted) > 0) != step.deleted {
				t.Fatalf("the kill at %s left %d .cleaned, %d .swap, %d .deleted files; want %d, %d, deleted=%v",
					step.name, len(left.cleaned), len(left.swap), len(left.deleted), step.cleaned, step.swap, step.deleted)
			}

			// 2. Restart with the cleaner idle (an hour's back-off, and
			// held at its first step, where it changes nothing a reader
			// sees, should a pass start anyway): what is read is what
			// recovery left.
			p = startFailpointSluice(t, dir, port, "cleaner.cleaned", cleanerBackoffArgs(3_600_000)...)
			p.waitEndOffset(topic, end)
			got := p.consumeAll(topic, map[int32]int64{0: end})[0]
			checkCleanedLog(t, acked, latest, got)
			rec := listCleanerFiles(t, partDir)
			if len(rec.swap) > 0 || len(rec.deleted) > 0 {
				t.Fatalf("cleaner files left after recovery: %v", rec.names())
			}
			if len(rec.cleaned) > 0 {
				t.Fatalf("the held cleaner started (%v): the back-off did not keep it idle", rec.cleaned)
			}
			if step.committed {
				if len(got) != len(latest) || rec.logs != 2 {
					for _, r := range got {
						if latest[string(r.Key)] != r.Offset {
							t.Logf("superseded record read: %s@%d (latest at %d)", r.Key, r.Offset, latest[string(r.Key)])
						}
					}
					t.Fatalf("after a kill past the commit point: %d records in %d segments, want the cleaned log: %d in 2",
						len(got), rec.logs, len(latest))
				}
			} else if int64(len(got)) != end || rec.logs != segments {
				t.Fatalf("after a kill before the commit point: %d records in %d segments, want the old log: %d in %d",
					len(got), rec.logs, end, segments)
			}
			t.Logf("restart recovered %d records in %d segments, end offset %d", len(got), rec.logs, end)
			p.kill()

			// 3. A restart with the cleaner free completes a pass: one
			// record per key.
			p = startSluice(t, dir, port, cleanerBackoffArgs(100)...)
			p.waitCleaned(topic + "-0")
			got = p.consumeAll(topic, map[int32]int64{0: end})[0]
			checkCleanedLog(t, acked, latest, got)
			if len(got) != len(latest) {
				t.Fatalf("after a pass without failpoint: %d records, want one per key: %d", len(got), len(latest))
			}
			if off := p.produceTo(topic, 0, "after-clean", "after-clean"); off != end {
				t.Fatalf("produce after the clean landed at %d, want %d", off, end)
			}
			if f := listCleanerFiles(t, partDir); len(f.cleaned)+len(f.swap) > 0 {
				t.Fatalf("a completed pass left %v", f.names())
			}
			t.Logf("clean after the restart: %d records, one per key", len(got))
		})
	}
}

// buildCompactedLog runs the broker on dir with the cleaner idle, creates
// a one-partition compacted topic (createCompactedTopic), produces
// compactedWorkload, raises segment.bytes so that every inactive segment
// falls in one cleaner group, and stops the broker with SIGTERM. It
// returns the acknowledged records by offset, the end offset and the
// segment count.
func buildCompactedLog(t *testing.T, dir string, port int, topic string) (map[int64]cleanAck, int64, int) {
	t.Helper()
	p := startSluice(t, dir, port, cleanerBackoffArgs(3_600_000)...)
	adm := kadm.NewClient(p.client())
	createCompactedTopic(t, adm, topic, 1)
	acked, end := compactedWorkload(t, p.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())))
	raiseSegmentBytes(t, adm, topic)
	p.waitEndOffset(topic, end)
	if code := p.terminate(); code != 0 {
		t.Fatalf("sluice exited with %d after SIGTERM", code)
	}
	files := listCleanerFiles(t, filepath.Join(dir, topic+"-0"))
	if len(files.names()) > 0 || files.logs < 10 {
		t.Fatalf("template: %d segments, cleaner files %v", files.logs, files.names())
	}
	return acked, end, files.logs
}

// createCompactedTopic creates a one-partition compacted topic with 1 KiB
// segments that the cleaner takes up at once (min.cleanable.dirty.ratio
// 0.01).
func createCompactedTopic(t *testing.T, adm *kadm.Client, topic string, replicas int16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, replicas, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("1024"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// raiseSegmentBytes sets segment.bytes to 1 MiB, so that the cleaner
// takes every inactive segment of the topic in one group.
func raiseSegmentBytes(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: kadm.StringPtr("1048576")}}, topic)
	if err == nil {
		_, err = ar.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("raise segment.bytes of %s: %v", topic, err)
	}
}

// compactedWorkload produces, with prod (acks=all, default topic set),
// 40 rounds of 15 records over 40 keys with overwrites and tombstones (1
// in 8), then a tail of keys written once, in batches of more than half a
// segment even compressed (random values): the last one rolls a new
// segment, so the active segment holds only such keys. It returns the
// acknowledged records by offset and the end offset; every offset below
// it was acknowledged.
func compactedWorkload(t *testing.T, prod *kgo.Client) (map[int64]cleanAck, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	acked := map[int64]cleanAck{}
	produce := func(recs []*kgo.Record) {
		t.Helper()
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, r := range recs {
			acked[r.Offset] = cleanAck{string(r.Key), r.Value}
		}
	}
	rng := rand.New(rand.NewSource(17))
	for round := 0; round < 40; round++ {
		var recs []*kgo.Record
		for i := 0; i < 15; i++ {
			r := &kgo.Record{Key: fmt.Appendf(nil, "key-%02d", rng.Intn(40))}
			if rng.Intn(8) != 0 {
				r.Value = fmt.Appendf(nil, "v-%d-%d-%s", round, i, strings.Repeat("x", rng.Intn(40)))
			}
			recs = append(recs, r)
		}
		produce(recs)
	}
	for round := 0; round < 3; round++ {
		var tail []*kgo.Record
		for i := 0; i < 3; i++ {
			v := make([]byte, 200)
			rng.Read(v)
			tail = append(tail, &kgo.Record{Key: fmt.Appendf(nil, "tail-%d-%d", round, i), Value: v})
		}
		produce(tail)
	}
	end := int64(len(acked))
	for off := int64(0); off < end; off++ {
		if _, ok := acked[off]; !ok {
			t.Fatalf("offset %d of [0, %d) was not acknowledged", off, end)
		}
	}
	return acked, end
}

// checkCleanedLog checks the records read from the log: offsets strictly
// increasing, each the acknowledged record at its offset, every key's
// latest record there, and every acknowledged record missing only because
// a later record of its key exists.
func checkCleanedLog(t *testing.T, acked map[int64]cleanAck, latest map[string]int64, got []*kgo.Record) {
	t.Helper()
	read := map[int64]bool{}
	prev := int64(-1)
	for _, r := range got {
		if r.Offset <= prev {
			t.Fatalf("offset %d read after %d", r.Offset, prev)
		}
		prev = r.Offset
		a, ok := acked[r.Offset]
		switch {
		case !ok:
			t.Fatalf("read %s@%d, never acknowledged", r.Key, r.Offset)
		case string(r.Key) != a.key || !bytes.Equal(r.Value, a.value) || (r.Value == nil) != (a.value == nil):
			t.Fatalf("offset %d: read %s=%q, acknowledged %s=%q", r.Offset, r.Key, r.Value, a.key, a.value)
		}
		read[r.Offset] = true
	}
	for off, a := range acked {
		if !read[off] && latest[a.key] == off {
			t.Fatalf("the latest record of %s (offset %d) is lost", a.key, off)
		}
	}
}

// waitEndOffset waits for partition 0 of topic to list end as its end
// offset (the high watermark catches up with the log end after a
// restart); an end past it fails at once.
func (p *sluiceProc) waitEndOffset(topic string, end int64) {
	p.t.Helper()
	waitFor(p.t, "the end offset", func() error {
		got := p.endOffsets(topic)[0]
		if got > end {
			p.t.Fatalf("end offset %d, past the %d acknowledged", got, end)
		}
		if got != end {
			return fmt.Errorf("end offset %d, want %d", got, end)
		}
		return nil
	})
}

// waitFailpoint waits for the failpoint's line on stderr.
func (p *sluiceProc) waitFailpoint(name string) {
	p.t.Helper()
	waitLong(p.t, "failpoint "+name, func() error {
		if !strings.Contains(p.stderr.String(), "sluice failpoint reached: "+name+"\n") {
			return fmt.Errorf("not reached; stderr:\n%s", p.stderr.String())
		}
		return nil
	})
}

// failpointReached reports whether any failpoint was reached.
func (p *sluiceProc) failpointReached() bool {
	return strings.Contains(p.stderr.String(), "sluice failpoint reached: ")
}

// waitCleaned waits for the broker to log a completed pass over partition.
func (p *sluiceProc) waitCleaned(partition string) {
	p.t.Helper()
	waitLong(p.t, "a cleaning pass over "+partition, func() error {
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(line, `msg="log cleaned"`) && strings.Contains(line, " partition="+partition+" ") {
				return nil
			}
		}
		return fmt.Errorf("none; stderr:\n%s", p.stderr.String())
	})
}

// waitLong is waitFor with more room: a cleaning pass allocates the
// cleaner's key map first, and CI machines are busy.
func waitLong(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cleanerFiles is a partition directory's segment and cleaner files.
type cleanerFiles struct {
	logs                   int // <base>.log files
	cleaned, swap, deleted []string
}

// deletedSegments counts the segments with files renamed *.deleted.
func (f cleanerFiles) deletedSegments() int {
	bases := map[string]bool{}
	for _, name := range f.deleted {
		bases[name[:min(20, len(name))]] = true
	}
	return len(bases)
}

func (f cleanerFiles) names() []string {
	return append(append(append([]string(nil), f.cleaned...), f.swap...), f.deleted...)
}

func listCleanerFiles(t *testing.T, dir string) cleanerFiles {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var f cleanerFiles
	for _, e := range entries {
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".cleaned"):
			f.cleaned = append(f.cleaned, name)
		case strings.HasSuffix(name, ".swap"):
			f.swap = append(f.swap, name)
		case strings.HasSuffix(name, ".deleted"):
			f.deleted = append(f.deleted, name)
		case strings.HasSuffix(name, ".log"):
			f.logs++
		}
	}
	sort.Strings(f.deleted)
	return f
}

// copyTree copies the directory tree src to dst (regular files only).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// TestCleanerKill9ClusterReplica is the replicated case on three
// processes: the preferred replica of a compacted topic with three
// replicas is stopped, restarted as a follower with a failpoint in the
// middle of its swap (some replaced segments renamed *.deleted, others
// not), killed there with SIGKILL and restarted; made leader again by a
// preferred election, it serves its own copy of the log: the swap
// completed, no latest record lost, no unknown or repeated offset, the
// end offset unchanged, no cleaner file left. Restarted once more with
// the cleaner free and led again, it serves one record per key, and the
// next record is replicated at the old end offset.
func TestCleanerKill9ClusterReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-process cluster")
	}
	failpointBinary(t)
	const topic = "compacted-rf3"
	const step = "cleaner.deleted-partial"
	c := startClusterProcs(t, 3, cleanerBackoffArgs(3_600_000)...)
	adm := kadm.NewClient(c.client())
	createCompactedTopic(t, adm, topic, 3)
	acked, end := compactedWorkload(t, c.client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks())))
	raiseSegmentBytes(t, adm, topic)
	latest := map[string]int64{}
	for off := int64(0); off < end; off++ {
		latest[acked[off].key] = off
	}
	f := partitionState(t, adm, topic).Replicas[0]
	partDir := filepath.Join(nodeLogDir(t, c, f), topic+"-0")
	before := listCleanerFiles(t, partDir)
	t.Logf("%d records acknowledged, %d keys; node %d (preferred replica) holds %d segments", end, len(latest), f, before.logs)

	// 1. The preferred replica stops, comes back as a follower and its
	// cleaner stops in the middle of the swap: SIGKILL.
	if code := c.procs[f-1].terminate(); code != 0 {
		t.Fatalf("node %d exited with %d after SIGTERM", f, code)
	}
	p := restartNode(t, c, f, failpointBinary(t), step, cleanerBackoffArgs(100)...)
	p.waitFailpoint(step)
	p.kill()
	left := listCleanerFiles(t, partDir)
	t.Logf("node %d killed at %s: %d .log, %d .cleaned, %d .swap, %d .deleted (of %d segments)",
		f, step, left.logs, len(left.cleaned), len(left.swap), len(left.deleted), left.deletedSegments())
	if len(left.swap) != 4 || left.deletedSegments() != 1 || left.logs != before.logs-1 {
		t.Fatalf("the kill at %s left %d .log and %v; want %d .log, 4 .swap and one segment's .deleted",
			step, left.logs, left.names(), before.logs-1)
	}

	// 2. Restarted with its cleaner held at the first step and led again,
	// it serves what its recovery left: the completed swap.
	p = restartNode(t, c, f, failpointBinary(t), "cleaner.cleaned", cleanerBackoffArgs(3_600_000)...)
	got := readAsLeader(t, c, f, topic, end)
	checkCleanedLog(t, acked, latest, got)
	rec := listCleanerFiles(t, partDir)
	if len(rec.swap) > 0 || len(rec.deleted) > 0 {
		t.Fatalf("cleaner files left after recovery: %v", rec.names())
	}
	if len(rec.cleaned) > 0 {
		t.Fatalf("the held cleaner started (%v): the back-off did not keep it idle", rec.cleaned)
	}
	if int64(len(got)) >= end || rec.logs >= before.logs {
		t.Fatalf("after a kill past the commit point node %d serves %d of %d records in %d segments: the swap was not completed",
			f, len(got), end, rec.logs)
	}
	t.Logf("node %d recovered %d records in %d segments, end offset %d", f, len(got), rec.logs, end)

	// 3. With its cleaner free it completes a pass: one record per key.
	p.kill()
	p = restartNode(t, c, f, sluiceBin, "", cleanerBackoffArgs(100)...)
	p.waitCleaned(topic + "-0")
	got = readAsLeader(t, c, f, topic, end)
	checkCleanedLog(t, acked, latest, got)
	if len(got) != len(latest) {
		t.Fatalf("after a pass without failpoint node %d serves %d records, want one per key: %d", f, len(got), len(latest))
	}
	if off := p.produceTo(topic, 0, "after-clean", "after-clean"); off != end {
		t.Fatalf("produce after the clean landed at %d, want %d", off, end)
	}
	t.Logf("node %d after a pass: %d records, one per key", f, len(got))
}

// restartNode starts node id of c again (killing what runs) with binary
// bin, its arguments plus extra, and SLUICE_FAILPOINT=failpoint, and waits
// until it is ready.
func restartNode(t *testing.T, c *clusterProcs, id int32, bin, failpoint string, extra ...string) *sluiceProc {
	t.Helper()
	old := c.procs[id-1]
	old.kill()
	cmd := exec.Command(bin, append(slices.Clone(c.args[id-1]), extra...)...)
	cmd.Env = append(os.Environ(), "SLUICE_FAILPOINT="+failpoint)
	p := spawnCmd(t, old.addr, t.TempDir(), cmd)
	p.waitReady()
	c.procs[id-1] = p
	return p
}

// nodeLogDir is node id's log.dirs.
func nodeLogDir(t *testing.T, c *clusterProcs, id int32) string {
	t.Helper()
	for _, a := range c.args[id-1] {
		if dir, ok := strings.CutPrefix(a, "log.dirs="); ok {
			return dir
		}
	}
	t.Fatalf("node %d has no log.dirs", id)
	return ""
}

// partitionState is partition 0 of topic as the cluster's metadata has it.
func partitionState(t *testing.T, adm *kadm.Client, topic string) kadm.PartitionDetail {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	td, err := adm.ListTopics(ctx, topic)
	if err == nil {
		err = td.Error()
	}
	if err != nil {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	return td[topic].Partitions[0]
}

// readAsLeader waits for node id to be back in the ISR of partition 0 of
// topic, elects it leader (it is the preferred replica), and reads the
// partition from it up to end. Every node must agree on the leader and
// its epoch before and after the read: a node that still thought itself
// leader could answer the consumer's fetches from its own copy (and a
// node just restarted can answer Metadata from an image still catching
// up).
func readAsLeader(t *testing.T, c *clusterProcs, id int32, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl := c.client()
	var led kmsg.MetadataResponseTopicPartition
	waitFor(t, fmt.Sprintf("node %d leading %s in every node's metadata", id, topic), func() error {
		var err error
		if led, err = agreedPartition(cl, c, topic); err != nil {
			return err
		}
		if led.Leader == id {
			return nil
		}
		if !slices.Contains(led.ISR, id) {
			return fmt.Errorf("node %d not in the ISR %v", id, led.ISR)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if _, err := kadm.NewClient(cl).ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}}); err != nil {
			return err
		}
		return fmt.Errorf("leader %d at epoch %d before a preferred election", led.Leader, led.LeaderEpoch)
	})
	p := c.procs[id-1]
	p.waitEndOffset(topic, end)
	got := p.consumeAll(topic, map[int32]int64{0: end})[0]
	if now, err := agreedPartition(cl, c, topic); err != nil || now.Leader != id || now.LeaderEpoch != led.LeaderEpoch {
		t.Fatalf("leadership moved while node %d was read at epoch %d: %+v (%v)", id, led.LeaderEpoch, now, err)
	}
	return got
}

// agreedPartition asks every node of c for partition 0 of topic in its own
// metadata and returns it when all agree on leader, leader epoch and ISR.
func agreedPartition(cl *kgo.Client, c *clusterProcs, topic string) (kmsg.MetadataResponseTopicPartition, error) {
	var first kmsg.MetadataResponseTopicPartition
	for i := range c.procs {
		part, err := partitionSeenBy(cl, int32(i+1), topic)
		if err != nil {
			return first, fmt.Errorf("node %d: %w", i+1, err)
		}
		slices.Sort(part.ISR)
		if i == 0 {
			first = part
		} else if part.Leader != first.Leader || part.LeaderEpoch != first.LeaderEpoch || !slices.Equal(part.ISR, first.ISR) {
			return first, fmt.Errorf("node 1 sees leader %d epoch %d ISR %v, node %d leader %d epoch %d ISR %v",
				first.Leader, first.LeaderEpoch, first.ISR, i+1, part.Leader, part.LeaderEpoch, part.ISR)
		}
	}
	return first, nil
}

// partitionSeenBy asks node for partition 0 of topic in its own metadata.
func partitionSeenBy(cl *kgo.Client, node int32, topic string) (kmsg.MetadataResponseTopicPartition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := cl.Broker(int(node)).Request(ctx, req)
	if err != nil {
		return kmsg.MetadataResponseTopicPartition{}, err
	}
	for _, tp := range resp.(*kmsg.MetadataResponse).Topics {
		for _, part := range tp.Partitions {
			if part.Partition == 0 {
				return part, kerr.ErrorForCode(part.ErrorCode)
			}
		}
	}
	return kmsg.MetadataResponseTopicPartition{}, fmt.Errorf("no partition 0 of %s", topic)
}
