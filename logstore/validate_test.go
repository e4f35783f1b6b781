package logstore

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file tests the produce-path record validator (validate.go) with
// hand-made batches: each case is a batch a hostile or broken client could
// send, and the error AppendAsLeader must answer with (nothing appended).

// hostileBatch builds a v2 batch around hand-made record bytes: the
// header claims count records (lastOffsetDelta count-1), the records are
// compressed with codec, and the CRC is correct, so only record
// validation can tell what is wrong.
func hostileBatch(t testing.TB, codec int8, count int32, records []byte) []byte {
	t.Helper()
	return hostileBatchAt(t, codec, count, 1_700_000_000_000, records)
}

func hostileBatchAt(t testing.TB, codec int8, count int32, baseTs int64, records []byte) []byte {
	t.Helper()
	payload := records
	if codec != 0 {
		payload = compress(t, codec, records)
	}
	return wrapBatch(codec, count, baseTs, payload)
}

// wrapBatch puts an already encoded (possibly compressed) payload under a
// v2 header claiming count records, with a correct CRC.
func wrapBatch(codec int8, count int32, baseTs int64, payload []byte) []byte {
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           int16(codec),
		LastOffsetDelta:      count - 1,
		FirstTimestamp:       baseTs,
		MaxTimestamp:         baseTs,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           count,
		Records:              payload,
	}
	b.Length = int32(minBatchLength + len(payload))
	out := b.AppendTo(nil)
	fixCRC(out)
	return out
}

// rawRec is the fields of one record, encoded by hand so that a test can
// put any value in any field. A nil key or value is encoded as length -1.
type rawRec struct {
	attrs       byte
	tsDelta     int64
	offsetDelta int64
	key, value  []byte
	headers     [][2][]byte // a nil header value is length -1
}

// body encodes the record without its length prefix.
func (r rawRec) body() []byte {
	b := []byte{r.attrs}
	b = binary.AppendVarint(b, r.tsDelta)
	b = binary.AppendVarint(b, r.offsetDelta)
	b = appendBytesField(b, r.key)
	b = appendBytesField(b, r.value)
	b = binary.AppendVarint(b, int64(len(r.headers)))
	for _, h := range r.headers {
		b = appendBytesField(b, h[0])
		b = appendBytesField(b, h[1])
	}
	return b
}

func appendBytesField(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// withLength prefixes a record body with its length.
func withLength(body []byte) []byte {
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// recs encodes n well-formed records with sequential offset deltas.
func recs(n int) []byte {
	var out []byte
	for i := 0; i < n; i++ {
		out = append(out, withLength(rawRec{offsetDelta: int64(i), key: []byte("k"), value: []byte("value")}.body())...)
	}
	return out
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestValidateProducedRecords(t *testing.T) {
	ok := rawRec{key: []byte("k"), value: []byte("v")}
	cases := []struct {
		name    string
		codec   int8
		count   int32
		records []byte
		cfg     func(*Config)
		want    error
		msg     string
	}{
		{name: "count lie 2^31-1", count: math.MaxInt32, records: recs(1), want: ErrInvalidRecord, msg: "premature EOF"},
		{name: "count lie 5", count: 5, records: recs(1), want: ErrInvalidRecord, msg: "premature EOF"},
		{name: "count lie 5 zstd", codec: 4, count: 5, records: recs(1), want: ErrInvalidRecord, msg: "premature EOF"},
		{name: "count lie 5 gzip", codec: 1, count: 5, records: recs(1), want: ErrInvalidRecord, msg: "premature EOF"},
		{name: "record length 1000000", count: 1, records: concat(binary.AppendVarint(nil, 1_000_000), ok.body()), want: ErrInvalidRecord, msg: "Invalid record size"},
		{name: "record length 1000000 lz4", codec: 3, count: 1, records: concat(binary.AppendVarint(nil, 1_000_000), ok.body()), want: ErrInvalidRecord, msg: "Invalid record size"},
		{name: "negative record length", count: 1, records: concat(binary.AppendVarint(nil, -3), ok.body()), want: ErrInvalidRecord},
		{name: "trailing bytes", count: 1, records: concat(recs(1), []byte{0, 0, 0}), want: ErrInvalidRecord, msg: "records still remaining"},
		{name: "trailing record", count: 1, records: recs(2), want: ErrInvalidRecord, msg: "records still remaining"},
		{name: "trailing bytes snappy", codec: 2, count: 1, records: concat(recs(1), []byte{7}), want: ErrInvalidRecord, msg: "records still remaining"},
		{name: "empty record body", count: 1, records: []byte{0}, want: ErrInvalidRecord},
		{name: "record body longer than its fields", count: 1, records: withLength(append(ok.body(), 0)), want: ErrInvalidRecord, msg: "but instead read"},
		{name: "key length -2", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, -2), binary.AppendVarint(nil, -1), []byte{0})), want: ErrInvalidRecord},
		{name: "key length past record", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, 100), []byte("short"))), want: ErrInvalidRecord},
		{name: "value length past record", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, -1), binary.AppendVarint(nil, 5000), []byte("v"), []byte{0})), want: ErrInvalidRecord},
		{name: "negative header count", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, -1), binary.AppendVarint(nil, -1), binary.AppendVarint(nil, -1))), want: ErrInvalidRecord, msg: "headers"},
		{name: "header count past record", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, -1), binary.AppendVarint(nil, -1), binary.AppendVarint(nil, 1_000_000))), want: ErrInvalidRecord, msg: "headers"},
		{name: "negative header key length", count: 1, records: withLength(concat([]byte{0, 0, 0}, binary.AppendVarint(nil, -1), binary.AppendVarint(nil, -1), binary.AppendVarint(nil, 1), binary.AppendVarint(nil, -1), binary.AppendVarint(nil, -1))), want: ErrInvalidRecord, msg: "header key"},
		{name: "header value past record", count: 1, records: withLength(rawRec{headers: [][2][]byte{{[]byte("h"), []byte("x")}}}.body()[:8]), want: ErrInvalidRecord},
		{name: "varint of six bytes", count: 1, records: withLength(concat([]byte{0, 0, 0}, []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, binary.AppendVarint(nil, -1), []byte{0})), want: ErrInvalidRecord},
		{name: "offset delta not sequential", count: 2, records: concat(withLength(rawRec{offsetDelta: 0}.body()), withLength(rawRec{offsetDelta: 7}.body())), want: ErrInvalidRecord, msg: "offset delta"},
		{name: "offset delta not sequential zstd", codec: 4, count: 1, records: withLength(rawRec{offsetDelta: 1}.body()), want: ErrInvalidRecord, msg: "offset delta"},
		{name: "null key on compacted topic", count: 1, records: withLength(rawRec{value: []byte("v")}.body()), cfg: func(c *Config) { c.Compact = true }, want: ErrInvalidRecord, msg: "without key"},
		{name: "null key on compacted topic gzip", codec: 1, count: 1, records: withLength(rawRec{value: []byte("v")}.body()), cfg: func(c *Config) { c.Compact = true }, want: ErrInvalidRecord, msg: "without key"},
		{name: "keyed record on compacted topic", count: 1, records: recs(1), cfg: func(c *Config) { c.Compact = true }},
		{name: "timestamp an hour and a minute ahead", count: 1, records: withLength(rawRec{tsDelta: int64(61 * time.Minute / time.Millisecond), key: []byte("k")}.body()), want: ErrInvalidTimestamp, msg: "out of range"},
		{name: "timestamp too old", count: 1, records: withLength(rawRec{tsDelta: -int64(2 * time.Hour / time.Millisecond), key: []byte("k")}.body()), cfg: func(c *Config) { c.TimestampBeforeMaxMs = 3_600_000 }, want: ErrInvalidTimestamp},
		{name: "old timestamp under the default", count: 1, records: withLength(rawRec{tsDelta: -1_600_000_000_000, key: []byte("k")}.body())},
		{name: "future timestamp on a LogAppendTime topic", count: 1, records: withLength(rawRec{tsDelta: int64(48 * time.Hour / time.Millisecond), key: []byte("k")}.body()), cfg: func(c *Config) { c.LogAppendTime = true }},
		{name: "headers, null value", count: 1, records: withLength(rawRec{key: []byte("k"), headers: [][2][]byte{{[]byte("a"), nil}, {[]byte(""), []byte("b")}}}.body())},
		{name: "well-formed gzip", codec: 1, count: 3, records: recs(3)},
		{name: "well-formed snappy", codec: 2, count: 3, records: recs(3)},
		{name: "well-formed lz4", codec: 3, count: 3, records: recs(3)},
		{name: "well-formed zstd", codec: 4, count: 3, records: recs(3)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			l := e.openLog(cfg)
			defer e.close()
			batch := hostileBatch(t, c.codec, c.count, c.records)
			_, err := l.AppendAsLeader(batch, 0)
			if c.want == nil {
				if err != nil {
					t.Fatalf("AppendAsLeader: %v, want success", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("AppendAsLeader: %v, want %v", err, c.want)
			}
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if leo := l.LogEndOffset(); leo != 0 {
				t.Errorf("log end offset %d after a refused append, want 0", leo)
			}
		})
	}
}

// TestValidateBatchFields covers what the validator checks in the batch
// header beyond the record walk.
func TestValidateBatchFields(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(b []byte)
		cfg   func(*Config)
		want  error
		msg   string
		check func(t *testing.T, l *Log)
	}{
		{name: "unknown compression codec 5", edit: func(b []byte) { b[posAttributes+1] |= 5 }, want: ErrCorruptMessage, msg: "codec"},
		{name: "producer id without a sequence", edit: func(b []byte) {
			binary.BigEndian.PutUint64(b[posProducerID:], 42)
			binary.BigEndian.PutUint32(b[posBaseSequence:], math.MaxUint32)
		}, want: ErrInvalidRecord, msg: "sequence"},
		{name: "LogAppendTime set by the producer", edit: func(b []byte) { b[posAttributes+1] |= attrLogAppendTime }, cfg: func(c *Config) { c.LogAppendTime = true }, want: ErrInvalidTimestamp, msg: "LogAppendTime"},
		{name: "max timestamp corrected", edit: func(b []byte) {
			binary.BigEndian.PutUint64(b[posMaxTimestamp:], uint64(1_700_000_000_000+999_999))
		}, check: func(t *testing.T, l *Log) {
			if _, ts := l.MaxTimestamp(); ts != 1_700_000_000_002 {
				t.Errorf("max timestamp %d after the append, want the records' 1700000000002 (the header's claim corrected)", ts)
			}
		}},
		{name: "gzip garbage", edit: func(b []byte) { b[posAttributes+1] |= 1 }, want: ErrCorruptMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := DefaultConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			l := e.openLog(cfg)
			defer e.close()
			var raw []byte
			for i := 0; i < 3; i++ {
				raw = append(raw, withLength(rawRec{tsDelta: int64(i), offsetDelta: int64(i), key: []byte("k")}.body())...)
			}
			batch := hostileBatch(t, 0, 3, raw)
			c.edit(batch)
			fixCRC(batch)
			_, err := l.AppendAsLeader(batch, 0)
			if c.want == nil {
				if err != nil {
					t.Fatalf("AppendAsLeader: %v", err)
				}
			} else if !errors.Is(err, c.want) {
				t.Fatalf("AppendAsLeader: %v, want %v", err, c.want)
			} else if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if c.check != nil {
				c.check(t, l)
			}
		})
	}
}

// TestStampsOfLyingStoredBatch: a batch stored before produce validation
// existed (or arriving through replication, which checks headers only)
// may claim 2^31-1 records; reading its timestamps must fail on the bytes
// actually there, not allocate for the claim.
func TestStampsOfLyingStoredBatch(t *testing.T) {
	for _, codec := range []int8{0, 1, 2, 3, 4} {
		batch := hostileBatch(t, codec, math.MaxInt32, recs(1))
		var stamps []recordStamp
		var err error
		alloc := allocatedDuring(func() { stamps, err = batchRecordStamps(batch) })
		if err == nil {
			t.Errorf("codec %d: batchRecordStamps of a batch claiming 2^31-1 records but holding 1: %d stamps, no error", codec, len(stamps))
		}
		if alloc > 16<<20 {
			t.Errorf("codec %d: batchRecordStamps allocated %d bytes for a %d-byte batch", codec, alloc, len(batch))
		}
	}
}
