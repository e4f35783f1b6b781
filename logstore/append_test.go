package logstore

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"testing"
	"time"
)

func TestAppendAndReadEveryOffset(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1000
	cfg.IndexIntervalBytes = 150
	l := e.openLog(cfg)
	var next int64
	for i := 0; i < 60; i++ {
		n := 1 + i%4
		res := mustAppend(t, l, simpleBatch(t, n, 1000+int64(i)), 0)
		if res.FirstOffset != next || res.LastOffset != next+int64(n)-1 || res.Records != n || res.Batches != 1 {
			t.Fatalf("append %d: %+v, want first %d", i, res, next)
		}
		if res.LogAppendTime != -1 {
			t.Fatalf("LogAppendTime = %d for CreateTime topic", res.LogAppendTime)
		}
		next += int64(n)
	}
	if got := l.LogEndOffset(); got != next {
		t.Fatalf("LEO %d, want %d", got, next)
	}
	if len(l.Segments()) < 3 {
		t.Fatalf("expected several segments, got %+v", l.Segments())
	}
	for off := int64(0); off < next; off++ {
		r, err := l.Read(off, 1, math.MaxInt64, true) // exactly one batch
		if err != nil {
			t.Fatalf("Read(%d): %v", off, err)
		}
		h := parseHeader(r.Data)
		if int64(len(r.Data)) != h.size() {
			t.Fatalf("Read(%d): %d bytes, one batch is %d", off, len(r.Data), h.size())
		}
		if off < h.BaseOffset || off > h.lastOffset() || r.FirstOffset != h.BaseOffset {
			t.Fatalf("Read(%d) returned batch [%d,%d] first=%d", off, h.BaseOffset, h.lastOffset(), r.FirstOffset)
		}
		if batchCRC(r.Data) != h.CRC {
			t.Fatalf("Read(%d): CRC mismatch", off)
		}
	}
	if got := readAll(t, l, 0); got[len(got)-1].nextOffset() != next {
		t.Fatalf("readAll ends at %d", got[len(got)-1].nextOffset())
	}
}

func TestReadLimits(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	b := simpleBatch(t, 2, 5)
	size := int32(len(b))
	for i := 0; i < 10; i++ {
		mustAppend(t, l, b, 0)
	}
	tests := []struct {
		name        string
		offset      int64
		maxBytes    int32
		maxOffset   int64
		minOne      bool
		wantBatches int
		wantErr     error
	}{
		{"all", 0, 1 << 20, math.MaxInt64, false, 10, nil},
		{"three batches", 0, 3*size + 5, math.MaxInt64, false, 3, nil},
		{"too small without minOne", 0, size - 1, math.MaxInt64, false, 0, nil},
		{"too small with minOne", 0, 1, math.MaxInt64, true, 1, nil},
		{"mid batch", 3, 1 << 20, math.MaxInt64, false, 9, nil},
		{"maxOffset is HW", 0, 1 << 20, 6, false, 3, nil},
		{"maxOffset inside batch excludes it", 0, 1 << 20, 5, false, 2, nil},
		{"at maxOffset", 6, 1 << 20, 6, true, 0, nil},
		{"at LEO", 20, 1 << 20, math.MaxInt64, true, 0, nil},
		{"past LEO", 21, 1 << 20, math.MaxInt64, true, 0, ErrOffsetOutOfRange},
		{"negative", -1, 1 << 20, math.MaxInt64, true, 0, ErrOffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := l.Read(tc.offset, tc.maxBytes, tc.maxOffset, tc.minOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if got := len(r.Data) / int(size); got != tc.wantBatches || len(r.Data)%int(size) != 0 {
				t.Fatalf("%d bytes (%d batches), want %d batches", len(r.Data), got, tc.wantBatches)
			}
		})
	}
}

func TestAppendStampsOffsetsAndEpoch(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	// Two batches in one append, as a producer sends them.
	buf := append(simpleBatch(t, 3, 10), simpleBatch(t, 2, 20)...)
	res := mustAppend(t, l, buf, 7)
	if res.FirstOffset != 0 || res.LastOffset != 4 || res.Batches != 2 || res.Records != 5 {
		t.Fatalf("result %+v", res)
	}
	hs := readAll(t, l, 0)
	if len(hs) != 2 || hs[0].BaseOffset != 0 || hs[1].BaseOffset != 3 || hs[0].LeaderEpoch != 7 || hs[1].LeaderEpoch != 7 {
		t.Fatalf("headers %+v", hs)
	}
	if l.LatestEpoch() != 7 {
		t.Fatalf("LatestEpoch %d", l.LatestEpoch())
	}
}

func TestLogAppendTimeRewriteKeepsCRCValid(t *testing.T) {
	tests := []struct {
		name  string
		codec int8
	}{{"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			cfg.LogAppendTime = true
			l := e.openLog(cfg)
			batch := makeBatch(t, batchSpec{Codec: tc.codec, Records: []testRecord{{Timestamp: 1, Value: []byte("a")}, {Timestamp: 2, Value: []byte("b")}}})
			res := mustAppend(t, l, batch, 0)
			now := e.clock.Now().UnixMilli()
			if res.LogAppendTime != now {
				t.Fatalf("LogAppendTime %d, want %d", res.LogAppendTime, now)
			}
			r, err := l.Read(0, 1<<20, math.MaxInt64, true)
			if err != nil {
				t.Fatal(err)
			}
			h := parseHeader(r.Data)
			if !h.logAppendTime() || h.MaxTimestamp != now || h.compression() != int(tc.codec) {
				t.Fatalf("header %+v", h)
			}
			if batchCRC(r.Data) != h.CRC {
				t.Fatal("CRC invalid after LogAppendTime rewrite")
			}
			stamps, err := batchRecordStamps(r.Data)
			if err != nil || len(stamps) != 2 || stamps[0].Timestamp != now || stamps[1].Offset != 1 {
				t.Fatalf("stamps %+v, %v", stamps, err)
			}
		})
	}
}

func TestAppendValidation(t *testing.T) {
	good := func() []byte { return simpleBatch(t, 2, 1) }
	tests := []struct {
		name   string
		mutate func(b []byte) []byte
		cfg    func(*Config)
		want   error
	}{
		{"bad crc", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, nil, ErrCorruptMessage},
		{"bad magic", func(b []byte) []byte { b[posMagic] = 1; return b }, nil, ErrInvalidRecord},
		{"truncated", func(b []byte) []byte { return b[:len(b)-3] }, nil, ErrCorruptMessage},
		{"short header", func(b []byte) []byte { return b[:40] }, nil, ErrCorruptMessage},
		{"empty", func(b []byte) []byte { return nil }, nil, ErrCorruptMessage},
		{"length below header", func(b []byte) []byte { binary.BigEndian.PutUint32(b[posBatchLength:], 10); return b }, nil, ErrCorruptMessage},
		{"count above delta", func(b []byte) []byte { binary.BigEndian.PutUint32(b[posRecordCount:], 5); fixCRC(b); return b }, nil, ErrInvalidRecord},
		{"count below delta", func(b []byte) []byte { binary.BigEndian.PutUint32(b[posRecordCount:], 1); fixCRC(b); return b }, nil, ErrInvalidRecord},
		{"negative count", func(b []byte) []byte { binary.BigEndian.PutUint32(b[posRecordCount:], 0xffffffff); fixCRC(b); return b }, nil, ErrInvalidRecord},
		{"too large", nil, func(c *Config) { c.MaxMessageBytes = 50 }, ErrMessageTooLarge},
		{"larger than segment", nil, func(c *Config) { c.SegmentBytes = 80 }, ErrRecordListTooLarge},
		{"second batch bad", func(b []byte) []byte {
			bad := good()
			bad[len(bad)-1] ^= 1
			return append(b, bad...)
		}, nil, ErrCorruptMessage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l := e.openLog(cfg)
			b := good()
			if tc.mutate != nil {
				b = tc.mutate(b)
			}
			_, err := l.AppendAsLeader(b, 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != 0 || l.Size() != 0 {
				t.Fatalf("failed append wrote: LEO %d size %d", l.LogEndOffset(), l.Size())
			}
			if tc.cfg == nil { // the log still works
				mustAppend(t, l, simpleBatch(t, 1, 1), 0)
			}
		})
	}
}

func TestRollOnSegmentBytes(t *testing.T) {
	e := newTestEnv(t)
	batch := simpleBatch(t, 1, 1)
	cfg := DefaultConfig()
	cfg.SegmentBytes = int64(3 * len(batch))
	l := e.openLog(cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, batch, 0)
	}
	segs := l.Segments()
	want := []int64{0, 3, 6, 9}
	if len(segs) != len(want) {
		t.Fatalf("segments %+v", segs)
	}
	for i, s := range segs {
		if s.BaseOffset != want[i] || s.Size > cfg.SegmentBytes {
			t.Fatalf("segment %d: %+v", i, s)
		}
	}
}

func TestRollOnSegmentMs(t *testing.T) {
	t.Run("create time", func(t *testing.T) {
		e := newTestEnv(t)
		cfg := DefaultConfig()
		cfg.SegmentMs = 1000
		l := e.openLog(cfg)
		mustAppend(t, l, simpleBatch(t, 1, 10_000), 0)
		mustAppend(t, l, simpleBatch(t, 1, 10_900), 0) // 900 ms after the first batch
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("rolled early: %d segments", n)
		}
		mustAppend(t, l, simpleBatch(t, 1, 11_001), 0) // 1001 ms
		if segs := l.Segments(); len(segs) != 2 || segs[1].BaseOffset != 2 {
			t.Fatalf("segments %+v", segs)
		}
	})
	t.Run("log append time", func(t *testing.T) {
		e := newTestEnv(t)
		cfg := DefaultConfig()
		cfg.SegmentMs = 1000
		cfg.LogAppendTime = true
		l := e.openLog(cfg)
		mustAppend(t, l, simpleBatch(t, 1, 1), 0)
		e.clock.Advance(500 * time.Millisecond)
		mustAppend(t, l, simpleBatch(t, 1, 1), 0)
		if n := len(l.Segments()); n != 1 {
			t.Fatalf("rolled early: %d segments", n)
		}
		e.clock.Advance(600 * time.Millisecond)
		mustAppend(t, l, simpleBatch(t, 1, 1), 0)
		if n := len(l.Segments()); n != 2 {
			t.Fatalf("did not roll: %d segments", n)
		}
	})
}

func TestRollOnIndexFull(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 0 // an index entry for every batch but the first
	cfg.SegmentIndexBytes = 3 * offsetIndexEntrySize
	l := e.openLog(cfg)
	for i := 0; i < 10; i++ {
		mustAppend(t, l, simpleBatch(t, 1, int64(i)), 0)
	}
	for _, s := range l.Segments() {
		if s.IndexEntries > 3 {
			t.Fatalf("segment %+v has more index entries than fit", s)
		}
	}
	if len(l.Segments()) < 2 {
		t.Fatal("did not roll on a full index")
	}
}

// TestIndexLookupAcrossSegments checks that the offset index gives a
// position at or before every offset's batch and that reads use it.
func TestIndexLookupAcrossSegments(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4000
	cfg.IndexIntervalBytes = 200
	l := e.openLog(cfg)
	for i := 0; i < 100; i++ {
		mustAppend(t, l, simpleBatch(t, 1+i%3, int64(i)), 0)
	}
	l.segsMu.RLock()
	defer l.segsMu.RUnlock()
	for _, s := range l.segments {
		if len(s.index.entries) == 0 && s.size > 400 {
			t.Fatalf("segment %d has no index entries", s.base)
		}
		for _, ie := range s.index.entries {
			h, err := s.readHeader(int64(ie.position), s.size)
			if err != nil {
				t.Fatal(err)
			}
			if h.lastOffset() != s.base+int64(ie.relOffset) {
				t.Fatalf("index entry %+v points at batch [%d,%d]", ie, h.BaseOffset, h.lastOffset())
			}
		}
		for off := s.base; off < s.nextOffset; off++ {
			pos := s.index.lookup(off)
			p, h, err := s.positionOf(off, pos, s.size)
			if err != nil || off < h.BaseOffset || off > h.lastOffset() || p < pos {
				t.Fatalf("offset %d: pos %d batch [%d,%d] %v", off, p, h.BaseOffset, h.lastOffset(), err)
			}
		}
	}
}

func TestAppendAsFollower(t *testing.T) {
	leaderEnv := newTestEnv(t)
	leader := leaderEnv.openLog(DefaultConfig())
	mustAppend(t, leader, simpleBatch(t, 2, 1), 3)
	mustAppend(t, leader, simpleBatch(t, 3, 2), 5)
	r, err := leader.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	fe := newTestEnv(t)
	f := fe.openLog(DefaultConfig())
	res, err := f.AppendAsFollower(r.Data)
	if err != nil || res.FirstOffset != 0 || res.LastOffset != 4 {
		t.Fatalf("follower append: %+v %v", res, err)
	}
	hs := readAll(t, f, 0)
	if hs[0].LeaderEpoch != 3 || hs[1].LeaderEpoch != 5 || f.LatestEpoch() != 5 {
		t.Fatalf("epochs not kept: %+v", hs)
	}
	if e, o := f.EndOffsetForEpoch(3); e != 3 || o != 2 {
		t.Fatalf("EndOffsetForEpoch(3) = %d, %d", e, o)
	}
	if _, err := f.AppendAsFollower(r.Data); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("re-append below LEO: %v", err)
	}
}

// TestConcurrentReadsAndAppends runs readers against a writer; with -race
// it checks the locking, and every read must see whole, valid batches.
func TestConcurrentReadsAndAppends(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.SegmentBytes = 2000
	cfg.IndexIntervalBytes = 100
	l := e.openLog(cfg)
	const total = 300
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				off := leo / 2
				res, err := l.Read(off, 1000, math.MaxInt64, true)
				if err != nil {
					t.Errorf("Read(%d): %v", off, err)
					return
				}
				for b := res.Data; len(b) > 0; {
					h := parseHeader(b)
					if batchCRC(b[:h.size()]) != h.CRC {
						t.Errorf("torn batch at %d", h.BaseOffset)
						return
					}
					b = b[h.size():]
				}
				_, _, _ = l.OffsetForTimestamp(5)
			}
		}()
	}
	batch := simpleBatch(t, 2, 1)
	for i := 0; i < total; i++ {
		mustAppend(t, l, batch, 0)
	}
	close(stop)
	wg.Wait()
}

func TestClosedLog(t *testing.T) {
	e := newTestEnv(t)
	l := e.openLog(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 1, 1), 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(simpleBatch(t, 1, 1), 0); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if _, err := l.Read(0, 100, math.MaxInt64, true); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("read after close: %v", err)
	}
}
