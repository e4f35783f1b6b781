package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ackedRecord is a record the broker acknowledged with acks=all.
type ackedRecord struct {
	partition int32
	offset    int64
	key       string
	value     string
}

// TestKill9MidStream kills the broker with SIGKILL while an acks=all
// producer streams keyed records to a three-partition topic, then restarts
// it on the same directory and port: every acknowledged record must be
// readable, unchanged, at the offset it was acknowledged at; each partition
// must end on a whole batch; and producing must continue at the next offset.
// Then it kills the broker again, cuts the last batch of one partition in
// half by hand and checks that recovery drops exactly that batch.
func TestKill9MidStream(t *testing.T) {
	t.Parallel()
	dir, port := t.TempDir(), freePort(t)
	const topic = "kill9"
	// Small segments so the stream spans several segment files and the
	// recovery scan covers more than one file per partition.
	const segmentBytes = "log.segment.bytes=16384"
	p := startSluice(t, dir, port, "--override", segmentBytes)
	p.createTopic(topic, 3)

	acked := produceUntilKilled(t, p, topic, 3000)

	// Restart: recovery must keep every acknowledged record.
	p = startSluice(t, dir, port, "--override", segmentBytes)
	rs := p.recovery()
	t.Logf("restart after SIGKILL: %+v", rs)
	if rs.cleanShutdown || rs.segmentsScanned == 0 {
		t.Errorf("restart after SIGKILL did not recover the log: %+v", rs)
	}
	ends := p.endOffsets(topic)
	t.Logf("end offsets after restart: %v", ends)
	records := p.consumeAll(topic, ends)
	checkAcked(t, topic, acked, records, ends)
	for part := int32(0); part < 3; part++ {
		// Each log ends on a whole batch: the last record consumed is
		// the one just below the listed end offset, with no gap before.
		read := records[part]
		for i, r := range read {
			if r.Offset != int64(i) {
				t.Fatalf("%s[%d]: record %d has offset %d: the log has a gap", topic, part, i, r.Offset)
			}
		}
		if got := int64(len(read)); got != ends[part] {
			t.Errorf("%s[%d]: consumed up to offset %d, ListOffsets end is %d", topic, part, got-1, ends[part])
		}
		if off := p.produceTo(topic, part, "after-restart", "after-restart"); off != ends[part] {
			t.Errorf("%s[%d]: produce after restart landed at %d, want the old end %d", topic, part, off, ends[part])
		}
	}

	// Hand-cut variant: kill again and tear the last batch of partition 1
	// in the middle, as a crash during a write would.
	const part = 1
	tail := make([]*kgo.Record, 20)
	for i := range tail {
		tail[i] = &kgo.Record{Topic: topic, Partition: part, Key: fmt.Appendf(nil, "tail-%d", i), Value: []byte("tail")}
	}
	p.produce(tail...)
	p.kill()
	segPath, batchBase, batchStart, batchSize := lastBatch(t, filepath.Join(dir, fmt.Sprintf("%s-%d", topic, part)))
	cut := batchStart + batchSize/2
	if err := os.Truncate(segPath, cut); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut %s at %d, inside the batch at %d (base offset %d, %d bytes)", filepath.Base(segPath), cut, batchStart, batchBase, batchSize)

	p = startSluice(t, dir, port, "--override", segmentBytes)
	rs = p.recovery()
	t.Logf("restart after the cut: %+v", rs)
	if rs.bytesTruncated != batchSize/2 {
		t.Errorf("recovery truncated %d bytes, want the %d bytes left of the torn batch", rs.bytesTruncated, batchSize/2)
	}
	ends2 := p.endOffsets(topic)
	if ends2[part] != batchBase {
		t.Fatalf("%s[%d]: end offset after the cut = %d, want the torn batch's base offset %d", topic, part, ends2[part], batchBase)
	}
	if ends2[part] < ends[part]+1 {
		t.Errorf("%s[%d]: the cut reached below the tail records produced before it (end %d, was %d before the tail)", topic, part, ends2[part], ends[part]+1)
	}
	for q := int32(0); q < 3; q++ {
		if q != part && ends2[q] != ends[q]+1 {
			t.Errorf("%s[%d]: end offset %d after the cut, want %d (untouched)", topic, q, ends2[q], ends[q]+1)
		}
	}
	records = p.consumeAll(topic, map[int32]int64{part: ends2[part]})
	var before []ackedRecord
	for _, a := range acked {
		if a.partition == part && a.offset < batchBase {
			before = append(before, a)
		}
	}
	checkAcked(t, topic, before, records, ends2)
	if got := int64(len(records[part])); got != batchBase {
		t.Errorf("%s[%d]: %d records readable before the torn batch, want %d", topic, part, got, batchBase)
	}
	if off := p.produceTo(topic, part, "after-cut", "after-cut"); off != batchBase {
		t.Errorf("%s[%d]: produce after the cut landed at %d, want %d", topic, part, off, batchBase)
	}
}

// produceUntilKilled streams keyed records with acks=all to topic until at
// least minAcked are acknowledged, then SIGKILLs the broker with produce
// requests in flight. It returns the acknowledged records.
func produceUntilKilled(t *testing.T, p *sluiceProc, topic string, minAcked int) []ackedRecord {
	t.Helper()
	prod := p.client(
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Small batches keep several requests in flight at the kill.
		kgo.ProducerBatchMaxBytes(16<<10),
		kgo.MaxBufferedRecords(2000),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu        sync.Mutex
		acked     []ackedRecord
		nAcked    atomic.Int64
		wg        sync.WaitGroup
		killed    = make(chan struct{})
		killOnce  sync.Once
		nProduced atomic.Int64
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{
				Key:   fmt.Appendf(nil, "key-%d", i),
				Value: fmt.Appendf(nil, "value-%d-%s", i, strings.Repeat("x", i%97)),
			}
			nProduced.Add(1)
			prod.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					return // failed by the kill or by Close: not acknowledged
				}
				mu.Lock()
				acked = append(acked, ackedRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)})
				mu.Unlock()
				if nAcked.Add(1) >= int64(minAcked) {
					killOnce.Do(func() { close(killed) })
				}
			})
		}
	}()
	<-killed
	p.kill()
	cancel()
	prod.Close() // fails every record not acknowledged yet
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("SIGKILL with a stream in flight: %d records produced, %d acknowledged", nProduced.Load(), len(acked))
	return slices.Clone(acked)
}

// checkAcked checks that every acknowledged record was read back with the
// same key and value at the same offset.
func checkAcked(t *testing.T, topic string, acked []ackedRecord, got map[int32][]*kgo.Record, ends map[int32]int64) {
	t.Helper()
	byOffset := make(map[int32]map[int64]*kgo.Record)
	for part, rs := range got {
		byOffset[part] = make(map[int64]*kgo.Record, len(rs))
		for _, r := range rs {
			byOffset[part][r.Offset] = r
		}
	}
	bad := 0
	for _, a := range acked {
		r := byOffset[a.partition][a.offset]
		switch {
		case r == nil:
			t.Errorf("acknowledged %s[%d]@%d (%s) is gone; end offset %d", topic, a.partition, a.offset, a.key, ends[a.partition])
		case string(r.Key) != a.key || string(r.Value) != a.value:
			t.Errorf("%s[%d]@%d: acknowledged %s=%q, read back %s=%q", topic, a.partition, a.offset, a.key, a.value, r.Key, r.Value)
		default:
			continue
		}
		if bad++; bad > 10 {
			t.Fatalf("too many lost or changed records")
		}
	}
}

// batchHeaderSize is the record batch v2 header; the first 12 bytes are
// baseOffset int64 and batchLength int32 (bytes after the length field).
const batchHeaderSize = 61

// lastBatch finds the last complete record batch of the newest non-empty
// segment in a partition directory by walking the batch headers from the
// start of the file. It returns the segment's path and the batch's base
// offset, file position and total size.
func lastBatch(t *testing.T, partDir string) (path string, base, start, size int64) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(partDir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no segments in %s: %v", partDir, err)
	}
	slices.Sort(logs) // 20-digit zero-padded names sort by base offset
	for i := len(logs) - 1; i >= 0; i-- {
		data, err := os.ReadFile(logs[i])
		if err != nil {
			t.Fatal(err)
		}
		start = -1
		for pos := int64(0); pos+batchHeaderSize <= int64(len(data)); {
			n := int64(int32(binary.BigEndian.Uint32(data[pos+8:])))
			end := pos + 12 + n
			if n < batchHeaderSize-12 || end > int64(len(data)) {
				t.Fatalf("%s: bad or torn batch at %d before any cut", logs[i], pos)
			}
			base, start, size = int64(binary.BigEndian.Uint64(data[pos:])), pos, end-pos
			pos = end
		}
		if start >= 0 {
			return logs[i], base, start, size
		}
	}
	t.Fatalf("no batches in %s", partDir)
	return
}
