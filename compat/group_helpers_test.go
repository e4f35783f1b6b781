package compat

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Helpers shared by the consumer group rows (java_consumer_groups_test.go,
// kcat_group_test.go, python_group_test.go): a client run in the background
// while the row watches its group, a parser for kafka-consumer-groups.sh's
// tables, and waits on the group's state as DescribeGroups reports it.

// groupWaitLimit bounds every wait for a group to reach a state: joins and
// rebalances of a few members take seconds (the Java consumer heartbeats
// every 3 s, the broker waits group.initial.rebalance.delay.ms for a new
// group).
const groupWaitLimit = 60 * time.Second

// lockedBuffer is a bytes.Buffer a process writes while the row reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// bgProcess is a client the row runs in the background: a consumer that
// stays in its group until the row stops it.
type bgProcess struct {
	name    string
	args    []string
	cmd     *exec.Cmd
	stdout  lockedBuffer
	stderr  lockedBuffer
	start   time.Time
	logPath string
	exited  chan struct{} // closed once the process has exited
	waitErr error         // read only after exited is closed
	// signalled is set once SIGTERM was sent, early if the process had
	// exited before, stopped once stop has waited for it.
	signalled bool
	early     error
	stopped   bool
}

// startBackground starts program with args. Its output is kept in memory
// for the row and written to the row's directory as bg-<name>.log when it
// stops. The caller must call stop.
func startBackground(env *rowEnv, name, program string, args ...string) (*bgProcess, error) {
	p := &bgProcess{
		name:    name,
		args:    args,
		start:   time.Now(),
		logPath: filepath.Join(env.dir, "bg-"+name+".log"),
		exited:  make(chan struct{}),
	}
	p.cmd = exec.Command(program, args...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	bindToParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	env.t.Logf("started %s in the background (%s)", name, p.logPath)
	return p, nil
}

// running returns an error if the process has exited.
func (p *bgProcess) running() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited early: %v: %s", p.name, p.waitErr, toolProblem(p.stderr.String()))
	default:
		return nil
	}
}

// stopBackground stops every process, all of them signalled at once so that they
// close their consumers together, and returns the first error.
func stopBackground(ps []*bgProcess) error {
	for _, p := range ps {
		p.terminate()
	}
	var first error
	for _, p := range ps {
		if err := p.stop(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// terminate asks the process to exit with SIGTERM (the Java tools and kcat
// then close their consumer, which commits and leaves the group),
// remembering whether it had already exited.
func (p *bgProcess) terminate() {
	if p.signalled {
		return
	}
	p.signalled = true
	p.early = p.running()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
}

// stop terminates the process, kills it if it has not exited within 20 s,
// and writes its log. It returns an error if the process had exited before
// it was asked to, had to be killed, or exited with a status other than the
// one SIGTERM gives; stopping twice returns nil.
func (p *bgProcess) stop() error {
	if p.stopped {
		return nil
	}
	p.stopped = true
	p.terminate()
	var err error
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		err = fmt.Errorf("%s did not exit within 20s of SIGTERM; killed", p.name)
	}
	if err == nil && p.early != nil {
		err = p.early
	}
	if err == nil && p.waitErr != nil && !exitedBySIGTERM(p.waitErr) {
		err = fmt.Errorf("%s: %v after SIGTERM: %s", p.name, p.waitErr, toolProblem(p.stderr.String()))
	}
	var log bytes.Buffer
	fmt.Fprintf(&log, "$ %s %s\n# exit: %v, %.1fs\n--- stdout\n%s\n--- stderr\n%s",
		p.name, strings.Join(p.args, " "), p.waitErr, time.Since(p.start).Seconds(), p.stdout.String(), p.stderr.String())
	_ = os.WriteFile(p.logPath, log.Bytes(), 0o644)
	return err
}

// exitedBySIGTERM reports whether err is the exit of a process that ended on
// SIGTERM: killed by it, or exiting with status 128+15 as the JVM does after
// running its shutdown hooks. (kcat catches SIGTERM and exits 0.)
func exitedBySIGTERM(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		return true
	}
	return ee.ExitCode() == 128+int(syscall.SIGTERM)
}

// groupTableRow is one line of a kafka-consumer-groups.sh table, keyed by
// the table's column names.
type groupTableRow map[string]string

// parseGroupTables returns the rows of the tables kafka-consumer-groups.sh
// prints for --describe and --reset-offsets: a header line whose first
// column is GROUP, then one line per row until a blank line. Columns are
// separated by spaces and no value holds one. Lines outside a table (such
// as "Consumer group 'g' has no active members.") are left out.
func parseGroupTables(out string) ([]groupTableRow, error) {
	var rows []groupTableRow
	var header []string
	for n, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			header = nil
		case fields[0] == "GROUP":
			header = fields
		case header != nil:
			if len(fields) != len(header) {
				return nil, fmt.Errorf("line %d has %d columns under a header of %d (%s): %q",
					n+1, len(fields), len(header), strings.Join(header, " "), line)
			}
			r := groupTableRow{}
			for i, h := range header {
				r[h] = fields[i]
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// partitionColumn reads a table's PARTITION column; the tool prints "-" for
// a member without partitions, which is an error here.
func partitionColumn(r groupTableRow) (int32, error) {
	p, err := strconv.ParseInt(r["PARTITION"], 10, 32)
	if err != nil {
		return 0, fmt.Errorf("PARTITION %q in row %v", r["PARTITION"], r)
	}
	return int32(p), nil
}

// describeGroup returns the group as DescribeGroups answers it.
func describeGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedGroup, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return kadm.DescribedGroup{}, fmt.Errorf("kadm DescribeGroups: %w", err)
	}
	g, ok := described[group]
	if !ok {
		return g, fmt.Errorf("kadm DescribeGroups: no answer for group %s", group)
	}
	if g.Err != nil {
		return g, fmt.Errorf("kadm DescribeGroups %s: %w", group, g.Err)
	}
	return g, nil
}

// memberPartitions returns the partitions of topic assigned to member, sorted.
func memberPartitions(m kadm.DescribedGroupMember, topic string) []int32 {
	a, ok := m.Assigned.AsConsumer()
	if !ok {
		return nil
	}
	var ps []int32
	for _, t := range a.Topics {
		if t.Topic == topic {
			ps = append(ps, t.Partitions...)
		}
	}
	slices.Sort(ps)
	return ps
}

// waitStableGroup polls DescribeGroups until group is Stable with members
// members that between them are assigned every one of topic's partitions,
// each to one member, and returns that description.
func waitStableGroup(ctx context.Context, adm *kadm.Client, group, topic string, members int, partitions int32) (kadm.DescribedGroup, error) {
	var g kadm.DescribedGroup
	err := pollUntil(ctx, groupWaitLimit, func() error {
		var err error
		if g, err = describeGroup(ctx, adm, group); err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != members {
			return fmt.Errorf("group %s is %s with %d members, want Stable with %d", group, g.State, len(g.Members), members)
		}
		seen := map[int32]bool{}
		for _, m := range g.Members {
			for _, p := range memberPartitions(m, topic) {
				if seen[p] {
					return fmt.Errorf("partition %d is assigned to two members of %s", p, group)
				}
				seen[p] = true
			}
		}
		if len(seen) != int(partitions) {
			return fmt.Errorf("group %s has %d of %s's %d partitions assigned", group, len(seen), topic, partitions)
		}
		return nil
	})
	return g, err
}

// waitEmptyGroup polls DescribeGroups until group is Empty: every member
// has left and its offsets remain.
func waitEmptyGroup(ctx context.Context, adm *kadm.Client, group string) error {
	return pollUntil(ctx, groupWaitLimit, func() error {
		g, err := describeGroup(ctx, adm, group)
		if err != nil {
			return err
		}
		if g.State != "Empty" || len(g.Members) != 0 {
			return fmt.Errorf("group %s is %s with %d members, want Empty", group, g.State, len(g.Members))
		}
		return nil
	})
}

// committedOffsets returns group's committed offsets of topic's partitions
// as OffsetFetch answers them; a partition without one is left out.
func committedOffsets(ctx context.Context, adm *kadm.Client, group, topic string) (map[int32]int64, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kadm FetchOffsets %s: %w", group, err)
	}
	got := map[int32]int64{}
	for p, o := range resp[topic] {
		if o.Err != nil {
			return nil, fmt.Errorf("kadm FetchOffsets %s %s-%d: %w", group, topic, p, o.Err)
		}
		if o.At >= 0 {
			got[p] = o.At
		}
	}
	return got, nil
}

// wantCommitted checks group's committed offsets of topic against want.
func wantCommitted(ctx context.Context, adm *kadm.Client, group, topic string, want map[int32]int64) error {
	got, err := committedOffsets(ctx, adm, group, topic)
	if err != nil {
		return err
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("group %s has committed %v for %s, want %v", group, got, topic, want)
	}
	return nil
}

// stopOneByOne stops the group's consumers one at a time, waiting after
// each for the others to rebalance into a Stable group that again holds
// every partition of topic, and at the end for the group to be Empty. A
// consumer commits what it read when it closes, so the partitions that move
// to the others must go on from there: nothing is read twice.
func stopOneByOne(ctx context.Context, adm *kadm.Client, group, topic string, partitions int32, consumers []*bgProcess) error {
	for i, c := range consumers {
		if err := c.stop(); err != nil {
			return err
		}
		if left := len(consumers) - i - 1; left > 0 {
			if _, err := waitStableGroup(ctx, adm, group, topic, left, partitions); err != nil {
				return fmt.Errorf("after %s stopped: %w", c.name, err)
			}
		}
	}
	return waitEmptyGroup(ctx, adm, group)
}

// waitStableConsumers is waitStableGroup for a group of background
// consumers: when the group does not settle, a consumer that has exited
// explains why better than the group's state does.
func waitStableConsumers(ctx context.Context, adm *kadm.Client, group, topic string, partitions int32, consumers []*bgProcess) (kadm.DescribedGroup, error) {
	g, err := waitStableGroup(ctx, adm, group, topic, len(consumers), partitions)
	if err != nil {
		for _, c := range consumers {
			if cerr := c.running(); cerr != nil {
				return g, cerr
			}
		}
	}
	return g, err
}

// produceToEachPartition produces perPartition records to each of topic's
// partitions, record i of partition p holding value(p, i).
func produceToEachPartition(ctx context.Context, cl *kgo.Client, topic string, partitions int32, perPartition int64, value func(p int32, i int64) string) error {
	for p := range partitions {
		recs := make([]*kgo.Record, 0, perPartition)
		for i := range perPartition {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(value(p, i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("franz-go produce to %s-%d: %w", topic, p, err)
		}
	}
	return nil
}

// printedLines returns the lines a background consumer has printed so far.
func printedLines(c *bgProcess) []string {
	out := strings.TrimRight(c.stdout.String(), "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// waitPrinted polls until the consumers have printed total lines between
// them; one that exits fails the wait. who names the consumers in errors.
func waitPrinted(ctx context.Context, consumers []*bgProcess, total int, who string) error {
	return pollUntil(ctx, groupWaitLimit, func() error {
		n := 0
		for _, c := range consumers {
			if err := c.running(); err != nil {
				return err
			}
			n += len(printedLines(c))
		}
		if n < total {
			return fmt.Errorf("the %s consumers printed %d of %d records", who, n, total)
		}
		return nil
	})
}

// printedRecord is one record as a consumer printed it.
type printedRecord struct {
	partition int32
	offset    int64
	value     string
}

// checkPrintedOnce reads every line the consumers printed with parse (ok
// false for a line not in the printed format, which format names) and
// checks that each record holds value(partition, offset) and that the
// consumers printed total distinct records, none twice. It returns the
// partitions each consumer printed as partitionBlock names them, sorted.
func checkPrintedOnce(consumers []*bgProcess, total int, who, format string,
	parse func(line string) (printedRecord, bool), value func(p int32, o int64) string) ([]string, error) {
	seen := map[string]string{}
	var blocks []string
	for _, c := range consumers {
		var ps []int32
		for _, l := range printedLines(c) {
			r, ok := parse(l)
			if !ok {
				return nil, fmt.Errorf("%s printed %q, not %s", c.name, l, format)
			}
			if want := value(r.partition, r.offset); r.value != want {
				return nil, fmt.Errorf("%s printed %q for partition %d offset %d, want %q", c.name, r.value, r.partition, r.offset, want)
			}
			if other, ok := seen[r.value]; ok {
				return nil, fmt.Errorf("%s printed %s, which %s printed too", c.name, r.value, other)
			}
			seen[r.value] = c.name
			if !slices.Contains(ps, r.partition) {
				ps = append(ps, r.partition)
			}
		}
		slices.Sort(ps)
		blocks = append(blocks, partitionBlock(ps))
	}
	if len(seen) != total {
		return nil, fmt.Errorf("the %s consumers printed %d distinct records, want %d", who, len(seen), total)
	}
	slices.Sort(blocks)
	return blocks, nil
}

// everyPartitionAt returns the offset map in which each of partitions
// partitions is at offset.
func everyPartitionAt(partitions int32, offset int64) map[int32]int64 {
	m := map[int32]int64{}
	for p := range partitions {
		m[p] = offset
	}
	return m
}
