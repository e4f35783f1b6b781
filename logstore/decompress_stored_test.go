package logstore

import (
	"bytes"
	"fmt"
	"testing"
)

// DecompressBatches rewrites each compressed batch of a read uncompressed,
// with its records' bytes, offsets and producer fields unchanged and a
// valid CRC; uncompressed batches, a batch that does not decompress and a
// partial batch at the end are kept as they are, and a read with no
// compressed batch is returned as it is.
func TestDecompressBatches(t *testing.T) {
	ts := int64(1_700_000_000_000)
	plain := makeBatch(t, batchSpec{Records: recompressRecords(3, ts)})
	if got := DecompressBatches(plain); &got[0] != &plain[0] {
		t.Fatal("a read without compressed batches was copied")
	}
	for codec := int8(1); codec <= 4; codec++ {
		t.Run(fmt.Sprintf("codec-%d", codec), func(t *testing.T) {
			recs := recompressRecords(20, ts)
			compressed := makeBatch(t, batchSpec{Codec: codec, Records: recs})
			broken := bytes.Clone(compressed)
			for i := batchHeaderSize; i < len(broken); i++ {
				broken[i] = 0xff
			}
			var in []byte
			in = append(in, plain...)
			in = append(in, compressed...)
			in = append(in, broken...)
			in = append(in, compressed[:batchHeaderSize+3]...) // partial
			out := DecompressBatches(in)

			hs := ParseBatchHeaders(out[:len(out)-(batchHeaderSize+3)])
			if len(hs) != 3 {
				t.Fatalf("%d whole batches out, want 3", len(hs))
			}
			b := out[len(plain) : len(plain)+int(hs[1].size())]
			h, sent := hs[1], parseHeader(compressed)
			if h.compression() != 0 || batchCRC(b) != h.CRC {
				t.Fatalf("rewritten batch: codec %d, CRC %08x computed %08x", h.compression(), h.CRC, batchCRC(b))
			}
			if h.BaseOffset != sent.BaseOffset || h.LastOffsetDelta != sent.LastOffsetDelta || h.RecordCount != sent.RecordCount ||
				h.ProducerID != sent.ProducerID || h.BaseTimestamp != sent.BaseTimestamp ||
				h.Attributes != sent.Attributes&^attrCompressionMask {
				t.Fatalf("rewritten header %+v, sent %+v", h, sent)
			}
			want := makeBatch(t, batchSpec{Records: recs})[batchHeaderSize:]
			if !bytes.Equal(b[batchHeaderSize:], want) {
				t.Fatal("rewritten records differ from the sent ones")
			}
			if !bytes.Equal(out[:len(plain)], plain) {
				t.Fatal("the uncompressed batch changed")
			}
			rest := out[len(plain)+len(b):]
			if !bytes.Equal(rest, append(bytes.Clone(broken), compressed[:batchHeaderSize+3]...)) {
				t.Fatal("the undecodable or the partial batch changed")
			}
		})
	}
}
