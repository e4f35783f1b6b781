package config

// Group configs: the keys of KIP-848's dynamic group configuration, Kafka's
// GROUP config resource (type 32), with Kafka 4.4's names, types, defaults,
// broker synonyms and value checks (GroupConfig's ConfigDef).
//
// A group key's default is its broker synonym's value
// (group.consumer.session.timeout.ms for consumer.session.timeout.ms), and
// a value set on a group must lie within the broker's bounds
// (group.consumer.min/max.session.timeout.ms, …). Kafka's messages are kept
// word for word, since kafka-configs.sh prints them.
//
// sluice enforces consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms on KIP-848 consumer groups, and
// share.auto.offset.reset, share.isolation.level,
// share.record.lock.duration.ms, share.delivery.count.limit,
// share.partition.max.record.locks, errors.deadletterqueue.topic.name and
// errors.deadletterqueue.copy.record.enable on share groups' partitions
// (broker/share_partitions.go, broker/share_dlq.go), and
// share.assignment.interval.ms on share groups' assignments
// (groups/share.go). Every other key
// belongs to a feature sluice does not have yet (share groups, streams
// groups, batched or offloaded assignment): it is described with its
// default, and setting any other value is refused with INVALID_CONFIG and a
// message saying so, because a key that is accepted is a promise.

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// SourceDynamicGroup is DescribeConfigs' ConfigSource of a value set on a
// group (Kafka's GROUP_CONFIG, 8).
const SourceDynamicGroup int8 = 8

// GroupSupport says what sluice does with a group key.
type GroupSupport int8

const (
	// GroupEnforced keys take effect on the group.
	GroupEnforced GroupSupport = iota
	// GroupShareOnly keys configure a part of share groups (KIP-932) that
	// sluice does not have yet: only the default may be set.
	GroupShareOnly
	// GroupStreamsOnly keys configure a part of streams groups
	// (KIP-1071) that sluice does not have yet: only the default may be
	// set.
	GroupStreamsOnly
	// GroupNotYet keys configure a consumer group feature sluice does not
	// have yet: only the default may be set.
	GroupNotYet
)

// GroupKey describes one group config key.
type GroupKey struct {
	Name string
	Type int8
	// Default is Kafka 4.4's default, used when the broker has no value for
	// BrokerSynonym (a broker key sluice does not have).
	Default string
	// BrokerSynonym is the broker key that supplies the default, or "".
	BrokerSynonym string
	// Internal keys can be set but are never described, as in Kafka.
	Internal bool
	Support  GroupSupport
	Doc      string
	// NotYet says why a GroupNotYet key is not supported.
	NotYet string
	// check inspects a value that parsed as Type and returns Kafka's
	// complaint about it, or "".
	check func(v string) string
}

// ErrInvalidGroupConfig is wrapped by every error about a group config
// value; the error's text is Kafka's INVALID_CONFIG message.
var ErrInvalidGroupConfig = errors.New("config: invalid group config")

type groupConfigError string

func (e groupConfigError) Error() string { return string(e) }
func (e groupConfigError) Unwrap() error { return ErrInvalidGroupConfig }

func groupErrorf(format string, args ...any) error {
	return groupConfigError(fmt.Sprintf(format, args...))
}

func groupAtLeast(min int64) func(string) string {
	return func(v string) string {
		if n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64); n < min {
			return fmt.Sprintf("Value must be at least %d", min)
		}
		return ""
	}
}

// isoDuration is what java.time.Duration.parse accepts, the form of
// share.auto.offset.reset's by_duration: PnDTnHnMn.nS.
var isoDuration = regexp.MustCompile(`(?i)^[-+]?P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,][0-9]{0,9})?S)?)?$`)

func checkShareAutoOffsetReset(v string) string {
	s := strings.TrimSpace(v)
	if s == "earliest" || s == "latest" {
		return ""
	}
	bad := fmt.Sprintf("Invalid value `%s` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", v)
	d, ok := strings.CutPrefix(s, "by_duration:")
	if !ok {
		return bad
	}
	m := isoDuration.FindStringSubmatch(d)
	if m == nil || strings.HasPrefix(d, "-") || strings.ContainsAny(d[1:], "-") || strings.HasSuffix(strings.ToUpper(d), "T") || strings.EqualFold(d, "P") {
		return bad
	}
	return ""
}

func groupOneOf(values ...string) func(string) string {
	return func(v string) string {
		for _, ok := range values {
			if strings.TrimSpace(v) == ok {
				return ""
			}
		}
		return "String must be one of: " + strings.Join(values, ", ")
	}
}

// groupKeyList is Kafka 4.4's GroupConfig, in its definition order (the
// order Kafka checks values in).
var groupKeyList = []GroupKey{
	{Name: "consumer.session.timeout.ms", Type: TypeInt, Default: "45000", BrokerSynonym: "group.consumer.session.timeout.ms", Support: GroupEnforced,
		Doc: "The session timeout of the group's KIP-848 consumer group members: a member that sends no heartbeat for this long is removed. It must lie within group.consumer.min.session.timeout.ms and group.consumer.max.session.timeout.ms and exceed consumer.heartbeat.interval.ms; a change applies to each member from its next heartbeat.", check: groupAtLeast(1)},
	{Name: "consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", BrokerSynonym: "group.consumer.heartbeat.interval.ms", Support: GroupEnforced,
		Doc: "The heartbeat interval the coordinator gives the group's KIP-848 consumer group members. It must lie within group.consumer.min.heartbeat.interval.ms and group.consumer.max.heartbeat.interval.ms; members get a new value in their next heartbeat response.", check: groupAtLeast(1)},
	{Name: "consumer.assignment.interval.ms", Type: TypeInt, Default: "1000", BrokerSynonym: "group.consumer.assignment.interval.ms", Support: GroupNotYet,
		NotYet: "sluice recomputes a consumer group's target assignment as soon as its group epoch moves",
		Doc:    "The interval between assignment updates for a consumer group. Not supported by sluice yet (it recomputes the target assignment as soon as the group epoch moves): only the default may be set.", check: groupAtLeast(0)},
	{Name: "consumer.assignor.offload.enable", Type: TypeBoolean, Default: "true", BrokerSynonym: "group.consumer.assignor.offload.enable", Internal: true, Support: GroupNotYet,
		NotYet: "sluice computes assignments on the heartbeat's path",
		Doc:    "Whether consumer group assignment runs on a background thread. Not supported by sluice yet: only the default may be set."},
	{Name: "share.session.timeout.ms", Type: TypeInt, Default: "45000", BrokerSynonym: "group.share.session.timeout.ms", Support: GroupEnforced,
		Doc: "The session timeout of the group's share group (KIP-932) members: a member that sends no heartbeat for this long is removed. It must lie within group.share.min.session.timeout.ms and group.share.max.session.timeout.ms; a change applies to each member from its next heartbeat.", check: groupAtLeast(1)},
	{Name: "share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", BrokerSynonym: "group.share.heartbeat.interval.ms", Support: GroupEnforced,
		Doc: "The heartbeat interval the coordinator gives the group's share group (KIP-932) members. It must lie within group.share.min.heartbeat.interval.ms and group.share.max.heartbeat.interval.ms; members get a new value in their next heartbeat response.", check: groupAtLeast(1)},
	{Name: "share.record.lock.duration.ms", Type: TypeInt, Default: "30000", BrokerSynonym: "group.share.record.lock.duration.ms", Support: GroupEnforced,
		Doc: "How long a share group member holds the records it acquired.", check: groupAtLeast(1000)},
	{Name: "share.delivery.count.limit", Type: TypeInt, Default: "5", BrokerSynonym: "group.share.delivery.count.limit", Support: GroupEnforced,
		Doc: "The most delivery attempts of a record to a share group.", check: groupAtLeast(2)},
	{Name: "share.partition.max.record.locks", Type: TypeInt, Default: "2000", BrokerSynonym: "group.share.partition.max.record.locks", Support: GroupEnforced,
		Doc: "The most records a share group may hold locked per partition.", check: groupAtLeast(100)},
	{Name: "share.auto.offset.reset", Type: TypeString, Default: "latest", Support: GroupEnforced,
		Doc: "Where a share group starts reading a partition: earliest, latest or by_duration:<ISO 8601 duration>.", check: checkShareAutoOffsetReset},
	{Name: "share.isolation.level", Type: TypeString, Default: "read_uncommitted", Support: GroupEnforced,
		Doc: "Whether a share group delivers only committed transactional records (read_committed) or all records (read_uncommitted).", check: groupOneOf("read_committed", "read_uncommitted")},
	{Name: "share.renew.acknowledge.enable", Type: TypeBoolean, Default: "true", Support: GroupShareOnly,
		Doc: "Whether share group members may renew their acquisition locks."},
	{Name: "share.assignment.interval.ms", Type: TypeInt, Default: "1000", BrokerSynonym: "group.share.assignment.interval.ms", Support: GroupEnforced,
		Doc: "The least time between two runs of the group's share assignor (KIP-1263): a change of the group moves its epoch at once, and the target assignment is computed again at the first heartbeat once this long has passed since the last computation. It must lie within group.share.min.assignment.interval.ms and group.share.max.assignment.interval.ms.", check: groupAtLeast(0)},
	{Name: "share.assignor.offload.enable", Type: TypeBoolean, Default: "true", BrokerSynonym: "group.share.assignor.offload.enable", Internal: true, Support: GroupShareOnly,
		Doc: "Whether share group assignment runs on a background thread."},
	{Name: "streams.session.timeout.ms", Type: TypeInt, Default: "45000", BrokerSynonym: "group.streams.session.timeout.ms", Support: GroupEnforced,
		Doc: "The session timeout of streams group members.", check: groupAtLeast(1)},
	{Name: "streams.heartbeat.interval.ms", Type: TypeInt, Default: "5000", BrokerSynonym: "group.streams.heartbeat.interval.ms", Support: GroupEnforced,
		Doc: "The heartbeat interval given to streams group members.", check: groupAtLeast(1)},
	{Name: "streams.num.standby.replicas", Type: TypeInt, Default: "0", BrokerSynonym: "group.streams.num.standby.replicas", Support: GroupEnforced,
		Doc: "The number of standby replicas of each task.", check: groupAtLeast(0)},
	{Name: "streams.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", BrokerSynonym: "group.streams.initial.rebalance.delay.ms", Support: GroupEnforced,
		Doc: "How long the streams group, when a member joins it while it has none, waits for more members before its first assignment; its members get no tasks and the ASSIGNMENT_DELAYED status meanwhile.", check: groupAtLeast(0)},
	{Name: "streams.assignment.interval.ms", Type: TypeInt, Default: "1000", BrokerSynonym: "group.streams.assignment.interval.ms", Support: GroupEnforced,
		Doc: "The least time between two target assignments of the streams group. It must lie within group.streams.min.assignment.interval.ms and group.streams.max.assignment.interval.ms.", check: groupAtLeast(0)},
	{Name: "streams.assignor.offload.enable", Type: TypeBoolean, Default: "true", BrokerSynonym: "group.streams.assignor.offload.enable", Internal: true, Support: GroupStreamsOnly,
		Doc: "Whether streams group assignment runs on a background thread."},
	{Name: "streams.task.offset.interval.ms", Type: TypeInt, Default: "60000", BrokerSynonym: "group.streams.task.offset.interval.ms", Internal: true, Support: GroupStreamsOnly,
		Doc: "How often streams group members report their warmup tasks' changelog offsets.", check: groupAtLeast(1)},
	{Name: "streams.num.warmup.replicas", Type: TypeInt, Default: "2", BrokerSynonym: "group.streams.num.warmup.replicas", Internal: true, Support: GroupStreamsOnly,
		Doc: "The most warmup task replicas of a streams group.", check: groupAtLeast(0)},
	{Name: "streams.rack.aware.assignment.tags", Type: TypeList, Default: "", BrokerSynonym: "group.streams.rack.aware.assignment.tags", Support: GroupEnforced,
		Doc: "Client tag keys over which the streams group's standby replicas are spread: a standby goes to a process whose tag values differ from those of the task's other copies where one can take it."},
	{Name: "streams.acceptable.recovery.lag", Type: TypeLong, Default: "10000", BrokerSynonym: "group.streams.acceptable.recovery.lag", Internal: true, Support: GroupStreamsOnly,
		Doc: "How far behind a streams client may be and still be given an active task.", check: groupAtLeast(0)},
	{Name: "streams.assignor.name", Type: TypeString, Default: "sticky", BrokerSynonym: "group.streams.assignors", Support: GroupStreamsOnly,
		Doc: "The task assignor of a streams group, by name, from group.streams.assignors."},
	{Name: "errors.deadletterqueue.topic.name", Type: TypeString, Default: "", Support: GroupEnforced,
		Doc: "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group (KIP-1191, share.version 2). If blank (the default), the group does not have a DLQ topic."},
	{Name: "errors.deadletterqueue.copy.record.enable", Type: TypeBoolean, Default: "false", Support: GroupEnforced,
		Doc: "When writing onto the dead-letter queue topic, whether to copy the original record's key and value onto the DLQ topic, or just write a record containing the context information headers."},
}

var groupKeyIndex = func() map[string]int {
	m := make(map[string]int, len(groupKeyList))
	for i, k := range groupKeyList {
		m[k.Name] = i
	}
	return m
}()

// GroupKeys returns every group config key, internal ones included, in
// Kafka's definition order.
func GroupKeys() []GroupKey {
	return append([]GroupKey(nil), groupKeyList...)
}

// LookupGroupKey returns the group config key called name.
func LookupGroupKey(name string) (GroupKey, bool) {
	i, ok := groupKeyIndex[name]
	if !ok {
		return GroupKey{}, false
	}
	return groupKeyList[i], true
}

// parseGroupValue checks that value parses as k's type and passes k's
// check, with the message of Kafka's ConfigDef, and returns it in a
// canonical form for comparing with the default.
func (k *GroupKey) parseGroupValue(value string) (string, error) {
	s := strings.TrimSpace(value)
	invalid := func(why string) error {
		return groupErrorf("Invalid value %s for configuration %s: %s", value, k.Name, why)
	}
	switch k.Type {
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return "", invalid("Not a number of type INT")
		}
		s = strconv.FormatInt(n, 10)
	case TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return "", invalid("Not a number of type LONG")
		}
		s = strconv.FormatInt(n, 10)
	case TypeBoolean:
		s = strings.ToLower(s)
		if s != "true" && s != "false" {
			return "", invalid("Expected value to be either true or false")
		}
	case TypeList:
		var items []string
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		s = strings.Join(items, ",")
	}
	if k.check != nil {
		if why := k.check(value); why != "" {
			return "", invalid(why)
		}
	}
	return s, nil
}

// unsupported returns the INVALID_CONFIG message for setting k, a key
// sluice does not support yet, to a value other than its default.
func (k *GroupKey) unsupported(def string) error {
	switch k.Support {
	case GroupShareOnly:
		return groupErrorf("%s cannot be set: this share group (KIP-932) setting is not supported by sluice yet, so only its default %q may be set", k.Name, def)
	case GroupStreamsOnly:
		return groupErrorf("%s cannot be set: this streams group (KIP-1071) setting is not supported by sluice yet, so only its default %q may be set", k.Name, def)
	}
	return groupErrorf("%s is not supported by sluice yet (%s), so only its default %q may be set", k.Name, k.NotYet, def)
}

// groupDefault returns k's value for a group that does not set it, with
// its synonyms: its broker synonym as the broker describes it (a dynamic,
// static or default value), else Kafka's default.
func groupDefault(k *GroupKey, broker map[string]Entry) (string, int8, []Synonym) {
	if e, ok := broker[k.BrokerSynonym]; ok && k.BrokerSynonym != "" && e.Value != nil {
		return *e.Value, e.Source, e.Synonyms
	}
	name := k.BrokerSynonym
	if name == "" {
		name = k.Name
	}
	return k.Default, SourceDefault, []Synonym{{Name: name, Value: v(k.Default), Source: SourceDefault}}
}

// brokerEntries indexes DescribeBroker's entries by name.
func (b *Broker) brokerEntries(perBroker, clusterDefault map[string]string) map[string]Entry {
	entries := b.DescribeBroker(perBroker, clusterDefault)
	m := make(map[string]Entry, len(entries))
	for _, e := range entries {
		m[e.Name] = e
	}
	return m
}

// DescribeGroup lists every group config Kafka describes (internal keys
// left out), in name order, with its value and source: GROUP_CONFIG when
// set on the group, else the source of the broker synonym that supplies
// it, else DEFAULT_CONFIG; and the synonyms kafka-configs.sh --describe
// --all prints.
func (b *Broker) DescribeGroup(groupConfigs, perBroker, clusterDefault map[string]string) []Entry {
	broker := b.brokerEntries(perBroker, clusterDefault)
	out := make([]Entry, 0, len(groupKeyList))
	for i := range groupKeyList {
		k := &groupKeyList[i]
		if k.Internal {
			continue
		}
		def, src, synonyms := groupDefault(k, broker)
		e := Entry{Name: k.Name, Type: k.Type, Doc: k.Doc, Value: v(def), Source: src}
		if val, ok := groupConfigs[k.Name]; ok {
			e.Value, e.Source = v(val), SourceDynamicGroup
			e.Synonyms = append(e.Synonyms, Synonym{Name: k.Name, Value: v(val), Source: SourceDynamicGroup})
		}
		e.Synonyms = append(e.Synonyms, synonyms...)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ConsumerGroupTimeouts is what a KIP-848 consumer group runs with: its
// session timeout and heartbeat interval in milliseconds.
type ConsumerGroupTimeouts struct {
	SessionTimeoutMs    int32
	HeartbeatIntervalMs int32
}

// ConsumerGroupTimeouts returns the session timeout and heartbeat interval
// of a consumer group with configs groupConfigs: the group's own values
// when set and valid, else the broker's group.consumer.* values.
func (b *Broker) ConsumerGroupTimeouts(groupConfigs map[string]string) ConsumerGroupTimeouts {
	t := ConsumerGroupTimeouts{SessionTimeoutMs: b.ConsumerGroupSessionTimeoutMs, HeartbeatIntervalMs: b.ConsumerGroupHeartbeatMs}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["consumer.session.timeout.ms"]), 10, 32); err == nil && n > 0 {
		t.SessionTimeoutMs = int32(n)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["consumer.heartbeat.interval.ms"]), 10, 32); err == nil && n > 0 {
		t.HeartbeatIntervalMs = int32(n)
	}
	return t
}

// ShareGroupTimeouts returns the session timeout and heartbeat interval of
// a share group (KIP-932) with configs groupConfigs: its
// share.session.timeout.ms and share.heartbeat.interval.ms when set and
// valid, else the broker's group.share.* values.
func (b *Broker) ShareGroupTimeouts(groupConfigs map[string]string) ConsumerGroupTimeouts {
	t := ConsumerGroupTimeouts{SessionTimeoutMs: b.ShareGroupSessionTimeoutMs, HeartbeatIntervalMs: b.ShareGroupHeartbeatMs}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["share.session.timeout.ms"]), 10, 32); err == nil && n > 0 {
		t.SessionTimeoutMs = int32(n)
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(groupConfigs["share.heartbeat.interval.ms"]), 10, 32); err == nil && n > 0 {
		t.HeartbeatIntervalMs = int32(n)
	}
	return t
}

// ValidateGroup checks a group's whole set of explicitly set configs as
// Kafka's controller does, in its order: every name is a group config,
// every value parses and passes its key's check, the consumer group
// timeouts lie within the broker's bounds and the session timeout exceeds
// the heartbeat interval (unset keys count with their defaults). Then,
// sluice's own rule: a key sluice does not support yet may only hold its
// default. The error wraps ErrInvalidGroupConfig and reads as Kafka's
// message.
func (b *Broker) ValidateGroup(configs, perBroker, clusterDefault map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(configs)) {
		if _, ok := groupKeyIndex[name]; !ok {
			return groupErrorf("Unknown group config name: %s", name)
		}
	}
	parsed := make(map[string]string, len(configs))
	for i := range groupKeyList {
		k := &groupKeyList[i]
		val, ok := configs[k.Name]
		if !ok {
			continue
		}
		s, err := k.parseGroupValue(val)
		if err != nil {
			return err
		}
		parsed[k.Name] = s
	}

	t := b.ConsumerGroupTimeouts(parsed)
	st := b.ShareGroupTimeouts(parsed)
	sst := b.StreamsGroupTimeouts(parsed) // group_streams.go
	bounds := []struct {
		key, minKey, maxKey string
		value, min, max     int32
	}{
		{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", t.HeartbeatIntervalMs, b.ConsumerGroupMinHeartbeatMs, b.ConsumerGroupMaxHeartbeatMs},
		{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", t.SessionTimeoutMs, b.ConsumerGroupMinSessionTimeoutMs, b.ConsumerGroupMaxSessionTimeoutMs},
		{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", st.HeartbeatIntervalMs, b.ShareGroupMinHeartbeatMs, b.ShareGroupMaxHeartbeatMs},
		{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", st.SessionTimeoutMs, b.ShareGroupMinSessionTimeoutMs, b.ShareGroupMaxSessionTimeoutMs},
		{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", sst.HeartbeatIntervalMs, b.StreamsGroupMinHeartbeatMs, b.StreamsGroupMaxHeartbeatMs},
		{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", sst.SessionTimeoutMs, b.StreamsGroupMinSessionTimeoutMs, b.StreamsGroupMaxSessionTimeoutMs},
		{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas", b.StreamsGroupStandbyReplicas(parsed), 0, b.StreamsGroupMaxStandbyReplicas},
	}
	for _, c := range bounds {
		if _, set := parsed[c.key]; set && (c.value < c.min || c.value > c.max) {
			return groupErrorf("%s must be in the range %d to %d inclusive.", c.key, c.min, c.max)
		}
	}
	if t.SessionTimeoutMs <= t.HeartbeatIntervalMs {
		return groupErrorf("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms")
	}
	if sst.SessionTimeoutMs <= sst.HeartbeatIntervalMs {
		return groupErrorf("streams.session.timeout.ms must be greater than streams.heartbeat.interval.ms")
	}
	if err := b.validateStreamsGroupConfigs(parsed); err != nil { // group_streams.go
		return err
	}
	if err := b.validateSharePartitionKeys(parsed); err != nil {
		return err
	}

	broker := b.brokerEntries(perBroker, clusterDefault)
	for i := range groupKeyList {
		k := &groupKeyList[i]
		s, ok := parsed[k.Name]
		if !ok || k.Support == GroupEnforced {
			continue
		}
		def, _, _ := groupDefault(k, broker)
		if canonical, err := k.parseGroupValue(def); err == nil {
			def = canonical
		}
		if s != def {
			return k.unsupported(def)
		}
	}
	return nil
}
