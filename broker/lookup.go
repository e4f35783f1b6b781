package broker

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// lookupTopic finds a topic by id when the request version addresses topics
// by id (KIP-516), else by name. It returns nil for an unknown topic.
func lookupTopic(img *controller.Image, byID bool, name string, id [16]byte) *controller.Topic {
	if img == nil {
		return nil
	}
	if byID {
		return img.TopicsByID[id]
	}
	return img.Topics[name]
}

// topicPartition returns the metadata of one partition, or nil.
func topicPartition(t *controller.Topic, partition int32) *controller.Partition {
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil
	}
	return t.Partitions[partition]
}

// sortedBrokers lists the unfenced brokers by id.
func sortedBrokers(img *controller.Image) []*controller.Broker {
	if img == nil {
		return nil
	}
	out := make([]*controller.Broker, 0, len(img.Brokers))
	for _, br := range img.Brokers {
		if !br.Fenced {
			out = append(out, br)
		}
	}
	slices.SortFunc(out, func(a, b *controller.Broker) int { return int(a.ID) - int(b.ID) })
	return out
}

// sortedTopics lists the topics by name.
func sortedTopics(img *controller.Image) []*controller.Topic {
	if img == nil {
		return nil
	}
	out := make([]*controller.Topic, 0, len(img.Topics))
	for _, t := range img.Topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *controller.Topic) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func rackPtr(rack string) *string {
	if rack == "" {
		return nil
	}
	return &rack
}

// offlineReplicas lists the replicas of a partition whose broker is fenced
// or unknown.
func offlineReplicas(img *controller.Image, mp *controller.Partition) []int32 {
	out := []int32{}
	for _, r := range mp.Replicas {
		if br, ok := img.Brokers[r]; !ok || br.Fenced {
			out = append(out, r)
		}
	}
	return out
}

// leaderReplica finds the replica of topic/partition that this broker must
// lead to serve a client request, and checks the client's idea of the
// leader epoch (KIP-320): an older epoch is FENCED_LEADER_EPOCH, a newer one
// UNKNOWN_LEADER_EPOCH; currentEpoch -1 skips the check. It returns the
// replica and its leader epoch.
func (b *Broker) leaderReplica(topic *controller.Topic, partition, currentEpoch int32) (*partition, int32, error) {
	if topicPartition(topic, partition) == nil {
		return nil, 0, kerr.UnknownTopicOrPartition
	}
	p, err := b.hostedReplica(logstore.TopicPartition{Topic: topic.Name, Partition: partition})
	if err != nil {
		return nil, 0, err
	}
	leader, epoch := p.state()
	if leader != b.cfg.NodeID {
		return nil, 0, kerr.NotLeaderForPartition
	}
	if currentEpoch >= 0 {
		if currentEpoch < epoch {
			return nil, 0, kerr.FencedLeaderEpoch
		}
		if currentEpoch > epoch {
			return nil, 0, kerr.UnknownLeaderEpoch
		}
	}
	return p, epoch, nil
}

// hostedReplica returns this node's replica of tp. Without one the answer
// is NOT_LEADER_OR_FOLLOWER, except for a replica whose log failed to open:
// that one is offline and answers KAFKA_STORAGE_ERROR (the error says which
// directory and why), as Kafka's offline log dirs do, whether this node
// leads the partition or not.
func (b *Broker) hostedReplica(tp logstore.TopicPartition) (*partition, error) {
	if p := b.partition(tp); p != nil {
		return p, nil
	}
	if err := b.dir.Offline(tp); err != nil {
		return nil, fmt.Errorf("%w: %w", kerr.KafkaStorageError, err)
	}
	return nil, kerr.NotLeaderForPartition
}
