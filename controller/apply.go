package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The applyX functions below are the state machine's transitions, one per
// command type. The active controller validates every decision before
// writing it, so a rejection here means two decisions raced or a bug; the
// checks exist so that such a command changes nothing rather than corrupting
// the image, and they return the same Kafka errors the controller would.

func applyInitCluster(b *imageBuilder, index uint64, payload []byte) error {
	var c initClusterCmd
	decodePayload(cmdInitCluster, index, payload, &c)
	if b.base.ClusterID != "" {
		return fmt.Errorf("%w: cluster id is already %s", kerr.InvalidRequest, b.base.ClusterID)
	}
	b.next.ClusterID = c.ClusterID
	return nil
}

func applyRegisterBroker(b *imageBuilder, index uint64, payload []byte) error {
	var c registerBrokerCmd
	decodePayload(cmdRegisterBroker, index, payload, &c)
	b.brokers()[c.ID] = &Broker{
		ID:          c.ID,
		Host:        c.Host,
		Port:        c.Port,
		Endpoints:   c.Endpoints,
		Rack:        c.Rack,
		Fenced:      c.Fenced,
		Epoch:       int64(index),
		Incarnation: c.Incarnation,
	}
	return nil
}

func applyCreateTopics(b *imageBuilder, index uint64, payload []byte) error {
	var c createTopicsCmd
	decodePayload(cmdCreateTopics, index, payload, &c)
	// Check everything before changing anything: the command is atomic.
	names := map[string]bool{}
	ids := map[[16]byte]bool{}
	for _, t := range c.Topics {
		if _, ok := b.base.Topics[t.Name]; ok || names[t.Name] {
			return fmt.Errorf("%w: Topic '%s' already exists.", kerr.TopicAlreadyExists, t.Name)
		}
		if _, ok := b.base.TopicsByID[t.ID]; ok || ids[t.ID] || t.ID == ([16]byte{}) {
			return fmt.Errorf("%w: topic id of %s is zero or already in use", kerr.InvalidRequest, t.Name)
		}
		if len(t.Replicas) == 0 {
			return fmt.Errorf("%w: topic %s has no partitions", kerr.InvalidPartitions, t.Name)
		}
		for p, r := range t.Replicas {
			if len(r) == 0 {
				return fmt.Errorf("%w: partition %d of %s has no replicas", kerr.InvalidReplicaAssignment, p, t.Name)
			}
		}
		names[t.Name] = true
		ids[t.ID] = true
	}
	for _, t := range c.Topics {
		topic := &Topic{
			Name:     t.Name,
			ID:       t.ID,
			Internal: t.Internal,
			Configs:  t.Configs,
		}
		topic.Partitions = appendNewPartitions(nil, t.Replicas)
		b.putTopic(topic)
	}
	return nil
}

// appendNewPartitions appends fresh partitions, numbered on from len(parts),
// in their initial state: every assigned replica in sync, the preferred
// replica leading, epochs zero.
func appendNewPartitions(parts []*Partition, replicas [][]int32) []*Partition {
	for _, r := range replicas {
		parts = append(parts, &Partition{
			Partition: int32(len(parts)),
			Replicas:  slices.Clone(r),
			ISR:       slices.Clone(r),
			Leader:    r[0],
		})
	}
	return parts
}

func applyDeleteTopics(b *imageBuilder, index uint64, payload []byte) error {
	var c deleteTopicsCmd
	decodePayload(cmdDeleteTopics, index, payload, &c)
	for _, id := range c.IDs {
		if _, ok := b.base.TopicsByID[id]; !ok {
			return fmt.Errorf("%w: topic id %s does not exist", kerr.UnknownTopicID, uuidString(id))
		}
	}
	for _, id := range c.IDs {
		if t, ok := b.next.TopicsByID[id]; ok {
			b.removeTopic(t)
		}
	}
	return nil
}

func applyCreatePartitions(b *imageBuilder, index uint64, payload []byte) error {
	var c createPartitionsCmd
	decodePayload(cmdCreatePartitions, index, payload, &c)
	seen := map[[16]byte]bool{}
	for _, r := range c.Topics {
		t, ok := b.base.TopicsByID[r.TopicID]
		if !ok || seen[r.TopicID] {
			return fmt.Errorf("%w: topic id %s does not exist or is repeated", kerr.UnknownTopicID, uuidString(r.TopicID))
		}
		seen[r.TopicID] = true
		if int(r.FirstPartition) != len(t.Partitions) {
			return fmt.Errorf("%w: topic %s has %d partitions, command adds from %d",
				kerr.InvalidPartitions, t.Name, len(t.Partitions), r.FirstPartition)
		}
		for _, rs := range r.Replicas {
			if len(rs) == 0 {
				return fmt.Errorf("%w: new partition of %s has no replicas", kerr.InvalidReplicaAssignment, t.Name)
			}
		}
	}
	for _, r := range c.Topics {
		old := b.base.TopicsByID[r.TopicID]
		t := *old
		// Clip so appending never writes into the old image's backing array.
		t.Partitions = appendNewPartitions(slices.Clip(old.Partitions), r.Replicas)
		b.putTopic(&t)
	}
	return nil
}

func applyAlterConfigs(b *imageBuilder, index uint64, payload []byte) error {
	var c alterConfigsCmd
	decodePayload(cmdAlterConfigs, index, payload, &c)
	switch c.ResourceType {
	case ResourceTopic:
		old, ok := b.base.Topics[c.ResourceName]
		if !ok {
			return fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, c.ResourceName)
		}
		t := *old
		t.Configs = applyConfigChanges(old.Configs, c.Changes)
		b.putTopic(&t)
	case ResourceBroker:
		b.setBrokerConfig(c.ResourceName, applyConfigChanges(b.base.BrokerConfigs[c.ResourceName], c.Changes))
	case ResourceGroup:
		b.setGroupConfig(c.ResourceName, applyConfigChanges(b.base.GroupConfigs[c.ResourceName], c.Changes))
	case ResourceClientMetrics:
		b.setClientMetricsConfig(c.ResourceName, applyConfigChanges(b.base.ClientMetricsConfigs[c.ResourceName], c.Changes))
	default:
		return fmt.Errorf("%w: unknown config resource type %d", kerr.InvalidRequest, c.ResourceType)
	}
	return nil
}

// applyConfigChanges returns a new config map: old with changes applied, a
// nil value deleting its key. It returns nil rather than an empty map so
// images only hold resources with something set.
func applyConfigChanges(old map[string]string, changes map[string]*string) map[string]string {
	next := maps.Clone(old)
	if next == nil {
		next = map[string]string{}
	}
	for k, v := range changes {
		if v == nil {
			delete(next, k)
		} else {
			next[k] = *v
		}
	}
	if len(next) == 0 {
		return nil
	}
	return next
}

func applyAllocateProducerIDs(b *imageBuilder, index uint64, payload []byte) error {
	var c allocateProducerIDsCmd
	decodePayload(cmdAllocateProducerIDs, index, payload, &c)
	if c.First != b.base.NextProducerID || c.Count <= 0 {
		return fmt.Errorf("%w: producer id block at %d (count %d) is stale, next is %d", kerr.UnknownServerError, c.First, c.Count, b.base.NextProducerID)
	}
	b.next.NextProducerID = c.First + c.Count
	return nil
}
