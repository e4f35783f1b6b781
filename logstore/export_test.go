package logstore

import (
	"encoding/binary"
	"testing"
)

// Hand-made hostile batches for the loopback tests of package
// logstore_test (hostile_produce_test.go), which drive a real broker.

// HostileBatch is hostileBatchAt: a correct-CRC v2 batch claiming count
// records around hand-encoded record bytes, compressed with codec.
func HostileBatch(t testing.TB, codec int8, count int32, baseTs int64, records []byte) []byte {
	return hostileBatchAt(t, codec, count, baseTs, records)
}

// WrapBatch is wrapBatch: a v2 header claiming count records over an
// already compressed payload.
func WrapBatch(codec int8, count int32, baseTs int64, payload []byte) []byte {
	return wrapBatch(codec, count, baseTs, payload)
}

// Records encodes n well-formed keyed records (offset deltas 0..n-1).
func Records(n int) []byte { return recs(n) }

// RecordWithLength is one record whose length prefix claims length bytes
// in front of a short well-formed body.
func RecordWithLength(length int64) []byte {
	return append(binary.AppendVarint(nil, length), rawRec{key: []byte("k"), value: []byte("v")}.body()...)
}

// Bomb is one compression bomb of bombs (decompress_test.go).
type Bomb struct {
	Name  string
	Codec int8
	Build func(testing.TB) []byte
}

// Bombs lists the compression bombs.
func Bombs() []Bomb {
	var out []Bomb
	for _, b := range bombs {
		out = append(out, Bomb{Name: b.name, Codec: b.codec, Build: b.build})
	}
	return out
}
