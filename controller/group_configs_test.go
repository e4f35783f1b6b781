package controller

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFSMGroupConfigs: group configs are applied copy-on-write, a group
// whose last key is deleted leaves the image, and they survive a snapshot
// and restore.
func TestFSMGroupConfigs(t *testing.T) {
	tf := newTestFSM(t)
	v1, v2 := "50000", "6000"
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceGroup, ResourceName: "g",
		Changes: map[string]*string{"consumer.session.timeout.ms": &v1, "consumer.heartbeat.interval.ms": &v2}})
	before := tf.image()
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceGroup, ResourceName: "g",
		Changes: map[string]*string{"consumer.heartbeat.interval.ms": nil}})
	if got := tf.image().GroupConfig("g"); !maps.Equal(got, map[string]string{"consumer.session.timeout.ms": v1}) {
		t.Fatalf("group configs = %v", got)
	}
	if len(before.GroupConfig("g")) != 2 {
		t.Fatalf("a later command changed an earlier image: %v", before.GroupConfig("g"))
	}
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceGroup, ResourceName: "other",
		Changes: map[string]*string{"consumer.session.timeout.ms": &v1}})
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceGroup, ResourceName: "other",
		Changes: map[string]*string{"consumer.session.timeout.ms": nil}})
	if _, ok := tf.image().GroupConfigs["other"]; ok {
		t.Fatal("empty group config set kept in the image")
	}

	want := tf.image()
	snap, err := tf.fsm.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if !bytes.Contains(sink.Bytes(), []byte(`"groupConfigs":{"g":{"consumer.session.timeout.ms":"50000"}}`)) {
		t.Fatalf("snapshot lacks the group configs: %s", sink.Bytes())
	}
	f := newFSM(nil)
	if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if got := f.current(); !sameImage(got, want) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, want)
	}
}

// TestAlterGroupConfigs: the controller resolves a group's ops like a
// topic's, hands the resulting set to the caller's validator, and writes
// nothing when it refuses, for validateOnly, or for the empty group id.
func TestAlterGroupConfigs(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.IsListConfig = func(_ int8, key string) bool { return key == "list" }
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	var validated map[string]string
	validate := func(configs map[string]string) error {
		validated = configs
		if configs["consumer.session.timeout.ms"] == "bad" {
			return errors.New("consumer.session.timeout.ms is bad")
		}
		return nil
	}

	if err := c.AlterGroupConfigs(ctx, "g", []ConfigOp{{Key: "consumer.session.timeout.ms", Value: ptr("50000")}, {Key: "list", Value: ptr("a"), Op: OpAppend}}, true, false, validate); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"consumer.session.timeout.ms": "50000", "list": "a"}
	if got := c.Image().GroupConfig("g"); !maps.Equal(got, want) || !maps.Equal(validated, want) {
		t.Fatalf("group configs = %v, validated %v, want %v", got, validated, want)
	}

	before := c.Image()
	wantKafkaErr(t, c.AlterGroupConfigs(ctx, "g", []ConfigOp{{Key: "consumer.session.timeout.ms", Value: ptr("bad")}}, true, false, validate), kerr.InvalidConfig)
	wantKafkaErr(t, c.AlterGroupConfigs(ctx, "g", []ConfigOp{{Key: "consumer.session.timeout.ms", Value: ptr("1"), Op: OpAppend}}, true, false, validate), kerr.InvalidConfig)
	wantKafkaErr(t, c.AlterGroupConfigs(ctx, "", []ConfigOp{{Key: "consumer.session.timeout.ms", Value: ptr("1")}}, true, false, validate), kerr.InvalidRequest)
	if err := c.AlterGroupConfigs(ctx, "g", []ConfigOp{{Key: "consumer.session.timeout.ms", Value: ptr("55000")}}, true, true, validate); err != nil {
		t.Fatal(err)
	}
	if c.Image() != before {
		t.Fatal("a refused or validate-only change changed the image")
	}

	// The legacy AlterConfigs replaces the group's whole set.
	if err := c.AlterGroupConfigs(ctx, "g", []ConfigOp{{Key: "consumer.heartbeat.interval.ms", Value: ptr("6000")}}, false, false, validate); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().GroupConfig("g"); !maps.Equal(got, map[string]string{"consumer.heartbeat.interval.ms": "6000"}) {
		t.Fatalf("after a non-incremental alter: %v", got)
	}
}
