package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The bytes-on-disk check. A produce workload's MiB/s mean something only
// if those bytes reached the brokers' disks: a client that compresses
// repeated values moves a fraction of what it reports (issue 15: one
// random value in every record, snappy, 48 MiB of records in 2.8 MiB of
// segments). After each workload that produces (1, 2, and 3's write), the
// harness compares the bytes the producers sent, uncompressed — what the
// client's batch hook reports: the records as serialised plus the 61-byte
// header of each batch — with the growth of every node's .log files for
// the topic, and fails the workload when a node's growth is off by more
// than landedTolerance. Each of the three nodes holds a replica of every
// partition (RF 3 on three nodes), so each should hold all of it. With
// incompressible values (valuePool) a codec saves nothing, so the figures
// agree whether the producers compress or not.

// The workloads that produce, as the bytes-on-disk table names them.
const (
	landedProduce = "1 producer throughput"
	landedLatency = "2 produce latency"
	landedConsume = "3 consumer throughput (its write)"
)

// batchHeaderBytes is the size of a record batch's header (magic v2), which
// ProduceBatchMetrics leaves out.
const batchHeaderBytes = 61

// landedTolerance is how far a node's on-disk growth may be from the bytes
// sent, as a fraction of them: a codec's framing of incompressible values
// and what it finds to squeeze in the record headers (about 1% of a 1 KiB
// record) — well below what compressible values would save.
const landedTolerance = 0.02

// ledger counts what the producers of one system had acknowledged to one
// topic, from franz-go's OnProduceBatchWritten hook, and where the last
// check of it left off.
type ledger struct {
	mu                       sync.Mutex
	batches, records         int64
	uncompressed, compressed int64 // record bytes, without batch headers

	// Where the last check left off; only the runner's goroutine uses
	// these.
	checked       ledgerCounts
	landedAtCheck map[int32]int64 // node id → .log bytes at the last check
}

// ledgerCounts are a ledger's totals at one moment.
type ledgerCounts struct {
	batches, records, uncompressed, compressed int64
}

func (l *ledger) counts() ledgerCounts {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ledgerCounts{l.batches, l.records, l.uncompressed, l.compressed}
}

// sub returns c minus base.
func (c ledgerCounts) sub(base ledgerCounts) ledgerCounts {
	return ledgerCounts{c.batches - base.batches, c.records - base.records, c.uncompressed - base.uncompressed, c.compressed - base.compressed}
}

// ledgers are a runner's ledgers by topic; it is the hook every client of
// the runner carries.
type ledgers struct {
	mu     sync.Mutex
	topics map[string]*ledger
}

// of returns topic's ledger, creating it.
func (ls *ledgers) of(topic string) *ledger {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.topics == nil {
		ls.topics = map[string]*ledger{}
	}
	l := ls.topics[topic]
	if l == nil {
		l = &ledger{landedAtCheck: map[int32]int64{}}
		ls.topics[topic] = l
	}
	return l
}

// OnProduceBatchWritten implements kgo.HookProduceBatchWritten. franz-go
// calls it, in a goroutine of its own, for each batch a broker
// acknowledged.
func (ls *ledgers) OnProduceBatchWritten(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.ProduceBatchMetrics) {
	l := ls.of(topic)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches++
	l.records += int64(m.NumRecords)
	l.uncompressed += int64(m.UncompressedBytes)
	l.compressed += int64(m.CompressedBytes)
}

// bytesRow is one line of the bytes-on-disk table: one produce workload
// on one system.
type bytesRow struct {
	system, workload, topic string
	records, batches        int64
	values                  int64 // record value bytes
	sent                    int64 // uncompressed: records and batch headers
	wire                    int64 // as sent: compressed records and batch headers
	landed                  []int64
	nodes                   []int32
	err                     error // the disagreement, if any
}

// checkLanded is the bytes-on-disk check after workload (a label for the
// table) wrote records more records to topic since the topic's last
// check: it waits until the client's hook has counted them and every
// node's .log files for topic stop growing and agree, then compares each
// node's growth with the bytes sent, records a row of the bytes table and
// returns an error when they disagree.
func (r *runner) checkLanded(ctx context.Context, workload, topic string, records int64) error {
	l := r.ledgers.of(topic)
	var got ledgerCounts
	err := poll(ctx, time.Minute, 50*time.Millisecond, func() error {
		got = l.counts().sub(l.checked)
		if got.records < records {
			return fmt.Errorf("the client's hook counted %d of %d acknowledged records", got.records, records)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("bytes on disk: %w", err)
	}
	var landed []int64
	var prev []int64
	err = poll(ctx, time.Minute, 200*time.Millisecond, func() error {
		now, err := r.logBytes(topic)
		if err != nil {
			return permanent{err}
		}
		for i, n := range r.c.nodes {
			now[i] -= l.landedAtCheck[n.id]
		}
		stable := prev != nil && equal(now, prev)
		prev, landed = now, now
		if !stable {
			return errors.New("still growing")
		}
		for _, v := range now[1:] {
			if v != now[0] {
				return fmt.Errorf("nodes disagree: %v bytes", now)
			}
		}
		return nil
	})
	row := bytesRow{
		system: r.name(), workload: workload, topic: topic,
		records: got.records, batches: got.batches,
		values: got.records * int64(r.cfg.recordSize),
		sent:   got.uncompressed + batchHeaderBytes*got.batches,
		wire:   got.compressed + batchHeaderBytes*got.batches,
		landed: landed,
	}
	for _, n := range r.c.nodes {
		row.nodes = append(row.nodes, n.id)
	}
	if err != nil {
		row.err = fmt.Errorf("the segments did not settle: %w", err)
	}
	for i, v := range landed {
		if row.err == nil && !within(v, row.sent, landedTolerance) {
			row.err = fmt.Errorf("node %d's segments of %s grew by %d bytes for %d bytes sent (%.3f×, tolerance ±%.0f%%)",
				row.nodes[i], topic, v, row.sent, float64(v)/float64(max(row.sent, 1)), 100*landedTolerance)
		}
	}
	r.res.addBytes(row)
	r.logf("%s: %d records in %d batches, %s sent, %s on the wire, landed per node %s",
		workload, row.records, row.batches, mibText(row.sent), mibText(row.wire), mibList(row.landed))
	if row.err != nil {
		return fmt.Errorf("bytes on disk: %w", row.err)
	}
	l.checked = l.checked.add(got)
	for i, n := range r.c.nodes {
		l.landedAtCheck[n.id] += landed[i]
	}
	return nil
}

func (c ledgerCounts) add(d ledgerCounts) ledgerCounts {
	return ledgerCounts{c.batches + d.batches, c.records + d.records, c.uncompressed + d.uncompressed, c.compressed + d.compressed}
}

// logBytes returns, for each node of the cluster in order, the total size
// of the .log segment files of topic's partitions in the node's data
// directory (<topic>-<partition>/, the layout Kafka and sluice share).
// Index files are left out: Kafka preallocates them.
func (r *runner) logBytes(topic string) ([]int64, error) {
	out := make([]int64, len(r.c.nodes))
	for i, n := range r.c.nodes {
		entries, err := os.ReadDir(n.dataDir)
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", n.id, err)
		}
		for _, e := range entries {
			p, ok := strings.CutPrefix(e.Name(), topic+"-")
			if !ok || !e.IsDir() {
				continue
			}
			if _, err := strconv.ParseUint(p, 10, 31); err != nil {
				continue // another topic with this prefix, or a deleted one
			}
			files, err := os.ReadDir(filepath.Join(n.dataDir, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", n.id, err)
			}
			for _, f := range files {
				if !strings.HasSuffix(f.Name(), ".log") {
					continue
				}
				info, err := f.Info()
				if errors.Is(err, os.ErrNotExist) {
					continue // deleted under us
				}
				if err != nil {
					return nil, fmt.Errorf("node %d: %w", n.id, err)
				}
				out[i] += info.Size()
			}
		}
	}
	return out, nil
}

// within reports whether v is within tol (a fraction) of want.
func within(v, want int64, tol float64) bool {
	d := float64(v - want)
	return d >= -tol*float64(want) && d <= tol*float64(want)
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// mibText prints bytes in MiB.
func mibText(b int64) string { return formatValue(float64(b)/(1<<20)) + " MiB" }

// mibList prints each of bs in MiB, separated by slashes.
func mibList(bs []int64) string {
	var s []string
	for _, b := range bs {
		s = append(s, formatValue(float64(b)/(1<<20)))
	}
	return strings.Join(s, " / ") + " MiB"
}

// writeBytesTable prints the bytes-on-disk rows as a Markdown table.
func (r *results) writeBytesTable(w io.Writer) {
	r.mu.Lock()
	rows := r.bytes
	r.mu.Unlock()
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Bytes on disk (per node: growth of the topic's .log files; sent: uncompressed records and batch headers; tolerance ±%.0f%%):\n\n", 100*landedTolerance)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| workload\t| system\t| records\t| batches\t| values MiB\t| sent MiB\t| on the wire MiB\t| wire / sent\t| landed per node MiB\t| landed / sent\t| check\t|")
	fmt.Fprintln(tw, "|---\t|---\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|---\t|")
	for _, row := range rows {
		mib := func(b int64) string { return formatValue(float64(b) / (1 << 20)) }
		lo, hi := 0.0, 0.0
		for i, v := range row.landed {
			q := float64(v) / float64(max(row.sent, 1))
			if i == 0 || q < lo {
				lo = q
			}
			if i == 0 || q > hi {
				hi = q
			}
		}
		ratio := fmt.Sprintf("%.3f", lo)
		if hi != lo {
			ratio += fmt.Sprintf("–%.3f", hi)
		}
		check := "ok"
		if row.err != nil {
			check = "FAILED"
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %d\t| %d\t| %s\t| %s\t| %s\t| %.3f\t| %s\t| %s\t| %s\t|\n",
			row.workload, row.system, row.records, row.batches, mib(row.values), mib(row.sent), mib(row.wire),
			float64(row.wire)/float64(max(row.sent, 1)),
			strings.TrimSuffix(mibList(row.landed), " MiB"), ratio, check)
	}
	tw.Flush()
}
