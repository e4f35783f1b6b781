package config

// The settings a streams group (KIP-1071) runs with: the broker's
// group.streams.* values, overridden by the group's own
// streams.session.timeout.ms, streams.heartbeat.interval.ms,
// streams.num.standby.replicas, streams.initial.rebalance.delay.ms,
// streams.assignment.interval.ms and streams.rack.aware.assignment.tags
// group configs (validated within the broker's bounds by ValidateGroup);
// and the checks of the broker's streams assignment keys.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// StickyTaskAssignorClass is the class of Kafka's sticky task assignor,
// which group.streams.assignors may name instead of "sticky".
const StickyTaskAssignorClass = "org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor"

// streamsAssignors accepts a group.streams.assignors list whose every
// entry is Kafka's sticky assignor, by name or class: the one task
// assignor sluice has (groups/streams_assign.go). Kafka loads any other
// class as a custom assignor (KIP-1357); sluice cannot load Java classes.
func streamsAssignors(s string) string {
	for _, item := range strings.Split(s, ",") {
		if item != "" && item != "sticky" && item != StickyTaskAssignorClass {
			return fmt.Sprintf("%q is not a task assignor sluice has: only Kafka's sticky assignor (sticky or %s) is built in, and sluice cannot load an assignor class", item, StickyTaskAssignorClass)
		}
	}
	return ""
}

// noDuplicates rejects a list that holds an entry twice, as Kafka's
// ValidList.anyNonDuplicateValues does.
func noDuplicates(s string) string {
	var seen []string
	for _, item := range strings.Split(s, ",") {
		if slices.Contains(seen, item) {
			return fmt.Sprintf("%s is listed twice", item)
		}
		seen = append(seen, item)
	}
	return ""
}

// StreamsGroupTimeouts returns the session timeout and heartbeat interval
// of a streams group with configs groupConfigs: its
// streams.session.timeout.ms and streams.heartbeat.interval.ms when set and
// valid, else the broker's group.streams.* values.
func (b *Broker) StreamsGroupTimeouts(groupConfigs map[string]string) ConsumerGroupTimeouts {
	t := ConsumerGroupTimeouts{SessionTimeoutMs: b.StreamsGroupSessionTimeoutMs, HeartbeatIntervalMs: b.StreamsGroupHeartbeatMs}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["streams.session.timeout.ms"]), 10, 32); err == nil && n > 0 {
		t.SessionTimeoutMs = int32(n)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["streams.heartbeat.interval.ms"]), 10, 32); err == nil && n > 0 {
		t.HeartbeatIntervalMs = int32(n)
	}
	return t
}

// StreamsGroupStandbyReplicas returns the standby replicas of each task of
// a streams group with configs groupConfigs: its
// streams.num.standby.replicas when set and valid, else the broker's
// group.streams.num.standby.replicas.
func (b *Broker) StreamsGroupStandbyReplicas(groupConfigs map[string]string) int32 {
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["streams.num.standby.replicas"]), 10, 32); err == nil && n >= 0 {
		return int32(n)
	}
	return b.StreamsGroupNumStandbyReplicas
}

// validateStreamsGroupKeys checks the streams group assignment interval
// against its bounds at start, as Kafka's GroupCoordinatorConfig does,
// with Kafka's sentences.
func (b *Broker) validateStreamsGroupKeys() error {
	invalid := func(key, detail string) error {
		return &KeyError{Key: key, Detail: detail, Kind: ErrInvalidValue}
	}
	switch {
	case b.StreamsGroupMaxAssignmentMs < b.StreamsGroupMinAssignmentMs:
		return invalid("group.streams.max.assignment.interval.ms", "must be greater than or equal to group.streams.min.assignment.interval.ms")
	case b.StreamsGroupAssignmentIntervalMs < b.StreamsGroupMinAssignmentMs:
		return invalid("group.streams.assignment.interval.ms", "must be greater than or equal to group.streams.min.assignment.interval.ms")
	case b.StreamsGroupAssignmentIntervalMs > b.StreamsGroupMaxAssignmentMs:
		return invalid("group.streams.assignment.interval.ms", "must be less than or equal to group.streams.max.assignment.interval.ms")
	}
	return nil
}

// validateStreamsGroupConfigs checks a group's
// streams.assignment.interval.ms against the broker's bounds.
func (b *Broker) validateStreamsGroupConfigs(parsed map[string]string) error {
	s, set := parsed["streams.assignment.interval.ms"]
	if !set {
		return nil
	}
	if n, err := strconv.ParseInt(s, 10, 32); err == nil && (n < int64(b.StreamsGroupMinAssignmentMs) || n > int64(b.StreamsGroupMaxAssignmentMs)) {
		return groupErrorf("streams.assignment.interval.ms must be in the range %d to %d inclusive.", b.StreamsGroupMinAssignmentMs, b.StreamsGroupMaxAssignmentMs)
	}
	return nil
}

// StreamsGroupAssignment is when and how a streams group assigns its
// tasks (groups/streams_delay.go, groups/streams_assign.go).
type StreamsGroupAssignment struct {
	InitialRebalanceDelayMs int32
	AssignmentIntervalMs    int32
	RackAwareTags           []string
}

// StreamsGroupAssignment returns the assignment settings of a streams
// group with configs groupConfigs: its streams.initial.rebalance.delay.ms,
// streams.assignment.interval.ms and streams.rack.aware.assignment.tags
// where set, else the broker's. The broker's assignment interval is its
// dynamic value (per broker, else the cluster default, else the static
// one) clamped to group.streams.min/max.assignment.interval.ms, as Kafka
// clamps it.
func (b *Broker) StreamsGroupAssignment(groupConfigs, perBroker, clusterDefault map[string]string) StreamsGroupAssignment {
	a := StreamsGroupAssignment{
		InitialRebalanceDelayMs: b.StreamsGroupInitialDelayMs,
		AssignmentIntervalMs:    b.StreamsGroupAssignmentIntervalMs,
		RackAwareTags:           b.StreamsGroupRackAwareTags,
	}
	for _, m := range []map[string]string{clusterDefault, perBroker} {
		if n, err := strconv.ParseInt(strings.TrimSpace(m["group.streams.assignment.interval.ms"]), 10, 32); err == nil && n >= 0 {
			a.AssignmentIntervalMs = min(max(int32(n), b.StreamsGroupMinAssignmentMs), b.StreamsGroupMaxAssignmentMs)
		}
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["streams.initial.rebalance.delay.ms"]), 10, 32); err == nil && n >= 0 {
		a.InitialRebalanceDelayMs = int32(n)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["streams.assignment.interval.ms"]), 10, 32); err == nil && n >= 0 {
		a.AssignmentIntervalMs = int32(n)
	}
	if tags, ok := groupConfigs["streams.rack.aware.assignment.tags"]; ok {
		a.RackAwareTags = nil
		for _, t := range strings.Split(tags, ",") {
			if t = strings.TrimSpace(t); t != "" {
				a.RackAwareTags = append(a.RackAwareTags, t)
			}
		}
	}
	return a
}
