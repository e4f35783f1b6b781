package logstore

import "fmt"

// CompressBatches returns records, whole magic v2 batches a coordinator
// built uncompressed, with every uncompressed data batch rewritten with
// codec, Kafka's batch attribute id (1 gzip, 2 snappy, 3 lz4, 4 zstd), at
// Kafka's default level, as recompress.go writes them; 0 returns records
// as they are. It is for coordinators whose writes Kafka compresses with a
// codec key of their own (share.coordinator.state.topic.compression.codec
// for __share_group_state). Control batches stay uncompressed, as Kafka
// writes them; a batch already compressed is kept.
func CompressBatches(records []byte, codec int8) ([]byte, error) {
	if codec == 0 {
		return records, nil
	}
	if codec < 0 || codec > 4 {
		return nil, fmt.Errorf("logstore: unknown compression codec %d", codec)
	}
	out := make([]byte, 0, len(records))
	for b := records; len(b) > 0; {
		if len(b) < batchHeaderSize {
			return nil, fmt.Errorf("logstore: partial batch header of %d bytes", len(b))
		}
		h := parseHeader(b)
		if h.Length < minBatchLength || h.size() > int64(len(b)) || h.Magic != 2 {
			return nil, fmt.Errorf("logstore: not a whole magic v2 batch (length %d, magic %d)", h.Length, h.Magic)
		}
		batch := b[:h.size()]
		if h.compression() != 0 || h.Attributes&attrControl != 0 {
			out = append(out, batch...)
		} else {
			var err error
			if out, err = appendRecompressed(out, batch, h, int(codec), Config{}); err != nil {
				return nil, err
			}
		}
		b = b[h.size():]
	}
	return out, nil
}
