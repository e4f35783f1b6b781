package controller

import (
	"slices"
	"testing"
)

// TestReplicasOfflineElections: a replica in a failed log directory leaves
// the ISR and its leadership, and while the image lists it offline no
// election picks it, clean or unclean, though its broker is live.
func TestReplicasOfflineElections(t *testing.T) {
	id := [16]byte{7}
	topic := &Topic{Name: "t", ID: id, Partitions: []*Partition{
		{Partition: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 3, PartitionEpoch: 5},
		{Partition: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 3, PartitionEpoch: 5},
	}}
	img := &Image{Topics: map[string]*Topic{"t": topic}, TopicsByID: map[[16]byte]*Topic{id: topic},
		Brokers: map[int32]*Broker{1: {ID: 1}, 2: {ID: 2}}}
	all := liveSet(1, 2)
	never := func(*Topic) bool { return false }
	always := func(*Topic) bool { return true }

	// Partition 0's replica on broker 2 is offline: only partition 0 changes.
	changes := planReplicasOffline(img, 2, []ReplicaRef{{TopicID: id, Partition: 0}}, all, never, nil)
	if len(changes) != 1 || changes[0].Partition != 0 || changes[0].Leader != 1 || !slices.Equal(changes[0].ISR, []int32{1}) || changes[0].LeaderEpoch != 4 {
		t.Fatalf("changes %+v, want partition 0 led by 1 with ISR [1] at leader epoch 4", changes)
	}

	// Broker 1 dies afterwards: partition 0 has no in-sync replica left
	// but 1 (the last member stays), so it goes offline; broker 2 is live
	// but its replica is offline, so even unclean election does not pick it.
	img.Brokers[2] = &Broker{ID: 2, OfflineReplicas: []ReplicaRef{{TopicID: id, Partition: 0}}}
	topic.Partitions[0] = &Partition{Partition: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: -1, LeaderEpoch: 5, PartitionEpoch: 7}
	if got := planOfflineElections(img, liveSet(2), always, nil); len(got) != 0 {
		t.Fatalf("offline elections %+v, want none: broker 2's replica is in a failed directory", got)
	}
	// Without the offline record, unclean election would pick broker 2.
	img.Brokers[2] = &Broker{ID: 2}
	if got := planOfflineElections(img, liveSet(2), always, nil); len(got) != 1 || got[0].Leader != 2 {
		t.Fatalf("offline elections %+v, want broker 2 elected uncleanly", got)
	}
}
