package logstore

import (
	"encoding/binary"
	"io"
)

// DecompressBatches returns records, whole magic v2 batches as a log read
// hands them back, with every compressed batch rewritten uncompressed: its
// header as it was but for the codec bits, the batch length and the CRC,
// and the same record bytes. It is for readers that decode stored records
// themselves, the group and transaction coordinators loading
// __consumer_offsets and __transaction_state: they write uncompressed
// batches, but a compression.type other than producer or uncompressed on
// those topics makes the leader store them compressed (recompress.go), as
// Kafka does, and Kafka's loaders read them.
//
// records is returned as it is when no batch is compressed. A batch that
// is not magic v2 or does not decompress within the stored-batch limit,
// and a partial batch at the end, are kept as they are; the caller's
// decoder reports them.
func DecompressBatches(records []byte) []byte {
	compressed := false
	for b := records; len(b) >= batchHeaderSize; {
		h := parseHeader(b)
		if h.Length < minBatchLength || h.size() > int64(len(b)) {
			break
		}
		if h.Magic == 2 && h.compression() != 0 {
			compressed = true
			break
		}
		b = b[h.size():]
	}
	if !compressed {
		return records
	}
	out := make([]byte, 0, 2*len(records))
	for len(records) >= batchHeaderSize {
		h := parseHeader(records)
		if h.Length < minBatchLength || h.size() > int64(len(records)) {
			break
		}
		b := records[:h.size()]
		records = records[h.size():]
		if h.Magic != 2 || h.compression() == 0 {
			out = append(out, b...)
			continue
		}
		rewritten, err := appendDecompressed(out, b, h)
		if err != nil {
			rewritten = append(out, b...)
		}
		out = rewritten
	}
	return append(out, records...)
}

// appendDecompressed appends batch b (header h) rewritten uncompressed to
// out; on an error out is returned as it was.
func appendDecompressed(out, b []byte, h BatchHeader) ([]byte, error) {
	start := len(out)
	payload := b[batchHeaderSize:]
	s, err := openRecordStream(h.compression(), payload, storedDecompressedLimit(len(payload)))
	if err != nil {
		return out, err
	}
	defer s.close()
	w := &appendWriter{buf: append(out, b[:batchHeaderSize]...)}
	if _, err := io.Copy(w, s); err != nil {
		return out[:start], err
	}
	nb := w.buf[start:]
	be := binary.BigEndian
	be.PutUint16(nb[posAttributes:], be.Uint16(nb[posAttributes:])&^attrCompressionMask)
	be.PutUint32(nb[posBatchLength:], uint32(len(nb)-logOverhead))
	be.PutUint32(nb[posCRC:], batchCRC(nb))
	return w.buf, nil
}
