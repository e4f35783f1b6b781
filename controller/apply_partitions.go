package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Transitions of broker liveness and partition leadership. The decisions
// were made by the active controller (election.go); these functions only
// check that each decision still fits the image and apply it. A command is
// atomic: one stale change rejects the whole command and the controller
// decides again against the newer image.

func applyFenceBroker(b *imageBuilder, index uint64, payload []byte) error {
	var c fenceBrokerCmd
	decodePayload(cmdFenceBroker, index, payload, &c)
	return applyBrokerFencing(b, c.ID, c.Epoch, true, c.Controlled, c.Changes)
}

func applyUnfenceBroker(b *imageBuilder, index uint64, payload []byte) error {
	var c unfenceBrokerCmd
	decodePayload(cmdUnfenceBroker, index, payload, &c)
	return applyBrokerFencing(b, c.ID, c.Epoch, false, false, c.Changes)
}

func applyChangePartitions(b *imageBuilder, index uint64, payload []byte) error {
	var c changePartitionsCmd
	decodePayload(cmdChangePartitions, index, payload, &c)
	if err := checkPartitionChanges(b.base, c.Changes); err != nil {
		return err
	}
	applyPartitionChanges(b, c.Changes)
	return nil
}

// applyBrokerFencing sets broker id's fenced state (and whether a
// controlled shutdown fenced it) and applies the changes that go with it,
// if the broker still has epoch.
func applyBrokerFencing(b *imageBuilder, id int32, epoch int64, fenced, shutDown bool, changes []partitionChange) error {
	old, ok := b.base.Brokers[id]
	if !ok {
		return fmt.Errorf("%w: broker %d is not registered", kerr.BrokerNotAvailable, id)
	}
	if old.Epoch != epoch {
		return fmt.Errorf("%w: broker %d has epoch %d, command was decided at %d", kerr.StaleBrokerEpoch, id, old.Epoch, epoch)
	}
	if err := checkPartitionChanges(b.base, changes); err != nil {
		return err
	}
	nb := *old
	nb.Fenced, nb.ShutDown = fenced, shutDown
	b.brokers()[id] = &nb
	applyPartitionChanges(b, changes)
	return nil
}

// checkPartitionChanges rejects changes that do not fit img: an unknown
// partition, a partition epoch other than the one decided against, a
// partition named twice, a leader epoch going backwards, or a state Kafka
// never allows (an empty ISR, an ISR member or leader outside the
// assignment, a leader outside the ISR).
func checkPartitionChanges(img *Image, changes []partitionChange) error {
	type key struct {
		id [16]byte
		p  int32
	}
	seen := map[key]bool{}
	for _, ch := range changes {
		t, ok := img.TopicsByID[ch.TopicID]
		if !ok {
			return fmt.Errorf("%w: topic id %s does not exist", kerr.UnknownTopicID, uuidString(ch.TopicID))
		}
		if ch.Partition < 0 || int(ch.Partition) >= len(t.Partitions) {
			return fmt.Errorf("%w: %s has no partition %d", kerr.UnknownTopicOrPartition, t.Name, ch.Partition)
		}
		k := key{ch.TopicID, ch.Partition}
		if seen[k] {
			return fmt.Errorf("%w: %s-%d changed twice in one command", kerr.InvalidRequest, t.Name, ch.Partition)
		}
		seen[k] = true
		p := t.Partitions[ch.Partition]
		if ch.PartitionEpoch != p.PartitionEpoch {
			return fmt.Errorf("%w: %s-%d is at partition epoch %d, change was decided at %d",
				kerr.InvalidUpdateVersion, t.Name, ch.Partition, p.PartitionEpoch, ch.PartitionEpoch)
		}
		if ch.LeaderEpoch < p.LeaderEpoch || (ch.Leader != p.Leader && ch.LeaderEpoch == p.LeaderEpoch) {
			return fmt.Errorf("%w: %s-%d leader epoch %d does not follow %d",
				kerr.FencedLeaderEpoch, t.Name, ch.Partition, ch.LeaderEpoch, p.LeaderEpoch)
		}
		if err := checkChangeState(img, p.Replicas, ch); err != nil {
			return fmt.Errorf("%w: %s-%d: %v", kerr.InvalidRequest, t.Name, ch.Partition, err)
		}
	}
	return nil
}

// checkPartitionState checks a leader and ISR against an assignment.
func checkPartitionState(replicas []int32, leader int32, isr []int32) error {
	if len(isr) == 0 {
		return fmt.Errorf("empty ISR")
	}
	for i, r := range isr {
		if !slices.Contains(replicas, r) || slices.Contains(isr[:i], r) {
			return fmt.Errorf("ISR %v is not a set of replicas %v", isr, replicas)
		}
	}
	if leader != -1 && !slices.Contains(isr, leader) {
		return fmt.Errorf("leader %d is not in ISR %v", leader, isr)
	}
	return nil
}

// applyPartitionChanges applies checked changes.
func applyPartitionChanges(b *imageBuilder, changes []partitionChange) {
	for _, ch := range changes {
		old := b.base.TopicsByID[ch.TopicID].Partitions[ch.Partition]
		np := *old // keeps the replicas and any reassignment in progress
		np.ISR = slices.Clone(ch.ISR)
		np.Leader = ch.Leader
		np.LeaderEpoch = ch.LeaderEpoch
		np.PartitionEpoch = old.PartitionEpoch + 1
		np.ELR, np.LastKnownELR = slices.Clone(ch.ELR), slices.Clone(ch.LastKnownELR)
		b.setPartition(ch.TopicID, &np)
	}
}
