package protocol

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestFrameRoundTrip(t *testing.T) {
	for _, size := range []int{8, 100, frameChunk, frameChunk + 1, 5*frameChunk + 3} {
		body := make([]byte, size)
		for i := range body {
			body[i] = byte(i * 7)
		}
		var buf bytes.Buffer
		if err := WriteFrame(&buf, body); err != nil {
			t.Fatal(err)
		}
		buf.WriteString("next")
		got, err := ReadFrame(iotest.HalfReader(&buf), DefaultMaxRequestSize)
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("size %d: body differs", size)
		}
		if buf.String() != "next" {
			t.Fatalf("size %d: read past the frame", size)
		}
	}
}

func TestReadFrameRefusesSizes(t *testing.T) {
	tests := []struct {
		name string
		size uint32
		want error
	}{
		{"negative", 0xffffffff, ErrFrameTooSmall},
		{"most negative", 0x80000000, ErrFrameTooSmall},
		{"zero", 0, ErrFrameTooSmall},
		{"below header", headerPrefixSize - 1, ErrFrameTooSmall},
		{"one over max", uint32(DefaultMaxRequestSize) + 1, ErrFrameTooLarge},
		{"2 GiB", math.MaxInt32, ErrFrameTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := binary.BigEndian.AppendUint32(nil, tt.size)
			_, err := ReadFrame(bytes.NewReader(in), DefaultMaxRequestSize)
			var sizeErr *FrameSizeError
			if !errors.Is(err, tt.want) || !errors.As(err, &sizeErr) || sizeErr.Size != int32(tt.size) {
				t.Fatalf("err %v, want %v with the claimed size", err, tt.want)
			}
		})
	}
}

func TestReadFrameTruncated(t *testing.T) {
	in := append(binary.BigEndian.AppendUint32(nil, 100), make([]byte, 50)...)
	if _, err := ReadFrame(bytes.NewReader(in), DefaultMaxRequestSize); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(nil), DefaultMaxRequestSize); err != io.EOF {
		t.Fatalf("err %v, want EOF between frames", err)
	}
}

// TestHugeClaimDoesNotAllocate checks a refused 2 GiB claim allocates next
// to nothing, and that even an accepted claim (max raised to 2 GiB) only
// allocates for bytes that arrive.
func TestHugeClaimDoesNotAllocate(t *testing.T) {
	claim := binary.BigEndian.AppendUint32(nil, math.MaxInt32)
	r := bytes.NewReader(claim)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(claim)
		if _, err := ReadFrame(r, DefaultMaxRequestSize); !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("err %v", err)
		}
	})
	if allocs > 2 {
		t.Fatalf("%v allocations refusing a 2 GiB frame", allocs)
	}

	withData := append(claim, make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := ReadFrame(bytes.NewReader(withData), math.MaxInt32); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("allocated %d bytes for a 2 GiB claim backed by 1000 bytes", grew)
	}
}
