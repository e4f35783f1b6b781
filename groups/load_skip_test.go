package groups

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
)

// TestReplaySkipsUnreadableRecords: a load skips the records it cannot
// parse — a value that does not decode, a value of an unknown version, a
// record whose framing in its batch is broken (which ends that batch) —
// and keeps what earlier records said for their keys and everything the
// later batches say.
func TestReplaySkipsUnreadableRecords(t *testing.T) {
	log := newMemLog()
	add := func(b []byte) {
		if _, err := log.Append(context.Background(), 0, 0, b); err != nil {
			t.Fatal(err)
		}
	}
	offset := func(n int64) []byte { return offsetValue(committedOffset{offset: n, leaderEpoch: -1}) }
	add(buildBatch([]kv{{offsetKey("a", "t", 0), offset(7)}}, 1))
	add(buildBatch([]kv{{groupKeyOf(consumerGroupMetadataKeyVersion, "cg"), consumerGroupMetadataValue(5, 0)}}, 1))
	add(buildBatch([]kv{{groupKeyOf(consumerGroupMetadataKeyVersion, "cg"), []byte{0, 0, 1}}}, 1))
	newer := consumerGroupMetadataValue(9, 0)
	binary.BigEndian.PutUint16(newer, 1)
	add(buildBatch([]kv{{groupKeyOf(consumerGroupMetadataKeyVersion, "cg"), newer}}, 1))
	add(buildBatch([]kv{{offsetKey("a", "t", 0), []byte{0, 3, 1}}}, 1))
	// Two records whose first length is negative: neither can be found.
	torn := buildBatch([]kv{{offsetKey("a", "t", 0), offset(8)}, {offsetKey("b", "t", 0), offset(1)}}, 1)
	torn[batchHeaderSize] = 0x7f // zigzag -64
	add(torn)
	add(buildBatch([]kv{{offsetKey("c", "t", 0), offset(9)}}, 1))

	c := New(Config{}, log)
	groups, next, err := c.replay(context.Background(), 0, 0)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if next != 8 {
		t.Errorf("replay stopped at %d, want 8", next)
	}
	if g := groups["a"]; g == nil || g.offsets["t"][0].offset != 7 {
		t.Errorf("group a: %+v, want offset 7 of t-0", g)
	}
	if g := groups["b"]; g != nil {
		t.Errorf("group b of the torn batch was loaded: %+v", g.offsets)
	}
	if g := groups["c"]; g == nil || g.offsets["t"][0].offset != 9 {
		t.Errorf("group c after the bad records: %+v, want offset 9 of t-0", g)
	}
	if g := groups["cg"]; g == nil || g.consumer == nil || g.consumer.epoch != 5 {
		t.Errorf("consumer group cg: %+v, want epoch 5 from its last readable record", g)
	}
}

// TestParseBatchesStopsOnlyAtBadHeaders: a batch header that cannot be
// read still fails the load, since no later batch can be found past it.
func TestParseBatchesStopsOnlyAtBadHeaders(t *testing.T) {
	b := buildBatch([]kv{{offsetKey("a", "t", 0), nil}}, 1)
	bad := bytes.Clone(b)
	bad[posMagic] = 1
	if _, err := parseBatches(append(b, bad...), func(parsedRecord) error { return nil }); err == nil {
		t.Fatal("a batch of magic 1 was walked past")
	}
}
