package logstore

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// Per-directory offset checkpoint files (frozen names and format).
const (
	recoveryPointFile    = "recovery-point-offset-checkpoint"
	replicationFile      = "replication-offset-checkpoint"
	logStartOffsetFile   = "log-start-offset-checkpoint"
	cleanShutdownFile    = ".kafka_cleanshutdown"
	lockFileName         = ".lock"
	checkpointVersion    = 0
	clusterMetadataDirTP = "__cluster_metadata-0"
)

// formatCheckpoint renders Kafka's checkpoint text format: a version line,
// a count line, then one line per entry.
func formatCheckpoint(lines []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// parseCheckpoint checks the version and count lines and returns the entry
// lines. A count that does not match the entries means a torn file, which
// writeFileAtomic makes impossible unless the file was edited by hand.
func parseCheckpoint(data []byte) ([]string, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) < 2 {
		return nil, errors.New("checkpoint: missing version or count line")
	}
	if v, err := strconv.Atoi(strings.TrimSpace(lines[0])); err != nil || v != checkpointVersion {
		return nil, fmt.Errorf("checkpoint: unsupported version %q", lines[0])
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("checkpoint: count %q does not match %d entries", lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

// readOffsetCheckpoint reads "<topic> <partition> <offset>" entries; a
// missing file is an empty checkpoint.
func readOffsetCheckpoint(fsys FS, path string) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64)
	data, err := readWholeFile(fsys, path)
	if err != nil {
		if isNotExist(err) {
			return out, nil
		}
		return nil, err
	}
	lines, err := parseCheckpoint(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: bad entry %q", path, l)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: bad entry %q", path, l)
		}
		out[TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

// writeOffsetCheckpoint writes entries atomically, sorted so the file is
// stable and diffable.
func writeOffsetCheckpoint(fsys FS, path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeFileAtomic(fsys, path, formatCheckpoint(lines))
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
