package broker

// Streams groups (KIP-1071) in the broker: the registration of their APIs
// StreamsGroupHeartbeat (88), StreamsGroupDescribe (89) and
// StreamsGroupTopologyDescriptionUpdate (93), the gate they share (the
// finalized streams.version feature, as Kafka's KafkaApis), the settings a
// streams group runs with, and the creation of the internal topics
// (repartition and changelog) a group's topology needs, which the group
// coordinator asks for and the broker creates through the controller, as
// Kafka's coordinator hands them to its auto-topic-creation manager.
//
// The APIs are registered while group.coordinator.rebalance.protocols
// lists streams (the default, as in Kafka 4.4); below streams.version 1
// every one of them answers UNSUPPORTED_VERSION, as Kafka's
// isStreamsGroupProtocolEnabled gate does. New clusters bootstrap
// streams.version 1, as Kafka 4.4 formats them (controller/features.go).

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/groups"
)

// streamsGroupsEnabled reports whether streams groups are served:
// streams.version is finalized at 1 or more, as in Kafka.
func (b *Broker) streamsGroupsEnabled() bool {
	return b.featureLevel(controller.FeatureStreamsVersion) >= 1
}

// registerStreamsHandlers registers the streams-group APIs with the
// version ranges Kafka 4.4 lists.
func (b *Broker) registerStreamsHandlers(r quotaRouter) {
	if !slices.Contains(b.cfg.GroupRebalanceProtocols, "streams") {
		return
	}
	r.Register(88, 0, 1, b.handleStreamsGroupHeartbeat)                 // 88_streams_group_heartbeat.go
	r.Register(89, 0, 1, b.handleStreamsGroupDescribe)                  // 89_streams_group_describe.go
	r.Register(93, 0, 0, b.handleStreamsGroupTopologyDescriptionUpdate) // 93_streams_group_topology_description_update.go
}

// streamsGroupSettings returns the settings a streams group runs with
// now: its streams.* group configs where set (session timeout, heartbeat
// interval, standby replicas, initial rebalance delay, assignment interval,
// rack-aware assignment tags), else the broker's group.streams.* values
// (the assignment interval as altered dynamically). The heartbeat handler
// reads them on every heartbeat, so a change applies from each member's
// next heartbeat (a new standby count or tag list at the group's next
// assignment).
func (b *Broker) streamsGroupSettings(group string) groups.StreamsGroupSettings {
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	var set map[string]string
	img := b.metadata()
	if img != nil {
		set = img.GroupConfigs[group]
	}
	t := b.cfg.StreamsGroupTimeouts(set)
	perBroker, clusterDefault := b.dynamicBrokerConfigs(img)
	a := b.cfg.StreamsGroupAssignment(set, perBroker, clusterDefault)
	return groups.StreamsGroupSettings{
		SessionTimeout:           ms(t.SessionTimeoutMs),
		HeartbeatInterval:        ms(t.HeartbeatIntervalMs),
		NumStandbyReplicas:       int(b.cfg.StreamsGroupStandbyReplicas(set)),
		MaxGroupSize:             int(b.cfg.StreamsGroupMaxSize),
		AcceptableRecoveryLag:    10000,            // Kafka's internal group.streams.acceptable.recovery.lag
		TaskOffsetInterval:       60 * time.Second, // Kafka's internal group.streams.task.offset.interval.ms
		DefaultReplicationFactor: b.cfg.DefaultReplicationFactor,
		InitialRebalanceDelay:    ms(a.InitialRebalanceDelayMs),
		AssignmentInterval:       ms(a.AssignmentIntervalMs),
		RackAwareTags:            a.RackAwareTags,
	}
}

// createStreamsInternalTopics has the controller create a streams group's
// missing internal topics. A topic someone else created meanwhile is
// fine; any other failure is logged, and the group keeps reporting
// MISSING_INTERNAL_TOPICS, so a later heartbeat asks again.
func (b *Broker) createStreamsInternalTopics(ctx context.Context, group string, topics []groups.StreamsTopicToCreate) {
	if len(topics) == 0 {
		return
	}
	create := make([]controller.CreateTopic, 0, len(topics))
	for _, t := range topics {
		configs := make(map[string]*string, len(t.Configs))
		for k, v := range t.Configs {
			configs[k] = &v
		}
		rf := t.ReplicationFactor
		if rf <= 0 {
			rf = -1
		}
		create = append(create, controller.CreateTopic{Name: t.Name, NumPartitions: t.Partitions, ReplicationFactor: rf, Configs: configs})
	}
	created := false
	for _, res := range b.createTopics(ctx, create, false) {
		switch {
		case res.Err == nil:
			created = true
		case errorCode(res.Err) != kerr.TopicAlreadyExists.Code:
			b.logger.Warn("cannot create streams internal topic", "group", group, "topic", res.Name, "err", res.Err)
		}
	}
	if created {
		b.groups.TopicsChanged()
	}
}
