//go:build linux

package chaos

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The checker reads every partition back from the start through a fresh
// client, after the heal, and compares what it reads with what the
// workloads recorded. Then, with the nodes stopped cleanly, it compares the
// replicas' segment files below the high watermark.

// readTimeout bounds a read of a whole topic.
const readTimeout = 90 * time.Second

// readRecord is one record read back.
type readRecord struct {
	offset int64
	value  string
}

// readTopic consumes every partition of topic from its start with the given
// isolation level until done says it has everything.
func readTopic(addrs []string, topic string, partitions int32, isolation kgo.IsolationLevel, done func(map[int32][]readRecord) bool) (map[int32][]readRecord, error) {
	parts := map[int32]kgo.Offset{}
	for p := range partitions {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(isolation),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	got := map[int32][]readRecord{}
	for !done(got) {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return got, fmt.Errorf("read %s: %w", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], readRecord{r.Offset, string(r.Value)})
		})
	}
	return got, nil
}

// endOffsets returns topic's high watermarks.
func endOffsets(addrs []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	listed, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	var errs []string
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			errs = append(errs, fmt.Sprintf("%s-%d: %v", topic, o.Partition, o.Err))
		}
		out[o.Partition] = o.Offset
	})
	if len(errs) > 0 {
		return nil, fmt.Errorf("list end offsets: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// outcome is what the checker found in one scenario.
type outcome struct {
	acked, lost, misplaced, duplicated, phantom, failed     int
	txnCommitted, txnLost, txnAbortedVisible, txnDuplicated int
	replicasDiffer                                          []string
	problems                                                []string // the first few, for the failure message
}

func (o *outcome) problem(format string, args ...any) {
	if len(o.problems) < 10 {
		o.problems = append(o.problems, fmt.Sprintf(format, args...))
	}
}

// checkProducer compares what was read with what the producer recorded:
// every acknowledged value present exactly once at the offset it was
// acknowledged with, nothing that was never sent, no value twice.
func checkProducer(o *outcome, p *producer, got map[int32][]readRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o.acked, o.failed = len(p.acked), len(p.failed)
	seen := map[string][]ack{}
	for part, recs := range got {
		for _, r := range recs {
			seen[r.value] = append(seen[r.value], ack{partition: part, offset: r.offset})
			if !p.sent[r.value] {
				o.phantom++
				o.problem("%s-%d offset %d holds %q, which was never sent", p.topic, part, r.offset, r.value)
			}
		}
	}
	for v, where := range seen {
		if len(where) > 1 {
			o.duplicated++
			o.problem("%q read %d times: %v", v, len(where), where)
		}
	}
	// Report lost records in offset order: the first one says where the
	// loss starts.
	values := make([]string, 0, len(p.acked))
	for v := range p.acked {
		values = append(values, v)
	}
	slices.SortFunc(values, func(a, b string) int {
		x, y := p.acked[a], p.acked[b]
		if x.partition != y.partition {
			return int(x.partition - y.partition)
		}
		return int(x.offset - y.offset)
	})
	for _, v := range values {
		a := p.acked[v]
		where := seen[v]
		switch {
		case len(where) == 0:
			o.lost++
			o.problem("acknowledged %q at %s-%d offset %d (at %s) is lost", v, p.topic, a.partition, a.offset, a.at.Format("15:04:05.000"))
		case !slices.ContainsFunc(where, func(w ack) bool { return w.partition == a.partition && w.offset == a.offset }):
			o.misplaced++
			o.problem("acknowledged %q at %s-%d offset %d is at %v instead", v, p.topic, a.partition, a.offset, where)
		}
	}
}

// checkTxn compares what a read_committed reader saw with the transactional
// workload: every committed value exactly once, no value of an aborted
// transaction, nothing never sent.
func checkTxn(o *outcome, w *txnWorkload, got map[int32][]readRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	count := map[string]int{}
	for part, recs := range got {
		for _, r := range recs {
			count[r.value]++
			switch {
			case w.aborted[r.value]:
				o.txnAbortedVisible++
				o.problem("read_committed shows %q of an aborted transaction at %s-%d offset %d", r.value, w.topic, part, r.offset)
			case !w.sent[r.value]:
				o.phantom++
				o.problem("%s-%d offset %d holds %q, which was never sent", w.topic, part, r.offset, r.value)
			}
		}
	}
	o.txnCommitted = len(w.committed)
	for v := range w.committed {
		if count[v] == 0 {
			o.txnLost++
			o.problem("committed %q is not visible to read_committed", v)
		}
	}
	for v, n := range count {
		if n > 1 {
			o.txnDuplicated++
			o.problem("transactional %q read %d times", v, n)
		}
	}
}

// compareReplicas compares, for each partition of topic, the record batches
// below hw[partition] in every node's segment files. The nodes must be
// stopped. Batches are compared as bytes: a follower stores them exactly as
// it fetched them from the leader, so committed data is byte-identical on
// every replica.
func compareReplicas(o *outcome, nodes []*node, topic string, hw map[int32]int64) {
	for part, end := range hw {
		var first []byte
		var firstNode int32
		for _, nd := range nodes {
			dir := filepath.Join(nd.dataDir(), fmt.Sprintf("%s-%d", topic, part))
			data, err := committedBatches(dir, end)
			if err != nil {
				o.replicasDiffer = append(o.replicasDiffer, fmt.Sprintf("node %d %s-%d: %v", nd.id, topic, part, err))
				continue
			}
			if first == nil {
				first, firstNode = data, nd.id
				continue
			}
			if !bytes.Equal(first, data) {
				at := 0
				for at < min(len(first), len(data)) && first[at] == data[at] {
					at++
				}
				o.replicasDiffer = append(o.replicasDiffer, fmt.Sprintf("%s-%d: node %d (%d bytes below offset %d) and node %d (%d bytes) differ from byte %d",
					topic, part, firstNode, len(first), end, nd.id, len(data), at))
			}
		}
	}
}

// committedBatches concatenates the record batches of the partition
// directory dir whose base offset is below end, walking each .log segment
// in base-offset order by the batch headers (base offset, 8 bytes; batch
// length, 4 bytes, counting what follows it). It stops a segment at a zero
// or impossible length, which is where its written part ends.
func committedBatches(dir string, end int64) ([]byte, error) {
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("no segments in %s", dir)
	}
	slices.Sort(segs) // 20-digit zero-padded base offsets sort as numbers
	var out []byte
	var next int64 = -1
	for _, seg := range segs {
		b, err := os.ReadFile(seg)
		if err != nil {
			return nil, err
		}
		for pos := 0; pos+12 <= len(b); {
			base := int64(binary.BigEndian.Uint64(b[pos:]))
			n := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
			if n <= 0 || pos+12+n > len(b) {
				break
			}
			if base >= end {
				break
			}
			if next >= 0 && base < next {
				return nil, fmt.Errorf("%s: batch at offset %d after one ending at %d", seg, base, next)
			}
			out = append(out, b[pos:pos+12+n]...)
			if n >= 49 { // the v2 header up to lastOffsetDelta
				next = base + int64(binary.BigEndian.Uint32(b[pos+23:])) + 1
			}
			pos += 12 + n
		}
	}
	return out, nil
}
