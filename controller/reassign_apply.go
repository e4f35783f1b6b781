package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// applyReassignPartitions sets the decided state of every partition in the
// command, after checking, like checkPartitionChanges, that each record
// was decided against the partition's current epoch and describes a state
// Kafka allows. The command is atomic: one bad record rejects it all.
func applyReassignPartitions(b *imageBuilder, index uint64, payload []byte) error {
	var c reassignPartitionsCmd
	decodePayload(cmdReassignPartitions, index, payload, &c)
	type key struct {
		id [16]byte
		p  int32
	}
	seen := map[key]bool{}
	for _, r := range c.Changes {
		t, ok := b.base.TopicsByID[r.TopicID]
		if !ok {
			return fmt.Errorf("%w: topic id %s does not exist", kerr.UnknownTopicID, uuidString(r.TopicID))
		}
		if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: %s has no partition %d", kerr.UnknownTopicOrPartition, t.Name, r.Partition)
		}
		k := key{r.TopicID, r.Partition}
		if seen[k] {
			return fmt.Errorf("%w: %s-%d changed twice in one command", kerr.InvalidRequest, t.Name, r.Partition)
		}
		seen[k] = true
		p := t.Partitions[r.Partition]
		if r.PartitionEpoch != p.PartitionEpoch {
			return fmt.Errorf("%w: %s-%d is at partition epoch %d, reassignment was decided at %d",
				kerr.InvalidUpdateVersion, t.Name, r.Partition, p.PartitionEpoch, r.PartitionEpoch)
		}
		if r.LeaderEpoch < p.LeaderEpoch || (r.Leader != p.Leader && r.LeaderEpoch == p.LeaderEpoch) {
			return fmt.Errorf("%w: %s-%d leader epoch %d does not follow %d",
				kerr.FencedLeaderEpoch, t.Name, r.Partition, r.LeaderEpoch, p.LeaderEpoch)
		}
		if err := checkReassignmentState(r); err != nil {
			return fmt.Errorf("%w: %s-%d: %v", kerr.InvalidRequest, t.Name, r.Partition, err)
		}
	}
	for _, r := range c.Changes {
		old := b.base.TopicsByID[r.TopicID].Partitions[r.Partition]
		b.setPartition(r.TopicID, &Partition{
			Partition:        r.Partition,
			Replicas:         slices.Clone(r.Replicas),
			ISR:              slices.Clone(r.ISR),
			Leader:           r.Leader,
			LeaderEpoch:      r.LeaderEpoch,
			PartitionEpoch:   old.PartitionEpoch + 1,
			AddingReplicas:   slices.Clone(r.AddingReplicas),
			RemovingReplicas: slices.Clone(r.RemovingReplicas),
		})
	}
	return nil
}

// checkReassignmentState checks a record's replica set: no duplicates or
// negative ids, adding and removing replicas disjoint subsets of it, and a
// leader and ISR that checkPartitionState accepts.
func checkReassignmentState(r reassignmentRecord) error {
	if len(r.Replicas) == 0 {
		return fmt.Errorf("empty replica list")
	}
	for i, id := range r.Replicas {
		if id < 0 || slices.Contains(r.Replicas[:i], id) {
			return fmt.Errorf("replicas %v are not a set of broker ids", r.Replicas)
		}
	}
	for _, id := range r.AddingReplicas {
		if !slices.Contains(r.Replicas, id) || slices.Contains(r.RemovingReplicas, id) {
			return fmt.Errorf("adding replicas %v are not replicas %v outside removing %v", r.AddingReplicas, r.Replicas, r.RemovingReplicas)
		}
	}
	for _, id := range r.RemovingReplicas {
		if !slices.Contains(r.Replicas, id) {
			return fmt.Errorf("removing replicas %v are not among replicas %v", r.RemovingReplicas, r.Replicas)
		}
	}
	if len(r.RemovingReplicas) == len(r.Replicas) {
		return fmt.Errorf("every replica of %v is being removed", r.Replicas)
	}
	return checkPartitionState(r.Replicas, r.Leader, r.ISR)
}
