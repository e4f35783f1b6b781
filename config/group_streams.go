package config

// The settings a streams group (KIP-1071) runs with: the broker's
// group.streams.* values, overridden by the group's own
// streams.session.timeout.ms, streams.heartbeat.interval.ms and
// streams.num.standby.replicas group configs (validated within the
// broker's bounds by ValidateGroup).

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
