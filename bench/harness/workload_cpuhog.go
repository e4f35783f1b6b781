package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workload 13's topics: the one produced to and watched beside the hog,
// and the one-partition topic of its failovers.
const (
	hogTopic         = "bench-cpuhog"
	hogFailoverTopic = "bench-cpuhog-failover"
)

// hogPollEvery is how often workload 13 asks a node for the metadata it
// compares.
const hogPollEvery = 250 * time.Millisecond

// cpuHog is workload 13 (issue 22): CPU saturation beside the cluster.
// Twice as many busy processes as the machine has cores (cpuHog's
// processes, shell loops that never sleep, at the brokers' priority) run
// beside the three nodes while a producer sends -hog-rate records a
// second (acks=all, no linger, timed from each record's intended send
// time as in workload 2) to a fresh topic of benchPartitions partitions
// at RF 3 for -hog-time. No broker dies meanwhile, so every fencing is a
// false one: the harness asks the nodes in turn for the topic's metadata
// every hogPollEvery and counts, between two answers of the same node,
// each broker that left the broker list (fenced), each partition whose
// ISR lost a member and each partition whose leader changed
// (countFencings); for sluice it also counts the controller's "fenced
// broker" lines (not controlled shutdowns) in the nodes' logs, which a
// fencing shorter than a poll still leaves. The topic is fresh and its
// leaders the preferred ones, so no automatic leader rebalance moves them.
// The figure is the sum. Then, with the hog still running, workload 5's
// kill -9 failover on a topic of its own, -failover-runs times; the
// median is the third figure.
func (r *runner) cpuHog(ctx context.Context) error {
	s := r.cfg.stress
	if err := createTopic(ctx, r.c, hogTopic, benchPartitions, benchRF, 2*time.Minute); err != nil {
		return err
	}
	if err := createTopic(ctx, r.c, hogFailoverTopic, 1, benchRF, 2*time.Minute); err != nil {
		return err
	}
	hog, err := startHog(2 * runtime.NumCPU())
	if err != nil {
		return err
	}
	defer hog.stop()
	r.logf("CPU hog: %d busy processes", len(hog))

	logStart := r.logSizes()
	pctx, stopPolling := context.WithCancel(ctx)
	var counts fencingCounts
	var pollErr error
	var polled sync.WaitGroup
	polled.Go(func() { counts, pollErr = r.watchFencings(pctx, hogTopic) })
	samples, err := r.produceAtRate(ctx, hogTopic, s.hogRate, s.hogTime)
	stopPolling()
	polled.Wait()
	if err != nil {
		return err
	}
	if pollErr != nil {
		return fmt.Errorf("metadata polling: %w", pollErr)
	}
	logFenced := -1
	if r.sys.name() != "kafka" {
		if logFenced, err = r.countLogFencings(logStart); err != nil {
			return err
		}
	}
	fencings := counts.total()
	if logFenced > counts.fenced {
		fencings += logFenced - counts.fenced
	}
	slices.Sort(samples)
	r.set("hog_fencings", float64(fencings))
	r.set("hog_p99", ms(percentile(samples, 0.99)))
	logText := ""
	if logFenced >= 0 {
		logText = fmt.Sprintf("; %d \"fenced broker\" lines in the logs", logFenced)
	}
	r.res.note("%s workload 13: %d busy processes; over %s, %d metadata answers: %d brokers fenced, %d ISR shrinks, %d leader changes%s; %d records, p50 %.1f ms, p99.9 %.1f ms",
		r.name(), len(hog), s.hogTime, counts.polls, counts.fenced, counts.isrShrinks, counts.leaderChanges, logText,
		len(samples), ms(percentile(samples, 0.5)), ms(percentile(samples, 0.999)))

	var took []time.Duration
	for run := range r.cfg.failoverRuns {
		d, err := r.failoverOnce(ctx, hogFailoverTopic)
		if err != nil {
			return fmt.Errorf("failover run %d under the hog: %w", run+1, err)
		}
		r.logf("failover run %d under the hog: %s", run+1, d.Round(time.Millisecond))
		took = append(took, d)
	}
	r.set("hog_failover_ms", ms(median(took)))
	return nil
}

// hogProcs are the busy processes of a CPU hog.
type hogProcs []*exec.Cmd

// startHog starts n processes that spin until killed (or the harness
// dies: the kernel kills them with it).
func startHog(n int) (hogProcs, error) {
	var h hogProcs
	for range n {
		cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			h.stop()
			return nil, fmt.Errorf("CPU hog: %w", err)
		}
		h = append(h, cmd)
	}
	return h, nil
}

// stop kills the hog's processes and waits for them.
func (h hogProcs) stop() {
	for _, cmd := range h {
		cmd.Process.Kill()
		cmd.Wait()
	}
}

// fencingCounts are the changes countFencings finds between metadata
// answers while no broker died.
type fencingCounts struct {
	polls         int // answers compared
	fenced        int // a broker left the broker list
	isrShrinks    int // a partition's ISR lost a member
	leaderChanges int // a partition's leader changed
}

// total is every change counted.
func (c fencingCounts) total() int { return c.fenced + c.isrShrinks + c.leaderChanges }

// add sums two counts.
func (c fencingCounts) add(d fencingCounts) fencingCounts {
	return fencingCounts{c.polls + d.polls, c.fenced + d.fenced, c.isrShrinks + d.isrShrinks, c.leaderChanges + d.leaderChanges}
}

// clusterView is what one Metadata answer says of the brokers and of the
// watched topic's partitions.
type clusterView struct {
	brokers    []int32
	leaders    map[int32]int32   // partition → leader
	isrs       map[int32][]int32 // partition → ISR
	partitions int
}

// viewOf reads a clusterView from a Metadata answer.
func viewOf(resp *kmsg.MetadataResponse) clusterView {
	v := clusterView{leaders: map[int32]int32{}, isrs: map[int32][]int32{}}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			v.partitions++
			v.leaders[p.Partition] = p.Leader
			v.isrs[p.Partition] = p.ISR
		}
	}
	return v
}

// countFencings compares two answers of the same node, prev the earlier:
// brokers gone from the list, ISRs that lost a member, leaders that
// changed. A partition missing from either answer counts nothing, and
// one that had no leader (-1: a node that had not yet learnt of the
// election when the topic was new) getting one is no change.
func countFencings(prev, cur clusterView) fencingCounts {
	c := fencingCounts{polls: 1}
	for _, b := range prev.brokers {
		if !slices.Contains(cur.brokers, b) {
			c.fenced++
		}
	}
	for p, isr := range prev.isrs {
		now, ok := cur.isrs[p]
		if !ok {
			continue
		}
		if slices.ContainsFunc(isr, func(id int32) bool { return !slices.Contains(now, id) }) {
			c.isrShrinks++
		}
		if prev.leaders[p] >= 0 && prev.leaders[p] != cur.leaders[p] {
			c.leaderChanges++
		}
	}
	return c
}

// watchFencings asks the running nodes in turn for topic's metadata every
// hogPollEvery until ctx ends, and sums countFencings over each node's
// consecutive answers. A node that does not answer in time (it is
// starved too) is skipped for that turn; only a ctx that ends stops it.
func (r *runner) watchFencings(ctx context.Context, topic string) (fencingCounts, error) {
	var sum fencingCounts
	last := map[int32]clusterView{}
	nodes := r.c.others(-1)
	if len(nodes) == 0 {
		return sum, errors.New("no node runs")
	}
	for i := 0; ; i++ {
		nd := nodes[i%len(nodes)]
		resp, err := metadataFrom(ctx, r.c.opts, nd.addr, topic)
		if ctx.Err() != nil {
			return sum, nil
		}
		if err == nil {
			v := viewOf(resp)
			if prev, ok := last[nd.id]; ok && v.partitions > 0 {
				sum = sum.add(countFencings(prev, v))
			}
			if v.partitions > 0 {
				last[nd.id] = v
			}
		}
		if sleep(ctx, hogPollEvery) != nil {
			return sum, nil
		}
	}
}

// logSizes returns each running node's log size now, where
// countLogFencings starts reading.
func (r *runner) logSizes() map[int32]int64 {
	sizes := map[int32]int64{}
	for _, nd := range r.c.nodes {
		if nd.proc == nil {
			continue
		}
		if fi, err := os.Stat(nd.proc.logPath); err == nil {
			sizes[nd.id] = fi.Size()
		}
	}
	return sizes
}

// countLogFencings counts the lines of sluice's controller fencing a
// broker whose session lapsed (msg="fenced broker" with
// controlled=false) in every node's log after the offsets from.
func (r *runner) countLogFencings(from map[int32]int64) (int, error) {
	n := 0
	for _, nd := range r.c.nodes {
		if nd.proc == nil {
			continue
		}
		f, err := os.Open(nd.proc.logPath)
		if err != nil {
			return 0, err
		}
		_, err = f.Seek(from[nd.id], io.SeekStart)
		if err == nil {
			n += countFencedLines(f)
		}
		f.Close()
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// countFencedLines counts sluice's log lines of a broker fenced for a
// lapsed session (slog's text format).
func countFencedLines(rd io.Reader) int {
	n := 0
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, `msg="fenced broker"`) && strings.Contains(line, "controlled=false") {
			n++
		}
	}
	return n
}

// produceAtRate sends rate records a second to topic for d (acks=all, no
// linger), each timed from the moment the schedule meant it to be sent
// to its acknowledgement, as workload 2 does, and returns the times.
func (r *runner) produceAtRate(ctx context.Context, topic string, rate float64, d time.Duration) ([]time.Duration, error) {
	total := int(rate * d.Seconds())
	if total < 1 {
		return nil, fmt.Errorf("rate %.1f records/s for %s is no record", rate, d)
	}
	cl, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(total),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return pacedProduce(ctx, cl, r.values, total, rate)
}
