package broker_test

// Several log directories per node (JBOD, KIP-858): placement of new
// replicas, DescribeLogDirs per directory, meta.properties, a directory
// that fails at start (issue 20).

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// jbodDirs is a log.dirs override giving a node two directories.
const jbodDirs = "log.dirs={node.dir}/d1,{node.dir}/d2"

// jbodDirsOf returns the two log dirs jbodDirs gives node n.
func jbodDirsOf(n *sluicetest.Node) (d1, d2 string) {
	return filepath.Join(n.Dir, "d1"), filepath.Join(n.Dir, "d2")
}

// describeDirs asks node 1 for its log dirs.
func describeDirs(t *testing.T, adm *kadm.Client) kadm.DescribedLogDirs {
	t.Helper()
	return describeBrokerDirs(t, adm, 1)
}

// describeBrokerDirs asks node id for its log dirs.
func describeBrokerDirs(t *testing.T, adm *kadm.Client, id int32) kadm.DescribedLogDirs {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dirs, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
	if err != nil {
		t.Fatalf("describe log dirs of node %d: %v", id, err)
	}
	return dirs
}

// partitionsIn lists topic's partitions each directory holds (current
// replicas only), by directory path.
func partitionsIn(dirs kadm.DescribedLogDirs, topic string) map[string][]int32 {
	out := map[string][]int32{}
	for path, d := range dirs {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic && !p.IsFuture {
				out[path] = append(out[path], p.Partition)
			}
		})
	}
	return out
}

// TestLogDirsPlacement: a node with two log dirs spreads a six-partition
// topic three and three, DescribeLogDirs lists both directories with their
// replicas and sizes, each directory has its own meta.properties and
// directory id, and after a restart every replica is found where it was
// and reads back whole.
func TestLogDirsPlacement(t *testing.T) {
	n := sluicetest.Start(t, jbodDirs)
	d1, d2 := jbodDirsOf(n)
	adm := n.Admin()
	const topic = "jbod"
	createTopic(t, n, topic, 6, nil)
	produceTo(t, n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, 6, 50)

	dirs := describeDirs(t, adm)
	if len(dirs) != 2 || dirs[d1].Dir == "" || dirs[d2].Dir == "" {
		t.Fatalf("described dirs %v, want %s and %s", dirs, d1, d2)
	}
	placed := partitionsIn(dirs, topic)
	t.Logf("placement: %s=%v %s=%v", d1, placed[d1], d2, placed[d2])
	if len(placed[d1]) != 3 || len(placed[d2]) != 3 {
		t.Fatalf("placement %v, want three partitions in each directory", placed)
	}
	for path, d := range dirs {
		if d.Err != nil || d.TotalBytes <= 0 || d.UsableBytes <= 0 {
			t.Fatalf("%s: err %v total %d usable %d", path, d.Err, d.TotalBytes, d.UsableBytes)
		}
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == topic && (p.Size <= 0 || p.OffsetLag != 0) {
				t.Fatalf("%s: %s-%d size %d lag %d, want a size and no lag", path, p.Topic, p.Partition, p.Size, p.OffsetLag)
			}
		})
		if _, err := os.Stat(filepath.Join(path, topic+"-"+strconv.Itoa(int(placed[path][0])))); err != nil {
			t.Fatalf("replica not in the directory described: %v", err)
		}
	}
	ids := map[string]bool{}
	for _, dir := range []string{d1, d2} {
		b, err := os.ReadFile(filepath.Join(dir, "meta.properties"))
		if err != nil {
			t.Fatalf("meta.properties: %v", err)
		}
		props := string(b)
		for _, want := range []string{"version=1\n", "node.id=1\n", "cluster.id=" + n.Broker.ClusterID() + "\n", "directory.id="} {
			if !strings.Contains(props, want) {
				t.Fatalf("%s/meta.properties lacks %q:\n%s", dir, want, props)
			}
		}
		ids[props[strings.Index(props, "directory.id="):][:35]] = true
	}
	if len(ids) != 2 {
		t.Fatalf("the two directories share a directory id: %v", ids)
	}

	n.Restart()
	adm = n.Admin()
	if again := partitionsIn(describeDirs(t, adm), topic); len(again[d1]) != 3 || len(again[d2]) != 3 {
		t.Fatalf("after restart placement %v, want %v", again, placed)
	}
	for p := int32(0); p < 6; p++ {
		checkPartition(t, n, topic, p, 50)
	}
	// A new topic goes to the directories with the fewest replicas: a
	// one-partition topic lands somewhere, the next in the other one.
	for _, name := range []string{"jbod-a", "jbod-b"} {
		createTopic(t, n, name, 1, nil)
	}
	dirs = describeDirs(t, adm)
	a, b := partitionsIn(dirs, "jbod-a"), partitionsIn(dirs, "jbod-b")
	if len(a) != 1 || len(b) != 1 || (len(a[d1]) == 1) == (len(b[d1]) == 1) {
		t.Fatalf("jbod-a in %v, jbod-b in %v: want one in each directory", a, b)
	}
}

// TestLogDirsOfflineAtStart: a directory that cannot be used at start (a
// file stands where it should be) is offline, the node starts, its other
// directory serves, and DescribeLogDirs reports KAFKA_STORAGE_ERROR for
// the broken one.
func TestLogDirsOfflineAtStart(t *testing.T) {
	base := t.TempDir()
	d1, d2 := filepath.Join(base, "d1"), filepath.Join(base, "d2")
	if err := os.WriteFile(d2, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := sluicetest.Start(t, "log.dirs="+d1+","+d2)
	adm := n.Admin()
	createTopic(t, n, "half", 2, nil)
	produceTo(t, n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "half", 2, 10)
	dirs := describeDirs(t, adm)
	if !errors.Is(dirs[d2].Err, kerr.KafkaStorageError) || dirs[d1].Err != nil {
		t.Fatalf("d1 err %v, d2 err %v: want d2 KAFKA_STORAGE_ERROR only", dirs[d1].Err, dirs[d2].Err)
	}
	if got := partitionsIn(dirs, "half"); len(got[d1]) != 2 {
		t.Fatalf("placement %v, want both partitions in %s", got, d1)
	}
	for p := int32(0); p < 2; p++ {
		checkPartition(t, n, "half", p, 10)
	}
	if d := dirs[d2]; d.TotalBytes != -1 || d.UsableBytes != -1 || len(d.Topics) != 0 {
		t.Fatalf("offline dir answer %+v, want no sizes and no replicas", d)
	}
}
