package controller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CreatePartitions asks for one topic to grow to Count partitions.
// Assignment, if given, holds the replicas of each new partition (so
// Count - current lists), first replica preferred leader.
type CreatePartitions struct {
	Topic      string
	Count      int32
	Assignment [][]int32
}

// CreatePartitionsResult is the outcome for one topic of CreatePartitions.
type CreatePartitionsResult struct {
	Topic string
	Err   error
}

// CreatePartitions adds partitions to existing topics; partitions are never
// removed. New partitions take the replication factor of partition 0 and,
// without a manual assignment, continue the topic's placement pattern from
// its partition 0 leader. All accepted topics are written as one command;
// with validateOnly nothing is written. A request adding more than
// MaxPartitionsPerRequest partitions fails as a whole, and no broker is
// given more partition replicas than Config.BrokerPartitions allows
// (partition_limits.go).
func (c *Controller) CreatePartitions(ctx context.Context, reqs []CreatePartitions, validateOnly bool) []CreatePartitionsResult {
	results := make([]CreatePartitionsResult, len(reqs))
	for i, r := range reqs {
		results[i].Topic = r.Topic
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}

	img := c.Image()
	brokers := placementBrokers(img)
	occurrences := map[string]int{}
	for _, r := range reqs {
		occurrences[r.Topic]++
	}
	if createPartitionsAdded(img, reqs, occurrences) > MaxPartitionsPerRequest {
		for i := range results {
			results[i].Err = errExcessivePartitions
		}
		return results
	}
	load := newBrokerLoad(img, c.cfg.BrokerPartitions)
	var (
		cmd     createPartitionsCmd
		planned []int
	)
	for i, r := range reqs {
		if occurrences[r.Topic] > 1 {
			results[i].Err = fmt.Errorf("%w: Duplicate topic name.", kerr.InvalidRequest)
			continue
		}
		rec, err := planPartitions(img, brokers, r)
		if err == nil {
			err = load.add(rec.Replicas)
		}
		if err != nil {
			results[i].Err = err
			continue
		}
		cmd.Topics = append(cmd.Topics, rec)
		planned = append(planned, i)
	}
	if validateOnly || len(cmd.Topics) == 0 {
		return results
	}
	if err := c.apply(ctx, cmd); err != nil {
		for _, i := range planned {
			results[i].Err = err
		}
	}
	return results
}

// planPartitions validates one CreatePartitions entry and places the new
// partitions.
func planPartitions(img *Image, brokers []placementBroker, r CreatePartitions) (newPartitionsRecord, error) {
	t, ok := img.Topics[r.Topic]
	if !ok {
		return newPartitionsRecord{}, fmt.Errorf("%w: This server does not host this topic-partition.", kerr.UnknownTopicOrPartition)
	}
	current := int32(len(t.Partitions))
	switch {
	case r.Count == current: // Kafka's KRaft controller's messages
		return newPartitionsRecord{}, fmt.Errorf("%w: Topic already has %d partition(s).", kerr.InvalidPartitions, current)
	case r.Count < current:
		return newPartitionsRecord{}, fmt.Errorf("%w: The topic %s currently has %d partition(s); %d would not be an increase.", kerr.InvalidPartitions, r.Topic, current, r.Count)
	}
	add := int(r.Count - current)
	var partition0 []int32
	if len(t.Partitions) > 0 {
		partition0 = t.Partitions[0].Replicas
	}
	rf := max(len(partition0), 1)

	var replicas [][]int32
	if r.Assignment != nil {
		if len(r.Assignment) != add {
			return newPartitionsRecord{}, fmt.Errorf("%w: Attempted to add %d additional partition(s), but only %d assignment(s) were specified.",
				kerr.InvalidReplicaAssignment, add, len(r.Assignment))
		}
		if err := validateAssignment(img, r.Assignment, rf); err != nil {
			return newPartitionsRecord{}, err
		}
		replicas = r.Assignment
	} else {
		if err := checkReplicationFactor(rf, len(brokers)); err != nil {
			return newPartitionsRecord{}, err
		}
		start := continuationStart(brokers, partition0)
		replicas = placement{
			brokers:           brokers,
			partitions:        add,
			replicationFactor: rf,
			fixedStart:        start,
			firstPartition:    int(current),
		}.place()
	}
	return newPartitionsRecord{TopicID: t.ID, FirstPartition: current, Replicas: replicas}, nil
}
