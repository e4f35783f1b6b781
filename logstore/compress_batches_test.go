package logstore

import (
	"bytes"
	"fmt"
	"testing"
)

// CompressBatches rewrites a coordinator's uncompressed batches with the
// codec, keeping control batches; DecompressBatches gives the records
// back unchanged.
func TestCompressBatches(t *testing.T) {
	ts := int64(1_700_000_000_000)
	recs := recompressRecords(5, ts)
	plain := makeBatch(t, batchSpec{Records: recs})
	marker := markerBatch(t, 7, 0, ts)
	in := append(bytes.Clone(plain), marker...)
	if got, err := CompressBatches(in, 0); err != nil || !bytes.Equal(got, in) {
		t.Fatalf("codec 0 changed the batches (%v)", err)
	}
	for codec := int8(1); codec <= 4; codec++ {
		t.Run(fmt.Sprintf("codec-%d", codec), func(t *testing.T) {
			out, err := CompressBatches(in, codec)
			if err != nil {
				t.Fatal(err)
			}
			hs := ParseBatchHeaders(out)
			if len(hs) != 2 || hs[0].compression() != int(codec) || hs[1].compression() != 0 {
				t.Fatalf("headers %+v, want a batch of codec %d and an uncompressed marker", hs, codec)
			}
			if batchCRC(out[:hs[0].size()]) != hs[0].CRC {
				t.Fatal("the compressed batch's CRC is wrong")
			}
			if back := DecompressBatches(out); !bytes.Equal(back[batchHeaderSize:len(plain)], plain[batchHeaderSize:]) || !bytes.Equal(back[len(plain):], marker) {
				t.Fatal("decompressed batches differ from the originals")
			}
		})
	}
	if _, err := CompressBatches(in, 5); err == nil {
		t.Fatal("codec 5 accepted")
	}
}
