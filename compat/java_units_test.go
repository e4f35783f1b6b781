package compat

import (
	"fmt"
	"strings"
	"testing"
)

// Tests of the Java rows' output checkers against canned tool output; they
// need neither a broker nor Java.

func TestCheckTopicDescription(t *testing.T) {
	const good = "Topic: t\tTopicId: abc\tPartitionCount: 2\tReplicationFactor: 1\tConfigs: retention.ms=5,segment.bytes=9\n" +
		"\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n" +
		"\tTopic: t\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: \n"
	cases := []struct {
		name    string
		out     string
		wantErr string // empty: no error
	}{
		{"good", good, ""},
		{"wrong leader", strings.Replace(good, "Partition: 1\tLeader: 1", "Partition: 1\tLeader: 7", 1), "partition 1: leader 7, want 1"},
		{"unknown leader", strings.Replace(good, "Partition: 0\tLeader: 1", "Partition: 0\tLeader: none", 1), "partition 0: leader none"},
		{"extra replica", strings.Replace(good, "Replicas: 1\tIsr", "Replicas: 1,2\tIsr", 1), "replicas 1,2"},
		{"isr shrunk", strings.Replace(good, "Isr: 1\tElr: \tLastKnownElr: \n", "Isr: \tElr: \tLastKnownElr: \n", 1), "isr , want 1"},
		{"wrong id", strings.Replace(good, "TopicId: abc", "TopicId: abd", 1), "TopicId"},
		{"missing partition", strings.SplitAfterN(good, "\n", 3)[0] + strings.SplitAfterN(good, "\n", 3)[1], "1 partition lines, want 2"},
		{"missing config", strings.Replace(good, "retention.ms=5,", "", 1), "lack retention.ms=5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topics, err := parseTopicDescribe(c.out)
			if err == nil {
				d, ok := topics["t"]
				if !ok {
					t.Fatalf("topic t not parsed from %q", c.out)
				}
				err = checkTopicDescription(d, "abc", 2, "retention.ms=5")
			}
			checkJavaErr(t, err, c.wantErr)
		})
	}
}

func TestAPIVersionLine(t *testing.T) {
	cases := []struct {
		line           string
		name, lo, hi   string
		unsupported    bool
		shouldNotMatch bool
	}{
		{line: "\tProduce(0): 3 to 13 [usable: 13],", name: "Produce", lo: "3", hi: "13"},
		{line: "\tDescribeTopicPartitions(75): 0 [usable: 0],", name: "DescribeTopicPartitions", lo: "0"},
		{line: "\tOffsetCommit(8): UNSUPPORTED,", name: "OffsetCommit", unsupported: true},
		{line: "\tControlledShutdown(7): 1 to 3 [unusable: node too new],", name: "ControlledShutdown", lo: "1", hi: "3"},
		{line: "\tDeleteShareGroupOffsets(92): UNSUPPORTED", name: "DeleteShareGroupOffsets", unsupported: true},
		{line: "\tProduce(0): 3 to 13", shouldNotMatch: true},
		{line: "\tUNKNOWN(94): 0,", name: "UNKNOWN", lo: "0"},
		{line: "\tUNKNOWN(95): 0 to 2", name: "UNKNOWN", lo: "0", hi: "2"},
	}
	for _, c := range cases {
		m := matchAPIVersionLine(c.line)
		if c.shouldNotMatch {
			if m != nil {
				t.Errorf("%q matched", c.line)
			}
			continue
		}
		if m == nil {
			t.Errorf("%q did not match", c.line)
			continue
		}
		if m[1] != c.name || (m[3] == "UNSUPPORTED") != c.unsupported || m[4] != c.lo || m[5] != c.hi {
			t.Errorf("%q: got name %q versions %q %q (%s)", c.line, m[1], m[4], m[5], m[3])
		}
	}
}

// dumpOutput builds DumpLogSegments output for batches of the given sizes
// (record counts), each 100 bytes per record, with record lines.
func dumpOutput(path string, counts []int, mutate func(batch int, line string) string) (string, int64) {
	var b strings.Builder
	fmt.Fprintf(&b, "Dumping %s\nLog starting offset: 0\n", path)
	var offset, position int64
	for i, n := range counts {
		size := int64(n) * 100
		line := fmt.Sprintf("baseOffset: %d lastOffset: %d count: %d baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 1 size: %d magic: 2 compresscodec: none crc: 123 isvalid: true",
			offset, offset+int64(n)-1, n, position, size)
		if mutate != nil {
			line = mutate(i, line)
		}
		b.WriteString(line + "\n")
		for range n {
			fmt.Fprintf(&b, "| offset: %d CreateTime: 1 keySize: 5 valueSize: 7 sequence: -1 headerKeys: [] key: key-%d payload: value-%d\n", offset, offset, offset)
			offset++
		}
		position += size
	}
	return b.String(), position
}

func TestCheckDumpLog(t *testing.T) {
	const path = "/d/t-0/00000000000000000000.log"
	even := []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100}
	cases := []struct {
		name    string
		counts  []int
		mutate  func(int, string) string
		size    int64 // 0: the batches' total
		wantErr string
	}{
		{name: "good", counts: even},
		{name: "uneven batches", counts: []int{1, 499, 300, 200}},
		{name: "bad crc", counts: even, mutate: func(i int, l string) string {
			if i == 3 {
				return strings.Replace(l, "isvalid: true", "isvalid: false", 1)
			}
			return l
		}, wantErr: "isvalid: false"},
		{name: "magic 1", counts: even, mutate: func(i int, l string) string {
			return strings.Replace(l, "magic: 2", "magic: 1", 1)
		}, wantErr: "magic 1"},
		{name: "count disagrees", counts: even, mutate: func(i int, l string) string {
			if i == 2 {
				return strings.Replace(l, "count: 100", "count: 99", 1)
			}
			return l
		}, wantErr: "count 99"},
		{name: "too few records", counts: []int{100, 100, 100}, wantErr: "want exactly 0..999"},
		{name: "too many records", counts: []int{500, 501}, wantErr: "want exactly 0..999"},
		{name: "trailing bytes", counts: even, size: 100*1000 + 7, wantErr: "end at byte 100000 of a 100007-byte segment"},
		{name: "one batch", counts: []int{1000}, wantErr: "1 batch in the segment"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, size := dumpOutput(path, c.counts, c.mutate)
			if c.size != 0 {
				size = c.size
			}
			_, err := checkDumpLog(out, path, size)
			checkJavaErr(t, err, c.wantErr)
		})
	}

	// A batch that starts where the previous did not end, or a record
	// line with another record's payload.
	out, size := dumpOutput(path, even, nil)
	gap := strings.Replace(out, "baseOffset: 500 lastOffset: 599", "baseOffset: 501 lastOffset: 600", 1)
	if _, err := checkDumpLog(gap, path, size); err == nil {
		t.Error("a gap in the offsets passed")
	}
	swapped := strings.Replace(out, "key: key-42 payload: value-42", "key: key-42 payload: value-43", 1)
	if _, err := checkDumpLog(swapped, path, size); err == nil || !strings.Contains(err.Error(), "offset 42") {
		t.Errorf("a wrong payload: %v", err)
	}
}

func TestCheckDumpIndex(t *testing.T) {
	batches := []dumpBatch{{0, 99, 100, 0, 2000}, {100, 199, 100, 2000, 2000}, {200, 299, 100, 4000, 2000}}
	const head = "Dumping /d/t-0/00000000000000000000.index\n"
	cases := []struct {
		name, out, wantErr string
	}{
		{"good", head + "offset: 99 position: 0\noffset: 299 position: 4000\n", ""},
		{"wrong position", head + "offset: 199 position: 4000\n", "does not point"},
		{"not a last offset", head + "offset: 150 position: 2000\n", "does not point"},
		{"out of order", head + "offset: 299 position: 4000\noffset: 99 position: 0\n", "does not point"},
		{"empty", head, "no entries"},
		{"mismatch reported", head + "offset: 99 position: 0\nMismatches in :/d/t-0/00000000000000000000.index\n", "Mismatches"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkJavaErr(t, checkDumpIndex(c.out, batches), c.wantErr)
		})
	}
}

func TestParseConfigs(t *testing.T) {
	out := "Dynamic configs for topic t are:\n" +
		"  max.message.bytes=65536 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:max.message.bytes=65536, DEFAULT_CONFIG:message.max.bytes=1048588}\n" +
		"  retention.ms=12345 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=12345, DEFAULT_CONFIG:log.retention.hours=168}\n"
	entries, err := parseConfigs(out, "Dynamic configs for topic t are:")
	if err != nil {
		t.Fatal(err)
	}
	if err := wantConfigs("topic", entries, map[string]string{"retention.ms": "12345", "max.message.bytes": "65536"}, true); err != nil {
		t.Error(err)
	}
	checkJavaErr(t, wantConfigs("topic", entries, map[string]string{"retention.ms": "12345"}, true), "want only 1 entries")
	checkJavaErr(t, wantConfigs("topic", entries, map[string]string{"retention.ms": "1"}, false), "retention.ms=12345, want 1")
	if _, err := parseConfigs(out, "Dynamic configs for topic u are:"); err == nil {
		t.Error("a heading for another entity passed")
	}
}

// checkJavaErr fails t unless err is nil when want is empty, or err's message
// contains want.
func checkJavaErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want one containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("error %q does not contain %q", err, want)
	}
}
