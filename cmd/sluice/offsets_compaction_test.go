package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/groups"
)

// Issue 17, acceptance 2: a group commits offsets 100 times a second
// (kadm CommitOffsets, four partitions a commit, one commit at a time) on
// three sluice processes whose __consumer_offsets rolls a segment every
// 16 KiB (offsets.topic.segment.bytes). The log cleaner, running in the
// processes on its own 15 s cadence (log.cleaner.backoff.ms), keeps the
// topic bounded: the group's partition, the size of its .log files summed
// over its three replicas, is sampled every 2 s and must stay, over the
// second half of the run, below a bound that does not grow with the run's
// length:
//
//	3 replicas × (4 segments + the commits of two cleaner back-offs, 30 s)
//
// where a commit is counted at the least its batch can take on disk (a
// batch header and, per partition, its key, a value without metadata and
// the record framing). Uncleaned, the partition would hold every commit;
// the test prints both figures and their ratio (about 1.2 in the short
// form, about 18 over ten minutes), and requires the processes to have
// logged cleaning the group's partition. Every node is then stopped with
// SIGTERM and started again, and then killed with SIGKILL and started
// again: each time FetchOffsets must give the last commit, and finally a
// consumer in the group must start exactly there.
//
// The short form (40 s) runs in CI; the acceptance run is ten minutes:
//
//	SLUICE_OFFSETS_SOAK=10m go test ./cmd/sluice -run TestOffsetsTopicStaysBoundedAndGroupResumes -v -timeout 30m
func TestOffsetsTopicStaysBoundedAndGroupResumes(t *testing.T) {
	run := 40 * time.Second
	if spec := os.Getenv("SLUICE_OFFSETS_SOAK"); spec != "" {
		d, err := time.ParseDuration(spec)
		if err != nil || d <= 0 {
			t.Fatalf("SLUICE_OFFSETS_SOAK=%q: want a positive Go duration", spec)
		}
		run = d
	}
	const (
		topic        = "events"
		group        = "committer"
		partitions   = 4
		perPartition = 1000
		segmentBytes = 16384
		offsetsParts = 3
		rate         = 100 // commits a second
	)
	c := startClusterProcs(t, 3,
		"--override", "offsets.topic.segment.bytes="+strconv.Itoa(segmentBytes),
		"--override", "offsets.topic.num.partitions="+strconv.Itoa(offsetsParts))
	ctx, cancel := context.WithTimeout(context.Background(), run+10*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(100 * time.Millisecond)
	adm := kadm.NewClient(c.client(fast))
	if resp, err := adm.CreateTopic(ctx, partitions, 3, nil, topic); err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	prod := c.client(fast, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := 0; i < perPartition; i += 100 {
		var rs []*kgo.Record
		for p := range int32(partitions) {
			for j := i; j < i+100; j++ {
				rs = append(rs, &kgo.Record{Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, j)})
			}
		}
		if err := prod.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// The group's partition of __consumer_offsets, in every node's log
	// directory.
	var partDirs []string
	for _, args := range c.args {
		for _, a := range args {
			if dir, ok := strings.CutPrefix(a, "log.dirs="); ok {
				partDirs = append(partDirs, filepath.Join(dir, fmt.Sprintf("__consumer_offsets-%d", groups.PartitionFor(group, offsetsParts))))
			}
		}
	}
	size := func() int64 {
		var n int64
		for _, dir := range partDirs {
			files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, f := range files {
				if st, err := os.Stat(f); err == nil {
					n += st.Size()
				}
			}
		}
		return n
	}

	// Commit i puts partition p at (i + 250p) mod 1000: every commit
	// changes every key, and the last one is known.
	commitOf := func(i int) kadm.Offsets {
		os := kadm.Offsets{}
		for p := range int32(partitions) {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: int64((i + 250*int(p)) % perPartition), LeaderEpoch: -1})
		}
		return os
	}
	committer := kadm.NewClient(c.client(fast))
	var (
		commits  int // acknowledged
		failures int
		last     kadm.Offsets
	)
	type sample struct {
		at      time.Duration
		commits int
		bytes   int64
	}
	var samples []sample
	const every = 2 * time.Second
	// Commit i is due at i/rate seconds; a commit that comes back late
	// is followed by the next at once, so the run catches up.
	start := time.Now()
	nextSample := start
	for i := 0; time.Since(start) < run; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
		os := commitOf(i)
		resp, err := committer.CommitOffsets(ctx, group, os)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			if failures++; failures <= 10 {
				t.Logf("commit %d: %v", i, err)
			}
			continue
		}
		commits++
		last = os
		if now := time.Now(); !now.Before(nextSample) {
			samples = append(samples, sample{now.Sub(start).Round(time.Second), commits, size()})
			nextSample = nextSample.Add(every)
		}
	}
	elapsed := time.Since(start)
	samples = append(samples, sample{elapsed.Round(time.Second), commits, size()})
	if commits == 0 {
		t.Fatal("no commit acknowledged")
	}

	// The least one commit takes in the log: a v2 batch header (61 bytes)
	// and, per partition, a record of at least 7 bytes of framing, an
	// OffsetCommit key (version, group, topic, partition) and a value of
	// version, offset, empty metadata and commit timestamp.
	perCommit := int64(61 + partitions*(7+(2+2+len(group)+2+len(topic)+4)+(2+8+2+8)))
	uncleaned := 3 * int64(commits) * perCommit
	perSecond := float64(commits) / elapsed.Seconds()
	bound := 3 * (4*segmentBytes + int64(2*cleanerBackoff.Seconds()*perSecond)*perCommit)
	// Every sample is checked, about 25 are printed, and the peak.
	step := max(1, len(samples)/25)
	peak := samples[0]
	for i, s := range samples {
		if s.bytes > peak.bytes {
			peak = s
		}
		if i%step == 0 || i == len(samples)-1 {
			t.Logf("at %6s: %6d commits, group's __consumer_offsets partition %8d bytes on disk (3 replicas)", s.at, s.commits, s.bytes)
		}
	}
	t.Logf("peak: %d bytes at %s", peak.bytes, peak.at)
	end := samples[len(samples)-1].bytes
	t.Logf("%d commits in %s (%.1f/s, %d failed); bound %d bytes, uncleaned at least %d bytes (%.1f× the bound); at the end %d bytes (%.1f× below the bound)",
		commits, elapsed.Round(time.Second), perSecond, failures, bound, uncleaned, float64(uncleaned)/float64(bound), end, float64(bound)/float64(max(end, 1)))
	for _, s := range samples[len(samples)/2:] {
		if s.bytes > bound {
			t.Errorf("at %s the group's partition held %d bytes, above the bound %d", s.at, s.bytes, bound)
		}
	}
	cleaned := 0
	partition := fmt.Sprintf("partition=__consumer_offsets-%d ", groups.PartitionFor(group, offsetsParts))
	for _, p := range c.procs {
		cleaned += len(regexp.MustCompile(`msg="log cleaned" `+regexp.QuoteMeta(partition)).FindAllString(p.stderr.String(), -1))
	}
	t.Logf("the group's partition was cleaned %d times over its replicas", cleaned)
	if cleaned == 0 {
		t.Error("no replica cleaned the group's partition of __consumer_offsets")
	}

	want := map[int32]int64{}
	for _, o := range last[topic] {
		want[o.Partition] = o.At
	}
	checkCommitted := func(after string) {
		t.Helper()
		waitFor(t, "the last commit after "+after, func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs()...))
			if err != nil {
				return err
			}
			defer cl.Close()
			got, err := committedOffsetsOf(ctx, kadm.NewClient(cl), group, topic)
			if err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("committed %v, last commit %v", got, want)
			}
			return nil
		})
		t.Logf("after %s: committed offsets %v, the last commit", after, want)
	}
	checkCommitted("the run")

	// Every node stopped cleanly, then every node started again.
	done := make(chan int, len(c.procs))
	for _, p := range c.procs {
		go func() { done <- p.terminateQuietly() }()
	}
	for range c.procs {
		if code := <-done; code != 0 {
			t.Logf("a node exited with code %d after SIGTERM", code)
		}
	}
	c.restartAll()
	checkCommitted("a clean restart of every node")

	// Every node killed, then every node started again.
	for _, p := range c.procs {
		p.kill()
	}
	c.restartAll()
	checkCommitted("a kill -9 and restart of every node")

	// A consumer in the group starts exactly at the last commit.
	cons := c.client(fast, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	first := map[int32]int64{}
	for len(first) < partitions {
		fs := cons.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("consumer in the group: first offsets %v, still waiting: %v", first, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	if fmt.Sprint(first) != fmt.Sprint(want) {
		t.Fatalf("the group's consumer started at %v, the last commit was %v", first, want)
	}
	t.Logf("a consumer in the group resumed at %v", first)
}

// cleanerBackoff is log.cleaner.backoff.ms at its default, the cleaner's
// wait when no log needs cleaning.
const cleanerBackoff = 15 * time.Second

// committedOffsetsOf fetches group's committed offsets of topic.
func committedOffsetsOf(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	os, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	if err := os.Error(); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for p, o := range os[topic] {
		out[p] = o.At
	}
	return out, nil
}

// terminateQuietly sends SIGTERM and waits for the process to exit,
// killing it if it has not within waitTimeout; it returns the exit code.
// Unlike terminate it may run on any goroutine.
func (p *sluiceProc) terminateQuietly() int {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(waitTimeout):
		p.kill()
	}
	return p.cmd.ProcessState.ExitCode()
}

// restartAll starts every node again, together (the voters need each
// other to form a quorum), with its data directory and ports, after all
// were stopped or killed, and waits until each is ready.
func (c *clusterProcs) restartAll() {
	c.t.Helper()
	for i, old := range c.procs {
		old.kill()
		c.procs[i] = spawnProc(c.t, old.addr, c.t.TempDir(), c.args[i]...)
	}
	for _, p := range c.procs {
		p.waitReady()
	}
}
