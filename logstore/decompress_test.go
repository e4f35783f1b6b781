package logstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// This file tests decompression bombs: batches of a few hundred KiB at
// most whose records decompress far beyond the per-batch cap. Produce must
// refuse them without allocating anywhere near what they expand to, and
// the read path (timestamps of stored batches, which replication and old
// logs can hold) must stay bounded too.

// allocatedDuring reports the bytes the process allocated while fn ran.
// Tests that use it run without t.Parallel, so other goroutines add only
// noise far below the bounds asserted.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bombRecordPrefix is the start of one record that claims a value of
// valueLen bytes: the rest of the decompressed stream is that value.
func bombRecordPrefix(valueLen int) []byte {
	head := []byte{0, 0, 0} // attributes, timestamp delta 0, offset delta 0
	head = binary.AppendVarint(head, -1)
	head = binary.AppendVarint(head, int64(valueLen))
	body := len(head) + valueLen + 1 // + the header count after the value
	return append(binary.AppendVarint(nil, int64(body)), head...)
}

var zeros16M = sync.OnceValue(func() []byte { return make([]byte, 16<<20) })

// gzipBomb is 48 gzip members, each 16 MiB of zeros (the first one
// starting with the record prefix): 768 MiB from about 800 KiB.
func gzipBomb(t testing.TB) []byte {
	const members = 48
	var out bytes.Buffer
	member := func(prefix []byte) {
		w, _ := gzip.NewWriterLevel(&out, gzip.BestCompression)
		w.Write(prefix)
		w.Write(zeros16M())
		w.Close()
	}
	member(bombRecordPrefix(members * 16 << 20))
	first := out.Len()
	member(nil)
	one := append([]byte(nil), out.Bytes()[first:]...)
	for i := 2; i < members; i++ {
		out.Write(one)
	}
	return out.Bytes()
}

// zstdBomb is 64 zstd frames of 16 MiB of zeros each: 1 GiB.
func zstdBomb(t testing.TB) []byte {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	first := enc.EncodeAll(append(bombRecordPrefix(64*16<<20), zeros16M()...), nil)
	one := enc.EncodeAll(zeros16M(), nil)
	out := first
	for i := 1; i < 64; i++ {
		out = append(out, one...)
	}
	return out
}

// zstdWindowBomb is one small zstd frame whose header declares a 512 MiB
// window: a decoder that trusts it allocates the window up front.
func zstdWindowBomb(t testing.TB) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(512<<20), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	enc.Reset(&out)
	enc.Write(append(bombRecordPrefix(8<<20), make([]byte, 8<<20)...))
	enc.Close()
	return out.Bytes()
}

// lz4Bomb is one lz4 frame of 128 MiB of zeros (lz4's ratio tops out near
// 255:1, so this is what fits in max.message.bytes).
func lz4Bomb(t testing.TB) []byte {
	var out bytes.Buffer
	w := lz4.NewWriter(&out)
	w.Write(bombRecordPrefix(128 << 20))
	for i := 0; i < 8; i++ {
		w.Write(zeros16M())
	}
	w.Close()
	return out.Bytes()
}

// xerialFrame frames snappy blocks the way snappy-java's
// SnappyOutputStream does (the Java producer's format).
func xerialFrame(blocks ...[]byte) []byte {
	out := []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1}
	for _, b := range blocks {
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// xerialS2Bomb is xerial framing around 32 blocks that use S2's repeat
// extension to encode 64 MiB of zeros each in a few hundred bytes: 2 GiB.
func xerialS2Bomb(t testing.TB) []byte {
	first := s2.Encode(nil, append(bombRecordPrefix(32*64<<20), make([]byte, 64<<20)...))
	one := s2.Encode(nil, make([]byte, 64<<20))
	blocks := [][]byte{first}
	for i := 1; i < 32; i++ {
		blocks = append(blocks, one)
	}
	return xerialFrame(blocks...)
}

// s2Block is a raw snappy-codec payload that uses S2's extensions (a
// repeat copy): Kafka's snappy decoders refuse it.
func s2Block(t testing.TB) []byte {
	// One well-formed record whose value is 4 KiB of noise twice: the S2
	// encoder copies the second half as a copy of 64 bytes and a repeat
	// of the same offset (S2's extension) for the rest. The block is
	// barely compressed, so only the strict decoder can tell.
	noise := make([]byte, 4096)
	for i := range noise {
		noise[i] = byte(i*7919>>3) ^ byte(i>>5*131)
	}
	val := append(append([]byte(nil), noise...), noise...)
	raw := withLength(rawRec{key: []byte("k"), value: val}.body())
	blk := s2.Encode(nil, raw)
	if _, err := snappy.DecodeStrict(nil, blk); err == nil {
		t.Fatal("test setup: the S2 block decodes as plain snappy; it must use an S2 extension")
	}
	if len(raw) > 3*len(blk) {
		t.Fatalf("test setup: the S2 block compresses %d to %d; it must pass the ratio check", len(raw), len(blk))
	}
	if got, err := s2.Decode(nil, blk); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("test setup: the S2 block does not decode with S2: %v", err)
	}
	return blk
}

type bomb struct {
	name  string
	codec int8
	build func(testing.TB) []byte
	want  error
}

var bombs = []bomb{
	{"gzip 768 MiB", 1, gzipBomb, ErrMessageTooLarge},
	{"zstd 1 GiB", 4, zstdBomb, ErrMessageTooLarge},
	{"zstd 512 MiB window", 4, zstdWindowBomb, ErrCorruptMessage},
	{"lz4 128 MiB", 3, lz4Bomb, ErrMessageTooLarge},
	{"xerial snappy S2 2 GiB", 2, xerialS2Bomb, ErrCorruptMessage},
	{"snappy S2 extension", 2, s2Block, ErrCorruptMessage},
}

// TestProduceRefusesCompressionBombs: every bomb is refused on produce
// with the error its kind gets, nothing is appended, and refusing it
// allocates far less than the per-batch cap.
func TestProduceRefusesCompressionBombs(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			payload := b.build(t)
			batch := wrapBatch(b.codec, 1, 1_700_000_000_000, payload)
			if len(batch) > 1048588 {
				t.Fatalf("test setup: bomb of %d bytes is over max.message.bytes", len(batch))
			}
			e := newTestEnv(t)
			l := e.openLog(DefaultConfig())
			defer e.close()
			var err error
			alloc := allocatedDuring(func() { _, err = l.AppendAsLeader(batch, 0) })
			if !errors.Is(err, b.want) {
				t.Errorf("AppendAsLeader of a %d-byte bomb: %v, want %v", len(batch), err, b.want)
			}
			if l.LogEndOffset() != 0 {
				t.Errorf("log end offset %d after the bomb, want 0 (refused)", l.LogEndOffset())
			}
			if alloc > 40<<20 {
				t.Errorf("refusing the bomb allocated %d MiB, want well under the %d MiB cap", alloc>>20, minDecompressedLimit>>20)
			}
		})
	}
}

// TestStampsOfStoredBombs: a bomb that got into a log (replication and
// recovery check headers and CRCs only) costs a timestamp lookup an error,
// not the memory it expands to.
func TestStampsOfStoredBombs(t *testing.T) {
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			batch := wrapBatch(b.codec, 1, 1_700_000_000_000, b.build(t))
			var err error
			alloc := allocatedDuring(func() { _, err = batchRecordStamps(batch) })
			if err == nil {
				t.Errorf("batchRecordStamps of a %d-byte bomb: no error", len(batch))
			}
			if alloc > 40<<20 {
				t.Errorf("batchRecordStamps of the bomb allocated %d MiB", alloc>>20)
			}
		})
	}
}
