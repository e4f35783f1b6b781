package broker

// The receiving end of PushTelemetry (72_push_telemetry.go): an accepted
// push's metrics decompressed with the codec the client named (Kafka's
// codecs: 0 none, 1 gzip, 2 snappy, raw or in snappy-java's framing as the
// Java client writes it, 3 lz4 frames, 4 zstd), decoded as OTLP
// (metrics.DecodeOTLPMetrics) and recorded in the metrics endpoint's
// metrics.ClientTelemetry under the instance's identity.
//
// The compressed metrics are bounded by telemetry.max.bytes before they
// get here; what they decompress to is bounded by
// telemetryDecompressRatio times that (16 MiB with the default 1 MiB),
// past which the push is INVALID_RECORD, so a small push cannot make the
// node allocate without bound. zstd windows above 8 MiB are refused.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/sluicedev/sluice/metrics"
)

const (
	// telemetryDecompressRatio bounds the decompressed size of a push's
	// metrics to this many times telemetry.max.bytes.
	telemetryDecompressRatio = 16
	// telemetryZstdMaxWindow is the largest zstd window accepted, as for
	// produced batches.
	telemetryZstdMaxWindow = 8 << 20
)

var errTelemetryTooLarge = errors.New("telemetry metrics decompress past the limit")

// receive decompresses, decodes and records one accepted push of in.
func (t *clientTelemetry) receive(in *telemetryInstance, codec int8, payload []byte) error {
	limit := int64(telemetryDecompressRatio) * int64(max(t.maxBytes, 1))
	raw, err := decompressTelemetry(codec, payload, limit)
	if err != nil {
		return err
	}
	points, err := metrics.DecodeOTLPMetrics(raw)
	if err != nil {
		return err
	}
	t.receiver.Record(metrics.ClientIdentity{
		InstanceID:      uuidString(in.id),
		ClientID:        in.meta.clientID,
		SoftwareName:    in.meta.softwareName,
		SoftwareVersion: in.meta.softwareVersion,
	}, in.expiry(), points)
	return nil
}

// decompressTelemetry returns payload decompressed with codec, at most
// limit bytes of it.
func decompressTelemetry(codec int8, payload []byte, limit int64) ([]byte, error) {
	var r io.Reader
	switch codec {
	case 0:
		return payload, nil
	case 1:
		gz, err := gzip.NewReader(bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		r = gz
	case 2:
		return decompressTelemetrySnappy(payload, limit)
	case 3:
		r = lz4.NewReader(bytes.NewReader(payload))
	case 4:
		d, err := zstd.NewReader(bytes.NewReader(payload), zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(telemetryZstdMaxWindow), zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		defer d.Close()
		r = d
	default:
		return nil, fmt.Errorf("unknown compression type %d", codec)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, errTelemetryTooLarge
	}
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, errTelemetryTooLarge
	}
	return out, nil
}

// xerialHeader starts snappy-java's framing: magic, then a version and a
// compatible version of four bytes each.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompressTelemetrySnappy decodes a raw snappy block, or snappy-java's
// framing (a 16-byte header, then blocks each after its big-endian
// length).
func decompressTelemetrySnappy(payload []byte, limit int64) ([]byte, error) {
	if !bytes.HasPrefix(payload, xerialHeader) {
		return decodeSnappyBlock(nil, payload, limit)
	}
	if len(payload) < 16 {
		return nil, errors.New("snappy: short framing header")
	}
	var out []byte
	for p := payload[16:]; len(p) > 0; {
		if len(p) < 4 {
			return nil, errors.New("snappy: truncated block length")
		}
		n := binary.BigEndian.Uint32(p)
		p = p[4:]
		if uint64(n) > uint64(len(p)) {
			return nil, errors.New("snappy: truncated block")
		}
		var err error
		if out, err = decodeSnappyBlock(out, p[:n], limit); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends the decoded block to out, refusing to go past
// limit in all before allocating.
func decodeSnappyBlock(out, block []byte, limit int64) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	if int64(len(out))+int64(n) > limit {
		return nil, errTelemetryTooLarge
	}
	dec, err := snappy.DecodeStrict(nil, block)
	if err != nil {
		return nil, fmt.Errorf("snappy: %w", err)
	}
	return append(out, dec...), nil
}
