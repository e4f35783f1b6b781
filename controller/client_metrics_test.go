package controller

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestFSMClientMetricsConfigs: client metrics subscriptions are applied
// copy-on-write, one whose last key is deleted leaves the image, and they
// survive a snapshot and restore, with none left and with one.
func TestFSMClientMetricsConfigs(t *testing.T) {
	tf := newTestFSM(t)
	m, iv := "org.apache.kafka.producer.", "1000"
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceClientMetrics, ResourceName: "s",
		Changes: map[string]*string{"metrics": &m, "interval.ms": &iv}})
	before := tf.image()
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceClientMetrics, ResourceName: "s",
		Changes: map[string]*string{"interval.ms": nil}})
	if got := tf.image().ClientMetricsConfigs["s"]; !maps.Equal(got, map[string]string{"metrics": m}) {
		t.Fatalf("subscription s = %v", got)
	}
	if len(before.ClientMetricsConfigs["s"]) != 2 {
		t.Fatalf("a later command changed an earlier image: %v", before.ClientMetricsConfigs["s"])
	}
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceClientMetrics, ResourceName: "s",
		Changes: map[string]*string{"metrics": nil}})
	if tf.image().ClientMetricsConfigs != nil {
		t.Fatalf("deleted subscription kept: %v", tf.image().ClientMetricsConfigs)
	}
	roundTrip := func(wantJSON string) {
		t.Helper()
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
		if wantJSON != "" && !bytes.Contains(sink.Bytes(), []byte(wantJSON)) {
			t.Fatalf("snapshot lacks %s: %s", wantJSON, sink.Bytes())
		}
		f := newFSM(nil)
		if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
			t.Fatal(err)
		}
		if got := f.current(); !sameImage(got, want) {
			t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, want)
		}
	}
	roundTrip("")
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceClientMetrics, ResourceName: "s2",
		Changes: map[string]*string{"interval.ms": &iv}})
	roundTrip(`"clientMetrics":{"s2":{"interval.ms":"1000"}}`)
}

// TestAlterClientMetricsConfigs: the empty name is refused with Kafka's
// message, the caller's validator sees the whole set after the change and
// its error comes back as it is, and validateOnly writes nothing.
func TestAlterClientMetricsConfigs(t *testing.T) {
	c, _ := openTest(t, testConfig(t, t.TempDir()))
	ctx := testCtx(t)
	refuse := errors.New("refused")
	var seen map[string]string
	validate := func(configs map[string]string) error {
		seen = configs
		if configs["interval.ms"] == "5" {
			return refuse
		}
		return nil
	}
	if err := c.AlterClientMetricsConfigs(ctx, "", []ConfigOp{{Key: "interval.ms", Value: ptr("1000")}}, true, false, validate); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("empty name: %v, want INVALID_REQUEST", err)
	}
	if err := c.AlterClientMetricsConfigs(ctx, "s", []ConfigOp{{Key: "metrics", Value: ptr("a")}}, true, false, validate); err != nil {
		t.Fatal(err)
	}
	if err := c.AlterClientMetricsConfigs(ctx, "s", []ConfigOp{{Key: "interval.ms", Value: ptr("5")}}, true, false, validate); !errors.Is(err, refuse) {
		t.Fatalf("refused change: %v", err)
	}
	if !maps.Equal(seen, map[string]string{"metrics": "a", "interval.ms": "5"}) {
		t.Fatalf("validator saw %v, want the whole set after the change", seen)
	}
	if err := c.AlterClientMetricsConfigs(ctx, "s", []ConfigOp{{Key: "interval.ms", Value: ptr("100")}}, true, true, validate); err != nil {
		t.Fatal(err)
	}
	if got := c.Image().ClientMetricsConfigs["s"]; !maps.Equal(got, map[string]string{"metrics": "a"}) {
		t.Fatalf("subscription after a refused and a validate-only change: %v", got)
	}
}
