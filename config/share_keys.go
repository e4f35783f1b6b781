package config

// The broker keys of share groups (KIP-932) that bound or default the
// share-partitions' settings: group.share.{,min.,max.}record.lock.duration.ms,
// .delivery.count.limit and .partition.max.record.locks. The plain key is
// the value of the share.* group config of the same name for a group that
// does not set it; the min/max keys bound both it (checked at start-up, as
// Kafka's ShareGroupConfig.validate does, with its messages) and the value
// a group sets through IncrementalAlterConfigs (ValidateGroup). Start-up
// also checks group.share.max.share.sessions against group.share.max.size,
// as Kafka does: a full group's members must fit in the session cache.
// group.share.assignors may name only Kafka's simple assignor, the one
// sluice has (groups/share_assign.go). group.share.assignment.interval.ms
// (KIP-1263), dynamic cluster-wide, and the share.assignment.interval.ms
// group config lie within group.share.min/max.assignment.interval.ms: a
// static value outside is refused at start (GroupCoordinatorConfig's
// checks), a group value is refused by ValidateGroup, and a dynamic value
// is capped at use (ShareGroupAssignmentInterval), as Kafka clamps it.

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SimpleAssignorClass is the class of Kafka's simple share group
// assignor, which group.share.assignors may name instead of "simple".
const SimpleAssignorClass = "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"

// compressionCodecID accepts Kafka's compression type ids (0 none, 1 gzip,
// 2 snappy, 3 lz4, 4 zstd), with the message of Kafka's
// CompressionType.forId for any other.
func compressionCodecID(s string) string {
	if n, err := strconv.Atoi(s); err != nil || n < 0 || n > 4 {
		return "Unknown compression type id: " + s
	}
	return ""
}

// shareAssignors accepts a group.share.assignors list of exactly one
// entry, Kafka's simple assignor by name or class. Kafka loads any other
// class as a custom ShareGroupPartitionAssignor; sluice cannot load Java
// classes. The count's message is Kafka's GroupCoordinatorConfig check.
func shareAssignors(s string) string {
	n := 0
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			continue
		}
		if item != "simple" && item != SimpleAssignorClass {
			return fmt.Sprintf("%q is not a share group assignor sluice has: only Kafka's simple assignor (simple or %s) is built in, and sluice cannot load an assignor class", item, SimpleAssignorClass)
		}
		n++
	}
	if n != 1 {
		return fmt.Sprintf("group.share.assignors must contain exactly one assignor, but found %d", n)
	}
	return ""
}

// shareBound is one share-partition setting: the group key, the broker
// default and its bounds.
type shareBound struct {
	groupKey, key, minKey, maxKey string
	value, min, max               int32
}

func (b *Broker) shareBounds() []shareBound {
	return []shareBound{
		{"share.record.lock.duration.ms", "group.share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms",
			b.ShareGroupRecordLockDurationMs, b.ShareGroupMinRecordLockDurationMs, b.ShareGroupMaxRecordLockDurationMs},
		{"share.delivery.count.limit", "group.share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit",
			b.ShareGroupDeliveryCountLimit, b.ShareGroupMinDeliveryCountLimit, b.ShareGroupMaxDeliveryCountLimit},
		{"share.partition.max.record.locks", "group.share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks",
			b.ShareGroupPartitionMaxRecordLocks, b.ShareGroupMinPartitionMaxRecordLocks, b.ShareGroupMaxPartitionMaxRecordLocks},
	}
}

// validateShareGroupKeys checks the share group keys against each other at
// start-up, with the messages of Kafka's ShareGroupConfig.validate.
func (b *Broker) validateShareGroupKeys() error {
	invalid := func(key, other string) error {
		return &KeyError{Key: key, Detail: fmt.Sprintf("%s must be greater than or equal to %s", key, other), Kind: ErrInvalidValue}
	}
	sb := b.shareBounds()
	lock, count, locks := sb[0], sb[1], sb[2]
	// Kafka's order: the delivery count limit's maximum, then its minimum;
	// the lock duration's minimum, then its maximum; then the record locks.
	for _, c := range []struct {
		ok         bool
		key, other string
	}{
		{count.max >= count.value, count.maxKey, count.key},
		{count.value >= count.min, count.key, count.minKey},
		{lock.value >= lock.min, lock.key, lock.minKey},
		{lock.max >= lock.value, lock.maxKey, lock.key},
		{locks.value >= locks.min, locks.key, locks.minKey},
		{locks.max >= locks.value, locks.maxKey, locks.key},
		{b.ShareGroupMaxShareSessions >= b.ShareGroupMaxSize, "group.share.max.share.sessions", "group.share.max.size"},
	} {
		if !c.ok {
			return invalid(c.key, c.other)
		}
	}
	// GroupCoordinatorConfig's checks of the assignment interval.
	const key, minKey, maxKey = "group.share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"
	switch {
	case b.ShareGroupMaxAssignmentIntervalMs < b.ShareGroupMinAssignmentIntervalMs:
		return invalid(maxKey, minKey)
	case b.ShareGroupAssignmentIntervalMs < b.ShareGroupMinAssignmentIntervalMs:
		return invalid(key, minKey)
	case b.ShareGroupAssignmentIntervalMs > b.ShareGroupMaxAssignmentIntervalMs:
		return &KeyError{Key: key, Detail: fmt.Sprintf("%s must be less than or equal to %s", key, maxKey), Kind: ErrInvalidValue}
	}
	return nil
}

// ShareGroupAssignmentInterval returns the assignment interval of a share
// group whose share.assignment.interval.ms resolves to value (its own, or
// the broker's dynamic or static group.share.assignment.interval.ms, as
// DescribeGroup resolves it), capped to the broker's
// group.share.min/max.assignment.interval.ms as Kafka caps it; the
// broker's static value when value does not parse.
func (b *Broker) ShareGroupAssignmentInterval(value string) time.Duration {
	ms := int64(b.ShareGroupAssignmentIntervalMs)
	if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 32); err == nil && n >= 0 {
		ms = n
	}
	ms = min(max(ms, int64(b.ShareGroupMinAssignmentIntervalMs)), int64(b.ShareGroupMaxAssignmentIntervalMs))
	return time.Duration(ms) * time.Millisecond
}

// validateSharePartitionKeys checks the share-partition keys set on a
// group (parsed: canonical values) against the broker's
// group.share.min/max.* bounds, as Kafka's GroupConfig.validateValues does.
func (b *Broker) validateSharePartitionKeys(parsed map[string]string) error {
	bounds := append(b.shareBounds(), shareBound{groupKey: "share.assignment.interval.ms",
		min: b.ShareGroupMinAssignmentIntervalMs, max: b.ShareGroupMaxAssignmentIntervalMs})
	for _, c := range bounds {
		s, set := parsed[c.groupKey]
		if !set {
			continue
		}
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && (n < int64(c.min) || n > int64(c.max)) {
			return groupErrorf("%s must be in the range %d to %d inclusive.", c.groupKey, c.min, c.max)
		}
	}
	return nil
}
