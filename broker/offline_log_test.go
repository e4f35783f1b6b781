package broker_test

// A partition log that fails to open at start-up goes offline: it is kept
// on disk as it is, answers KAFKA_STORAGE_ERROR, and comes back whole once
// repaired (issue 13, problem 4).

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// filesUnder reads every regular file below dir, by relative path.
func filesUnder(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := make(map[string]string)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		out[strings.TrimPrefix(path, dir)] = string(data)
		return err
	})
	if err != nil {
		t.Fatalf("read %s: %v", dir, err)
	}
	return out
}

// produceTo produces n records with values "<partition>-<i>" to each
// partition of topic.
func produceTo(t *testing.T, cl *kgo.Client, topic string, partitions int32, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// checkPartition consumes partition p of topic from the start and checks
// that its first want records are the ones produceTo wrote, at offsets
// 0..want-1.
func checkPartition(t *testing.T, n *sluicetest.Node, topic string, p int32, want int) {
	t.Helper()
	cl := n.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s-%d: read %d of %d records: %v", topic, p, len(got), want, ctx.Err())
		}
		got = append(got, fs.Records()...)
	}
	for i, r := range got[:want] {
		if r.Offset != int64(i) || string(r.Value) != fmt.Sprintf("%d-%d", p, i) {
			t.Fatalf("%s-%d: record %d is offset %d value %q", topic, p, i, r.Offset, r.Value)
		}
	}
}

// offlineCodes sends Produce, Fetch, ListOffsets and OffsetForLeaderEpoch
// for partition p of topic straight to the node and returns each answer's
// partition error code, by API name.
func offlineCodes(t *testing.T, cl *kgo.Client, topic string, id [16]byte, p int32) map[string]int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	node := cl.SeedBrokers()[0]
	codes := make(map[string]int16)

	produce := produceRequest(topic, id, p, 5000, recordBatch(-1, -1, -1, false, "after"))
	if resp, err := produce.RequestWith(ctx, node); err != nil {
		t.Fatalf("produce: %v", err)
	} else {
		codes["Produce"] = resp.Topics[0].Partitions[0].ErrorCode
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MaxBytes = -1, 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, id
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	if resp, err := fetch.RequestWith(ctx, node); err != nil {
		t.Fatalf("fetch: %v", err)
	} else if resp.ErrorCode != 0 {
		t.Fatalf("fetch: top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
	} else {
		codes["Fetch"] = resp.Topics[0].Partitions[0].ErrorCode
	}

	list := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -2, -1
	lt.Partitions = append(lt.Partitions, lp)
	list.Topics = append(list.Topics, lt)
	if resp, err := list.RequestWith(ctx, node); err != nil {
		t.Fatalf("list offsets: %v", err)
	} else {
		codes["ListOffsets"] = resp.Topics[0].Partitions[0].ErrorCode
	}

	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epochs.ReplicaID = -1
	et := kmsg.NewOffsetForLeaderEpochRequestTopic()
	et.Topic = topic
	ep := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	ep.Partition, ep.CurrentLeaderEpoch, ep.LeaderEpoch = p, -1, 0
	et.Partitions = append(et.Partitions, ep)
	epochs.Topics = append(epochs.Topics, et)
	if resp, err := epochs.RequestWith(ctx, node); err != nil {
		t.Fatalf("offset for leader epoch: %v", err)
	} else {
		codes["OffsetForLeaderEpoch"] = resp.Topics[0].Partitions[0].ErrorCode
	}
	return codes
}

// TestLogThatFailsToOpenGoesOffline: a node restarts with one partition's
// partition.metadata turned into a directory, so that log fails to open
// with an I/O error. The node starts; the other partitions serve their
// records; the broken one answers KAFKA_STORAGE_ERROR to Produce, Fetch,
// ListOffsets and OffsetForLeaderEpoch and keeps its files byte for byte
// (the old code renamed it *-delete as an orphan and recreated it empty).
// Repaired and restarted, it serves every record it had.
func TestLogThatFailsToOpenGoesOffline(t *testing.T) {
	n := sluicetest.Start(t)
	const topic, partitions, perPartition = "data", 3, 50
	createTopic(t, n, topic, partitions, nil)
	produceTo(t, n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, partitions, perPartition)
	n.Stop()

	broken := filepath.Join(n.Dir, topic+"-1")
	metadata := filepath.Join(broken, "partition.metadata")
	saved, err := os.ReadFile(metadata)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(metadata, 0o755); err != nil {
		t.Fatal(err)
	}
	before := filesUnder(t, broken)

	n.Restart()
	if after := filesUnder(t, broken); !maps.Equal(before, after) {
		t.Fatalf("%s changed on disk after the restart: %d files before, %d after", broken, len(before), len(after))
	}
	entries, err := os.ReadDir(n.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-delete") {
			t.Fatalf("%s was scheduled for deletion", e.Name())
		}
	}
	checkPartition(t, n, topic, 0, perPartition)
	checkPartition(t, n, topic, 2, perPartition)

	cl := n.Client()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for api, code := range offlineCodes(t, cl, topic, mresp.Topics[0].TopicID, 1) {
		if code != kerr.KafkaStorageError.Code {
			t.Errorf("%s on the offline partition: %v, want KAFKA_STORAGE_ERROR", api, kerr.ErrorForCode(code))
		}
	}
	// The healthy partitions still take writes.
	if codes := offlineCodes(t, cl, topic, mresp.Topics[0].TopicID, 0); codes["Produce"] != 0 {
		t.Errorf("Produce to a healthy partition: %v", kerr.ErrorForCode(codes["Produce"]))
	}
	n.Stop()
	if after := filesUnder(t, broken); !maps.Equal(before, after) {
		t.Fatalf("%s changed on disk while offline", broken)
	}

	if err := os.Remove(metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metadata, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	n.Restart()
	checkPartition(t, n, topic, 1, perPartition)
	checkPartition(t, n, topic, 0, perPartition)
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range filesUnder(t, src) {
		if err := os.WriteFile(filepath.Join(dst, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOrphanRemovalOnlyDeletesLogsThatOpen: at start-up a log the metadata
// does not assign here is deleted only once it has opened cleanly. An
// orphan that opens is removed; one that fails to open is kept byte for
// byte; a directory holding an older topic id under an assigned name (the
// topic was deleted and recreated while the node was down) is removed and
// the new topic's replica starts empty at once.
func TestOrphanRemovalOnlyDeletesLogsThatOpen(t *testing.T) {
	n := sluicetest.Start(t)
	createTopic(t, n, "data", 1, nil)
	createTopic(t, n, "re", 1, nil)
	cl := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceTo(t, cl, "data", 1, 5)
	produceTo(t, cl, "re", 1, 5)
	n.Stop()

	source := filepath.Join(n.Dir, "data-0")
	gone, broken := filepath.Join(n.Dir, "gone-0"), filepath.Join(n.Dir, "broken-0")
	copyDir(t, source, gone)
	copyDir(t, source, broken)
	metadata := filepath.Join(broken, "partition.metadata")
	if err := os.Remove(metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(metadata, 0o755); err != nil {
		t.Fatal(err)
	}
	brokenFiles := filesUnder(t, broken)
	older := "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
	if err := os.WriteFile(filepath.Join(n.Dir, "re-0", "partition.metadata"), []byte(older), 0o644); err != nil {
		t.Fatal(err)
	}

	n.Restart()
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("orphan %s that opens cleanly was not removed: %v", gone, err)
	}
	if got := filesUnder(t, broken); !maps.Equal(got, brokenFiles) {
		t.Errorf("orphan %s that does not open was changed: %d files, want %d", broken, len(got), len(brokenFiles))
	}
	checkPartition(t, n, "data", 0, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := n.Admin().ListEndOffsets(ctx, "re")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("re", 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("re-0 after its older topic's log was removed: end offset %d, %v; want an empty log", o.Offset, o.Err)
	}
	produceTo(t, cl, "re", 1, 3)
	checkPartition(t, n, "re", 0, 3)
}
