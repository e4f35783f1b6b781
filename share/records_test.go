package share

import (
	"reflect"
	"testing"
)

// Records of __share_group_state read back as written, batch by batch,
// and a snapshot then an update replay to the merged state.
func TestStateRecordsRoundTrip(t *testing.T) {
	key := Key{Group: "g:1", TopicID: [16]byte{1, 2, 3}, Partition: 7}
	recs := []*stateRecord{
		{typ: recordSnapshot, key: key, snapshotEpoch: 2, stateEpoch: 3, leaderEpoch: 4, startOffset: 10, createTime: 5, writeTime: 6,
			batches: []StateBatch{{First: 10, Last: 12, State: Acknowledged, DeliveryCount: 1}, {First: 13, Last: 13, State: Available, DeliveryCount: 2}}},
		{typ: recordUpdate, key: key, snapshotEpoch: 2, leaderEpoch: 5, startOffset: 11,
			batches: []StateBatch{{First: 13, Last: 14, State: Archived, DeliveryCount: 5}}},
		{typ: recordUpdate, key: key, tombstone: true},
	}
	var data []byte
	for _, r := range recs {
		data = append(data, buildStateBatch(encodeStateKey(r.typ, r.key), encodeStateValue(r), 1)...)
	}
	var got []stateRecord
	if _, err := readStateBatches(data, func(_ int64, k, v []byte) error {
		r, ok, err := decodeStateRecord(k, v)
		if err != nil || !ok {
			t.Fatalf("decode: %v %v", ok, err)
		}
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("read %d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !reflect.DeepEqual(got[i].batches, recs[i].batches) && len(recs[i].batches) > 0 {
			t.Fatalf("record %d: batches %+v, want %+v", i, got[i].batches, recs[i].batches)
		}
		w := *recs[i]
		g := got[i]
		w.batches, g.batches = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("record %d: %+v, want %+v", i, g, w)
		}
	}
	keys := map[Key]*keyState{}
	applyRecord(keys, &got[0], 0, 0)
	applyRecord(keys, &got[1], 1, 0)
	want := PartitionState{StartOffset: 11, StateEpoch: 3, LeaderEpoch: 5, Batches: []StateBatch{
		{First: 11, Last: 12, State: Acknowledged, DeliveryCount: 1}, {First: 13, Last: 14, State: Archived, DeliveryCount: 5}}}
	if st := keys[key].st; !reflect.DeepEqual(st, want) {
		t.Fatalf("replayed %+v, want %+v", st, want)
	}
	applyRecord(keys, &got[2], 2, 0)
	if _, ok := keys[key]; ok {
		t.Fatal("a tombstone left the key")
	}
}

// A record cut short anywhere, or with a batch count it cannot hold, is
// an error, never a panic or a large allocation.
func TestStateRecordCorrupt(t *testing.T) {
	r := &stateRecord{typ: recordSnapshot, key: Key{Group: "g"}, batches: []StateBatch{{First: 1, Last: 2, State: Acknowledged}}}
	key, value := encodeStateKey(r.typ, r.key), encodeStateValue(r)
	for i := range len(value) {
		if _, _, err := decodeStateRecord(key, value[:i]); err == nil {
			t.Fatalf("a value cut to %d of %d bytes decoded", i, len(value))
		}
	}
	for i := range len(key) {
		if _, ok, err := decodeStateRecord(key[:i], value); err == nil && ok {
			t.Fatalf("a key cut to %d of %d bytes decoded", i, len(key))
		}
	}
	huge := append([]byte(nil), value[:len(value)-23]...) // up to the batch count
	huge = append(huge, 0xff, 0xff, 0xff, 0x7f)
	if _, _, err := decodeStateRecord(key, huge); err == nil {
		t.Fatal("a batch count of 268 million in a few bytes decoded")
	}
}
