package controller

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/twmb/franz-go/pkg/kerr"
)

const testNodeID = 1

// testConfig is a single node's config in dir, logging through t.
func testConfig(t *testing.T, dir string) Config {
	return Config{
		NodeID:                   testNodeID,
		Dir:                      dir,
		Host:                     "127.0.0.1",
		Port:                     9092,
		DefaultPartitions:        3,
		DefaultReplicationFactor: 1,
		Logger:                   slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// testWriter sends log output to the test log, so it shows only on failure.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// openTest opens a controller and closes it when the test ends. It returns
// how long Open took.
func openTest(t *testing.T, cfg Config) (*Controller, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	c, err := Open(ctx, cfg)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, took
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestOpenSingleNode(t *testing.T) {
	var mu sync.Mutex
	var applied []uint64
	cfg := testConfig(t, filepath.Join(t.TempDir(), "__cluster_metadata-0"))
	cfg.Rack = "r1"
	cfg.OnApply = func(img *Image) {
		mu.Lock()
		applied = append(applied, img.Index)
		mu.Unlock()
	}
	c, took := openTest(t, cfg)
	t.Logf("Open of a new single-node cluster took %v", took)

	if got := c.ActiveControllerID(); got != testNodeID {
		t.Fatalf("ActiveControllerID = %d, want %d", got, testNodeID)
	}
	if len(c.ClusterID()) != 22 {
		t.Fatalf("cluster id %q is not 22 characters", c.ClusterID())
	}
	b := c.Image().Brokers[testNodeID]
	if b == nil || b.Host != "127.0.0.1" || b.Port != 9092 || b.Rack != "r1" || b.Fenced || b.Epoch <= 0 {
		t.Fatalf("registered broker = %+v", b)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 3 { // InitCluster, UpdateFeatures (features.go), RegisterBroker
		t.Fatalf("OnApply saw indexes %v, want 3 commands", applied)
	}
}

func TestOpenRespectsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, testConfig(t, t.TempDir())); err == nil {
		t.Fatal("Open succeeded with a cancelled context")
	}
}

func TestReopenKeepsMetadata(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)

	res := c.CreateTopics(ctx, []CreateTopic{{Name: "orders", NumPartitions: 2, ReplicationFactor: -1,
		Configs: map[string]*string{"cleanup.policy": ptr("compact")}}}, false)
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if err := c.AlterConfigs(ctx, ConfigResource{Type: ResourceBroker}, []ConfigOp{{Key: "log.retention.ms", Value: ptr("5")}}, true, false); err != nil {
		t.Fatal(err)
	}
	clusterID, before := c.ClusterID(), c.Image()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, took := openTest(t, cfg)
	t.Logf("Open of an existing single-node cluster took %v", took)
	img := c2.Image()
	if c2.ClusterID() != clusterID {
		t.Fatalf("cluster id changed: %s -> %s", clusterID, c2.ClusterID())
	}
	topic := img.Topics["orders"]
	if topic == nil || topic.ID != res[0].TopicID || len(topic.Partitions) != 2 || topic.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("topic after reopen = %+v", topic)
	}
	if img.BrokerConfigs[""]["log.retention.ms"] != "5" {
		t.Fatalf("broker configs after reopen = %v", img.BrokerConfigs)
	}
	if img.Brokers[testNodeID].Epoch != before.Brokers[testNodeID].Epoch {
		t.Fatal("unchanged endpoint re-registered")
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if n := countCommands(t, dir, cmdInitCluster); n != 1 {
		t.Fatalf("%d InitCluster commands in the log, want 1", n)
	}
	if n := countCommands(t, dir, cmdRegisterBroker); n != 1 {
		t.Fatalf("%d RegisterBroker commands in the log, want 1", n)
	}

	// A new endpoint re-registers with a higher epoch.
	cfg.Port = 9093
	c3, _ := openTest(t, cfg)
	b := c3.Image().Brokers[testNodeID]
	if b.Port != 9093 || b.Epoch <= before.Brokers[testNodeID].Epoch {
		t.Fatalf("broker after endpoint change = %+v", b)
	}
}

func TestReopenFromSnapshotAndLog(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	mustCreate(t, c, "before-snapshot")
	if err := c.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, "after-snapshot")
	want := c.Image()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	var restores int
	cfg.OnApply = func(*Image) { restores++ }
	c2, _ := openTest(t, cfg)
	got := c2.Image()
	for _, name := range []string{"before-snapshot", "after-snapshot"} {
		if got.Topics[name] == nil || got.Topics[name].ID != want.Topics[name].ID {
			t.Fatalf("topic %s lost on reopen", name)
		}
	}
	if got.ClusterID != want.ClusterID || got.Index < want.Index {
		t.Fatalf("image after reopen: cluster %s index %d, want %s >= %d", got.ClusterID, got.Index, want.ClusterID, want.Index)
	}
	if restores < 2 { // the snapshot restore, then the replayed command
		t.Fatalf("OnApply called %d times on reopen, want the restore and the replay", restores)
	}
}

func TestClosedControllerIsNotController(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := testCtx(t)
	res := c.CreateTopics(ctx, []CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 1}}, false)
	wantKafkaErr(t, res[0].Err, kerr.NotController)
	wantKafkaErr(t, c.AlterConfigs(ctx, ConfigResource{Type: ResourceBroker}, nil, false, false), kerr.NotController)
	if c.Image().ClusterID == "" {
		t.Fatal("image lost on Close")
	}
}

// countCommands counts the log entries of one command type in a closed
// controller's raft log.
func countCommands(t *testing.T, dir string, typ commandType) int {
	t.Helper()
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, raftDBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	n := 0
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type == raft.LogCommand && len(l.Data) > 0 && commandType(l.Data[0]) == typ {
			n++
		}
	}
	return n
}

func mustCreate(t *testing.T, c *Controller, name string) CreateTopicResult {
	t.Helper()
	res := c.CreateTopics(testCtx(t), []CreateTopic{{Name: name, NumPartitions: -1, ReplicationFactor: -1}}, false)
	if res[0].Err != nil {
		t.Fatalf("create %s: %v", name, res[0].Err)
	}
	return res[0]
}

func ptr(s string) *string { return &s }

func TestAllocateProducerIDsUniqueAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *Controller {
		c, err := Open(context.Background(), Config{NodeID: 1, Dir: dir, Host: "127.0.0.1", Port: 9092})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := open()
	first, err := c.AllocateProducerIDs(context.Background(), 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.AllocateProducerIDs(context.Background(), 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if second != first+1000 {
		t.Fatalf("second block starts at %d, want %d", second, first+1000)
	}
	c.Close()
	c = open()
	defer c.Close()
	third, err := c.AllocateProducerIDs(context.Background(), 1, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if third != second+1000 {
		t.Fatalf("block after restart starts at %d, want %d", third, second+1000)
	}
}
