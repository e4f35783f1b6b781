package txn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// kafkaValue builds a TransactionLogValue by hand, field by field as
// Kafka's TransactionLogValue.json lays them out, so the encoder is checked
// against the schema rather than against itself.
func kafkaValue(version int16, m metadata, topics []topicPartitions, null bool) []byte {
	be := binary.BigEndian
	flexible := version >= 1
	b := be.AppendUint16(nil, uint16(version))
	b = be.AppendUint64(b, uint64(m.producerID))
	b = be.AppendUint16(b, uint16(m.epoch))
	b = be.AppendUint32(b, uint32(m.timeoutMs))
	b = append(b, byte(m.state))
	switch {
	case null && flexible:
		b = append(b, 0)
	case null:
		b = be.AppendUint32(b, 0xffffffff)
	case flexible:
		b = binary.AppendUvarint(b, uint64(len(topics)+1))
	default:
		b = be.AppendUint32(b, uint32(len(topics)))
	}
	for _, t := range topics {
		if flexible {
			b = binary.AppendUvarint(b, uint64(len(t.topic)+1))
		} else {
			b = be.AppendUint16(b, uint16(len(t.topic)))
		}
		b = append(b, t.topic...)
		if flexible {
			b = binary.AppendUvarint(b, uint64(len(t.partitions)+1))
		} else {
			b = be.AppendUint32(b, uint32(len(t.partitions)))
		}
		for _, p := range t.partitions {
			b = be.AppendUint32(b, uint32(p))
		}
		if flexible {
			b = append(b, 0)
		}
	}
	b = be.AppendUint64(b, uint64(m.updateMs))
	b = be.AppendUint64(b, uint64(m.startMs))
	if flexible {
		if m.lastProducerID >= 0 {
			b = append(b, 1, 0, 8) // one tag: PreviousProducerId, 8 bytes
			b = be.AppendUint64(b, uint64(m.lastProducerID))
		} else {
			b = append(b, 0)
		}
	}
	return b
}

func TestValueEncodingMatchesKafkaSchema(t *testing.T) {
	ongoing := metadata{
		producerID: 4000, lastProducerID: 3999, epoch: 7, lastEpoch: noEpoch, timeoutMs: 60000,
		state: StateOngoing, startMs: 1700000000000, updateMs: 1700000000500,
		partitions: []TopicPartition{{"a", 0}, {"a", 2}, {"b", 1}},
	}
	grouped := []topicPartitions{{"a", []int32{0, 2}}, {"b", []int32{1}}}
	empty := metadata{producerID: 5, lastProducerID: -1, epoch: 0, lastEpoch: noEpoch, timeoutMs: 1000, state: StateEmpty, startMs: -1, updateMs: 42}
	complete := metadata{producerID: 5, lastProducerID: -1, epoch: 3, lastEpoch: noEpoch, timeoutMs: 1000, state: StateCompleteCommit, startMs: 10, updateMs: 42}
	tests := []struct {
		name    string
		m       metadata
		version int16
		want    []byte
	}{
		{"v1 ongoing with previous producer id", ongoing, 1, kafkaValue(1, ongoing, grouped, false)},
		{"v1 empty has null partitions", empty, 1, kafkaValue(1, empty, nil, true)},
		{"v1 complete has no partitions", complete, 1, kafkaValue(1, complete, nil, false)},
		{"v0 ongoing", ongoing, 0, kafkaValue(0, ongoing, grouped, false)},
		{"v0 empty", empty, 0, kafkaValue(0, empty, nil, true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := encodeValue(&tt.m, tt.version)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("encodeValue:\n got %x\nwant %x", got, tt.want)
			}
			back, err := decodeValue(got)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.m
			if tt.version == 0 {
				want.lastProducerID = -1 // v0 has no field for it
			}
			if len(want.partitions) == 0 {
				want.partitions = nil
			}
			if !reflect.DeepEqual(back, want) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", back, want)
			}
		})
	}
}

func TestKeyEncoding(t *testing.T) {
	k := encodeKey("my-txn")
	want := append([]byte{0, 0, 0, 6}, "my-txn"...)
	if !bytes.Equal(k, want) {
		t.Fatalf("key %x, want %x", k, want)
	}
	id, ok, err := decodeKey(k)
	if err != nil || !ok || id != "my-txn" {
		t.Fatalf("decodeKey = %q, %v, %v", id, ok, err)
	}
	if _, ok, err := decodeKey([]byte{0, 1, 0, 0}); ok || err != nil {
		t.Fatalf("a key of an unknown version must be skipped, got ok=%v err=%v", ok, err)
	}
	if _, _, err := decodeKey([]byte{0, 0, 0, 9, 'x'}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("truncated key: err %v", err)
	}
}

func TestDecodeValueRejectsCorruption(t *testing.T) {
	m := metadata{producerID: 1, lastProducerID: -1, epoch: 0, timeoutMs: 10, state: StateOngoing, partitions: []TopicPartition{{"t", 0}}}
	good := encodeValue(&m, 1)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"truncated", good[:len(good)-3]},
		{"unknown version", append([]byte{0, 9}, good[2:]...)},
		{"bad state", func() []byte { b := bytes.Clone(good); b[2+8+2+4] = 42; return b }()},
		{"huge partition count", func() []byte { b := bytes.Clone(good[:2+8+2+4+1]); return append(b, 0xff, 0xff, 0xff, 0x0f) }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeValue(tc.b); !errors.Is(err, ErrCorruptRecord) {
				t.Fatalf("err = %v, want ErrCorruptRecord", err)
			}
		})
	}
}

func TestBatchRoundTrip(t *testing.T) {
	m := metadata{producerID: 9, lastProducerID: -1, epoch: 1, lastEpoch: noEpoch, timeoutMs: 10, state: StatePrepareCommit, partitions: []TopicPartition{{"t", 3}}}
	var data []byte
	data = append(data, buildBatch(encodeKey("x"), encodeValue(&m, 1), 5)...)
	second := buildBatch(encodeKey("y"), nil, 6)
	binary.BigEndian.PutUint64(second, 1) // the log gives it offset 1
	data = append(data, second...)
	var keys []string
	var values [][]byte
	next, err := parseBatches(data, func(k, v []byte) error {
		id, _, err := decodeKey(k)
		keys = append(keys, id)
		values = append(values, v)
		return err
	})
	if err != nil || next != 2 {
		t.Fatalf("parseBatches: next %d, err %v", next, err)
	}
	if !reflect.DeepEqual(keys, []string{"x", "y"}) || values[1] != nil {
		t.Fatalf("keys %v, values %v", keys, values)
	}
	got, err := decodeValue(values[0])
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("value %+v, %v", got, err)
	}
	// A torn batch at the end is left for the next read.
	next, err = parseBatches(data[:len(data)-1], func(k, v []byte) error { return nil })
	if err != nil || next != 1 {
		t.Fatalf("torn tail: next %d, err %v", next, err)
	}
}
