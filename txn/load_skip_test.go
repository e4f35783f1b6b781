package txn

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// TestScanBatchesSkipsTornRecords: a record whose framing in its batch is
// broken is reported with its offset and ends that batch; the next batch
// is read as usual.
func TestScanBatchesSkipsTornRecords(t *testing.T) {
	m := metadata{producerID: 9, lastProducerID: -1, timeoutMs: 10, state: StateEmpty}
	torn := buildBatch(encodeKey("x"), encodeValue(&m, 1), 5)
	torn[batchHeaderSize] = 0x7f // zigzag -64: a negative record length
	next := buildBatch(encodeKey("y"), encodeValue(&m, 1), 6)
	binary.BigEndian.PutUint64(next, 1) // the log gives it offset 1
	var keys []string
	var bad []int64
	end, err := scanBatches(append(torn, next...), func(r logRecord) error {
		if r.err != nil {
			if !errors.Is(r.err, ErrCorruptRecord) {
				t.Errorf("record error %v, want ErrCorruptRecord", r.err)
			}
			bad = append(bad, r.offset)
			return nil
		}
		id, _, err := decodeKey(r.key)
		keys = append(keys, id)
		return err
	})
	if err != nil || end != 2 {
		t.Fatalf("scanBatches: next %d, err %v", end, err)
	}
	if !reflect.DeepEqual(keys, []string{"y"}) || !reflect.DeepEqual(bad, []int64{0}) {
		t.Fatalf("keys %v, unreadable at %v; want [y], [0]", keys, bad)
	}
}
