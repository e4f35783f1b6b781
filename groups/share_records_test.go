package groups

import (
	"fmt"
	"testing"
)

// TestShareRecordsRoundTrip: every share group value sluice writes reads
// back as written, in Kafka's layouts (share_records.go).
func TestShareRecordsRoundTrip(t *testing.T) {
	a, b := topicID{1}, topicID{2}
	rack := "r1"

	epoch, hash, err := decodeShareGroupMetadata(shareGroupMetadataValue(7, -42))
	if err != nil || epoch != 7 || hash != -42 {
		t.Errorf("ShareGroupMetadataValue: %d %d %v", epoch, hash, err)
	}
	if e, ts, err := decodeShareTargetMetadata(shareTargetMetadataValue(9, 1700000000000)); err != nil || e != 9 || ts != 1700000000000 {
		t.Errorf("ShareGroupTargetAssignmentMetadataValue: %d %v", e, err)
	}
	m := shareMemberValue{rackID: &rack, clientID: "c", clientHost: "/127.0.0.1", topicNames: []string{"t1", "t2"}}
	if got, err := decodeShareMember(m.encode()); err != nil || fmt.Sprint(*got.rackID, got.clientID, got.clientHost, got.topicNames) != fmt.Sprint(rack, "c", "/127.0.0.1", []string{"t1", "t2"}) {
		t.Errorf("ShareGroupMemberMetadataValue: %+v %v", got, err)
	}
	cur := shareCurrentValue{memberEpoch: 5, previousEpoch: 4, assigned: map[topicID][]int32{a: {0, 2}, b: {1}}}
	if got, err := decodeShareCurrent(cur.encode()); err != nil || got.memberEpoch != 5 || got.previousEpoch != 4 || fmt.Sprint(got.assigned) != fmt.Sprint(cur.assigned) {
		t.Errorf("ShareGroupCurrentMemberAssignmentValue: %+v %v", got, err)
	}
	target := map[topicID][]int32{a: {1, 3}}
	if got, err := decodeTargetMember(targetMemberValue(target)); err != nil || fmt.Sprint(got) != fmt.Sprint(target) {
		t.Errorf("ShareGroupTargetAssignmentMemberValue: %v %v", got, err)
	}
	st := shareStateValue{
		initializing: map[topicID]shareInitTopic{a: {name: "ta", partitions: []int32{2}}},
		initialized:  map[topicID]shareInitTopic{b: {name: "tb", partitions: []int32{0, 1}}},
		deleting:     map[topicID]string{{3}: "gone"},
	}
	if got, err := decodeShareState(st.encode()); err != nil || fmt.Sprint(got.initializing, got.initialized, got.deleting) != fmt.Sprint(st.initializing, st.initialized, st.deleting) {
		t.Errorf("ShareGroupStatePartitionMetadataValue: %+v %v", got, err)
	}
	for _, v := range []int16{shareGroupMemberMetadataKeyVersion, shareGroupCurrentAssignmentKeyVersion} {
		k, err := decodeKey(memberKeyOf(v, "g", "m"))
		if err != nil || k.version != v || k.group != "g" || k.member != "m" {
			t.Errorf("member key %d: %+v %v", v, k, err)
		}
	}
	if k, err := decodeKey(groupKeyOf(shareGroupStatePartitionMetadataKeyVersion, "g")); err != nil || k.group != "g" || k.member != "" {
		t.Errorf("group key: %+v %v", k, err)
	}
}
