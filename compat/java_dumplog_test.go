package compat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The kafka-dump-log row: Kafka's own segment reader over a segment sluice
// wrote, the proof that sluice's on-disk format is Kafka's.

const (
	dumpLogTopic   = "compat-dump-log"
	dumpLogRecords = 1000
	// dumpLogBatch makes kcat send batches of 100, so that the segment
	// holds several batches and its offset index gets entries.
	dumpLogBatch = 100
)

func javaDumpLogRow() row {
	r := javaRow("kafka-dump-log", 2*time.Minute, runJavaDumpLog)
	r.tools = append(r.tools, "kcat")
	return r
}

var (
	// dumpBatchLine is a batch header of DumpLogSegments: "baseOffset: 0
	// lastOffset: 99 count: 100 ... position: 0 CreateTime: ... size: 2177
	// magic: 2 compresscodec: none crc: 3649267368 isvalid: true".
	dumpBatchLine = regexp.MustCompile(`^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .* position: (\d+) .* size: (\d+) magic: (\d+) compresscodec: (\S+) crc: (\d+) isvalid: (true|false)$`)
	// dumpRecordLine is a record under --print-data-log: "| offset: 5
	// CreateTime: ... key: key-5 payload: value-5".
	dumpRecordLine = regexp.MustCompile(`^\| offset: (\d+) .* key: (\S*) payload: (.*)$`)
	// dumpIndexLine is an offset index entry: "offset: 299 position: 4574".
	dumpIndexLine = regexp.MustCompile(`^offset: (\d+) position: (\d+)$`)
)

// dumpBatch is one parsed batch header.
type dumpBatch struct {
	base, last, count, position, size int64
}

// runJavaDumpLog produces exactly 1,000 keyed records with kcat to one
// partition, then runs kafka-dump-log.sh --print-data-log on the segment
// sluice wrote and checks that its batches cover offsets 0..999 exactly
// once, back to back from position 0 to the end of the file, each with a
// valid CRC and magic 2, and that its records are the ones kcat sent, in
// order. It then dumps the offset index and checks every entry points at
// the start of the batch whose last offset it names, as Kafka's index does.
func runJavaDumpLog(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, dumpLogTopic, 1); err != nil {
		return err
	}
	var input strings.Builder
	for i := range dumpLogRecords {
		fmt.Fprintf(&input, "key-%d:value-%d\n", i, i)
	}
	produce := exec.CommandContext(ctx, "kcat", "-P", "-b", addr, "-t", dumpLogTopic, "-p", "0", "-K", ":",
		"-X", "batch.num.messages="+strconv.Itoa(dumpLogBatch), "-X", "linger.ms=100",
		// Fail in half a minute, not the default five, when the broker
		// does not take the records.
		"-X", "message.timeout.ms=30000")
	produce.Stdin = strings.NewReader(input.String())
	if out, err := produce.CombinedOutput(); err != nil {
		return fmt.Errorf("kcat -P: %v: %s", err, firstLine(string(out)))
	} else if bad := kcatErrorLine(out); bad != "" {
		return fmt.Errorf("kcat -P: %s", bad)
	}

	// sluice writes a segment's index entries to its .index file when the
	// segment is flushed, rolled or closed, not on every append (a
	// segment holds one descriptor, its .log's): stop the broker, a clean
	// shutdown, so the dump reads complete files.
	if err := env.broker.stop(); err != nil {
		return fmt.Errorf("stopping the broker before the dump: %w", err)
	}
	segment := filepath.Join(env.dir, "data", dumpLogTopic+"-0", "00000000000000000000")
	fi, err := os.Stat(segment + ".log")
	if err != nil {
		return fmt.Errorf("sluice's segment: %w", err)
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-dump-log.sh", "--files", segment+".log", "--print-data-log")
	if err != nil {
		return err
	}
	batches, err := checkDumpLog(out, segment+".log", fi.Size())
	if err != nil {
		return err
	}
	env.t.Logf("kafka-dump-log.sh: %d batches, %d records, %d bytes", len(batches), dumpLogRecords, fi.Size())

	out, err = kafkaTool(ctx, env, nil, "kafka-dump-log.sh", "--files", segment+".index")
	if err != nil {
		return err
	}
	return checkDumpIndex(out, batches)
}

// checkDumpLog checks DumpLogSegments' output for the segment at path of
// size bytes and returns its batches.
func checkDumpLog(out, path string, size int64) ([]dumpBatch, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 2 || lines[0] != "Dumping "+path || lines[1] != "Log starting offset: 0" {
		return nil, fmt.Errorf("dump-log output starts %q, want \"Dumping %s\" and \"Log starting offset: 0\"", firstLine(out), path)
	}
	var batches []dumpBatch
	var next, position, records int64
	for _, line := range lines[2:] {
		if m := dumpBatchLine.FindStringSubmatch(line); m != nil {
			var b dumpBatch
			for i, dst := range []*int64{&b.base, &b.last, &b.count, &b.position, &b.size} {
				*dst, _ = strconv.ParseInt(m[i+1], 10, 64)
			}
			switch {
			case m[9] != "true":
				return nil, fmt.Errorf("batch at offset %d: isvalid: %s (crc %s)", b.base, m[9], m[8])
			case m[6] != "2":
				return nil, fmt.Errorf("batch at offset %d: magic %s, want 2", b.base, m[6])
			case b.base != next:
				return nil, fmt.Errorf("batch baseOffset %d, want %d (the offset after the previous batch)", b.base, next)
			case b.last-b.base+1 != b.count:
				return nil, fmt.Errorf("batch %d..%d: count %d", b.base, b.last, b.count)
			case b.position != position:
				return nil, fmt.Errorf("batch at offset %d: position %d, want %d (the end of the previous batch)", b.base, b.position, position)
			case records != b.base:
				return nil, fmt.Errorf("batch at offset %d follows %d record lines", b.base, records)
			}
			batches = append(batches, b)
			next, position = b.last+1, b.position+b.size
			continue
		}
		if m := dumpRecordLine.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseInt(m[1], 10, 64)
			if len(batches) == 0 || off != records || off > batches[len(batches)-1].last {
				return nil, fmt.Errorf("record line %q out of place: want offset %d", line, records)
			}
			wantKey, wantValue := fmt.Sprintf("key-%d", off), fmt.Sprintf("value-%d", off)
			if m[2] != wantKey || m[3] != wantValue {
				return nil, fmt.Errorf("offset %d: key %q payload %q, want %q %q", off, m[2], m[3], wantKey, wantValue)
			}
			records++
			continue
		}
		return nil, fmt.Errorf("dump-log: unexpected line %q", line)
	}
	if next != dumpLogRecords || records != dumpLogRecords {
		return nil, fmt.Errorf("batches cover offsets 0..%d with %d records, want exactly 0..%d", next-1, records, dumpLogRecords-1)
	}
	if position != size {
		return nil, fmt.Errorf("batches end at byte %d of a %d-byte segment", position, size)
	}
	if len(batches) < 2 {
		return nil, fmt.Errorf("%d batch in the segment; kcat was asked for batches of %d", len(batches), dumpLogBatch)
	}
	return batches, nil
}

// checkDumpIndex checks DumpLogSegments' output for an offset index against
// the segment's batches: every entry names a batch's last offset and that
// batch's position, in increasing order, and DumpLogSegments found no
// mismatch.
func checkDumpIndex(out string, batches []dumpBatch) error {
	byLast := map[int64]int64{}
	for _, b := range batches {
		byLast[b.last] = b.position
	}
	entries := 0
	prev := int64(-1)
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.HasPrefix(line, "Dumping ") {
			continue
		}
		if strings.Contains(strings.ToLower(line), "mismatch") {
			return fmt.Errorf("offset index: %s", line)
		}
		m := dumpIndexLine.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("offset index: unexpected line %q", line)
		}
		off, _ := strconv.ParseInt(m[1], 10, 64)
		pos, _ := strconv.ParseInt(m[2], 10, 64)
		want, ok := byLast[off]
		if !ok || pos != want || off <= prev {
			return fmt.Errorf("offset index entry %q does not point at the batch ending at offset %d", line, off)
		}
		prev = off
		entries++
	}
	// index.interval.bytes is 4096 and the segment holds over 20 KB.
	if entries == 0 {
		return fmt.Errorf("offset index has no entries for a %d-batch segment", len(batches))
	}
	return nil
}
