package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Rows for Kafka's tools that read and write data and offsets:
// kafka-get-offsets.sh, kafka-delete-records.sh, kafka-log-dirs.sh and the
// console producer and consumer.

func javaGetOffsetsRow() row {
	return javaRow("kafka-get-offsets", 2*time.Minute, runJavaGetOffsets)
}

// parseOffsets parses kafka-get-offsets.sh's "topic:partition:offset" lines.
func parseOffsets(out string) (map[string]int64, error) {
	got := map[string]int64{}
	for _, line := range strings.Fields(out) {
		i := strings.LastIndexByte(line, ':')
		if i < 0 {
			return nil, fmt.Errorf("cannot parse %q", line)
		}
		off, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse %q", line)
		}
		got[line[:i]] = off
	}
	return got, nil
}

// runJavaGetOffsets produces 10 records to partition 0 and 25 to partition
// 1 of a 3-partition topic, one second apart in CreateTime, and checks
// kafka-get-offsets.sh for the latest, earliest and max-timestamp offsets
// and for a lookup by timestamp.
func runJavaGetOffsets(ctx context.Context, env *rowEnv) error {
	const topic = "compat-offsets"
	addr := env.broker.addr
	if err := createTopic(ctx, addr, topic, 3); err != nil {
		return err
	}
	cl, _, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := produceTo(ctx, cl, topic, 0, 10, "p0", base); err != nil {
		return err
	}
	if err := produceTo(ctx, cl, topic, 1, 25, "p1", base); err != nil {
		return err
	}

	// An empty partition has no offset for a timestamp, so the tool leaves
	// it out of the max-timestamp and by-timestamp answers.
	at := base.Add(5500 * time.Millisecond).UnixMilli()
	cases := []struct {
		name string
		args []string
		want map[string]int64
	}{
		{"latest", nil, map[string]int64{topic + ":0": 10, topic + ":1": 25, topic + ":2": 0}},
		{"earliest", []string{"--time", "-2"}, map[string]int64{topic + ":0": 0, topic + ":1": 0, topic + ":2": 0}},
		{"max-timestamp", []string{"--time", "-3"}, map[string]int64{topic + ":0": 9, topic + ":1": 24}},
		{"by timestamp", []string{"--time", strconv.FormatInt(at, 10)}, map[string]int64{topic + ":0": 6, topic + ":1": 6}},
	}
	for _, c := range cases {
		out, err := kafkaTool(ctx, env, nil, "kafka-get-offsets.sh",
			append([]string{"--bootstrap-server", addr, "--topic", topic}, c.args...)...)
		if err != nil {
			return err
		}
		got, err := parseOffsets(out)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		if !maps.Equal(got, c.want) {
			return fmt.Errorf("%s offsets: tool printed %v, want %v", c.name, got, c.want)
		}
	}
	return nil
}

func javaDeleteRecordsRow() row {
	return javaRow("kafka-delete-records", 2*time.Minute, runJavaDeleteRecords)
}

// runJavaDeleteRecords deletes records before offset 40 of partition 0 and
// all of partition 1 (offset -1: up to the high watermark) with
// kafka-delete-records.sh, and checks the low watermarks it prints and the
// log start offsets franz-go then sees.
func runJavaDeleteRecords(ctx context.Context, env *rowEnv) error {
	const topic = "compat-delete-records"
	addr := env.broker.addr
	if err := createTopic(ctx, addr, topic, 2); err != nil {
		return err
	}
	cl, adm, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := produceTo(ctx, cl, topic, 0, 100, "p0", time.Now()); err != nil {
		return err
	}
	if err := produceTo(ctx, cl, topic, 1, 50, "p1", time.Now()); err != nil {
		return err
	}
	spec := fmt.Sprintf(`{"partitions":[{"topic":%q,"partition":0,"offset":40},{"topic":%q,"partition":1,"offset":-1}],"version":1}`, topic, topic)
	specPath := filepath.Join(env.dir, "delete-records.json")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-delete-records.sh", "--bootstrap-server", addr, "--offset-json-file", specPath)
	if err != nil {
		return err
	}
	want := map[string]int64{topic + "-0": 40, topic + "-1": 50}
	got := map[string]int64{}
	completed := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Records delete operation completed") {
			completed = true
		}
		var part string
		var low int64
		if n, _ := fmt.Sscanf(line, "partition: %s\tlow_watermark: %d", &part, &low); n == 2 {
			got[part] = low
		} else if strings.HasPrefix(line, "partition:") {
			// "partition: t-1\terror: org.apache.kafka...: message"
			return fmt.Errorf("tool reports %s", strings.ReplaceAll(line, "\t", " "))
		}
	}
	if !completed {
		return fmt.Errorf("no \"Records delete operation completed\" line; output starts %q", firstLine(out))
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("low watermarks printed %v, want %v", got, want)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("franz-go ListStartOffsets: %w", err)
	}
	for p, w := range []int64{40, 50} {
		o, ok := starts.Lookup(topic, int32(p))
		if !ok || o.Err != nil || o.Offset != w {
			return fmt.Errorf("after the tool, franz-go sees log start offset %d (err %v) for partition %d, want %d", o.Offset, o.Err, p, w)
		}
	}
	return nil
}

func javaLogDirsRow() row {
	return javaRow("kafka-log-dirs", 2*time.Minute, runJavaLogDirs)
}

// logDirsOutput is the JSON kafka-log-dirs.sh --describe prints.
type logDirsOutput struct {
	Version int `json:"version"`
	Brokers []struct {
		Broker  int `json:"broker"`
		LogDirs []struct {
			LogDir     string  `json:"logDir"`
			Error      *string `json:"error"`
			Partitions []struct {
				Partition string `json:"partition"`
				Size      int64  `json:"size"`
				OffsetLag int64  `json:"offsetLag"`
				IsFuture  bool   `json:"isFuture"`
			} `json:"partitions"`
		} `json:"logDirs"`
	} `json:"brokers"`
}

// runJavaLogDirs writes to two of three partitions and checks that
// kafka-log-dirs.sh reports broker 1's one log dir, the broker's data
// directory, with exactly the topic's partitions, each as large as its
// segment files on disk.
func runJavaLogDirs(ctx context.Context, env *rowEnv) error {
	const topic = "compat-log-dirs"
	addr := env.broker.addr
	if err := createTopic(ctx, addr, topic, 3); err != nil {
		return err
	}
	cl, _, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := produceTo(ctx, cl, topic, 0, 100, "p0", time.Now()); err != nil {
		return err
	}
	if err := produceTo(ctx, cl, topic, 1, 7, "p1", time.Now()); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-log-dirs.sh", "--bootstrap-server", addr, "--describe", "--topic-list", topic)
	if err != nil {
		return err
	}
	parsed, err := parseLogDirs(out)
	if err != nil {
		return err
	}
	if len(parsed.Brokers) != 1 || strconv.Itoa(parsed.Brokers[0].Broker) != javaNodeID {
		return fmt.Errorf("want one broker, %s; got %+v", javaNodeID, parsed.Brokers)
	}
	dirs := parsed.Brokers[0].LogDirs
	dataDir := filepath.Join(env.dir, "data")
	if len(dirs) != 1 || dirs[0].LogDir != dataDir || dirs[0].Error != nil {
		return fmt.Errorf("want one log dir %s without error; got %+v", dataDir, dirs)
	}
	var names []string
	for _, p := range dirs[0].Partitions {
		names = append(names, p.Partition)
		onDisk, err := segmentBytes(filepath.Join(dataDir, p.Partition))
		if err != nil {
			return err
		}
		if p.Size != onDisk || p.OffsetLag != 0 || p.IsFuture {
			return fmt.Errorf("%s: size %d offsetLag %d isFuture %v; want size %d (its .log files), lag 0, not future", p.Partition, p.Size, p.OffsetLag, p.IsFuture, onDisk)
		}
		if p.Partition != topic+"-2" && p.Size == 0 {
			return fmt.Errorf("%s: size 0 after records were written to it", p.Partition)
		}
	}
	slices.Sort(names)
	if want := []string{topic + "-0", topic + "-1", topic + "-2"}; !slices.Equal(names, want) {
		return fmt.Errorf("partitions %v, want %v", names, want)
	}
	return nil
}

// parseLogDirs parses the JSON line of kafka-log-dirs.sh --describe's
// output.
func parseLogDirs(out string) (*logDirsOutput, error) {
	var parsed logDirsOutput
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "{") {
			if err := json.Unmarshal([]byte(line), &parsed); err != nil {
				return nil, fmt.Errorf("cannot parse the JSON line: %v: %q", err, line)
			}
			found = true
		}
	}
	if !found {
		return nil, fmt.Errorf("no JSON line in the output; it starts %q", firstLine(out))
	}
	return &parsed, nil
}

// segmentBytes sums the sizes of the .log files in a partition directory.
func segmentBytes(dir string) (int64, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		return 0, err
	}
	if len(logs) == 0 {
		return 0, fmt.Errorf("no segment in %s", dir)
	}
	var total int64
	for _, l := range logs {
		fi, err := os.Stat(l)
		if err != nil {
			return 0, err
		}
		total += fi.Size()
	}
	return total, nil
}

func javaConsoleRow() row {
	return javaRow("kafka-console", 2*time.Minute, runJavaConsole)
}

// consoleRecords are the console producer's input lines (headers, key and
// value separated by tabs, as parse.headers and parse.key read them) and,
// with the partition and offset in front, the console consumer's output.
var consoleRecords = []struct {
	headers []kgo.RecordHeader
	key     string
	value   string
}{
	{[]kgo.RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: []byte("v2")}}, "key-0", "value-0"},
	{[]kgo.RecordHeader{{Key: "trace", Value: []byte("abc")}}, "key-1", "value 1 with spaces"},
	{[]kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "h", Value: []byte("y")}}, "key-2", "{\"json\": [2]}"},
	{[]kgo.RecordHeader{{Key: "only", Value: []byte("one")}}, "", "value-without-key"},
}

func consoleHeaders(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Key+":"+string(h.Value))
	}
	return strings.Join(parts, ",")
}

// runJavaConsole produces keyed records with headers through
// kafka-console-producer.sh, checks with franz-go that they arrived intact,
// then reads them back with kafka-console-consumer.sh --from-beginning
// printing partition, offset, headers and key. The consumer reads an
// assigned partition (--partition 0), which needs no consumer group.
func runJavaConsole(ctx context.Context, env *rowEnv) error {
	const topic = "compat-console"
	addr := env.broker.addr
	if err := createTopic(ctx, addr, topic, 1); err != nil {
		return err
	}
	var input strings.Builder
	for _, r := range consoleRecords {
		fmt.Fprintf(&input, "%s\t%s\t%s\n", consoleHeaders(r.headers), r.key, r.value)
	}
	if _, err := kafkaTool(ctx, env, strings.NewReader(input.String()), "kafka-console-producer.sh",
		"--bootstrap-server", addr, "--topic", topic,
		"--property", "parse.key=true", "--property", "parse.headers=true"); err != nil {
		return err
	}

	recs, err := consumeAll(ctx, env, topic, 1)
	if err != nil {
		return err
	}
	if len(recs) != len(consoleRecords) {
		return fmt.Errorf("franz-go reads %d records after the console producer, want %d", len(recs), len(consoleRecords))
	}
	for i, r := range recs {
		want := consoleRecords[i]
		if string(r.Key) != want.key || string(r.Value) != want.value || consoleHeaders(r.Headers) != consoleHeaders(want.headers) {
			return fmt.Errorf("record %d as franz-go reads it: key %q value %q headers %q; want %q %q %q",
				i, r.Key, r.Value, consoleHeaders(r.Headers), want.key, want.value, consoleHeaders(want.headers))
		}
	}

	out, err := kafkaTool(ctx, env, nil, "kafka-console-consumer.sh",
		"--bootstrap-server", addr, "--topic", topic, "--partition", "0", "--from-beginning",
		"--max-messages", strconv.Itoa(len(consoleRecords)), "--timeout-ms", "30000",
		"--property", "print.key=true", "--property", "print.headers=true",
		"--property", "print.partition=true", "--property", "print.offset=true")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != len(consoleRecords) {
		return fmt.Errorf("console consumer printed %d lines, want %d; first %q", len(lines), len(consoleRecords), lines[0])
	}
	for i, r := range consoleRecords {
		want := fmt.Sprintf("Partition:0\tOffset:%d\t%s\t%s\t%s", i, consoleHeaders(r.headers), r.key, r.value)
		if lines[i] != want {
			return fmt.Errorf("console consumer line %d: %q, want %q", i+1, lines[i], want)
		}
	}
	return nil
}
