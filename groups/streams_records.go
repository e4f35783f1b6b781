package groups

// Records of KIP-1071 streams groups in __consumer_offsets, in Kafka 4.4's
// own formats (group-coordinator's StreamsGroup*Key / *Value schemas), so
// a coordinator that takes over a partition (failover, restart) knows the
// group's members, topology and assignments, as Kafka's does:
//
//	key int16 version | key fields         value (version 0, flexible)
//	 17 StreamsGroupMetadata (group)        Epoch int32, MetadataHash int64, tag 0: ValidatedTopologyEpoch int32
//	 18 StreamsGroupPartitionMetadata       not written (Kafka 4.4 replaced it with MetadataHash); ignored when read
//	 19 StreamsGroupMemberMetadata (group, member)
//	                                        InstanceId?, RackId?, ClientId, ClientHost, RebalanceTimeoutMs int32,
//	                                        TopologyEpoch int32, ProcessId, UserEndpoint? {Host, Port uint16},
//	                                        ClientTags [Key, Value]
//	 20 StreamsGroupTargetAssignmentMetadata (group)
//	                                        AssignmentEpoch int32
//	 21 StreamsGroupTargetAssignmentMember (group, member)
//	                                        ActiveTasks, StandbyTasks, WarmupTasks [SubtopologyId, Partitions []int32]
//	 22 StreamsGroupCurrentMemberAssignment (group, member)
//	                                        MemberEpoch, PreviousMemberEpoch int32, State int8, ActiveTasks,
//	                                        StandbyTasks, WarmupTasks and the three kinds pending revocation
//	 23 StreamsGroupTopology (group)        Epoch int32, Subtopologies [SubtopologyId, SourceTopics, SourceTopicRegex,
//	                                        StateChangelogTopics [TopicInfo], RepartitionSinkTopics,
//	                                        RepartitionSourceTopics [TopicInfo], CopartitionGroups [three []int16]]
//	                                        TopicInfo: Name, Partitions int32, ReplicationFactor int16, TopicConfigs [key, value]
//
// Keys are not flexible; values start with their int16 version and use
// compact strings and arrays with tagged fields (a nullable struct is an
// int8, -1 for null). MetadataHash is sluice's own hash of the group's
// configured task counts: it tells a reloading coordinator whether the
// topics changed while nobody watched (then the group epoch moves).
// Unknown tags are skipped when read.
//
// What is written: the group's records are compared with what was last
// written for it (streamsGroup.written) after every change, and only
// those that differ go to the log, with tombstones for members that are
// gone, in one batch per operation.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Streams group record key versions, frozen by Kafka's format.
const (
	streamsGroupMetadataKeyVersion          = 17
	streamsGroupPartitionMetadataKeyVersion = 18
	streamsGroupMemberMetadataKeyVersion    = 19
	streamsGroupTargetMetadataKeyVersion    = 20
	streamsGroupTargetMemberKeyVersion      = 21
	streamsGroupCurrentAssignmentKeyVersion = 22
	streamsGroupTopologyKeyVersion          = 23
)

func isStreamsKeyVersion(v int16) bool {
	return v >= streamsGroupMetadataKeyVersion && v <= streamsGroupTopologyKeyVersion
}

// isStreamsMemberKeyVersion reports whether the key also names a member.
func isStreamsMemberKeyVersion(v int16) bool {
	return v == streamsGroupMemberMetadataKeyVersion || v == streamsGroupTargetMemberKeyVersion || v == streamsGroupCurrentAssignmentKeyVersion
}

func appendInt16s(dst []byte, vs []int16) []byte {
	return appendArray(dst, vs, func(b []byte, v int16) []byte {
		return binary.BigEndian.AppendUint16(b, uint16(v))
	})
}

func (r *recordReader) int16s() []int16 {
	return readArray(r, r.int16)
}

func appendCompactStrings(dst []byte, ss []string) []byte {
	return appendArray(dst, ss, appendCompactString)
}

func (r *recordReader) compactStrings() []string {
	return readArray(r, r.compactString)
}

// appendTaskIDs writes a []TaskIds (without AssignmentEpochs).
func appendTaskIDs(dst []byte, t taskSet) []byte {
	ids := t.wire()
	dst = appendUvarint(dst, len(ids)+1)
	for _, id := range ids {
		dst = appendCompactString(dst, id.SubtopologyID)
		dst = appendInt32s(dst, id.Partitions)
		dst = appendUvarint(dst, 0)
	}
	return dst
}

func (r *recordReader) taskIDs() taskSet {
	t := taskSet{}
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		sub := r.compactString()
		for _, p := range r.int32s() {
			t.add(sub, p)
		}
		r.tags(nil)
	}
	return t
}

// streamsStandbyConfig is the LastAssignmentConfigs key of the standby
// count the last assignment used.
const streamsStandbyConfig = "num.standby.replicas"

// streamsMetadataValue encodes a StreamsGroupMetadataValue: tag 0 when the
// topology is validated, tag 1 (LastAssignmentConfigs) with the standby
// count.
func streamsMetadataValue(epoch int32, hash int64, validatedTopologyEpoch int32, standbys int) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(hash))
	configs := appendUvarint(nil, 2) // one LastAssignmentConfig
	configs = appendCompactString(configs, streamsStandbyConfig)
	configs = appendCompactString(configs, fmt.Sprint(standbys))
	configs = appendUvarint(configs, 0)
	if validatedTopologyEpoch < 0 {
		b = appendUvarint(b, 1)
	} else {
		b = appendUvarint(b, 2)
		b = appendUvarint(b, 0) // tag 0: ValidatedTopologyEpoch
		b = appendUvarint(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(validatedTopologyEpoch))
	}
	b = appendUvarint(b, 1) // tag 1: LastAssignmentConfigs
	b = appendUvarint(b, len(configs))
	return append(b, configs...)
}

// decodeStreamsMetadata decodes a StreamsGroupMetadataValue; standbys is
// -1 when LastAssignmentConfigs does not name the standby count.
func decodeStreamsMetadata(b []byte) (epoch int32, hash int64, standbys int, err error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch = r.int32()
	hash = r.int64()
	standbys = -1
	r.tags(func(tag int, data []byte) {
		if tag != 1 {
			return
		}
		sub := &recordReader{b: data}
		n := sub.arrayLen()
		for i := 0; i < n && sub.err == nil; i++ {
			k, v := sub.compactString(), sub.compactString()
			sub.tags(nil)
			if k == streamsStandbyConfig {
				if _, err := fmt.Sscan(v, &standbys); err != nil || standbys < 0 {
					standbys = -1
				}
			}
		}
	})
	return epoch, hash, standbys, r.done("streams group metadata value")
}

func (m *streamsMember) metadataValue() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendCompactNullableString(b, m.instanceID)
	b = appendCompactNullableString(b, m.rackID)
	b = appendCompactString(b, m.clientID)
	b = appendCompactString(b, m.clientHost)
	b = binary.BigEndian.AppendUint32(b, uint32(int32(m.rebalanceTimeout.Milliseconds())))
	b = binary.BigEndian.AppendUint32(b, uint32(m.topologyEpoch))
	b = appendCompactString(b, m.processID)
	if m.endpoint == nil {
		b = append(b, 0xff)
	} else {
		b = append(b, 1)
		b = appendCompactString(b, m.endpoint.Host)
		b = binary.BigEndian.AppendUint16(b, m.endpoint.Port)
		b = appendUvarint(b, 0)
	}
	keys := sortedKeys(m.clientTags)
	b = appendUvarint(b, len(keys)+1)
	for _, k := range keys {
		b = appendCompactString(b, k)
		b = appendCompactString(b, m.clientTags[k])
		b = appendUvarint(b, 0)
	}
	return appendUvarint(b, 0)
}

// decodeStreamsMember fills a member's metadata fields from a
// StreamsGroupMemberMetadataValue.
func decodeStreamsMember(b []byte, m *streamsMember) error {
	r := &recordReader{b: b}
	r.valueVersion()
	m.instanceID = r.compactNullableString()
	m.rackID = r.compactNullableString()
	m.clientID = r.compactString()
	m.clientHost = r.compactString()
	m.rebalanceTimeout = msDuration(r.int32())
	m.topologyEpoch = r.int32()
	m.processID = r.compactString()
	if present := r.int8(); present >= 0 && r.err == nil {
		e := kmsg.NewStreamsGroupHeartbeatRequestUserEndpoint()
		e.Host = r.compactString()
		e.Port = uint16(r.int16())
		r.tags(nil)
		m.endpoint = &e
	}
	n := r.arrayLen()
	m.clientTags = map[string]string{}
	for i := 0; i < n && r.err == nil; i++ {
		k := r.compactString()
		m.clientTags[k] = r.compactString()
		r.tags(nil)
	}
	r.tags(nil)
	return r.done("streams group member metadata value")
}

func decodeStreamsTargetMetadata(b []byte) (int32, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch := r.int32()
	r.tags(nil)
	return epoch, r.done("streams group target assignment metadata value")
}

func streamsTargetMemberValue(t streamsTasks) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendTaskIDs(b, t.active)
	b = appendTaskIDs(b, t.standby)
	b = appendTaskIDs(b, t.warmup)
	return appendUvarint(b, 0)
}

func decodeStreamsTargetMember(b []byte) (streamsTasks, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	t := streamsTasks{active: r.taskIDs(), standby: r.taskIDs(), warmup: r.taskIDs()}
	r.tags(nil)
	return t, r.done("streams group target assignment member value")
}

func (m *streamsMember) currentValue() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(m.epoch))
	b = binary.BigEndian.AppendUint32(b, uint32(m.previousEpoch))
	b = append(b, byte(m.state))
	for _, t := range []taskSet{m.assigned.active, m.assigned.standby, m.assigned.warmup, m.pending.active, m.pending.standby, m.pending.warmup} {
		b = appendTaskIDs(b, t)
	}
	return appendUvarint(b, 0)
}

// decodeStreamsCurrent fills a member's epochs, state and tasks from a
// StreamsGroupCurrentMemberAssignmentValue.
func decodeStreamsCurrent(b []byte, m *streamsMember) error {
	r := &recordReader{b: b}
	r.valueVersion()
	m.epoch = r.int32()
	m.previousEpoch = r.int32()
	m.state = memberState(r.int8())
	m.assigned = streamsTasks{active: r.taskIDs(), standby: r.taskIDs(), warmup: r.taskIDs()}
	m.pending = streamsTasks{active: r.taskIDs(), standby: r.taskIDs(), warmup: r.taskIDs()}
	r.tags(nil)
	return r.done("streams group current member assignment value")
}

func appendTopicInfos(dst []byte, infos []kmsg.TopicInfo) []byte {
	dst = appendUvarint(dst, len(infos)+1)
	for _, t := range infos {
		dst = appendCompactString(dst, t.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(t.NumPartitions))
		dst = binary.BigEndian.AppendUint16(dst, uint16(t.ReplicationFactor))
		dst = appendUvarint(dst, len(t.Configs)+1)
		for _, c := range t.Configs {
			dst = appendCompactString(dst, c.Key)
			dst = appendCompactString(dst, c.Value)
			dst = appendUvarint(dst, 0)
		}
		dst = appendUvarint(dst, 0)
	}
	return dst
}

func (r *recordReader) topicInfos() []kmsg.TopicInfo {
	var out []kmsg.TopicInfo
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		t := kmsg.NewTopicInfo()
		t.Topic = r.compactString()
		t.NumPartitions = r.int32()
		t.ReplicationFactor = r.int16()
		nc := r.arrayLen()
		for j := 0; j < nc && r.err == nil; j++ {
			c := kmsg.NewTopicInfoConfig()
			c.Key = r.compactString()
			c.Value = r.compactString()
			r.tags(nil)
			t.Configs = append(t.Configs, c)
		}
		r.tags(nil)
		out = append(out, t)
	}
	return out
}

// streamsTopologyValue encodes the topology as the member sent it.
func streamsTopologyValue(t *kmsg.StreamsGroupHeartbeatRequestTopology) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(t.Epoch))
	b = appendUvarint(b, len(t.Subtopologies)+1)
	for _, s := range t.Subtopologies {
		b = appendCompactString(b, s.SubtopologyID)
		b = appendCompactStrings(b, s.SourceTopics)
		b = appendCompactStrings(b, s.SourceTopicRegex)
		b = appendTopicInfos(b, s.StateChangelogTopics)
		b = appendCompactStrings(b, s.RepartitionSinkTopics)
		b = appendTopicInfos(b, s.RepartitionSourceTopics)
		b = appendUvarint(b, len(s.CopartitionGroups)+1)
		for _, g := range s.CopartitionGroups {
			b = appendInt16s(b, g.SourceTopics)
			b = appendInt16s(b, g.SourceTopicRegex)
			b = appendInt16s(b, g.RepartitionSourceTopics)
			b = appendUvarint(b, 0)
		}
		b = appendUvarint(b, 0)
	}
	return appendUvarint(b, 0)
}

func decodeStreamsTopology(b []byte) (*kmsg.StreamsGroupHeartbeatRequestTopology, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	t := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	t.Epoch = r.int32()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		s := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s.SubtopologyID = r.compactString()
		s.SourceTopics = r.compactStrings()
		s.SourceTopicRegex = r.compactStrings()
		s.StateChangelogTopics = r.topicInfos()
		s.RepartitionSinkTopics = r.compactStrings()
		s.RepartitionSourceTopics = r.topicInfos()
		ng := r.arrayLen()
		for j := 0; j < ng && r.err == nil; j++ {
			g := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
			g.SourceTopics = r.int16s()
			g.SourceTopicRegex = r.int16s()
			g.RepartitionSourceTopics = r.int16s()
			r.tags(nil)
			s.CopartitionGroups = append(s.CopartitionGroups, g)
		}
		r.tags(nil)
		t.Subtopologies = append(t.Subtopologies, s)
	}
	r.tags(nil)
	return &t, r.done("streams group topology value")
}

// configuredHash is the MetadataHash sluice writes: a hash of the task
// counts the topology was configured to (and whether it was ready).
func configuredHash(c *configuredTopology) int64 {
	h := fnv.New64a()
	if c == nil || !c.ready() {
		h.Write([]byte("not ready"))
		return int64(h.Sum64())
	}
	for _, id := range sortedKeys(c.tasks) {
		h.Write([]byte(id))
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(c.tasks[id])))
	}
	return int64(h.Sum64())
}

// streamsRecordsLocked lists the group's records that differ from what
// was last written (streamsGroup.written): changed values, and tombstones
// for members that are gone (current assignment, target, then metadata,
// as Kafka orders them). The caller appends them and then calls
// streamsWrittenLocked.
func (g *group) streamsRecordsLocked() []kv {
	sg := g.streams
	if sg == nil {
		return nil
	}
	want := make(map[string][]byte)
	var order []string
	put := func(key []byte, value []byte) {
		want[string(key)] = value
		order = append(order, string(key))
	}
	// Members being removed first: their tombstones.
	var out []kv
	for _, key := range sortedKeys(sg.written) {
		if k, err := decodeKey([]byte(key)); err == nil && k.member != "" && sg.members[k.member] == nil {
			out = append(out, kv{key: []byte(key)})
		}
	}
	slices.SortStableFunc(out, func(a, b kv) int {
		// current (22) before target (21) before metadata (19).
		return int(binary.BigEndian.Uint16(b.key)) - int(binary.BigEndian.Uint16(a.key))
	})
	for _, id := range sortedKeys(sg.members) {
		put(memberKeyOf(streamsGroupMemberMetadataKeyVersion, g.name, id), sg.members[id].metadataValue())
	}
	if sg.topology != nil && sg.topology.raw != nil {
		put(groupKeyOf(streamsGroupTopologyKeyVersion, g.name), streamsTopologyValue(sg.topology.raw))
	}
	validated := int32(-1)
	if sg.topology != nil && sg.configured != nil && sg.configured.ready() {
		validated = sg.topology.epoch
	}
	put(groupKeyOf(streamsGroupMetadataKeyVersion, g.name), streamsMetadataValue(sg.epoch, configuredHash(sg.configured), validated, sg.assignedStandbys))
	for _, id := range sortedKeys(sg.members) {
		put(memberKeyOf(streamsGroupTargetMemberKeyVersion, g.name, id), streamsTargetMemberValue(sg.target[id]))
	}
	put(groupKeyOf(streamsGroupTargetMetadataKeyVersion, g.name), targetMetadataValue(sg.assignmentEpoch)) // the same schema as a consumer group's
	for _, id := range sortedKeys(sg.members) {
		put(memberKeyOf(streamsGroupCurrentAssignmentKeyVersion, g.name, id), sg.members[id].currentValue())
	}
	for _, key := range order {
		if old, ok := sg.written[key]; !ok || string(old) != string(want[key]) {
			out = append(out, kv{key: []byte(key), value: want[key]})
		}
	}
	return out
}

// streamsWrittenLocked records that records reached the log.
func (g *group) streamsWrittenLocked(records []kv) {
	sg := g.streams
	if sg == nil {
		return
	}
	if sg.written == nil {
		sg.written = make(map[string][]byte)
	}
	for _, r := range records {
		if r.value == nil {
			delete(sg.written, string(r.key))
		} else {
			sg.written[string(r.key)] = r.value
		}
	}
}

// streamsTombstonesLocked are the tombstones of every record a streams
// group has in the log: written when it is deleted, or when it became a
// group of another type.
func (g *group) streamsTombstonesLocked() []kv {
	if g.streams == nil {
		return nil
	}
	var out []kv
	for _, key := range sortedKeys(g.streams.written) {
		out = append(out, kv{key: []byte(key)})
	}
	// Members' records first, the group's last (metadata 17 at the end).
	slices.SortStableFunc(out, func(a, b kv) int {
		return int(binary.BigEndian.Uint16(b.key)) - int(binary.BigEndian.Uint16(a.key))
	})
	return out
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

// persistStreams appends the records of g's last changes; the caller holds
// g.writeMu but not g.mu. A failed append leaves written as it was, so
// the next change writes the records again.
func (c *Coordinator) persistStreams(ctx context.Context, g *group) error {
	g.mu.Lock()
	records := g.streamsRecordsLocked()
	g.mu.Unlock()
	if len(records) == 0 {
		return nil
	}
	if err := c.append(ctx, g, records); err != nil {
		return fmt.Errorf("persist streams group %s: %w", g.name, err)
	}
	g.mu.Lock()
	g.streamsWrittenLocked(records)
	g.mu.Unlock()
	return nil
}
