package main

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/s2"
)

// TestS2RepeatBlock checks that the crafted block decodes to the zeros it
// claims, so a bomb's size in the table is what a decoder produces.
func TestS2RepeatBlock(t *testing.T) {
	blk := s2RepeatBlock(2)
	out, err := s2.Decode(nil, blk)
	if err != nil {
		t.Fatal(err)
	}
	const want = 5 + 2*(0xffffff+1<<16+4)
	if len(out) != want || !bytes.Equal(out, make([]byte, want)) {
		t.Fatalf("decoded %d bytes, want %d zeros", len(out), want)
	}
}

// TestCompressZeros checks each codec's bomb is small on the wire.
func TestCompressZeros(t *testing.T) {
	for _, codec := range []int16{codecGzip, codecZstd, codecLZ4} {
		b, err := compressZeros(codec, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("codec %d: 64 MiB of zeros in %d bytes", codec, len(b))
	}
}
