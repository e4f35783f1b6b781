package groups

// Records of KIP-932 share groups in __consumer_offsets, in Kafka 4.4's own
// formats (group-coordinator's ShareGroup*Key / *Value schemas), so a log
// written by sluice reads like one written by Kafka:
//
//	key int16 version | key fields         value (version 0, flexible)
//	  9 ShareGroupPartitionMetadata         not written (removed in Kafka 4.1); ignored when read
//	 10 ShareGroupMemberMetadata (group, member)
//	                                        RackId?, ClientId, ClientHost, SubscribedTopicNames []string
//	 11 ShareGroupMetadata (group)          Epoch int32, MetadataHash int64
//	 12 ShareGroupTargetAssignmentMetadata (group)
//	                                        AssignmentEpoch int32, tag 0: AssignmentTimestamp int64
//	 13 ShareGroupTargetAssignmentMember (group, member)
//	                                        TopicPartitions [TopicId uuid, Partitions []int32]
//	 14 ShareGroupCurrentMemberAssignment (group, member)
//	                                        MemberEpoch, PreviousMemberEpoch int32, State int8,
//	                                        AssignedPartitions [TopicId uuid, Partitions []int32]
//	 15 ShareGroupStatePartitionMetadata (group)
//	                                        InitializingTopics, InitializedTopics [TopicId uuid, TopicName, Partitions []int32],
//	                                        DeletingTopics [TopicId uuid, TopicName]
//
// Keys are not flexible; values start with their int16 version and use
// compact strings and arrays with tagged fields (the helpers of
// consumer_records.go). MetadataHash is sluice's hash of the subscribed
// topics (hashTopics), as for consumer groups. A value of a version other
// than 0 is not guessed at: the load skips its record.

import "encoding/binary"

// Share group record key versions, frozen by Kafka's format.
const (
	shareGroupPartitionMetadataKeyVersion      = 9
	shareGroupMemberMetadataKeyVersion         = 10
	shareGroupMetadataKeyVersion               = 11
	shareGroupTargetMetadataKeyVersion         = 12
	shareGroupTargetMemberKeyVersion           = 13
	shareGroupCurrentAssignmentKeyVersion      = 14
	shareGroupStatePartitionMetadataKeyVersion = 15
)

// isShareKeyVersion reports whether a record key version is a share group
// record's.
func isShareKeyVersion(v int16) bool {
	return v >= shareGroupPartitionMetadataKeyVersion && v <= shareGroupStatePartitionMetadataKeyVersion
}

// isShareMemberKeyVersion reports whether the key also names a member.
func isShareMemberKeyVersion(v int16) bool {
	return v == shareGroupMemberMetadataKeyVersion || v == shareGroupTargetMemberKeyVersion || v == shareGroupCurrentAssignmentKeyVersion
}

// shareMemberValue is a ShareGroupMemberMetadataValue.
type shareMemberValue struct {
	rackID     *string
	clientID   string
	clientHost string
	topicNames []string
}

// shareCurrentValue is a ShareGroupCurrentMemberAssignmentValue.
type shareCurrentValue struct {
	memberEpoch, previousEpoch int32
	state                      int8
	assigned                   map[topicID][]int32
}

// shareInitTopic is one topic of ShareGroupStatePartitionMetadataValue.
type shareInitTopic struct {
	name       string
	partitions []int32 // sorted
}

// shareStateValue is a ShareGroupStatePartitionMetadataValue: the topic
// partitions whose share-partition state is being initialized, is
// initialized, or is being deleted.
type shareStateValue struct {
	initializing map[topicID]shareInitTopic
	initialized  map[topicID]shareInitTopic
	deleting     map[topicID]string
}

func shareGroupMetadataValue(epoch int32, hash int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = binary.BigEndian.AppendUint64(b, uint64(hash))
	return appendUvarint(b, 0)
}

func shareTargetMetadataValue(epoch int32, timestampMs int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = appendUvarint(b, 1) // one tagged field
	b = appendUvarint(b, 0) // tag 0: AssignmentTimestamp
	b = appendUvarint(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(timestampMs))
}

func (v *shareMemberValue) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendCompactNullableString(b, v.rackID)
	b = appendCompactString(b, v.clientID)
	b = appendCompactString(b, v.clientHost)
	b = appendUvarint(b, len(v.topicNames)+1)
	for _, t := range v.topicNames {
		b = appendCompactString(b, t)
	}
	return appendUvarint(b, 0)
}

func (v *shareCurrentValue) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(v.memberEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.previousEpoch))
	b = append(b, byte(v.state))
	b = appendUvarint(b, len(v.assigned)+1)
	for _, id := range sortedTopicIDs(v.assigned) {
		b = append(b, id[:]...)
		b = appendInt32s(b, v.assigned[id])
		b = appendUvarint(b, 0)
	}
	return appendUvarint(b, 0)
}

func appendShareInitTopics(b []byte, m map[topicID]shareInitTopic) []byte {
	b = appendUvarint(b, len(m)+1)
	for _, id := range sortedTopicIDs(m) {
		b = append(b, id[:]...)
		b = appendCompactString(b, m[id].name)
		b = appendInt32s(b, m[id].partitions)
		b = appendUvarint(b, 0)
	}
	return b
}

func (v *shareStateValue) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendShareInitTopics(b, v.initializing)
	b = appendShareInitTopics(b, v.initialized)
	b = appendUvarint(b, len(v.deleting)+1)
	for _, id := range sortedTopicIDs(v.deleting) {
		b = append(b, id[:]...)
		b = appendCompactString(b, v.deleting[id])
		b = appendUvarint(b, 0)
	}
	return appendUvarint(b, 0)
}

func decodeShareGroupMetadata(b []byte) (epoch int32, hash int64, err error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch = r.int32()
	hash = r.int64()
	r.tags(nil)
	return epoch, hash, r.done("share group metadata value")
}

// decodeShareTargetMetadata returns the target assignment's epoch and its
// AssignmentTimestamp (tag 0; 0 when absent).
func decodeShareTargetMetadata(b []byte) (int32, int64, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch := r.int32()
	var ts int64
	r.tags(func(tag int, data []byte) {
		if tag == 0 && len(data) == 8 {
			ts = int64(binary.BigEndian.Uint64(data))
		}
	})
	return epoch, ts, r.done("share group target assignment metadata value")
}

func decodeShareMember(b []byte) (*shareMemberValue, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	v := &shareMemberValue{}
	v.rackID = r.compactNullableString()
	v.clientID = r.compactString()
	v.clientHost = r.compactString()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		v.topicNames = append(v.topicNames, r.compactString())
	}
	r.tags(nil)
	return v, r.done("share group member metadata value")
}

func decodeShareCurrent(b []byte) (*shareCurrentValue, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	v := &shareCurrentValue{assigned: make(map[topicID][]int32)}
	v.memberEpoch = r.int32()
	v.previousEpoch = r.int32()
	v.state = r.int8()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uuid()
		v.assigned[id] = r.int32s()
		r.tags(nil)
	}
	r.tags(nil)
	return v, r.done("share group current member assignment value")
}

func (r *recordReader) shareInitTopics() map[topicID]shareInitTopic {
	out := make(map[topicID]shareInitTopic)
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uuid()
		t := shareInitTopic{name: r.compactString(), partitions: r.int32s()}
		r.tags(nil)
		out[id] = t
	}
	return out
}

func decodeShareState(b []byte) (*shareStateValue, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	v := &shareStateValue{deleting: make(map[topicID]string)}
	v.initializing = r.shareInitTopics()
	v.initialized = r.shareInitTopics()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uuid()
		v.deleting[id] = r.compactString()
		r.tags(nil)
	}
	r.tags(nil)
	return v, r.done("share group state partition metadata value")
}
