package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// threeBrokerFSM is an FSM with brokers 1-3 registered (epochs 2-4) and
// topic "a" (idA) of two partitions replicated on all three, led by 1 and 2.
func threeBrokerFSM(t *testing.T) *testFSM {
	tf := newTestFSM(t)
	tf.mustApply(initClusterCmd{ClusterID: "c"})
	for id := int32(1); id <= 3; id++ {
		tf.mustApply(registerBrokerCmd{ID: id, Host: "h", Port: 9090 + id})
	}
	tf.mustApply(createTopicsCmd{Topics: []topicRecord{{Name: "a", ID: idA, Replicas: [][]int32{{1, 2, 3}, {2, 3, 1}}}}})
	return tf
}

func wantPartition(t *testing.T, p *Partition, leader, leaderEpoch, partitionEpoch int32, isr ...int32) {
	t.Helper()
	if p.Leader != leader || p.LeaderEpoch != leaderEpoch || p.PartitionEpoch != partitionEpoch || !slices.Equal(p.ISR, isr) {
		t.Fatalf("partition %d = leader %d epoch %d partition epoch %d isr %v, want %d %d %d %v",
			p.Partition, p.Leader, p.LeaderEpoch, p.PartitionEpoch, p.ISR, leader, leaderEpoch, partitionEpoch, isr)
	}
}

func TestFSMFenceBrokerMovesLeadership(t *testing.T) {
	tf := threeBrokerFSM(t)
	img := tf.image()
	changes := planRemoveReplica(img, 1, liveSet(2, 3), uncleanPolicy(img, 2, false), nil)
	if len(changes) != 2 {
		t.Fatalf("%d changes, want both partitions", len(changes))
	}
	tf.mustApply(fenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch, Changes: changes})
	next := tf.image()
	if !next.Brokers[1].Fenced || next.Brokers[1].ShutDown {
		t.Fatalf("broker 1 = %+v, want fenced, not shut down", next.Brokers[1])
	}
	a := next.Topics["a"]
	wantPartition(t, a.Partitions[0], 2, 1, 1, 2, 3) // led by 1: 2 takes over
	wantPartition(t, a.Partitions[1], 2, 0, 1, 2, 3) // 1 only leaves the ISR
	// The old image is untouched.
	wantPartition(t, img.Topics["a"].Partitions[0], 1, 0, 0, 1, 2, 3)
	if img.Brokers[1].Fenced {
		t.Fatal("fencing modified the previous image")
	}
}

func TestFSMFenceRejectsStaleDecisions(t *testing.T) {
	tf := threeBrokerFSM(t)
	img := tf.image()
	stale := planRemoveReplica(img, 1, liveSet(2, 3), uncleanPolicy(img, 2, false), nil)
	// An ISR change commits first.
	ch := changeOf(idA, img.Topics["a"].Partitions[1], 2, []int32{2, 3})
	tf.mustApply(changePartitionsCmd{Changes: []partitionChange{ch}})

	err := tf.apply(fenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch, Changes: stale})
	wantKafkaErr(t, err, kerr.InvalidUpdateVersion)
	if tf.image().Brokers[1].Fenced {
		t.Fatal("a rejected fence fenced the broker")
	}
	wantPartition(t, tf.image().Topics["a"].Partitions[0], 1, 0, 0, 1, 2, 3) // atomic: nothing applied

	err = tf.apply(fenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch - 1})
	wantKafkaErr(t, err, kerr.StaleBrokerEpoch)
	err = tf.apply(fenceBrokerCmd{ID: 9, Epoch: 1})
	wantKafkaErr(t, err, kerr.BrokerNotAvailable)
}

func TestFSMUnfenceElectsOfflinePartition(t *testing.T) {
	tf := threeBrokerFSM(t)
	// Shrink partition 0's ISR to {1}, then fence 1: it goes offline.
	img := tf.image()
	tf.mustApply(changePartitionsCmd{Changes: []partitionChange{changeOf(idA, img.Topics["a"].Partitions[0], 1, []int32{1})}})
	img = tf.image()
	tf.mustApply(fenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch, Changes: planRemoveReplica(img, 1, liveSet(2, 3), uncleanPolicy(img, 2, false), nil)})
	img = tf.image()
	wantPartition(t, img.Topics["a"].Partitions[0], -1, 1, 2, 1)

	// 2 and 3 are live but out of sync: no clean election.
	if ch := planOfflineElections(img, liveness(img, nil), uncleanPolicy(img, 2, false), nil); len(ch) != 0 {
		t.Fatalf("clean election of an out-of-sync replica: %+v", ch)
	}
	// 1 returns.
	up := func(id int32) bool { return id == 1 || liveness(img, nil)(id) }
	tf.mustApply(unfenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch, Changes: planOfflineElections(img, up, uncleanPolicy(img, 2, false), nil)})
	img = tf.image()
	if img.Brokers[1].Fenced {
		t.Fatal("broker 1 still fenced")
	}
	wantPartition(t, img.Topics["a"].Partitions[0], 1, 2, 3, 1)
}

func TestFSMUncleanElection(t *testing.T) {
	tf := threeBrokerFSM(t)
	img := tf.image()
	tf.mustApply(changePartitionsCmd{Changes: []partitionChange{changeOf(idA, img.Topics["a"].Partitions[0], 1, []int32{1})}})
	img = tf.image()
	// With unclean election enabled on the topic, fencing the last ISR
	// member elects the first live out-of-sync replica at once.
	tf.mustApply(alterConfigsCmd{ResourceType: ResourceTopic, ResourceName: "a", Changes: map[string]*string{uncleanLeaderElectionKey: ptr("true")}})
	img = tf.image()
	tf.mustApply(fenceBrokerCmd{ID: 1, Epoch: img.Brokers[1].Epoch, Changes: planRemoveReplica(img, 1, liveSet(2, 3), uncleanPolicy(img, 2, false), nil)})
	wantPartition(t, tf.image().Topics["a"].Partitions[0], 2, 1, 2, 2)
}

func TestFSMChangePartitionsChecks(t *testing.T) {
	tf := threeBrokerFSM(t)
	p0 := tf.image().Topics["a"].Partitions[0]
	tests := []struct {
		name string
		ch   partitionChange
		want *kerr.Error
	}{
		{name: "unknown topic", ch: partitionChange{TopicID: idB, ISR: []int32{1}, Leader: 1}, want: kerr.UnknownTopicID},
		{name: "unknown partition", ch: partitionChange{TopicID: idA, Partition: 7, ISR: []int32{1}, Leader: 1}, want: kerr.UnknownTopicOrPartition},
		{name: "stale partition epoch", ch: partitionChange{TopicID: idA, PartitionEpoch: 5, ISR: []int32{1}, Leader: 1}, want: kerr.InvalidUpdateVersion},
		{name: "leader change without epoch bump", ch: partitionChange{TopicID: idA, ISR: []int32{2}, Leader: 2}, want: kerr.FencedLeaderEpoch},
		{name: "empty ISR", ch: partitionChange{TopicID: idA, Leader: -1, LeaderEpoch: 1}, want: kerr.InvalidRequest},
		{name: "leader outside ISR", ch: partitionChange{TopicID: idA, ISR: []int32{2}, Leader: 1}, want: kerr.InvalidRequest},
		{name: "ISR outside assignment", ch: partitionChange{TopicID: idA, ISR: []int32{1, 4}, Leader: 1}, want: kerr.InvalidRequest},
		{name: "ISR repeats a replica", ch: partitionChange{TopicID: idA, ISR: []int32{1, 1}, Leader: 1}, want: kerr.InvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKafkaErr(t, tf.apply(changePartitionsCmd{Changes: []partitionChange{tt.ch}}), tt.want)
		})
	}
	twice := changeOf(idA, p0, 1, []int32{1, 2})
	wantKafkaErr(t, tf.apply(changePartitionsCmd{Changes: []partitionChange{twice, twice}}), kerr.InvalidRequest)
	wantPartition(t, tf.image().Topics["a"].Partitions[0], 1, 0, 0, 1, 2, 3)
}

func TestDecideAlterPartition(t *testing.T) {
	tf := threeBrokerFSM(t)
	img := tf.image()
	tf.mustApply(fenceBrokerCmd{ID: 3, Epoch: img.Brokers[3].Epoch, Changes: planRemoveReplica(img, 3, liveSet(1, 2), uncleanPolicy(img, 1, false), nil)})
	img = tf.image()
	p0 := img.Topics["a"].Partitions[0] // leader 1, epoch 0, partition epoch 1, ISR {1,2}
	e1 := img.Brokers[1].Epoch
	ok := AlterPartitionRequest{BrokerID: 1, BrokerEpoch: e1, Topic: "a", Partition: 0,
		LeaderEpoch: p0.LeaderEpoch, PartitionEpoch: p0.PartitionEpoch, NewISR: []int32{1}}
	with := func(f func(r *AlterPartitionRequest)) AlterPartitionRequest {
		r := ok
		r.NewISR = slices.Clone(ok.NewISR)
		f(&r)
		return r
	}
	tests := []struct {
		name string
		req  AlterPartitionRequest
		want *kerr.Error // nil: accepted
	}{
		{name: "shrink accepted", req: ok},
		{name: "by topic id", req: with(func(r *AlterPartitionRequest) { r.Topic, r.TopicID = "", idA })},
		{name: "broker epoch unchecked at -1", req: with(func(r *AlterPartitionRequest) { r.BrokerEpoch = -1 })},
		{name: "stale broker epoch", req: with(func(r *AlterPartitionRequest) { r.BrokerEpoch = e1 - 1 }), want: kerr.StaleBrokerEpoch},
		{name: "unknown broker", req: with(func(r *AlterPartitionRequest) { r.BrokerID = 7 }), want: kerr.StaleBrokerEpoch},
		{name: "unknown topic", req: with(func(r *AlterPartitionRequest) { r.Topic = "nope" }), want: kerr.UnknownTopicOrPartition},
		{name: "unknown topic id", req: with(func(r *AlterPartitionRequest) { r.TopicID = idB }), want: kerr.UnknownTopicID},
		{name: "unknown partition", req: with(func(r *AlterPartitionRequest) { r.Partition = 2 }), want: kerr.UnknownTopicOrPartition},
		{name: "stale leader epoch", req: with(func(r *AlterPartitionRequest) { r.LeaderEpoch-- }), want: kerr.FencedLeaderEpoch},
		{name: "leader epoch from the future", req: with(func(r *AlterPartitionRequest) { r.LeaderEpoch++ }), want: kerr.NotController},
		{name: "not the leader", req: with(func(r *AlterPartitionRequest) { r.BrokerID, r.BrokerEpoch = 2, -1 }), want: kerr.InvalidRequest},
		{name: "stale partition epoch", req: with(func(r *AlterPartitionRequest) { r.PartitionEpoch-- }), want: kerr.InvalidUpdateVersion},
		{name: "leader missing from ISR", req: with(func(r *AlterPartitionRequest) { r.NewISR = []int32{2} }), want: kerr.InvalidRequest},
		{name: "fenced replica in ISR", req: with(func(r *AlterPartitionRequest) { r.NewISR = []int32{1, 2, 3} }), want: kerr.IneligibleReplica},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, ch, err := decideAlterPartition(img, tt.req)
			if tt.want != nil {
				wantKafkaErr(t, err, tt.want)
				return
			}
			if err != nil || ch == nil {
				t.Fatalf("decide = %v %v, want a change", ch, err)
			}
		})
	}
	// The accepted change commits with the next partition epoch; the same
	// request again is now stale.
	_, _, ch, _ := decideAlterPartition(img, ok)
	tf.mustApply(changePartitionsCmd{Changes: []partitionChange{*ch}})
	wantPartition(t, tf.image().Topics["a"].Partitions[0], 1, 0, 2, 1)
	_, _, _, err := decideAlterPartition(tf.image(), ok)
	wantKafkaErr(t, err, kerr.InvalidUpdateVersion)
	// Unchanged ISR: no change to commit.
	same := ok
	same.PartitionEpoch, same.NewISR = 2, []int32{1}
	if _, _, ch, err := decideAlterPartition(tf.image(), same); err != nil || ch != nil {
		t.Fatalf("unchanged ISR: change %v err %v, want neither", ch, err)
	}
}
