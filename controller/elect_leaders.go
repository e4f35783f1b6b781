package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ElectLeaders (KIP-183, KIP-460): an operator asks the active controller to
// move leadership back to the preferred replica, or to elect an out-of-sync
// replica of a partition that has no leader. The decision is KRaft's
// (ReplicationControlManager.electLeader with PartitionChangeBuilder), made
// here by the pure function decideElection and committed as one
// ChangePartitions command with a leader-epoch bump per elected partition.

// ElectionType is the kind of election ElectLeaders runs; the values are
// the ElectionType field of the ElectLeaders request.
type ElectionType int8

const (
	// ElectPreferred makes the preferred replica (the first assigned)
	// leader when it is live and in the ISR.
	ElectPreferred ElectionType = 0
	// ElectUnclean elects a leader for a partition that has none: the
	// first live in-sync replica, else the first live replica at all,
	// which becomes the whole ISR (and may lack committed records).
	ElectUnclean ElectionType = 1
)

func (t ElectionType) String() string {
	switch t {
	case ElectPreferred:
		return "PREFERRED"
	case ElectUnclean:
		return "UNCLEAN"
	}
	return fmt.Sprintf("ElectionType(%d)", int8(t))
}

// ElectTopic names partitions of one topic to elect leaders for.
type ElectTopic struct {
	Topic      string
	Partitions []int32
}

// ElectLeadersTopicResult is the outcome of ElectLeaders for one topic.
type ElectLeadersTopicResult struct {
	Topic      string
	Partitions []ElectLeadersPartitionResult
}

// ElectLeadersPartitionResult is the outcome for one partition; Err carries
// the Kafka error (nil when a leader was elected).
type ElectLeadersPartitionResult struct {
	Partition int32
	Err       error
}

// ElectLeaders runs elections of type typ for the listed partitions, or for
// every partition of every topic when topics is nil, and returns once the
// elected leaders are committed and applied locally. Each partition gets
// one result, as KRaft decides it:
//
//   - UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that does not
//     exist, INVALID_TOPIC_EXCEPTION for a name no topic can have;
//   - ELECTION_NOT_NEEDED when the preferred replica already leads
//     (preferred) or the partition has a leader (unclean);
//   - PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica is not
//     live or not in the ISR and nothing else changes;
//   - ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica of a leaderless
//     partition is live (unclean).
//
// With topics nil, partitions that need no election are left out of the
// results (KRaft does the same), but every topic is listed. A listed
// partition named twice is decided once and reported each time.
//
// The returned error is the request's own: NOT_CONTROLLER on a node that is
// not the active controller, INVALID_REQUEST for an unknown election type,
// or the error of the command that should have committed the elections.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, topics []ElectTopic) ([]ElectLeadersTopicResult, error) {
	if typ != ElectPreferred && typ != ElectUnclean {
		return nil, fmt.Errorf("%w: unknown election type %d", kerr.InvalidRequest, typ)
	}
	members := c.members()
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return nil, err
	}
	img := c.Image()
	results, changes := planElections(img, typ, topics, liveness(img, c.unavailable(img, members)))
	if len(changes) == 0 {
		return results, nil
	}
	if err := c.apply(ctx, changePartitionsCmd{Changes: changes}); err != nil {
		return nil, err
	}
	c.log.Info("elected leaders", "type", typ, "partitions", len(changes))
	return results, nil
}

// planElections decides ElectLeaders against img: the results in request
// order (all topics by name when topics is nil) and the changes to commit.
func planElections(img *Image, typ ElectionType, topics []ElectTopic, live liveFunc) ([]ElectLeadersTopicResult, []partitionChange) {
	type key struct {
		topic     string
		partition int32
	}
	decided := map[key]error{}
	var changes []partitionChange
	decide := func(topic string, partition int32) error {
		k := key{topic, partition}
		if err, ok := decided[k]; ok {
			return err
		}
		ch, err := decideElectionByName(img, topic, partition, typ, live)
		if err == nil {
			changes = append(changes, ch)
		}
		decided[k] = err
		return err
	}

	var results []ElectLeadersTopicResult
	if topics == nil {
		for _, t := range sortedTopics(img) {
			tr := ElectLeadersTopicResult{Topic: t.Name}
			for _, p := range t.Partitions {
				err := decide(t.Name, p.Partition)
				if isElectionNotNeeded(err) {
					continue
				}
				tr.Partitions = append(tr.Partitions, ElectLeadersPartitionResult{Partition: p.Partition, Err: err})
			}
			results = append(results, tr)
		}
		return results, changes
	}
	for _, et := range topics {
		tr := ElectLeadersTopicResult{Topic: et.Topic}
		for _, partition := range et.Partitions {
			tr.Partitions = append(tr.Partitions, ElectLeadersPartitionResult{Partition: partition, Err: decide(et.Topic, partition)})
		}
		results = append(results, tr)
	}
	return results, changes
}

func isElectionNotNeeded(err error) bool { return errors.Is(err, kerr.ElectionNotNeeded) }

// decideElectionByName finds partition of topic in img and decides its
// election.
func decideElectionByName(img *Image, topic string, partition int32, typ ElectionType, live liveFunc) (partitionChange, error) {
	t := img.Topics[topic]
	if t == nil {
		if err := validateTopicName(topic); err != nil {
			return partitionChange{}, err
		}
		return partitionChange{}, fmt.Errorf("%w: No such topic as %s", kerr.UnknownTopicOrPartition, topic)
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return partitionChange{}, fmt.Errorf("%w: No such partition as %s-%d", kerr.UnknownTopicOrPartition, topic, partition)
	}
	if typ == ElectUnclean && elrEnabled(img) {
		return decideUncleanELR(t.ID, t.Partitions[partition], live)
	}
	return decideElection(t.ID, t.Partitions[partition], typ, live)
}

// decideElection decides one partition's election of type typ and returns
// the change that commits it, or the Kafka error that explains why nothing
// changes (the bare kerr.ElectionNotNeeded when no election is needed).
func decideElection(topicID [16]byte, p *Partition, typ ElectionType, live liveFunc) (partitionChange, error) {
	switch typ {
	case ElectPreferred:
		if len(p.Replicas) > 0 && p.Leader == p.Replicas[0] {
			return partitionChange{}, kerr.ElectionNotNeeded
		}
		leader := preferredElection(p, live)
		if leader == -1 || leader == p.Leader {
			return partitionChange{}, fmt.Errorf("%w: preferred replica %d of partition %d is not live or not in the ISR %v",
				kerr.PreferredLeaderNotAvailable, preferredReplica(p), p.Partition, p.ISR)
		}
		return changeOf(topicID, p, leader, p.ISR), nil
	case ElectUnclean:
		if p.Leader != -1 {
			return partitionChange{}, kerr.ElectionNotNeeded
		}
		leader, isr := electLeader(p.Replicas, p.ISR, live, true)
		if leader == -1 {
			return partitionChange{}, fmt.Errorf("%w: no replica of partition %d (replicas %v) is live",
				kerr.EligibleLeadersNotAvailable, p.Partition, p.Replicas)
		}
		return changeOf(topicID, p, leader, slices.Clone(isr)), nil
	}
	return partitionChange{}, fmt.Errorf("%w: unknown election type %d", kerr.InvalidRequest, typ)
}

// preferredReplica is p's preferred leader, or -1 for a partition without
// replicas (which the image never holds).
func preferredReplica(p *Partition) int32 {
	if len(p.Replicas) == 0 {
		return -1
	}
	return p.Replicas[0]
}

// preferredElection is the leader a preferred election gives p, by KRaft's
// rule: the preferred replica if it is live and in the ISR; else the
// current leader if it still may lead (nothing changes); else the first
// other live in-sync replica in assignment order; else -1.
func preferredElection(p *Partition, live liveFunc) int32 {
	valid := func(r int32) bool { return r != -1 && live(r) && slices.Contains(p.ISR, r) }
	if pr := preferredReplica(p); valid(pr) {
		return pr
	}
	if valid(p.Leader) {
		return p.Leader
	}
	for _, r := range p.Replicas {
		if valid(r) {
			return r
		}
	}
	return -1
}
