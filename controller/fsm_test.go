package controller

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// These tests drive the state machine with encoded commands and no raft, as
// Consul tests its FSM: what a node builds from a log depends only on the
// entries, so the entries are all a test needs.

// testFSM is an fsm plus the next index to apply at.
type testFSM struct {
	t     *testing.T
	fsm   *fsm
	index uint64
	seen  []*Image // images passed to OnApply, in order
}

func newTestFSM(t *testing.T) *testFSM {
	tf := &testFSM{t: t}
	tf.fsm = newFSM(func(img *Image) { tf.seen = append(tf.seen, img) })
	return tf
}

// apply encodes cmd, applies it at the next index and returns the FSM's
// verdict.
func (tf *testFSM) apply(cmd command) error {
	tf.t.Helper()
	data, err := encodeCommand(cmd)
	if err != nil {
		tf.t.Fatal(err)
	}
	tf.index++
	return tf.fsm.applyEntry(tf.index, data)
}

func (tf *testFSM) mustApply(cmd command) {
	tf.t.Helper()
	if err := tf.apply(cmd); err != nil {
		tf.t.Fatalf("apply %v: %v", cmd.commandType(), err)
	}
}

func (tf *testFSM) image() *Image { return tf.fsm.current() }

// wantKafkaErr fails unless err carries the Kafka error code want.
func wantKafkaErr(t *testing.T, err error, want *kerr.Error) {
	t.Helper()
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != want {
		t.Fatalf("error = %v, want %s", err, want.Message)
	}
}

var (
	idA = [16]byte{1, 0xa}
	idB = [16]byte{1, 0xb}
)

func TestFSMInitClusterOnce(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "first"})
	err := tf.apply(initClusterCmd{ClusterID: "second"})
	wantKafkaErr(t, err, kerr.InvalidRequest)
	img := tf.image()
	if img.ClusterID != "first" || img.Index != 2 {
		t.Fatalf("cluster id %q index %d, want first at 2", img.ClusterID, img.Index)
	}
}

func TestFSMRegisterBrokerEpochIsIndex(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	tf.mustApply(registerBrokerCmd{ID: 3, Host: "h", Port: 9092, Rack: "r1"})
	tf.mustApply(registerBrokerCmd{ID: 3, Host: "h2", Port: 9093})
	b := tf.image().Brokers[3]
	if b.Host != "h2" || b.Port != 9093 || b.Rack != "" || b.Epoch != 3 {
		t.Fatalf("broker = %+v, want h2:9093 no rack epoch 3", *b)
	}
}

func TestFSMCreateTopics(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{
		{Name: "a", ID: idA, Replicas: [][]int32{{1, 2}, {2, 1}}, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: "__consumer_offsets", ID: idB, Internal: true, Replicas: [][]int32{{1}}},
	}})
	img := tf.image()
	a := img.Topics["a"]
	if a == nil || img.TopicsByID[idA] != a {
		t.Fatalf("topic a missing from an index: %+v", img.Topics)
	}
	if a.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("configs = %v", a.Configs)
	}
	p1 := a.Partitions[1]
	if p1.Partition != 1 || p1.Leader != 2 || len(p1.ISR) != 2 || p1.LeaderEpoch != 0 || p1.PartitionEpoch != 0 {
		t.Fatalf("partition 1 = %+v", *p1)
	}
	if !img.Topics["__consumer_offsets"].Internal {
		t.Fatal("__consumer_offsets not internal")
	}
}

func TestFSMCreateTopicsIsAtomic(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{{Name: "a", ID: idA, Replicas: [][]int32{{1}}}}})
	before := tf.image()
	err := tf.apply(createTopicsCmd{Topics: []topicRecord{
		{Name: "b", ID: idB, Replicas: [][]int32{{1}}},
		{Name: "a", ID: [16]byte{9}, Replicas: [][]int32{{1}}},
	}})
	wantKafkaErr(t, err, kerr.TopicAlreadyExists)
	img := tf.image()
	if _, ok := img.Topics["b"]; ok {
		t.Fatal("b created by a rejected command")
	}
	if img.Index != before.Index+1 {
		t.Fatalf("index %d, want %d: a rejected command still advances the index", img.Index, before.Index+1)
	}

	err = tf.apply(createTopicsCmd{Topics: []topicRecord{{Name: "c", ID: idA, Replicas: [][]int32{{1}}}}})
	wantKafkaErr(t, err, kerr.InvalidRequest)
}

func TestFSMDeleteTopics(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{
		{Name: "a", ID: idA, Replicas: [][]int32{{1}}},
		{Name: "b", ID: idB, Replicas: [][]int32{{1}}},
	}})
	wantKafkaErr(t, tf.apply(deleteTopicsCmd{IDs: [][16]byte{idA, {7}}}), kerr.UnknownTopicID)
	if len(tf.image().Topics) != 2 {
		t.Fatal("rejected delete removed a topic")
	}
	tf.mustApply(deleteTopicsCmd{IDs: [][16]byte{idA}})
	img := tf.image()
	if _, ok := img.Topics["a"]; ok {
		t.Fatal("a still in Topics")
	}
	if _, ok := img.TopicsByID[idA]; ok {
		t.Fatal("a still in TopicsByID")
	}
	if img.Topics["b"] == nil {
		t.Fatal("b deleted")
	}
}

func TestFSMCreatePartitionsLeavesOldImageAlone(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{{Name: "a", ID: idA, Replicas: [][]int32{{1}}}}})
	old := tf.image()
	tf.mustApply(createPartitionsCmd{Topics: []newPartitionsRecord{{TopicID: idA, FirstPartition: 1, Replicas: [][]int32{{2}, {1}}}}})
	if n := len(old.Topics["a"].Partitions); n != 1 {
		t.Fatalf("old image changed: %d partitions", n)
	}
	parts := tf.image().Topics["a"].Partitions
	if len(parts) != 3 || parts[1].Partition != 1 || parts[1].Leader != 2 || parts[2].Partition != 2 {
		t.Fatalf("partitions = %+v %+v %+v", *parts[0], *parts[1], *parts[2])
	}
	if tf.image().TopicsByID[idA] != tf.image().Topics["a"] {
		t.Fatal("indexes disagree")
	}
	// A decision made against a stale partition count is rejected.
	err := tf.apply(createPartitionsCmd{Topics: []newPartitionsRecord{{TopicID: idA, FirstPartition: 1, Replicas: [][]int32{{1}}}}})
	wantKafkaErr(t, err, kerr.InvalidPartitions)
}

func TestFSMAlterConfigs(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{{Name: "a", ID: idA, Replicas: [][]int32{{1}}}}})
	v1, v2 := "1000", "compact"
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceTopic, ResourceName: "a",
		Changes: map[string]*string{"retention.ms": &v1, "cleanup.policy": &v2}})
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceTopic, ResourceName: "a",
		Changes: map[string]*string{"retention.ms": nil}})
	if got := tf.image().Topics["a"].Configs; len(got) != 1 || got["cleanup.policy"] != "compact" {
		t.Fatalf("topic configs = %v", got)
	}
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceBroker, ResourceName: "",
		Changes: map[string]*string{"log.retention.ms": &v1}})
	if got := tf.image().BrokerConfigs[""]["log.retention.ms"]; got != v1 {
		t.Fatalf("cluster default = %q", got)
	}
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceBroker, ResourceName: "",
		Changes: map[string]*string{"log.retention.ms": nil}})
	if _, ok := tf.image().BrokerConfigs[""]; ok {
		t.Fatal("empty broker config set kept in the image")
	}
	wantKafkaErr(t, tf.apply(alterConfigsCmd{ResourceType: ResourceTopic, ResourceName: "nope",
		Changes: map[string]*string{"x": &v1}}), kerr.UnknownTopicOrPartition)
}

func TestFSMOnApplyInLogOrder(t *testing.T) {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	tf.mustApply(registerBrokerCmd{ID: 1})
	_ = tf.apply(initClusterCmd{ClusterID: "again"}) // rejected, still published
	if len(tf.seen) != 3 {
		t.Fatalf("OnApply called %d times, want 3", len(tf.seen))
	}
	for i, img := range tf.seen {
		if img.Index != uint64(i+1) {
			t.Fatalf("OnApply call %d saw index %d", i, img.Index)
		}
	}
}

func TestFSMPanicsOnUnknownCommand(t *testing.T) {
	for name, data := range map[string][]byte{
		"unknown type": {200, '{', '}'},
		"empty entry":  {},
		"bad payload":  {byte(cmdCreateTopics), '['},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			newFSM(nil).applyEntry(1, data)
		})
	}
}

// TestCommandTypesFrozen pins the on-disk numbers of command types: changing
// one breaks every existing metadata log.
func TestCommandTypesFrozen(t *testing.T) {
	want := map[commandType]uint8{
		cmdInitCluster: 1, cmdRegisterBroker: 2, cmdCreateTopics: 3,
		cmdDeleteTopics: 4, cmdCreatePartitions: 5, cmdAlterConfigs: 6,
		cmdAllocateProducerIDs: 7, cmdFenceBroker: 8, cmdUnfenceBroker: 9,
		cmdChangePartitions: 10, cmdReassignPartitions: 11, cmdAlterClientQuotas: 12,
		cmdAlterScram: 13, cmdCreateACLs: 14, cmdDeleteACLs: 15, cmdUpdateFeatures: 16,
		cmdUnregisterBroker: 17, cmdReplicasOffline: 18,
	}
	for typ, n := range want {
		if uint8(typ) != n {
			t.Errorf("%v = %d, want %d", typ, typ, n)
		}
		if _, ok := applyTable[typ]; !ok {
			t.Errorf("%v has no apply function", typ)
		}
	}
	if len(applyTable) != len(want) {
		t.Errorf("applyTable has %d types, test knows %d: pin the new one here", len(applyTable), len(want))
	}
}
