package controller

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"
)

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "test" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*memSink)(nil)

func TestImageSnapshotRoundTrip(t *testing.T) {
	tf := newTestFSM(t)
	v := "compact"
	tf.mustApply(initClusterCmd{ClusterID: NewClusterID()})
	tf.mustApply(registerBrokerCmd{ID: 1, Host: "a", Port: 1, Rack: "r1", Incarnation: [16]byte{5}})
	tf.mustApply(registerBrokerCmd{ID: 2, Host: "b", Port: 2, Fenced: true})
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{
		{Name: "a", ID: idA, Replicas: [][]int32{{1, 2}, {2, 1}}, Configs: map[string]string{"cleanup.policy": "delete"}},
		{Name: "__transaction_state", ID: idB, Internal: true, Replicas: [][]int32{{1}}},
	}})
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceBroker, ResourceName: "1", Changes: map[string]*string{"x": &v}})
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
	encoded := append([]byte(nil), sink.Bytes()...)

	var restored []*Image
	f := newFSM(func(img *Image) { restored = append(restored, img) })
	if err := f.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	got := f.current()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("restored image differs:\n got %+v\nwant %+v", got, want)
	}
	if got.TopicsByID[idA] != got.Topics["a"] {
		t.Fatal("restored indexes do not share topics")
	}
	if len(restored) != 1 || restored[0] != got {
		t.Fatal("OnApply not called once with the restored image")
	}

	// Equal images encode to equal bytes.
	snap2, _ := f.Snapshot()
	var sink2 memSink
	if err := snap2.Persist(&sink2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encoded, sink2.Bytes()) {
		t.Fatal("snapshot of the restored image is not byte-identical")
	}
}

func TestRestoreRejectsUnknownVersion(t *testing.T) {
	f := newFSM(nil)
	err := f.Restore(io.NopCloser(bytes.NewReader([]byte(`{"version":99}`))))
	if err == nil {
		t.Fatal("restored a snapshot of an unknown version")
	}
}
