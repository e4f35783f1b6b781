package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Workload 14 (issue 17, acceptance 5; 9 before issue 22 numbered its
// workloads 9 to 13): the log cleaner. Both systems get
// the same records, in the same order, into a compacted topic of one
// partition at RF 1 on node 1 — one cleaner on one node works, so the process
// measured is the one cleaning; at RF 3 each replica cleans its own copy
// and three cleaners would share the cores. The topic has small segments
// (cleanSegmentBytes) so that many roll, min.cleanable.dirty.ratio 0.01,
// and min.compaction.lag.ms of an hour while the records are produced, so
// the cleaner leaves them alone; then the lag is set to 0
// (IncrementalAlterConfigs) and the cleaner, at its next look (within
// log.cleaner.backoff.ms, 15 s on both), cleans everything below the
// active segment. Every broker setting is its default: one cleaner
// thread, a 128 MiB key map, no I/O throttle.
//
// The records: -clean-mib MiB worth of -record-size records (values from
// the harness's pool of random bytes, so no codec shrinks them), keys
// drawn uniformly from -clean-keys keys by a seeded generator, and one
// record in ten a tombstone (a null value). Every key is overwritten many
// times; delete.retention.ms is the default day, so the first clean keeps
// the tombstones, as Kafka does.
//
// The figures, from the broker's own account of each pass in its log
// (cleanlog.go): MiB/s cleaned is the bytes of the segments the passes
// rewrote over the passes' wall time (building the key map and rewriting
// — Kafka's "MB of log processed in … seconds"). Peak RSS is the cleaning
// node's VmHWM over the cleaning alone: the harness resets it (writing 5
// to /proc/<pid>/clear_refs) just before the lag changes, and also samples
// VmRSS every 50 ms in case the kernel refuses the reset. Then a consumer
// reads the partition from the start and the harness checks it against
// the records it sent: below the cleaned offset exactly the last record
// there of each key (tombstones included), above it every record, every
// value as sent.

// Workload 14's compacted topics: the measured one, and the warm-up's.
const (
	cleanTopic       = "bench-clean"
	cleanWarmupTopic = "bench-clean-warmup"
)

const (
	// cleanSegmentBytes is the topic's segment.bytes: 1 GiB of records
	// rolls 128 segments. Kafka 4 accepts nothing below 1 MiB.
	cleanSegmentBytes = 8 << 20
	// cleanTombstoneEvery makes every tenth record (on average) a
	// tombstone, as in issue 17's acceptance 1.
	cleanTombstoneEvery = 10
	// cleanSeed seeds the key and tombstone choices: the same records
	// for both systems and from run to run.
	cleanSeed = 17
	// cleanHoldLag is min.compaction.lag.ms while producing: longer than
	// any produce phase, so nothing is cleanable until it drops to 0.
	cleanHoldLag = time.Hour
	// cleanNode is the node that holds workload 14's partitions.
	cleanNode = 1
	// cleanTimeout bounds the wait for the cleaner to finish.
	cleanTimeout = 20 * time.Minute
)

// cleanRow is one system's line of the cleaner table.
type cleanRow struct {
	system              string
	node                int32
	records, tombstones int64 // produced
	keys, liveKeys      int   // key space; keys whose last record has a value
	segmentsBefore      int
	bytesBefore         int64 // the partition's .log files before cleaning
	bytesAfter          int64 // and after
	recordsAfter        int64 // read back from the start
	passes              int
	cleaned             cleanPass // the passes' sums, as the broker logged them
	rssBefore, rssPeak  int64     // VmRSS when cleaning was allowed; peak while cleaning
	peakHow             string    // "VmHWM" (reset before) or "sampled VmRSS"
	sampledPeak         rssSample // the largest VmRSS sampled, with its parts
	cpu                 time.Duration
	wait                time.Duration // from the lag's change until the harness saw the last pass logged
	produceTime         time.Duration
}

// cleanThroughput is workload 14: the untimed warm-up, then the measured
// clean.
func (r *runner) cleanThroughput(ctx context.Context) error {
	if r.cfg.cleanWarmupMiB > 0 {
		w, err := r.cleanOnce(ctx, cleanWarmupTopic, r.cfg.cleanWarmupMiB)
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		// Its row shows the first clean of the broker's life, from an
		// idle process; the measured clean follows it.
		w.system += " (warm-up)"
		r.res.addClean(w)
	}
	row, err := r.cleanOnce(ctx, cleanTopic, r.cfg.cleanMiB)
	if err != nil {
		return err
	}
	r.res.addClean(row)
	r.res.note("%s workload 14: %d records produced in %s; %d pass(es) on node %d cleaned %s in %s; %s → %s on disk, %d → %d records",
		r.name(), row.records, row.produceTime.Round(time.Millisecond), row.passes, row.node,
		mibText(row.cleaned.bytesRead), row.cleaned.elapsed.Round(time.Millisecond),
		mibText(row.bytesBefore), mibText(row.bytesAfter), row.records, row.recordsAfter)
	r.set("clean_mibs", float64(row.cleaned.bytesRead)/(1<<20)/row.cleaned.elapsed.Seconds())
	r.set("clean_rss_mib", float64(row.rssPeak)/(1<<20))
	return nil
}

// cleanOnce writes mib MiB of records to a new compacted topic, lets the
// cleaner clean it, checks the result and returns the figures.
func (r *runner) cleanOnce(ctx context.Context, topic string, mib int64) (cleanRow, error) {
	records := mib << 20 / int64(r.cfg.recordSize)
	if records < 1 || r.cfg.cleanKeys < 1 {
		return cleanRow{}, fmt.Errorf("%d MiB and -clean-keys %d make no records", mib, r.cfg.cleanKeys)
	}
	data := newCleanData(records, r.cfg.cleanKeys)
	row := cleanRow{system: r.name(), records: records, keys: r.cfg.cleanKeys}
	for i := range records {
		if data.tomb[i] {
			row.tombstones++
		}
	}
	for _, o := range data.latest {
		if o >= 0 && !data.tomb[o] {
			row.liveKeys++
		}
	}

	if err := r.createCleanTopic(ctx, topic); err != nil {
		return row, err
	}
	leader, err := leaderOf(ctx, r.c.opts, r.c.addrs()[0], topic)
	if err != nil {
		return row, err
	}
	nd := r.c.node(leader)
	if nd == nil {
		return row, fmt.Errorf("leader %d is no node of the cluster", leader)
	}
	row.node = nd.id
	partDir := filepath.Join(nd.dataDir, topic+"-0")

	r.logf("producing %d keyed records (%.0f MiB of values, %d keys, %d tombstones) to %s",
		records, r.mib(records-row.tombstones), row.keys, row.tombstones, topic)
	start := time.Now()
	if err := r.produceCleanData(ctx, topic, data); err != nil {
		return row, err
	}
	row.produceTime = time.Since(start)

	// The segments as produced: they must hold what was sent, since
	// nothing may be cleaned yet.
	before, err := settledSegments(ctx, partDir)
	if err != nil {
		return row, err
	}
	row.segmentsBefore, row.bytesBefore = len(before), sum(before)
	activeBase := slices.Max(slices.Collect(maps.Keys(before)))
	l := r.ledgers.of(topic)
	var got ledgerCounts
	if err := poll(ctx, time.Minute, 50*time.Millisecond, func() error {
		if got = l.counts(); got.records < records {
			return fmt.Errorf("the client's hook counted %d of %d acknowledged records", got.records, records)
		}
		return nil
	}); err != nil {
		return row, err
	}
	sent := got.uncompressed + batchHeaderBytes*got.batches
	if !within(row.bytesBefore, sent, landedTolerance) {
		return row, fmt.Errorf("the segments of %s hold %d bytes for %d sent before cleaning (tolerance ±%.0f%%)", topic, row.bytesBefore, sent, 100*landedTolerance)
	}
	r.logf("%d segments, %s, before cleaning; the active segment starts at %d", row.segmentsBefore, mibText(row.bytesBefore), activeBase)

	// Cleaning: from the lag's change to the pass that reaches the active
	// segment.
	logStart, err := fileSize(nd.proc.logPath)
	if err != nil {
		return row, err
	}
	row.rssBefore, _, err = nd.proc.memory()
	if err != nil {
		return row, err
	}
	row.peakHow = "VmHWM"
	if err := nd.proc.resetPeak(); err != nil {
		r.logf("cannot reset node %d's peak RSS (%v); sampling VmRSS instead", nd.id, err)
		row.peakHow = "sampled VmRSS"
	}
	cpuStart, err := nd.proc.cpuTime()
	if err != nil {
		return row, err
	}
	sampler := startRSSSampler(nd.proc, 50*time.Millisecond)
	changed := time.Now()
	if err := r.alterTopicConfig(ctx, topic, "min.compaction.lag.ms", "0"); err != nil {
		sampler.stop()
		return row, err
	}
	parse := cleanLogParsers[r.sys.name()]
	var passes []cleanPass
	err = poll(ctx, cleanTimeout, 100*time.Millisecond, func() error {
		if err := r.c.crashed(); err != nil {
			return permanent{err}
		}
		text, err := readFrom(nd.proc.logPath, logStart)
		if err != nil {
			return permanent{err}
		}
		if passes, err = parse(text, topic+"-0"); err != nil {
			return permanent{err}
		}
		if len(passes) > 0 && passes[len(passes)-1].to >= activeBase {
			return nil
		}
		return fmt.Errorf("%d cleaning passes logged; the last ends short of the active segment at %d", len(passes), activeBase)
	})
	sampled := sampler.stop()
	if err != nil {
		return row, fmt.Errorf("cleaning %s: %w", topic, err)
	}
	row.wait = time.Since(changed)
	cpuEnd, err := nd.proc.cpuTime()
	if err != nil {
		return row, err
	}
	row.cpu = cpuEnd - cpuStart
	row.sampledPeak = sampled
	row.rssPeak = sampled.rss
	if row.peakHow == "VmHWM" {
		_, hwm, err := nd.proc.memory()
		if err != nil {
			return row, err
		}
		row.rssPeak = max(hwm, sampled.rss)
	}
	row.passes = len(passes)
	row.cleaned = cleanTotals(passes)
	if row.cleaned.elapsed <= 0 {
		return row, fmt.Errorf("%d passes logged no time", len(passes))
	}

	after, err := settledSegments(ctx, partDir)
	if err != nil {
		return row, err
	}
	row.bytesAfter = sum(after)
	if row.recordsAfter, err = r.checkCleaned(ctx, topic, data, row.cleaned.to); err != nil {
		return row, err
	}

	return row, nil
}

// createCleanTopic creates one of workload 14's topics on cleanNode, its
// cleaner held off. Its one replica is placed (CreateTopics with a replica
// assignment) so that the warm-up and the measured clean run in the same
// process.
func (r *runner) createCleanTopic(ctx context.Context, topic string) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = topic
	rt.NumPartitions, rt.ReplicationFactor = -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, []int32{cleanNode}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	for _, kv := range [][2]string{
		{"cleanup.policy", "compact"},
		{"segment.bytes", strconv.Itoa(cleanSegmentBytes)},
		{"min.cleanable.dirty.ratio", "0.01"},
		{"min.compaction.lag.ms", strconv.FormatInt(cleanHoldLag.Milliseconds(), 10)},
		{"min.insync.replicas", "1"},
	} {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[0], kmsg.StringPtr(kv[1])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err == nil && len(resp.Topics) != 1 {
		err = fmt.Errorf("%d topics in the answer", len(resp.Topics))
	}
	if err == nil {
		if err = kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && resp.Topics[0].ErrorMessage != nil {
			err = fmt.Errorf("%w: %s", err, *resp.Topics[0].ErrorMessage)
		}
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return waitISRFull(ctx, r.c.opts, r.c.addrs()[0], 1, 2*time.Minute, topic)
}

// alterTopicConfig sets one config of topic (IncrementalAlterConfigs).
func (r *runner) alterTopicConfig(ctx context.Context, topic, key, value string) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: &value}}, topic)
	if err != nil {
		return fmt.Errorf("alter %s %s=%s: %w", topic, key, value, err)
	}
	for _, resp := range resps {
		if resp.Err != nil {
			return fmt.Errorf("alter %s %s=%s: %w (%s)", topic, key, value, resp.Err, resp.ErrMessage)
		}
	}
	return nil
}

// produceCleanData sends data's records in order, acks=all, with the
// producer settings of workload 1.
func (r *runner) produceCleanData(ctx context.Context, topic string, data *cleanData) error {
	cl, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(32_768),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed errCount
	for i := range int64(len(data.keys)) {
		if ctx.Err() != nil {
			break
		}
		cl.Produce(ctx, &kgo.Record{Key: data.key(i), Value: data.value(r.values, i)}, func(_ *kgo.Record, err error) { failed.add(err) })
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	return failed.err()
}

// settledSegments waits until the .log files in dir stop changing and
// returns their sizes by base offset. Files being swapped in or deleted
// (.cleaned, .swap, .deleted) are not .log files.
func settledSegments(ctx context.Context, dir string) (map[int64]int64, error) {
	var prev, cur map[int64]int64
	err := poll(ctx, time.Minute, 200*time.Millisecond, func() error {
		var err error
		if cur, err = segmentSizes(dir); err != nil {
			return permanent{err}
		}
		stable := prev != nil && maps.Equal(prev, cur)
		prev = cur
		if !stable || len(cur) == 0 {
			return errors.New("still changing")
		}
		return nil
	})
	return cur, err
}

// segmentSizes returns the size of each .log file in dir by base offset.
func segmentSizes(dir string) (map[int64]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[int64]int64{}
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		off, err := strconv.ParseInt(base, 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted under us
		}
		if err != nil {
			return nil, err
		}
		out[off] = info.Size()
	}
	return out, nil
}

func sum(m map[int64]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// fileSize returns the size of the file at path.
func fileSize(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// readFrom returns the file at path from offset on.
func readFrom(path string, offset int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", err
	}
	data, err := io.ReadAll(f)
	return string(data), err
}

// addClean records a row of the cleaner table.
func (r *results) addClean(row cleanRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clean = append(r.clean, row)
}

// writeCleanTable prints workload 14's details as a Markdown table.
func (r *results) writeCleanTable(w io.Writer) {
	r.mu.Lock()
	rows := r.clean
	r.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Workload 14, the log cleaner (one partition, RF 1, on the node named; cleaner figures as each broker logged its passes):")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| system\t| node\t| records sent\t| tombstones\t| keys (live)\t| segments\t| .log MiB before\t| .log MiB after\t| records after\t| passes\t| cleaner read MiB\t| cleaner wrote MiB\t| cleaner records in → out\t| pass time s\t| MiB/s\t| node CPU s\t| lag change to done s\t| RSS before MiB\t| peak RSS MiB\t| peak from\t| sampled peak: anon + file MiB\t|")
	fmt.Fprintln(tw, "|---\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|---\t|--:\t|")
	mib := func(b int64) string { return formatValue(float64(b) / (1 << 20)) }
	for _, row := range rows {
		c := row.cleaned
		fmt.Fprintf(tw, "| %s\t| %d\t| %d\t| %d\t| %d (%d)\t| %d\t| %s\t| %s\t| %d\t| %d\t| %s\t| %s\t| %d → %d\t| %.2f\t| %s\t| %.2f\t| %.1f\t| %s\t| %s\t| %s\t| %s + %s\t|\n",
			row.system, row.node, row.records, row.tombstones, row.keys, row.liveKeys, row.segmentsBefore,
			mib(row.bytesBefore), mib(row.bytesAfter), row.recordsAfter, row.passes,
			mib(c.bytesRead), mib(c.bytesWritten), c.recordsRead, c.recordsWritten, c.elapsed.Seconds(),
			formatValue(float64(c.bytesRead)/(1<<20)/c.elapsed.Seconds()), row.cpu.Seconds(), row.wait.Seconds(),
			mib(row.rssBefore), mib(row.rssPeak), row.peakHow, mib(row.sampledPeak.anon), mib(row.sampledPeak.file))
	}
	tw.Flush()
}
