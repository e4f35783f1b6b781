package main

import (
	"strings"
	"testing"
	"time"
)

// kafkaCleanerLog is Kafka 4.1.1's log around one cleaning pass, as a
// broker started by the harness wrote it (workload 14, -quick), with a
// second, made-up pass of another partition and one of this partition in
// the newer wording, with grouped digits.
const kafkaCleanerLog = `[2026-12-02 03:28:24,610] INFO Cleaner 0: Swapping in cleaned segment LogSegment(baseOffset=17219, size=1852679) (org.apache.kafka.storage.internals.log.Cleaner)
[2026-12-02 03:28:24,628] INFO [kafka-log-cleaner-thread-0]: 
	Log cleaner thread 0 cleaned log bench-clean-0 (dirty section = [0, 25878])
	23.3 MB of log processed in 0.8 seconds (28.1 MB/sec).
	Indexed 23.3 MB in 0.5 seconds (43.5 Mb/sec, 64.5% of total time)
	Buffer utilization: 0.0%
	Cleaned 23.3 MB in 0.3 seconds (79.0 Mb/sec, 35.5% of total time)
	Start size: 23.3 MB (25,878 messages)
	End size: 1.8 MB (1,999 messages)
	92.3% size reduction (92.3% fewer messages)
 (org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread)
[2026-12-02 03:28:25,628] INFO [kafka-log-cleaner-thread-0]: 
	Log cleaner thread 0 cleaned log other-0 (dirty section = [0, 10])
	0.1 MB of log processed in 0.0 seconds (5.0 MB/sec).
	Start size: 0.1 MB (10 messages)
	End size: 0.1 MB (10 messages)
 (org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread)
[2026-12-02 03:29:25,628] INFO [kafka-log-cleaner-thread-0]: 
	Log cleaner 0 cleaned log bench-clean-0 (dirty section = [25878, 1048576])
	1,024.0 MB of log processed in 10.2 seconds (100.0 MB/sec).
	Indexed 1,000.7 MB in 4.1 seconds (244.1 Mb/sec, 40.2% of total time)
	Buffer utilization: 1.9%
	Cleaned 1,024.0 MB in 6.1 seconds (167.9 Mb/sec, 59.8% of total time)
	Start size: 1,024.0 MB (1,048,576 messages)
	End size: 94.5 MB (96,663 messages)
	90.8% size reduction (90.8% fewer messages)
 (org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread)
`

func TestParseKafkaCleanLog(t *testing.T) {
	passes, err := parseKafkaCleanLog(kafkaCleanerLog, "bench-clean-0")
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's MB are MiB, to 0.05; a pass's time is MB over MB/sec.
	mb := func(v float64) int64 { return int64(v * (1 << 20)) }
	secs := func(mb, perSec float64) time.Duration { return time.Duration(mb / perSec * float64(time.Second)) }
	want := []cleanPass{
		{partition: "bench-clean-0", from: 0, to: 25878,
			bytesRead: mb(23.3), bytesWritten: mb(1.8),
			recordsRead: 25878, recordsWritten: 1999,
			elapsed: secs(23.3, 28.1)},
		{partition: "bench-clean-0", from: 25878, to: 1048576,
			bytesRead: 1024 << 20, bytesWritten: mb(94.5),
			recordsRead: 1048576, recordsWritten: 96663,
			elapsed: secs(1024, 100)},
	}
	if len(passes) != len(want) {
		t.Fatalf("got %d passes, want %d: %+v", len(passes), len(want), passes)
	}
	for i := range want {
		if passes[i] != want[i] {
			t.Errorf("pass %d:\n got %+v\nwant %+v", i, passes[i], want[i])
		}
	}
	tot := cleanTotals(passes)
	if tot.from != 0 || tot.to != 1048576 || tot.bytesRead != want[0].bytesRead+want[1].bytesRead || tot.elapsed != want[0].elapsed+want[1].elapsed {
		t.Errorf("totals %+v", tot)
	}

	// A summary whose last lines are not written yet is no pass yet.
	cut := strings.Index(kafkaCleanerLog, "\tEnd size: 1.8")
	passes, err = parseKafkaCleanLog(kafkaCleanerLog[:cut], "bench-clean-0")
	if err != nil || len(passes) != 0 {
		t.Errorf("partial summary: %d passes, err %v; want none", len(passes), err)
	}
	// Another partition's summaries are left out.
	passes, err = parseKafkaCleanLog(kafkaCleanerLog, "bench-clean-1")
	if err != nil || len(passes) != 0 {
		t.Errorf("bench-clean-1: %d passes, err %v; want none", len(passes), err)
	}
}

// TestParseKafkaCleanLogShortPass takes the time of a pass too short for
// a rate from its printed seconds.
func TestParseKafkaCleanLogShortPass(t *testing.T) {
	log := "\tLog cleaner thread 0 cleaned log t-0 (dirty section = [3, 4])\n" +
		"\t0.0 MB of log processed in 0.0 seconds (Infinity MB/sec).\n" +
		"\tStart size: 0.0 MB (1 messages)\n" +
		"\tEnd size: 0.0 MB (1 messages)\n"
	passes, err := parseKafkaCleanLog(log, "t-0")
	if err != nil || len(passes) != 1 {
		t.Fatalf("%d passes, err %v", len(passes), err)
	}
	if p := passes[0]; p.elapsed != 0 || p.recordsRead != 1 || p.from != 3 || p.to != 4 {
		t.Errorf("pass %+v", p)
	}
}

// TestParseSluiceCleanLog reads both forms of sluice's "log cleaned" line:
// the first as broker/cleaner.go wrote it before the cleaner kept
// statistics, the last with the names of Kafka's summary.
func TestParseSluiceCleanLog(t *testing.T) {
	log := `time=2026-12-02T03:26:30.000Z level=INFO msg="partition created" partition=bench-clean-0
time=2026-12-02T03:26:36.283Z level=INFO msg="log cleaned" partition=bench-clean-0 first_dirty=0 end=25878 bytes_before=24422262 bytes_after=1875011 records_before=25878 records_after=1999 duration=99.701075ms
time=2026-12-02T03:26:36.300Z level=INFO msg="log cleaned" partition=other-0 first_dirty=0 end=5 bytes_before=1 bytes_after=1 records_before=5 records_after=5 duration=1ms
time=2026-12-02T03:26:37.283Z level=INFO msg="log cleaned" thread=0 partition=bench-clean-0 dirty_section="[25878, 30000)" mb_processed=0.00 duration=1.5s mb_per_sec=0.00 buffer_utilization_pct=0.0 start_bytes=100 start_records=10 end_bytes=50 end_records=5 bytes_freed=50 size_reduction_pct=50.0 fewer_records_pct=50.0 dirty_ratio_before=0.500 dirty_ratio_after=0.000 throttled=0s expired_tombstones_only=false
`
	passes, err := parseSluiceCleanLog(log, "bench-clean-0")
	if err != nil {
		t.Fatal(err)
	}
	want := []cleanPass{
		{partition: "bench-clean-0", from: 0, to: 25878, bytesRead: 24422262, bytesWritten: 1875011, recordsRead: 25878, recordsWritten: 1999, elapsed: 99701075 * time.Nanosecond},
		{partition: "bench-clean-0", from: 25878, to: 30000, bytesRead: 100, bytesWritten: 50, recordsRead: 10, recordsWritten: 5, elapsed: 1500 * time.Millisecond},
	}
	if len(passes) != len(want) {
		t.Fatalf("got %d passes, want %d: %+v", len(passes), len(want), passes)
	}
	for i := range want {
		if passes[i] != want[i] {
			t.Errorf("pass %d:\n got %+v\nwant %+v", i, passes[i], want[i])
		}
	}

	// A line without a figure the workload needs fails it, rather than
	// reading as zero.
	broken := `time=x level=INFO msg="log cleaned" partition=bench-clean-0 first_dirty=0 end=1 bytes_read=5 bytes_after=1 records_before=1 records_after=1 duration=1ms`
	if _, err := parseSluiceCleanLog(broken, "bench-clean-0"); err == nil || !strings.Contains(err.Error(), "bytes_before") {
		t.Errorf("line without bytes_before: err %v", err)
	}
	broken = `time=x level=INFO msg="log cleaned" partition=bench-clean-0 dirty_section="[0 1)" duration=1ms start_bytes=1 start_records=1 end_bytes=1 end_records=1`
	if _, err := parseSluiceCleanLog(broken, "bench-clean-0"); err == nil || !strings.Contains(err.Error(), "dirty_section") {
		t.Errorf("malformed dirty_section: err %v", err)
	}
}

func TestParseLogfmt(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       map[string]string
		err        bool
	}{
		{"plain", `a=1 b=two`, map[string]string{"a": "1", "b": "two"}, false},
		{"quoted", `msg="log cleaned" err="a \"b\" c=d" n=3`, map[string]string{"msg": "log cleaned", "err": `a "b" c=d`, "n": "3"}, false},
		{"empty value", `a= b=1`, map[string]string{"a": "", "b": "1"}, false},
		{"no equals", `a=1 junk`, nil, true},
		{"open quote", `a="x`, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseLogfmt(tc.line)
			if (err != nil) != tc.err {
				t.Fatalf("err %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// TestCleanedView checks what workload 14 expects a consumer to read after
// cleaning, on records small enough to write out: keys 0 1 0 2 1 0, the
// fourth a tombstone, cleaned below offset 4.
func TestCleanedView(t *testing.T) {
	d := &cleanData{
		keys:   []int32{0, 1, 0, 2, 1, 0},
		tomb:   []bool{false, false, false, true, false, false},
		latest: []int64{5, 4, 3},
	}
	pool := newValuePool(8)
	v := d.cleanedView(4)
	// Below 4: key 0's last is 2, key 1's 1, key 2's tombstone 3; then 4
	// and 5.
	if want := []int64{2, 1, 3}; v.kept[0] != want[0] || v.kept[1] != want[1] || v.kept[2] != want[2] {
		t.Errorf("kept %v, want %v", v.kept, want)
	}
	if v.records != 5 {
		t.Errorf("records %d, want 5", v.records)
	}
	read := func(o int64) (key, value []byte) { return d.key(o), d.value(pool, o) }
	check := func(o, prev int64) error {
		k, val := read(o)
		return d.checkRecord(pool, v, o, prev, k, val)
	}
	// The cleaned log as it should be: 1 2 3 4 5.
	prev := int64(-1)
	for _, o := range []int64{1, 2, 3, 4, 5} {
		if err := check(o, prev); err != nil {
			t.Errorf("offset %d: %v", o, err)
		}
		prev = o
	}
	for _, tc := range []struct {
		name     string
		o, prev  int64
		key, val []byte
	}{
		{"an older record of a key kept", 0, -1, nil, nil},
		{"a record above the cleaned offset missing", 5, 3, nil, nil},
		{"offsets going back", 2, 3, nil, nil},
		{"past the end", 6, 5, []byte("key-00000000"), nil},
		{"another key", 1, 0, []byte("key-00000009"), pool.at(1)},
		{"a tombstone with a value", 3, 2, []byte("key-00000002"), pool.at(3)},
		{"a value lost", 4, 3, []byte("key-00000001"), nil},
		{"another value", 4, 3, []byte("key-00000001"), pool.at(5)},
	} {
		key, val := tc.key, tc.val
		if key == nil && tc.o < int64(len(d.keys)) {
			key, val = read(tc.o)
		}
		if err := d.checkRecord(pool, v, tc.o, tc.prev, key, val); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
