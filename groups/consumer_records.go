package groups

// Records of KIP-848 consumer groups in __consumer_offsets, in Kafka's own
// formats (group-coordinator's ConsumerGroup*Key / *Value schemas), so a log
// written by sluice reads like one written by Kafka 4:
//
//	key int16 version | key fields         value (version 0, flexible)
//	  3 ConsumerGroupMetadata (group)       Epoch int32, tag 0: MetadataHash int64
//	  4 ConsumerGroupPartitionMetadata      not written (Kafka 4.1+ replaced it with MetadataHash); ignored when read
//	  5 ConsumerGroupMemberMetadata (group, member)
//	                                        InstanceId?, RackId?, ClientId, ClientHost, SubscribedTopicNames []string,
//	                                        SubscribedTopicRegex?, RebalanceTimeoutMs int32, ServerAssignor?
//	  6 ConsumerGroupTargetAssignmentMetadata (group)
//	                                        AssignmentEpoch int32
//	  7 ConsumerGroupTargetAssignmentMember (group, member)
//	                                        TopicPartitions [TopicId uuid, Partitions []int32]
//	  8 ConsumerGroupCurrentMemberAssignment (group, member)
//	                                        MemberEpoch, PreviousMemberEpoch int32, State int8,
//	                                        AssignedPartitions, PartitionsPendingRevocation
//	                                        [TopicId uuid, Partitions []int32, tag 0: AssignmentEpochs []int32]
//
// Keys are not flexible (int16-length strings); values start with their
// int16 version and use compact strings and arrays with tagged fields.
// MetadataHash is sluice's own hash of the subscribed topics' names, ids and
// partition counts: it only tells a reloading coordinator whether topics
// changed while nobody watched. Unknown tags are skipped when read; a value
// of a version other than 0 is not guessed at, and the load skips its
// record (load.go).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// Consumer group record key versions, frozen by Kafka's format.
const (
	consumerGroupMetadataKeyVersion          = 3
	consumerGroupPartitionMetadataKeyVersion = 4
	consumerGroupMemberMetadataKeyVersion    = 5
	consumerGroupTargetMetadataKeyVersion    = 6
	consumerGroupTargetMemberKeyVersion      = 7
	consumerGroupCurrentAssignmentKeyVersion = 8
)

// topicID is a topic's 16-byte id; assignments name topics by id.
type topicID = [16]byte

// memberMetadataValue is a ConsumerGroupMemberMetadataValue.
type memberMetadataValue struct {
	instanceID, rackID *string
	clientID           string
	clientHost         string
	topicNames         []string
	topicRegex         *string
	rebalanceTimeoutMs int32
	serverAssignor     *string
}

// currentAssignmentValue is a ConsumerGroupCurrentMemberAssignmentValue.
type currentAssignmentValue struct {
	memberEpoch, previousEpoch int32
	state                      int8
	assigned, pending          map[topicID]map[int32]int32 // partition → assignment epoch
}

func appendKeyString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

func groupKeyOf(version int16, group string) []byte {
	return appendKeyString(binary.BigEndian.AppendUint16(nil, uint16(version)), group)
}

func memberKeyOf(version int16, group, member string) []byte {
	return appendKeyString(groupKeyOf(version, group), member)
}

func appendUvarint(dst []byte, n int) []byte { return binary.AppendUvarint(dst, uint64(n)) }

func appendCompactString(dst []byte, s string) []byte {
	dst = appendUvarint(dst, len(s)+1)
	return append(dst, s...)
}

func appendCompactNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return appendUvarint(dst, 0)
	}
	return appendCompactString(dst, *s)
}

func appendInt32s(dst []byte, ps []int32) []byte {
	return appendArray(dst, ps, func(b []byte, p int32) []byte {
		return binary.BigEndian.AppendUint32(b, uint32(p))
	})
}

// appendArray writes vs as a compact array, each element by elem.
func appendArray[T any](dst []byte, vs []T, elem func([]byte, T) []byte) []byte {
	dst = appendUvarint(dst, len(vs)+1)
	for _, v := range vs {
		dst = elem(dst, v)
	}
	return dst
}

func consumerGroupMetadataValue(epoch int32, hash int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	b = appendUvarint(b, 1) // one tagged field
	b = appendUvarint(b, 0) // tag 0: MetadataHash
	b = appendUvarint(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(hash))
}

// targetMetadataValue encodes a ConsumerGroupTargetAssignmentMetadataValue,
// and a StreamsGroupTargetAssignmentMetadataValue, whose version 0 has the
// same fields: the assignment epoch and no tagged fields.
func targetMetadataValue(epoch int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(epoch))
	return appendUvarint(b, 0)
}

func (v *memberMetadataValue) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendCompactNullableString(b, v.instanceID)
	b = appendCompactNullableString(b, v.rackID)
	b = appendCompactString(b, v.clientID)
	b = appendCompactString(b, v.clientHost)
	b = appendUvarint(b, len(v.topicNames)+1)
	for _, t := range v.topicNames {
		b = appendCompactString(b, t)
	}
	b = appendCompactNullableString(b, v.topicRegex)
	b = binary.BigEndian.AppendUint32(b, uint32(v.rebalanceTimeoutMs))
	b = appendCompactNullableString(b, v.serverAssignor)
	return appendUvarint(b, 0)
}

// sortedTopicIDs lists the keys of m in byte order, so records are stable.
func sortedTopicIDs[V any](m map[topicID]V) []topicID {
	out := make([]topicID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.SortFunc(out, func(a, b topicID) int { return slices.Compare(a[:], b[:]) })
	return out
}

func targetMemberValue(target map[topicID][]int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = appendUvarint(b, len(target)+1)
	for _, id := range sortedTopicIDs(target) {
		b = append(b, id[:]...)
		b = appendInt32s(b, target[id])
		b = appendUvarint(b, 0)
	}
	return appendUvarint(b, 0)
}

// appendEpochPartitions writes TopicPartitions with AssignmentEpochs (tag 0).
func appendEpochPartitions(b []byte, m map[topicID]map[int32]int32) []byte {
	b = appendUvarint(b, len(m)+1)
	for _, id := range sortedTopicIDs(m) {
		b = append(b, id[:]...)
		parts := sortedKeys(m[id])
		b = appendInt32s(b, parts)
		epochs := make([]int32, len(parts))
		for i, p := range parts {
			epochs[i] = m[id][p]
		}
		tag := appendInt32s(nil, epochs)
		b = appendUvarint(b, 1)
		b = appendUvarint(b, 0)
		b = appendUvarint(b, len(tag))
		b = append(b, tag...)
	}
	return b
}

func (v *currentAssignmentValue) encode() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(v.memberEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.previousEpoch))
	b = append(b, byte(v.state))
	b = appendEpochPartitions(b, v.assigned)
	b = appendEpochPartitions(b, v.pending)
	return appendUvarint(b, 0)
}

// recordReader decodes the flexible value encoding, remembering the first
// error so callers check once at the end.
type recordReader struct {
	b   []byte
	err error
}

var errShortRecord = errors.New("record too short")

func (r *recordReader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.b = nil
}

// valueVersion reads a value's int16 version. Kafka defines version 0 of
// every consumer group value; a later one is not guessed at.
func (r *recordReader) valueVersion() {
	if v := r.int16(); r.err == nil && v != 0 {
		r.fail(fmt.Errorf("unknown value version %d", v))
	}
}

func (r *recordReader) span(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.fail(errShortRecord)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *recordReader) int8() int8 {
	b := r.span(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *recordReader) int16() int16 {
	b := r.span(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *recordReader) int32() int32 {
	b := r.span(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *recordReader) int64() int64 {
	b := r.span(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *recordReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<30 {
		r.fail(errShortRecord)
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

func (r *recordReader) keyString() string {
	n := r.int16()
	return string(r.span(int(n)))
}

func (r *recordReader) compactNullableString() *string {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	s := string(r.span(n - 1))
	return &s
}

func (r *recordReader) compactString() string {
	if s := r.compactNullableString(); s != nil {
		return *s
	}
	return ""
}

func (r *recordReader) arrayLen() int {
	n := r.uvarint() - 1
	if n > len(r.b) {
		// Every element takes at least one byte: a longer count is a
		// corrupt record, and must not size an allocation.
		r.fail(errShortRecord)
		return -1
	}
	return n
}

func (r *recordReader) int32s() []int32 {
	return readArray(r, r.int32)
}

// readArray reads a compact array, each element by elem, until the array
// ends or the record turns out corrupt; a null array is nil.
func readArray[T any](r *recordReader, elem func() T) []T {
	n := r.arrayLen()
	if n < 0 {
		return nil
	}
	out := make([]T, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, elem())
	}
	return out
}

func (r *recordReader) uuid() topicID {
	var id topicID
	copy(id[:], r.span(16))
	return id
}

// tags walks a tagged-field section, handing each field's bytes to fn.
func (r *recordReader) tags(fn func(tag int, data []byte)) {
	n := r.uvarint()
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint()
		data := r.span(r.uvarint())
		if r.err == nil && fn != nil {
			fn(tag, data)
		}
	}
}

func (r *recordReader) done(what string) error {
	if r.err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorruptRecord, what, r.err)
	}
	return nil
}

func decodeConsumerGroupMetadata(b []byte) (epoch int32, hash int64, err error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch = r.int32()
	r.tags(func(tag int, data []byte) {
		if tag == 0 && len(data) == 8 {
			hash = int64(binary.BigEndian.Uint64(data))
		}
	})
	return epoch, hash, r.done("consumer group metadata value")
}

func decodeTargetMetadata(b []byte) (int32, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	epoch := r.int32()
	return epoch, r.done("target assignment metadata value")
}

func decodeMemberMetadata(b []byte) (*memberMetadataValue, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	v := &memberMetadataValue{}
	v.instanceID = r.compactNullableString()
	v.rackID = r.compactNullableString()
	v.clientID = r.compactString()
	v.clientHost = r.compactString()
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		v.topicNames = append(v.topicNames, r.compactString())
	}
	v.topicRegex = r.compactNullableString()
	v.rebalanceTimeoutMs = r.int32()
	v.serverAssignor = r.compactNullableString()
	return v, r.done("member metadata value")
}

func decodeTargetMember(b []byte) (map[topicID][]int32, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	out := make(map[topicID][]int32)
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uuid()
		out[id] = r.int32s()
		r.tags(nil)
	}
	return out, r.done("target assignment member value")
}

func (r *recordReader) epochPartitions(defaultEpoch int32) map[topicID]map[int32]int32 {
	out := make(map[topicID]map[int32]int32)
	n := r.arrayLen()
	for i := 0; i < n && r.err == nil; i++ {
		id := r.uuid()
		parts := r.int32s()
		var epochs []int32
		r.tags(func(tag int, data []byte) {
			if tag == 0 {
				sub := &recordReader{b: data}
				epochs = sub.int32s()
			}
		})
		m := make(map[int32]int32, len(parts))
		for j, p := range parts {
			m[p] = defaultEpoch
			if len(epochs) == len(parts) {
				m[p] = epochs[j]
			}
		}
		out[id] = m
	}
	return out
}

func decodeCurrentAssignment(b []byte) (*currentAssignmentValue, error) {
	r := &recordReader{b: b}
	r.valueVersion()
	v := &currentAssignmentValue{}
	v.memberEpoch = r.int32()
	v.previousEpoch = r.int32()
	v.state = r.int8()
	// Without KIP-1251's epochs, a partition counts as assigned at the
	// member's current epoch.
	v.assigned = r.epochPartitions(v.memberEpoch)
	v.pending = r.epochPartitions(v.memberEpoch)
	return v, r.done("current member assignment value")
}
