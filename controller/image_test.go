package controller

import (
	"bytes"
	"io"
	"reflect"
	"slices"
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
	if !sameImage(got, want) {
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

// TestTopicsChangedSince: an image names the topics the command that built
// it touched, against the image it was built from only.
func TestTopicsChangedSince(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	tf.mustApply(registerBrokerCmd{ID: 1, Host: "h", Port: 9092})
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{
		{Name: "a", ID: idA, Replicas: [][]int32{{1}, {1}}},
		{Name: "b", ID: idB, Replicas: [][]int32{{1}}},
	}})
	created := tf.image()
	check := func(prev, img *Image, want []string, wantOK bool) {
		t.Helper()
		got, ok := img.TopicsChangedSince(prev)
		if ok != wantOK || !slices.Equal(got, want) {
			t.Fatalf("TopicsChangedSince = %v %v, want %v %v", got, ok, want, wantOK)
		}
	}
	check(tf.seen[len(tf.seen)-2], created, []string{"a", "b"}, true)

	p := created.Topics["a"].Partitions[1]
	tf.mustApply(changePartitionsCmd{Changes: []partitionChange{{TopicID: idA, Partition: 1,
		PartitionEpoch: p.PartitionEpoch, Leader: 1, LeaderEpoch: p.LeaderEpoch, ISR: []int32{1}}}})
	check(created, tf.image(), []string{"a"}, true)
	check(tf.seen[0], tf.image(), nil, false) // not the image it was built from

	// A rejected command changes nothing.
	before := tf.image()
	if err := tf.apply(deleteTopicsCmd{IDs: [][16]byte{{9}}}); err == nil {
		t.Fatal("deleting an unknown topic id applied")
	}
	check(before, tf.image(), nil, true)

	before = tf.image()
	tf.mustApply(deleteTopicsCmd{IDs: [][16]byte{idB}})
	check(before, tf.image(), []string{"b"}, true)
	check(nil, tf.image(), nil, false)
}

// sameImage compares two images as a snapshot sees them: what changed
// against the previous image (TopicsChangedSince) is not part of one.
func sameImage(a, b *Image) bool {
	ca, cb := *a, *b
	ca.changed, ca.changedFrom, ca.hasDelta = nil, 0, false
	cb.changed, cb.changedFrom, cb.hasDelta = nil, 0, false
	return reflect.DeepEqual(&ca, &cb)
}
