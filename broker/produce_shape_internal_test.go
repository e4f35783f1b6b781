package broker

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shapeBatch is a one-record magic v2 batch with the given attributes.
func shapeBatch(attrs int16) []byte {
	rec := kmsg.Record{Key: []byte("k"), Value: []byte("v")}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1, Records: rec.AppendTo(nil)}
	b.Length = int32(len(b.AppendTo(nil)) - 12)
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func TestValidateProduceRecords(t *testing.T) {
	one, zstd := shapeBatch(0), shapeBatch(4)
	for _, c := range []struct {
		name    string
		version int16
		records []byte
		want    error
	}{
		{"one batch", 3, one, nil},
		{"no records", 9, nil, kerr.InvalidRecord},
		{"two batches", 9, append(append([]byte(nil), one...), one...), kerr.InvalidRecord},
		{"zstd at v6", 6, zstd, kerr.UnsupportedCompressionType},
		{"zstd at v7", 7, zstd, nil},
		{"not a batch", 9, []byte("garbage that the log refuses"), nil},
	} {
		err := validateProduceRecords(c.version, c.records)
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
}
