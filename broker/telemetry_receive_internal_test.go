package broker

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Every codec a client may push with decompresses to what was compressed,
// snappy in both its raw and snappy-java's framed form; output beyond the
// limit is refused, whatever the codec.
func TestTelemetryDecompress(t *testing.T) {
	raw := bytes.Repeat([]byte("org.apache.kafka.producer.record.send.total "), 200)
	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	gw.Write(raw)
	gw.Close()
	var lz bytes.Buffer
	lw := lz4.NewWriter(&lz)
	lw.Write(raw)
	lw.Close()
	zw, _ := zstd.NewWriter(nil)
	zs := zw.EncodeAll(raw, nil)
	zw.Close()
	block := snappy.Encode(nil, raw)
	framed := append([]byte{}, xerialHeader...)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	framed = binary.BigEndian.AppendUint32(framed, 1)
	half := snappy.Encode(nil, raw[:len(raw)/2])
	rest := snappy.Encode(nil, raw[len(raw)/2:])
	framed = binary.BigEndian.AppendUint32(framed, uint32(len(half)))
	framed = append(framed, half...)
	framed = binary.BigEndian.AppendUint32(framed, uint32(len(rest)))
	framed = append(framed, rest...)

	for _, tt := range []struct {
		name    string
		codec   int8
		payload []byte
	}{{"none", 0, raw}, {"gzip", 1, gz.Bytes()}, {"snappy", 2, block}, {"snappy framed", 2, framed}, {"lz4", 3, lz.Bytes()}, {"zstd", 4, zs}} {
		got, err := decompressTelemetry(tt.codec, tt.payload, int64(len(raw)))
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s: %d bytes, %v; want the %d bytes compressed", tt.name, len(got), err, len(raw))
		}
		if tt.codec == 0 {
			continue
		}
		if _, err := decompressTelemetry(tt.codec, tt.payload, int64(len(raw)-1)); !errors.Is(err, errTelemetryTooLarge) {
			t.Errorf("%s: one byte over the limit: %v, want errTelemetryTooLarge", tt.name, err)
		}
	}
	if _, err := decompressTelemetry(4, []byte("not zstd"), 1<<20); err == nil {
		t.Error("garbage decompressed as zstd")
	}
}
