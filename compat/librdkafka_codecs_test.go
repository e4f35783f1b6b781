package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/logstore"
)

// The codec rows produce the same records with every compression codec
// through a librdkafka client and then read the partition's segment files
// in the broker's data directory: every batch must carry the codec asked
// for in its attributes, and each compressed partition must take a fraction
// of the uncompressed one's bytes. librdkafka falls back to sending a batch
// uncompressed, with at most a log line, when it believes the broker cannot
// take the codec; librdkafka before 2.11.1 believed so for gzip, snappy and
// lz4 whenever ApiVersions listed Produce from a version above 0, which
// sluice did until it listed v0–2 as Kafka 4 does (issue 15, KAFKA-18659).
// Nothing a client reports shows this, hence the look at the disk. The
// records are then read back with franz-go, so a batch stored compressed
// must also decompress to what was sent.
//
// kcat-codecs runs Debian's kcat, py-confluent-codecs Debian's
// python3-confluent-kafka (both on Debian's librdkafka, 2.0.2 in bookworm),
// py-confluent-wheel the newest confluent-kafka wheel from PyPI, which
// bundles its own librdkafka, from a venv scripts/test-all.sh makes.

const (
	// codecRecords is how many records each codec's topic gets.
	codecRecords = 2000
	// codecShrink is the least factor by which each compressed topic's
	// segment bytes must be smaller than the uncompressed one's. The
	// records are short lines of text sharing most of their words: every
	// codec shrinks them 8 to 20 times; a batch sent uncompressed does not
	// shrink at all.
	codecShrink = 4
)

// codecs are librdkafka's compression.type values, in the order of Kafka's
// codec ids (the low three bits of a batch's attributes).
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// codecRecord is record i of every codec topic; compat/python/codecs_check.py
// writes the same.
func codecRecord(i int) string {
	return fmt.Sprintf("record %06d of the codec check: the quick brown fox jumps over the lazy dog", i)
}

func kcatCodecsRow() row {
	return row{
		name:    "kcat-codecs",
		tools:   []string{"kcat"},
		timeout: 3 * time.Minute,
		run: func(ctx context.Context, env *rowEnv) error {
			return runCodecRow(ctx, env, "compat-codec-kcat-", kcatProduceCodecs)
		},
	}
}

func pythonCodecsRow() row {
	return row{
		name:    "py-confluent-codecs",
		tools:   []string{pythonInterpreter()},
		timeout: 3 * time.Minute,
		run: func(ctx context.Context, env *rowEnv) error {
			return runCodecRow(ctx, env, "compat-codec-py-", pythonProduceCodecs(pythonInterpreter()))
		},
	}
}

func pythonWheelCodecsRow() row {
	return row{
		name:    "py-confluent-wheel",
		tools:   []string{wheelPython()},
		timeout: 3 * time.Minute,
		run: func(ctx context.Context, env *rowEnv) error {
			return runCodecRow(ctx, env, "compat-codec-wheel-", pythonProduceCodecs(wheelPython()))
		},
	}
}

// wheelPython is the python of the venv scripts/test-all.sh installs the
// newest confluent-kafka wheel into; SLUICE_COMPAT_WHEEL_PYTHON overrides
// it.
func wheelPython() string {
	if p := os.Getenv("SLUICE_COMPAT_WHEEL_PYTHON"); p != "" {
		return p
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "sluice", "confluent-kafka-venv", "bin", "python")
}

// runCodecRow creates one single-partition topic per codec, named prefix +
// codec, has produce write codecRecords records to each with that codec,
// and checks the segments on disk and the records read back.
func runCodecRow(ctx context.Context, env *rowEnv, prefix string, produce func(ctx context.Context, env *rowEnv, prefix string) error) error {
	for _, c := range codecs {
		if err := createTopic(ctx, env.broker.addr, prefix+c, 1); err != nil {
			return err
		}
	}
	if err := produce(ctx, env, prefix); err != nil {
		return err
	}
	stats := make(map[string]segmentStats)
	for _, c := range codecs {
		st, err := readSegments(filepath.Join(env.dir, "data", prefix+c+"-0"))
		if err != nil {
			return fmt.Errorf("%s: %w", c, err)
		}
		stats[c] = st
		env.t.Logf("%-6s %7d bytes on disk, %d batches, %d records, batch codecs %v", c, st.bytes, st.batches, st.records, st.codecs)
	}
	if err := checkCodecSegments(stats); err != nil {
		return err
	}
	return readBackCodecs(ctx, env.broker.addr, prefix)
}

// segmentStats is what one partition's segment files hold.
type segmentStats struct {
	bytes            int64
	batches, records int
	// codecs counts the batches by the codec in their attributes.
	codecs map[string]int
}

// readSegments reads every .log segment file in a partition directory as
// record batches.
func readSegments(dir string) (segmentStats, error) {
	st := segmentStats{codecs: make(map[string]int)}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		return st, fmt.Errorf("no segment files in %s (%v)", dir, err)
	}
	for _, path := range logs {
		b, err := os.ReadFile(path)
		if err != nil {
			return st, err
		}
		headers := logstore.ParseBatchHeaders(b)
		if len(headers) == 0 && len(b) > 0 {
			return st, fmt.Errorf("%s: %d bytes that are not record batches", path, len(b))
		}
		st.bytes += int64(len(b))
		for _, h := range headers {
			st.batches++
			st.records += int(h.RecordCount)
			codec := "unknown codec " + strconv.Itoa(int(h.Attributes&7))
			if id := int(h.Attributes & 7); id < len(codecs) {
				codec = codecs[id]
			}
			st.codecs[codec]++
		}
	}
	return st, nil
}

// checkCodecSegments checks each codec's partition: every record there,
// every batch compressed with its codec, and each compressed partition at
// most 1/codecShrink of the uncompressed one's bytes.
func checkCodecSegments(stats map[string]segmentStats) error {
	var wrong []string
	for _, c := range codecs {
		st := stats[c]
		if st.records != codecRecords {
			return fmt.Errorf("%s: %d records on disk, want %d", c, st.records, codecRecords)
		}
		if st.codecs[c] != st.batches {
			wrong = append(wrong, fmt.Sprintf("%s (batches by codec %v)", c, st.codecs))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("batches on disk not compressed as asked: %s", strings.Join(wrong, ", "))
	}
	plain := stats["none"].bytes
	for _, c := range codecs[1:] {
		if got := stats[c].bytes; got*codecShrink > plain {
			return fmt.Errorf("%s: %d bytes on disk against %d uncompressed, want at most 1/%d of it", c, got, plain, codecShrink)
		}
	}
	return nil
}

// readBackCodecs reads every codec topic from the start with franz-go and
// checks that record i is codecRecord(i) at offset i.
func readBackCodecs(ctx context.Context, addr, prefix string) error {
	parts := make(map[string]map[int32]kgo.Offset)
	for _, c := range codecs {
		parts[prefix+c] = map[int32]kgo.Offset{0: kgo.NewOffset().AtStart()}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(parts))
	if err != nil {
		return err
	}
	defer cl.Close()
	got := make(map[string]int)
	done := func() bool {
		for _, c := range codecs {
			if got[prefix+c] < codecRecords {
				return false
			}
		}
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("franz-go read back %v of %d records per topic: %w", got, codecRecords, ctx.Err())
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("franz-go fetch %s[%d]: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		for _, r := range fs.Records() {
			i := got[r.Topic]
			if r.Offset != int64(i) || string(r.Value) != codecRecord(i) {
				return fmt.Errorf("%s offset %d: %q, want offset %d: %q", r.Topic, r.Offset, r.Value, i, codecRecord(i))
			}
			got[r.Topic]++
		}
	}
	for t, n := range got {
		if n != codecRecords {
			return fmt.Errorf("%s: read back %d records, want %d", t, n, codecRecords)
		}
	}
	return nil
}

// kcatProduceCodecs writes the records to each codec's topic with
// `kcat -P -z CODEC`, one record a line on stdin.
func kcatProduceCodecs(ctx context.Context, env *rowEnv, prefix string) error {
	if out, err := exec.CommandContext(ctx, "kcat", "-V").CombinedOutput(); err == nil {
		env.t.Logf("%s", firstLine(string(bytes.TrimSpace(out))))
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "librdkafka") {
				env.t.Logf("%s", strings.TrimSpace(l))
			}
		}
	}
	var input bytes.Buffer
	for i := range codecRecords {
		input.WriteString(codecRecord(i) + "\n")
	}
	for _, c := range codecs {
		cmd := exec.CommandContext(ctx, "kcat", "-P", "-b", env.broker.addr, "-t", prefix+c, "-p", "0", "-z", c,
			"-X", "linger.ms=50")
		cmd.Stdin = bytes.NewReader(input.Bytes())
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("kcat -P -z %s: %v: %s", c, err, firstLine(string(out)))
		}
		if bad := kcatErrorLine(out); bad != "" {
			return fmt.Errorf("kcat -P -z %s: %s", c, bad)
		}
	}
	return nil
}

// codecsResult is the RESULT line of codecs_check.py.
type codecsResult struct {
	Version    string         `json:"version"`
	Librdkafka string         `json:"librdkafka"`
	Delivered  map[string]int `json:"delivered"`
}

// pythonProduceCodecs returns a produce step that runs
// compat/python/codecs_check.py under python.
func pythonProduceCodecs(python string) func(ctx context.Context, env *rowEnv, prefix string) error {
	return func(ctx context.Context, env *rowEnv, prefix string) error {
		probe := exec.CommandContext(ctx, python, "-c", "import confluent_kafka")
		if out, err := probe.CombinedOutput(); err != nil {
			return fmt.Errorf("%s cannot import confluent_kafka: %v: %s", python, err, lastLine(string(out)))
		}
		script := filepath.Join(env.root, "compat", "python", "codecs_check.py")
		cmd := exec.CommandContext(ctx, python, script, "--bootstrap", env.broker.addr, "--topic-prefix", prefix,
			"--codecs", strings.Join(codecs, ","), "--records", strconv.Itoa(codecRecords))
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		logPath := filepath.Join(env.dir, "python.log")
		_ = os.WriteFile(logPath, append(append(stdout.Bytes(), "--- stderr\n"...), stderr.Bytes()...), 0o644)
		line, err := pythonResultLine(stdout.String(), stderr.String(), runErr, "confluent-kafka", "codecs_check.py")
		if err != nil {
			return err
		}
		var res codecsResult
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			return fmt.Errorf("codecs_check.py RESULT line: %v: %q", err, line)
		}
		env.t.Logf("%s: confluent-kafka %s, librdkafka %s", python, res.Version, res.Librdkafka)
		var missing []string
		for _, c := range codecs {
			if res.Delivered[c] != codecRecords {
				missing = append(missing, fmt.Sprintf("%s: %d", c, res.Delivered[c]))
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return errors.New("codecs_check.py delivered " + strings.Join(missing, ", ") + fmt.Sprintf(", want %d each", codecRecords))
		}
		return nil
	}
}
