package logstore

import (
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/s2"
)

// xerialBatch wraps a snappy batch's records in the xerial framing the
// Java client uses, re-encoding the batch.
func xerialBatch(t *testing.T, recs []testRecord) []byte {
	b := makeBatch(t, batchSpec{Codec: 0, Records: recs})
	raw := b[batchHeaderSize:]
	framed := append([]byte{}, xerialHeader...)
	framed = binary.BigEndian.AppendUint32(framed, 1) // version
	framed = binary.BigEndian.AppendUint32(framed, 1) // compatible version
	half := len(raw) / 2
	for _, chunk := range [][]byte{raw[:half], raw[half:]} {
		block := s2.EncodeSnappy(nil, chunk)
		framed = binary.BigEndian.AppendUint32(framed, uint32(len(block)))
		framed = append(framed, block...)
	}
	out := append(append([]byte{}, b[:batchHeaderSize]...), framed...)
	binary.BigEndian.PutUint32(out[posBatchLength:], uint32(len(out)-logOverhead))
	binary.BigEndian.PutUint16(out[posAttributes:], 2)
	fixCRC(out)
	return out
}

func TestOffsetForTimestamp(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1
	cfg.SegmentBytes = 250
	l := e.openLog(cfg)
	batches := [][]byte{
		makeBatch(t, batchSpec{Codec: 1, Records: []testRecord{{Timestamp: 1000}, {Timestamp: 1005}, {Timestamp: 1002}}}), // 0-2
		makeBatch(t, batchSpec{Codec: 3, Records: []testRecord{{Timestamp: 1010}, {Timestamp: 1020}}}),                    // 3-4
		makeBatch(t, batchSpec{Codec: 4, Records: []testRecord{{Timestamp: 1015}, {Timestamp: 1030}}}),                    // 5-6
		xerialBatch(t, []testRecord{{Timestamp: 1040, Value: []byte("some value")}}),                                      // 7
		makeBatch(t, batchSpec{Codec: 2, Records: []testRecord{{Timestamp: 1050}, {Timestamp: 1060}}}),                    // 8-9
		makeBatch(t, batchSpec{Codec: 0, Records: []testRecord{{Timestamp: 1055}}}),                                       // 10
	}
	for _, b := range batches {
		mustAppend(t, l, b, 0)
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("want several segments: %+v", l.Segments())
	}
	tests := []struct {
		ts       int64
		wantOff  int64
		wantTs   int64
		wantNone bool
	}{
		{0, 0, 1000, false},
		{1000, 0, 1000, false},
		{1001, 1, 1005, false},
		{1003, 1, 1005, false},
		{1006, 3, 1010, false},
		{1011, 4, 1020, false},
		{1016, 4, 1020, false},
		{1021, 6, 1030, false},
		{1031, 7, 1040, false},
		{1041, 8, 1050, false},
		{1051, 9, 1060, false},
		{1060, 9, 1060, false},
		{1061, 0, 0, true},
		{-2, 0, -1, false},
		{-1, 11, -1, false},
		{-3, 9, 1060, false},
	}
	check := func(t *testing.T) {
		for _, tc := range tests {
			off, ts, ok := l.OffsetForTimestamp(tc.ts)
			if ok == tc.wantNone || (ok && (off != tc.wantOff || ts != tc.wantTs)) {
				t.Errorf("OffsetForTimestamp(%d) = %d,%d,%v want %d,%d,%v", tc.ts, off, ts, ok, tc.wantOff, tc.wantTs, !tc.wantNone)
			}
		}
		if off, ts := l.MaxTimestamp(); off != 9 || ts != 1060 {
			t.Errorf("MaxTimestamp = %d,%d", off, ts)
		}
	}
	check(t)
	e.close()
	e.open()
	l = e.openLog(cfg)
	t.Run("after clean reopen", check)
	e.crash()
	e.open()
	l = e.openLog(cfg)
	t.Run("after recovery", check)
	e.close()
}

func TestMaxTimestampInsideBatch(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	if o, ts := l.MaxTimestamp(); o != -1 || ts != -1 {
		t.Fatalf("empty log: %d %d", o, ts)
	}
	mustAppend(t, l, makeBatch(t, batchSpec{Records: []testRecord{{Timestamp: 1}}}), 0)
	mustAppend(t, l, makeBatch(t, batchSpec{Codec: 4, Records: []testRecord{{Timestamp: 5}, {Timestamp: 9}, {Timestamp: 7}, {Timestamp: 9}}}), 0)
	mustAppend(t, l, makeBatch(t, batchSpec{Records: []testRecord{{Timestamp: 8}}}), 0)
	if o, ts := l.MaxTimestamp(); o != 2 || ts != 9 {
		t.Fatalf("MaxTimestamp = %d,%d want 2,9", o, ts)
	}
	e.close()
}

func TestLogAppendTimeTimestamps(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.LogAppendTime = true
	l := e.openLog(cfg)
	now := e.clock.Now().UnixMilli()
	mustAppend(t, l, simpleBatch(t, 3, 5), 0)
	e.clock.Advance(10_000_000)
	mustAppend(t, l, simpleBatch(t, 3, 5), 0)
	if off, ts, ok := l.OffsetForTimestamp(now + 1); !ok || off != 3 || ts != now+10 {
		t.Fatalf("OffsetForTimestamp = %d,%d,%v", off, ts, ok)
	}
	if off, ts := l.MaxTimestamp(); off != 3 || ts != now+10 {
		t.Fatalf("MaxTimestamp = %d,%d", off, ts)
	}
	e.close()
}
