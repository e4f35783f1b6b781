package compat

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The compaction-1m row is issue 17's first acceptance check: a million
// keyed records, a tenth of them tombstones, into a compacted topic with
// small segments on a three-node cluster with replication factor 3; after
// cleaning, a consumer reading from the beginning sees exactly one record
// per live key, with its latest value, no deleted key once
// delete.retention.ms has passed, offsets strictly increasing; and Kafka's
// kafka-dump-log.sh reads every segment a follower cleaned, record for
// record the same as what the leader served.
//
// The topic is created with min.compaction.lag.ms of an hour, so that
// nothing is cleaned while the records go in and the "before" size is the
// log as written; the row then sets it to 0 (IncrementalAlterConfigs, no
// restart) and the cleaners of all three nodes go to work.
//
// Kafka rolls a segment on segment.ms only when a batch is appended, and
// never cleans the active segment, so whatever is in the active segment
// when the writes stop stays uncleaned. The last record written to each
// partition is therefore a "closer": the one record ever written for its key
// (k997, k998, k999), stamped one segment.ms after the records before it so
// that it rolls the active segment on the leader and on each follower (which
// roll by the same batch timestamps). Everything before it becomes
// cleanable, and the closer, alone in the active segment, is a live key read
// once like any other.

const (
	compactionTopic      = "compat-compaction-1m"
	compactionPartitions = 3
	compactionRecords    = 1_000_000
	compactionKeys       = 1000
	// compactionTombstoneEvery makes every tenth record before the closers
	// a tombstone (a null value).
	compactionTombstoneEvery = 10
	compactionSegmentBytes   = 1 << 20
	compactionSegmentMs      = 1000
	compactionDeleteRetMs    = 5000
	// compactionWait bounds the wait for the cleaners: a first pass,
	// delete.retention.ms, and the pass that drops the tombstones (KIP-534:
	// due when the horizon has passed, with no new writes), on each of the
	// nine replicas.
	compactionWait = 180 * time.Second
)

func javaCompactionRow() row {
	r := javaClusterRow("compaction-1m", 5*time.Minute, runJavaCompaction)
	// The cleaners look for work every second, not every 15 s, so the
	// row waits for its passes, not for the cleaners' sleep.
	r.overrides = []string{"log.cleaner.backoff.ms=1000"}
	return r
}

// compactionKey is key i's name.
func compactionKey(i int) string { return fmt.Sprintf("k%03d", i) }

// compactionPartition is key i's partition: keys are spread by index, so
// that the row knows each partition's expected contents.
func compactionPartition(i int) int32 { return int32(i % compactionPartitions) }

// compactionLatest is the last record written for one key.
type compactionLatest struct {
	seq   int
	value []byte // nil for a tombstone
}

// compactionRecord is one record as a reader saw it.
type compactionRecord struct {
	offset     int64
	key, value string
	tombstone  bool
}

func runJavaCompaction(ctx context.Context, env *rowEnv) error {
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), manualPartitions(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(50_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	configs := map[string]*string{
		"cleanup.policy":            kmsg.StringPtr("compact"),
		"min.insync.replicas":       kmsg.StringPtr("2"),
		"segment.bytes":             kmsg.StringPtr(strconv.Itoa(compactionSegmentBytes)),
		"segment.ms":                kmsg.StringPtr(strconv.Itoa(compactionSegmentMs)),
		"delete.retention.ms":       kmsg.StringPtr(strconv.Itoa(compactionDeleteRetMs)),
		"min.cleanable.dirty.ratio": kmsg.StringPtr("0.01"),
		"min.compaction.lag.ms":     kmsg.StringPtr("3600000"),
	}
	resp, err := adm.CreateTopic(ctx, compactionPartitions, 3, configs, compactionTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("kadm CreateTopic %s: %w", compactionTopic, err)
	}
	leaders, err := waitFullISR(ctx, env, compactionTopic, compactionPartitions)
	if err != nil {
		return err
	}

	// Write: 999,997 records over keys k000..k996 in a seeded random
	// order, every tenth a tombstone, then one closer per partition.
	latest := map[string]compactionLatest{}
	start := time.Now()
	var (
		errMu    sync.Mutex
		firstErr error
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			errMu.Lock()
			if firstErr == nil {
				firstErr = fmt.Errorf("franz-go produce to %s-%d: %w", r.Topic, r.Partition, err)
			}
			errMu.Unlock()
		}
	}
	rng := rand.New(rand.NewPCG(17, 1))
	closers := compactionPartitions
	data := compactionRecords - closers
	tombstones := 0
	for seq := range data {
		k := rng.IntN(compactionKeys - closers)
		key := compactionKey(k)
		var value []byte
		if seq%compactionTombstoneEvery != compactionTombstoneEvery-1 {
			value = fmt.Appendf(nil, "%s@seq-%07d", key, seq)
		} else {
			tombstones++
		}
		latest[key] = compactionLatest{seq: seq, value: value}
		cl.Produce(ctx, &kgo.Record{Topic: compactionTopic, Partition: compactionPartition(k), Key: []byte(key), Value: value}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("franz-go flush: %w", err)
	}
	if firstErr != nil {
		return firstErr
	}
	produced := time.Since(start)

	// Every follower must hold every record before the closers go in, so
	// that each replica appends its closer alone and rolls on it.
	if _, err := waitFullISR(ctx, env, compactionTopic, compactionPartitions); err != nil {
		return err
	}
	closerTs := time.Now().Add((compactionSegmentMs + 1000) * time.Millisecond)
	var closerRecs []*kgo.Record
	for k := compactionKeys - closers; k < compactionKeys; k++ {
		key := compactionKey(k)
		value := fmt.Appendf(nil, "%s@seq-%07d", key, data+len(closerRecs))
		latest[key] = compactionLatest{seq: data + len(closerRecs), value: value}
		closerRecs = append(closerRecs, &kgo.Record{Topic: compactionTopic, Partition: compactionPartition(k), Key: []byte(key), Value: value, Timestamp: closerTs})
	}
	if err := cl.ProduceSync(ctx, closerRecs...).FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce the closers: %w", err)
	}
	live, deleted := 0, 0
	for _, l := range latest {
		if l.value == nil {
			deleted++
		} else {
			live++
		}
	}
	env.t.Logf("wrote %d records (%d tombstones) over %d keys in %.1fs (%.0f records/s): %d keys live, %d deleted",
		compactionRecords, tombstones, len(latest), produced.Seconds(), float64(data)/produced.Seconds(), live, deleted)
	if len(latest) != compactionKeys || live == 0 || deleted == 0 {
		return fmt.Errorf("the seeded writes left %d keys, %d live and %d deleted; the row needs all %d with both kinds", len(latest), live, deleted, compactionKeys)
	}

	ends, err := adm.ListEndOffsets(ctx, compactionTopic)
	if err != nil {
		return fmt.Errorf("franz-go ListEndOffsets: %w", err)
	}
	endOffsets := map[int32]int64{}
	var total int64
	for p := range int32(compactionPartitions) {
		o, ok := ends.Lookup(compactionTopic, p)
		if !ok || o.Err != nil {
			return fmt.Errorf("franz-go ListEndOffsets %s-%d: %v", compactionTopic, p, o.Err)
		}
		endOffsets[p] = o.Offset
		total += o.Offset
	}
	if total != compactionRecords {
		return fmt.Errorf("end offsets %v add up to %d, want %d", endOffsets, total, compactionRecords)
	}
	before, err := replicaSizes(ctx, env, adm)
	if err != nil {
		return err
	}
	logReplicaSizes(env, "before cleaning", before)

	// Let the cleaners in.
	cleanStart := time.Now()
	alter := []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.compaction.lag.ms", Value: kmsg.StringPtr("0")}}
	if ar, err := adm.AlterTopicConfigs(ctx, alter, compactionTopic); err != nil {
		return fmt.Errorf("kadm IncrementalAlterConfigs min.compaction.lag.ms=0: %w", err)
	} else if r, err := ar.On(compactionTopic, nil); err != nil || r.Err != nil {
		return fmt.Errorf("kadm IncrementalAlterConfigs min.compaction.lag.ms=0: %v %v", err, r.Err)
	}

	want := map[int32][]compactionRecord{}
	for key, l := range latest {
		if l.value == nil {
			continue
		}
		k, _ := strconv.Atoi(key[1:])
		p := compactionPartition(k)
		want[p] = append(want[p], compactionRecord{key: key, value: string(l.value)})
	}

	// Wait until every replica has shrunk to the live keys and a fresh
	// read_committed consumer sees exactly those. Replicas clean their own
	// copies, each at its own time, so their sizes may differ by a few
	// bytes: a batch that keeps a tombstone carries its delete horizon as
	// its base timestamp, and its records' timestamp deltas (varints)
	// change with it.
	var read map[int32][]compactionRecord
	err = pollUntil(ctx, compactionWait, func() error {
		sizes, err := replicaSizes(ctx, env, adm)
		if err != nil {
			return err
		}
		for p, byNode := range sizes {
			for node, s := range byNode {
				if s.described*10 > before[p][node].described {
					return fmt.Errorf("%s-%d on node %d: %d bytes, was %d: not cleaned yet", compactionTopic, p, node, s.described, before[p][node].described)
				}
			}
		}
		read, err = readCompacted(ctx, env, endOffsets)
		if err != nil {
			return err
		}
		if err := checkCompacted(read, want, latest); err != nil {
			return err
		}
		// Each replica cleans its own copy: wait for the followers' last
		// pass too, until every replica's segment files hold exactly as
		// many records as there are live keys (batch headers, read here;
		// their contents are Kafka's tool's to read, below).
		for _, b := range env.nodes {
			for p := range int32(compactionPartitions) {
				st, err := readSegments(replicaDir(b, p))
				if err != nil {
					return err
				}
				if st.records != len(want[p]) {
					return fmt.Errorf("node %d's replica of %s-%d: %d records in its segment files, want %d live keys: not cleaned yet",
						b.id, compactionTopic, p, st.records, len(want[p]))
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("within %s of min.compaction.lag.ms=0: %w", compactionWait, err)
	}
	cleaned := time.Since(cleanStart)
	after, err := replicaSizes(ctx, env, adm)
	if err != nil {
		return err
	}
	records := 0
	for _, recs := range read {
		records += len(recs)
	}
	env.t.Logf("cleaned in %.1fs: a read_committed consumer reads %d records (%d live keys, none deleted), offsets strictly increasing",
		cleaned.Seconds(), records, live)
	logReplicaSizes(env, "after cleaning", after)
	for _, b := range env.nodes {
		env.t.Logf("node %d: %d cleaning passes over %s logged", b.id, cleanerPasses(b.logPath), compactionTopic)
	}
	for p := range int32(compactionPartitions) {
		var b, a int64
		for node := range before[p] {
			b += before[p][node].described
			a += after[p][node].described
		}
		env.t.Logf("%s-%d: %d bytes before, %d after over its 3 replicas (%.2f%%)", compactionTopic, p, b, a, 100*float64(a)/float64(b))
	}

	return dumpReplicas(ctx, env, leaders, read)
}

// waitFullISR waits until every node's Metadata shows each partition of
// topic with a leader and all three replicas in sync, and returns the
// leaders.
func waitFullISR(ctx context.Context, env *rowEnv, topic string, partitions int32) (map[int32]int32, error) {
	leaders := map[int32]int32{}
	err := pollUntil(ctx, 60*time.Second, func() error {
		for _, b := range env.nodes {
			md, err := metadataFrom(ctx, b, topic)
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(partitions) {
				return fmt.Errorf("node %d does not know %s's %d partitions yet", b.id, topic, partitions)
			}
			for _, p := range md.Topics[0].Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 || len(p.ISR) != 3 {
					return fmt.Errorf("node %d: %s-%d error %v leader %d ISR %v", b.id, topic, p.Partition, err, p.Leader, p.ISR)
				}
				leaders[p.Partition] = p.Leader
			}
		}
		return nil
	})
	return leaders, err
}

// replicaSize is one replica's size as DescribeLogDirs reports it and as
// its .log files on disk add up.
type replicaSize struct {
	described, files int64
	segments         int
}

// replicaSizes returns each partition's size on each node.
func replicaSizes(ctx context.Context, env *rowEnv, adm *kadm.Client) (map[int32]map[int32]replicaSize, error) {
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("franz-go DescribeLogDirs: %w", err)
	}
	sizes := map[int32]map[int32]replicaSize{}
	all.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic != compactionTopic {
				return
			}
			if sizes[p.Partition] == nil {
				sizes[p.Partition] = map[int32]replicaSize{}
			}
			sizes[p.Partition][p.Broker] = replicaSize{described: p.Size}
		})
	})
	for p := range int32(compactionPartitions) {
		if len(sizes[p]) != len(env.nodes) {
			return nil, fmt.Errorf("DescribeLogDirs shows %s-%d on %d nodes, want %d", compactionTopic, p, len(sizes[p]), len(env.nodes))
		}
		for _, b := range env.nodes {
			s := sizes[p][b.id]
			s.files, s.segments = logFileBytes(replicaDir(b, p))
			sizes[p][b.id] = s
		}
	}
	return sizes, nil
}

// replicaDir is node b's directory for partition p of the row's topic.
func replicaDir(b *broker, p int32) string {
	return filepath.Join(b.dir, "data", fmt.Sprintf("%s-%d", compactionTopic, p))
}

// cleanerPasses counts the passes over the row's topic a node logged.
func cleanerPasses(logPath string) int {
	data, _ := os.ReadFile(logPath)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `msg="log cleaned"`) && strings.Contains(line, "partition="+compactionTopic+"-") {
			n++
		}
	}
	return n
}

// logFileBytes adds up the .log files in a partition directory.
func logFileBytes(dir string) (int64, int) {
	entries, _ := os.ReadDir(dir)
	var total int64
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			total += fi.Size()
			n++
		}
	}
	return total, n
}

func logReplicaSizes(env *rowEnv, when string, sizes map[int32]map[int32]replicaSize) {
	for p := range int32(compactionPartitions) {
		var parts []string
		for _, node := range slices.Sorted(maps.Keys(sizes[p])) {
			s := sizes[p][node]
			parts = append(parts, fmt.Sprintf("node %d: %d bytes (DescribeLogDirs), %d in %d .log files", node, s.described, s.files, s.segments))
		}
		env.t.Logf("%s, %s-%d: %s", when, compactionTopic, p, strings.Join(parts, "; "))
	}
}

// readCompacted reads every partition from the beginning with a fresh
// read_committed consumer up to the end offsets the writes left.
func readCompacted(ctx context.Context, env *rowEnv, ends map[int32]int64) (map[int32][]compactionRecord, error) {
	offsets := map[int32]kgo.Offset{}
	for p := range ends {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{compactionTopic: offsets}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out := map[int32][]compactionRecord{}
	done := map[int32]bool{}
	for len(done) < len(ends) {
		fetches := cl.PollFetches(rctx)
		if rctx.Err() != nil {
			return nil, fmt.Errorf("franz-go read of %s from the beginning did not reach the end offsets %v: %w", compactionTopic, ends, rctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return nil, fmt.Errorf("franz-go fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], compactionRecord{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
			if r.Offset >= ends[r.Partition]-1 {
				done[r.Partition] = true
			}
		})
	}
	return out, nil
}

// checkCompacted checks what a reader saw against the live keys of each
// partition: each exactly once, with its latest value, no tombstone and no
// deleted key, offsets strictly increasing.
func checkCompacted(read, want map[int32][]compactionRecord, latest map[string]compactionLatest) error {
	for p := range int32(compactionPartitions) {
		recs := read[p]
		seen := map[string]bool{}
		prev := int64(-1)
		tombstones := 0
		for _, r := range recs {
			if r.offset <= prev {
				return fmt.Errorf("%s-%d: offset %d after %d", compactionTopic, p, r.offset, prev)
			}
			prev = r.offset
			if seen[r.key] {
				return fmt.Errorf("%s-%d: key %s more than once (again at offset %d): not cleaned yet", compactionTopic, p, r.key, r.offset)
			}
			seen[r.key] = true
			l, ok := latest[r.key]
			switch {
			case !ok:
				return fmt.Errorf("%s-%d: offset %d has key %q, never written", compactionTopic, p, r.offset, r.key)
			case r.tombstone && l.value == nil:
				tombstones++
			case r.tombstone || l.value == nil:
				return fmt.Errorf("%s-%d: offset %d, key %s: tombstone %v, but its latest record is seq %d with value %q", compactionTopic, p, r.offset, r.key, r.tombstone, l.seq, l.value)
			case r.value != string(l.value):
				return fmt.Errorf("%s-%d: offset %d, key %s: value %q, want its latest %q", compactionTopic, p, r.offset, r.key, r.value, l.value)
			}
		}
		if tombstones > 0 {
			return fmt.Errorf("%s-%d: %d tombstones of deleted keys still read after delete.retention.ms (%d ms)", compactionTopic, p, tombstones, compactionDeleteRetMs)
		}
		if len(recs) != len(want[p]) {
			return fmt.Errorf("%s-%d: %d records read, want %d live keys", compactionTopic, p, len(recs), len(want[p]))
		}
	}
	return nil
}

var (
	// compactedBatchLine is a batch header of DumpLogSegments; a cleaned
	// batch's count is below lastOffset-baseOffset+1.
	compactedBatchLine = regexp.MustCompile(`^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* position: (\d+) .* size: (\d+) magic: (\d+) compresscodec: (\S+) crc: (\d+) isvalid: (true|false)$`)
	// compactedRecordLine is a record under --print-data-log: "| offset: 5
	// CreateTime: ... keySize: 4 valueSize: 16 sequence: 5 headerKeys: []
	// key: k005 payload: k005@seq-0000005"; a tombstone has valueSize -1
	// and no payload.
	compactedRecordLine = regexp.MustCompile(`^\| offset: (\d+) .* valueSize: (-?\d+) .* key: (\S*)(?: payload: (.*))?$`)
)

// dumpReplicas stops every node (a clean shutdown: no pass is under way
// while the tool reads, and the active segments' indexes are written), then
// runs kafka-dump-log.sh --print-data-log once over the segment files of
// every replica, followers and leaders, and --index-sanity-check once over
// their indexes. Kafka's tool must read every batch (valid CRC, magic 2,
// back to back to the end of each file), and each replica must hold exactly
// the records the leader served, at the same offsets.
func dumpReplicas(ctx context.Context, env *rowEnv, leaders map[int32]int32, read map[int32][]compactionRecord) error {
	for _, b := range env.nodes {
		if err := b.stop(); err != nil {
			return fmt.Errorf("stopping node %d before the dump: %w", b.id, err)
		}
	}
	type replica struct {
		node, partition int32
		logs            []string
	}
	var replicas []replica
	var logs, indexes []string
	sizes := map[string]int64{}
	for _, b := range env.nodes {
		for p := range int32(compactionPartitions) {
			dir := replicaDir(b, p)
			entries, err := os.ReadDir(dir)
			if err != nil {
				return err
			}
			r := replica{node: b.id, partition: p}
			for _, e := range entries {
				path := filepath.Join(dir, e.Name())
				switch filepath.Ext(e.Name()) {
				case ".log":
					fi, err := e.Info()
					if err != nil {
						return err
					}
					r.logs = append(r.logs, path)
					sizes[path] = fi.Size()
				case ".index", ".timeindex":
					indexes = append(indexes, path)
				}
			}
			slices.Sort(r.logs)
			logs = append(logs, r.logs...)
			replicas = append(replicas, r)
		}
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-dump-log.sh", "--files", strings.Join(logs, ","), "--print-data-log")
	if err != nil {
		return err
	}
	files, err := parseCompactedDump(out, sizes)
	if err != nil {
		return fmt.Errorf("kafka-dump-log.sh: %w", err)
	}
	totalBatches, totalRecords := 0, 0
	for _, r := range replicas {
		var recs []compactionRecord
		batches := 0
		for _, path := range r.logs {
			f, ok := files[path]
			if !ok {
				return fmt.Errorf("kafka-dump-log.sh did not dump %s", path)
			}
			recs = append(recs, f.records...)
			batches += f.batches
		}
		role := "follower"
		if leaders[r.partition] == r.node {
			role = "leader"
		}
		if !slices.Equal(recs, read[r.partition]) {
			return fmt.Errorf("node %d (%s of %s-%d): kafka-dump-log.sh reads %d records in its segments, the leader served %d; first difference %s",
				r.node, role, compactionTopic, r.partition, len(recs), len(read[r.partition]), firstDifference(recs, read[r.partition]))
		}
		env.t.Logf("kafka-dump-log.sh, node %d (%s of %s-%d): %d segment files (%d cleaned, 1 active), %d batches, %d records: the leader's, offset for offset",
			r.node, role, compactionTopic, r.partition, len(r.logs), len(r.logs)-1, batches, len(recs))
		totalBatches += batches
		totalRecords += len(recs)
	}
	env.t.Logf("kafka-dump-log.sh read %d segment files of %d replicas: %d batches, %d records, every CRC valid", len(logs), len(replicas), totalBatches, totalRecords)

	out, err = kafkaTool(ctx, env, nil, "kafka-dump-log.sh", "--files", strings.Join(indexes, ","), "--index-sanity-check")
	if err != nil {
		return err
	}
	empty, err := checkIndexSanity(out, indexes)
	if err != nil {
		return err
	}
	env.t.Logf("kafka-dump-log.sh --index-sanity-check: %d .index and .timeindex files of %d replicas passed, %d of them empty", len(indexes), len(replicas), empty)
	return nil
}

// dumpedFile is what DumpLogSegments read of one segment file.
type dumpedFile struct {
	records []compactionRecord
	batches int
}

// parseCompactedDump reads DumpLogSegments' output over several segment
// files of sizes bytes each and returns what it read of each.
func parseCompactedDump(out string, sizes map[string]int64) (map[string]*dumpedFile, error) {
	files := map[string]*dumpedFile{}
	var (
		file       string
		cur        *dumpedFile
		position   int64
		last, prev int64
	)
	endFile := func() error {
		if cur != nil && position != sizes[file] {
			return fmt.Errorf("%s: batches end at byte %d of %d", file, position, sizes[file])
		}
		return nil
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "Dumping "):
			if err := endFile(); err != nil {
				return nil, err
			}
			file = strings.TrimPrefix(line, "Dumping ")
			if _, ok := sizes[file]; !ok || files[file] != nil {
				return nil, fmt.Errorf("dumps %q, not one of the files asked for, or twice", file)
			}
			cur, position, last, prev = &dumpedFile{}, 0, -1, -1
			files[file] = cur
			continue
		case strings.HasPrefix(line, "Log starting offset: "):
			continue
		case cur == nil:
			return nil, fmt.Errorf("unexpected line %q before the first file", line)
		}
		if m := compactedBatchLine.FindStringSubmatch(line); m != nil {
			var base, lastOff, count, pos, size int64
			for i, dst := range []*int64{&base, &lastOff, &count, &pos, &size} {
				*dst, _ = strconv.ParseInt(m[i+1], 10, 64)
			}
			switch {
			case m[9] != "true":
				return nil, fmt.Errorf("%s: batch at offset %d: isvalid: %s", file, base, m[9])
			case m[6] != "2":
				return nil, fmt.Errorf("%s: batch at offset %d: magic %s", file, base, m[6])
			case pos != position:
				return nil, fmt.Errorf("%s: batch at offset %d at position %d, the previous ended at %d", file, base, pos, position)
			case base <= last || lastOff < base || count > lastOff-base+1:
				return nil, fmt.Errorf("%s: batch %d..%d (count %d) after a batch ending at %d", file, base, lastOff, count, last)
			}
			position, last = pos+size, lastOff
			cur.batches++
			continue
		}
		if m := compactedRecordLine.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseInt(m[1], 10, 64)
			if off <= prev || off > last {
				return nil, fmt.Errorf("%s: record at offset %d out of place (previous %d, batch ends at %d)", file, off, prev, last)
			}
			prev = off
			r := compactionRecord{offset: off, key: m[3], value: m[4]}
			if m[2] == "-1" {
				r.tombstone, r.value = true, ""
			}
			cur.records = append(cur.records, r)
			continue
		}
		return nil, fmt.Errorf("unexpected line %q", line)
	}
	if err := endFile(); err != nil {
		return nil, err
	}
	return files, nil
}

// checkIndexSanity checks --index-sanity-check's output: every index file
// named, and each either passing the check or empty (a cleaned segment
// smaller than index.interval.bytes gets no offset index entry, as in
// Kafka). It returns how many were empty.
func checkIndexSanity(out string, files []string) (int, error) {
	passed, empty := 0, 0
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "Dumping "):
		case strings.HasSuffix(line, " passed sanity check."):
			passed++
		case strings.HasSuffix(line, " is empty."):
			empty++
		default:
			return 0, fmt.Errorf("kafka-dump-log.sh --index-sanity-check: %q", line)
		}
	}
	if passed+empty != len(files) {
		return 0, fmt.Errorf("kafka-dump-log.sh --index-sanity-check: %d of %d index files passed", passed+empty, len(files))
	}
	return empty, nil
}

// firstDifference describes where two record lists first differ.
func firstDifference(a, b []compactionRecord) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at #%d: %+v vs %+v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("after %d equal records", min(len(a), len(b)))
}
