package logstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
)

// Coverage-guided fuzz targets for what a producer's bytes reach before
// they are stored: the record validator and each codec's decoder. Plain
// `go test` runs their seeds; scripts/test-all.sh fuzzes each for a short
// fixed time. A failing input is saved under testdata/fuzz/<target>/;
// commit it with the fix so that go test replays it.

// fuzzDecompressLimit keeps each fuzz run cheap while still letting
// inputs reach the cap.
const fuzzDecompressLimit = 1 << 20

// validationErrors are the only errors validation may return.
var validationErrors = []error{ErrInvalidRecord, ErrCorruptMessage, ErrMessageTooLarge, ErrInvalidTimestamp, ErrRecordListTooLarge}

func isValidationError(err error) bool {
	for _, e := range validationErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzValidateBatch fuzzes the record walk and the checks of a leader's
// append: the fuzzer controls the record bytes, the declared count, the
// codec and the topic's compaction; the header around them is well-formed
// and its CRC right, so every input reaches record validation. It checks
// that validation never panics and answers only with Kafka's errors, that
// an accepted batch reads back with exactly its declared records, and that
// the in-place walk of uncompressed records and the streaming walk (used
// for compressed ones) agree.
func FuzzValidateBatch(f *testing.F) {
	f.Add(recs(1), int32(1), uint8(0), false)
	f.Add(recs(3), int32(3), uint8(0), true)
	f.Add(recs(1), int32(math.MaxInt32), uint8(0), false)
	f.Add(recs(1), int32(5), uint8(0), false)
	f.Add(concat(binary.AppendVarint(nil, 1_000_000), rawRec{key: []byte("k")}.body()), int32(1), uint8(0), false)
	f.Add(concat(recs(1), []byte{0, 0}), int32(1), uint8(0), false)
	f.Add(withLength(rawRec{key: []byte("k"), headers: [][2][]byte{{[]byte("h"), nil}, {[]byte("i"), []byte("v")}}}.body()), int32(1), uint8(0), true)
	f.Add(withLength(rawRec{value: []byte("v")}.body()), int32(1), uint8(0), true)
	f.Add(compress(f, 1, recs(2)), int32(2), uint8(1), false)
	f.Add(s2.EncodeSnappy(nil, recs(2)), int32(2), uint8(2), false)
	f.Add(xerialFrame(s2.EncodeSnappy(nil, recs(2))), int32(2), uint8(2), false)
	f.Add(compress(f, 3, recs(2)), int32(2), uint8(3), false)
	f.Add(compress(f, 4, recs(2)), int32(2), uint8(4), false)
	now := time.UnixMilli(1_700_000_000_000)
	f.Fuzz(func(t *testing.T, payload []byte, count int32, codec uint8, compact bool) {
		codec %= 8
		if count <= 0 {
			count = 1 // splitBatches refuses the rest before records are read
		}
		batch := wrapBatch(int8(codec), count, now.UnixMilli(), payload)
		cfg := DefaultConfig()
		cfg.Compact = compact
		spans, err := splitBatches(batch, cfg, true)
		if err != nil {
			if !isValidationError(err) {
				t.Fatalf("splitBatches: unclassified error %v", err)
			}
			return
		}
		verr := validateRecords(batch, spans, cfg, testTP, now)
		if verr != nil && !isValidationError(verr) {
			t.Fatalf("validateRecords: unclassified error %v", verr)
		}
		if codec == 0 {
			// The two walks must see the same records and the same verdict.
			var inPlace, streamed []recordInfo
			errA := walkRecordBytes(payload, count, func(r recordInfo) error { inPlace = append(inPlace, r); return nil })
			errB := walkRecordStream(bufio.NewReader(bytes.NewReader(payload)), count, func(r recordInfo) error { streamed = append(streamed, r); return nil })
			if (errA == nil) != (errB == nil) {
				t.Fatalf("in-place walk: %v; streaming walk: %v", errA, errB)
			}
			if errA == nil && (len(inPlace) != len(streamed) || !equalInfos(inPlace, streamed)) {
				t.Fatalf("walks disagree: %+v vs %+v", inPlace, streamed)
			}
		}
		if verr != nil {
			return
		}
		stamps, err := batchRecordStamps(batch)
		if err != nil {
			t.Fatalf("validated batch does not read back: %v", err)
		}
		if len(stamps) != int(count) {
			t.Fatalf("validated batch claims %d records, reads back %d", count, len(stamps))
		}
		for i, s := range stamps {
			if s.Offset != int64(i) {
				t.Fatalf("record %d of a validated batch has offset %d", i, s.Offset)
			}
		}
	})
}

func equalInfos(a, b []recordInfo) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// fuzzCodec fuzzes one codec's decoder as the validator drives it: the
// fuzzer's bytes are a batch payload of that codec, read to the end
// through the capped stream. It must never panic, never produce more than
// the cap, and fail only with a classified error.
func fuzzCodec(f *testing.F, codec int, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		s, err := openRecordStream(codec, payload, fuzzDecompressLimit)
		if err != nil {
			if !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrMessageTooLarge) {
				t.Fatalf("open: unclassified error %v", err)
			}
			return
		}
		defer s.close()
		n, err := io.Copy(io.Discard, s)
		if n > fuzzDecompressLimit {
			t.Fatalf("read %d bytes past the cap of %d", n, fuzzDecompressLimit)
		}
		if err != nil && !errors.Is(err, ErrCorruptMessage) && !errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("read: unclassified error %v", err)
		}
	})
}

// zeros2M decompresses past fuzzDecompressLimit, so seeds built from it
// start the fuzzer at the cap.
var zeros2M = make([]byte, 2<<20)

func FuzzDecompressGzip(f *testing.F) {
	fuzzCodec(f, 1, compress(f, 1, recs(3)), compress(f, 1, zeros2M), []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
}

func FuzzDecompressSnappy(f *testing.F) {
	fuzzCodec(f, 2,
		s2.EncodeSnappy(nil, recs(3)),
		xerialFrame(s2.EncodeSnappy(nil, recs(2)), s2.EncodeSnappy(nil, recs(1))),
		xerialFrame(s2.EncodeSnappy(nil, zeros2M[:64<<10])),
		s2.Encode(nil, bytes.Repeat([]byte("0123456789abcdef"), 1024)),
		xerialFrame(s2.Encode(nil, zeros2M)))
}

func FuzzDecompressLz4(f *testing.F) {
	fuzzCodec(f, 3, compress(f, 3, recs(3)), compress(f, 3, zeros2M))
}

func FuzzDecompressZstd(f *testing.F) {
	fuzzCodec(f, 4, compress(f, 4, recs(3)), compress(f, 4, zeros2M), append(compress(f, 4, recs(1)), compress(f, 4, recs(1))...))
}
