package logstore

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, replicationFile)
	in := map[TopicPartition]int64{
		{"a", 0}: 10, {"a", 1}: 0, {"b.c_d-e", 12}: 1 << 40,
	}
	if err := writeOffsetCheckpoint(OSFS{}, path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "0\n3\na 0 10\na 1 0\nb.c_d-e 12 1099511627776\n"; string(data) != want {
		t.Fatalf("file %q, want %q", data, want)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("tmp file left behind")
	}
	out, err := readOffsetCheckpoint(OSFS{}, path)
	if err != nil || len(out) != len(in) {
		t.Fatalf("read %v %v", out, err)
	}
	for k, v := range in {
		if out[k] != v {
			t.Fatalf("%v: %d want %d", k, out[k], v)
		}
	}
	if m, err := readOffsetCheckpoint(OSFS{}, filepath.Join(dir, "missing")); err != nil || len(m) != 0 {
		t.Fatalf("missing file: %v %v", m, err)
	}
}

func TestOffsetCheckpointRejectsBadFiles(t *testing.T) {
	for name, content := range map[string]string{
		"bad version": "1\n0\n",
		"bad count":   "0\n2\na 0 1\n",
		"bad entry":   "0\n1\na 0\n",
		"bad offset":  "0\n1\na 0 x\n",
		"empty":       "",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp")
			os.WriteFile(path, []byte(content), 0o644)
			if _, err := readOffsetCheckpoint(OSFS{}, path); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestDirCheckpointFiles(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 3, 1), 0)
	if err := e.dir.Checkpoint(map[TopicPartition]int64{testTP: 2}); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		recoveryPointFile:  "0\n1\norders 3 3\n",
		replicationFile:    "0\n1\norders 3 2\n",
		logStartOffsetFile: "0\n1\norders 3 0\n",
	} {
		data, err := os.ReadFile(filepath.Join(e.path, file))
		if err != nil || string(data) != want {
			t.Fatalf("%s: %q %v, want %q", file, data, err, want)
		}
	}
	// A checkpoint without the partition keeps its last high watermark.
	if err := e.dir.Checkpoint(nil); err != nil {
		t.Fatal(err)
	}
	if hw, ok := e.dir.CheckpointedHighWatermark(testTP); !ok || hw != 2 {
		t.Fatalf("hw %d %v", hw, ok)
	}
	e.close()
	if _, err := os.Stat(filepath.Join(e.path, cleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker: %v", err)
	}
	d := e.open()
	if hw, ok := d.CheckpointedHighWatermark(testTP); !ok || hw != 2 {
		t.Fatalf("hw after reopen %d %v", hw, ok)
	}
	e.close()
}

func TestPartitionMetadataFormat(t *testing.T) {
	e := newTestEnv(t)
	e.openLog(DefaultConfig())
	data, err := os.ReadFile(filepath.Join(e.partDir(), partitionMetadataFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4PEA"; string(data) != want {
		t.Fatalf("partition.metadata %q, want %q", data, want)
	}
	e.close()
}

func TestParsePartitionDir(t *testing.T) {
	tests := []struct {
		name string
		want TopicPartition
		ok   bool
	}{
		{"orders-0", TopicPartition{"orders", 0}, true},
		{"my-topic-12", TopicPartition{"my-topic", 12}, true},
		{"__consumer_offsets-49", TopicPartition{"__consumer_offsets", 49}, true},
		{"__cluster_metadata-0", TopicPartition{}, false},
		{"orders-0.0123456789abcdef0123456789abcdef-delete", TopicPartition{}, false},
		{"orders-0.abc-future", TopicPartition{}, false},
		{"orders", TopicPartition{}, false},
		{"orders-", TopicPartition{}, false},
		{"orders--1", TopicPartition{"orders-", 1}, true},
		{"orders-+1", TopicPartition{}, false},
		{"orders-01", TopicPartition{}, false},
		{"-1", TopicPartition{}, false},
		{"bad topic-1", TopicPartition{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parsePartitionDir(tc.name)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("got %v %v, want %v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestPartitionsIgnoresOtherDirs(t *testing.T) {
	e := newTestEnv(t)
	d := e.open()
	for _, name := range []string{"__cluster_metadata-0", "t-1", "t-0", "junk", "x-2.0123-delete"} {
		os.MkdirAll(filepath.Join(e.path, name), 0o755)
	}
	got := d.Partitions()
	if len(got) != 2 || got[0] != (TopicPartition{"t", 0}) || got[1] != (TopicPartition{"t", 1}) {
		t.Fatalf("Partitions %v", got)
	}
	e.close()
	e.open()
	if _, err := os.Stat(filepath.Join(e.path, "x-2.0123-delete")); !os.IsNotExist(err) {
		t.Fatal("leftover -delete dir not removed at open")
	}
	e.close()
}
