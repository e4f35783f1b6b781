package logstore

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// This file walks the records inside one batch: the produce-path validator
// (validate.go) checks every record with it, and the timestamp lookups
// (ListOffsets by timestamp, MAX_TIMESTAMP) read offsets and timestamps
// with it. Nothing here sizes an allocation from a header field: the
// declared record count only says when to stop, and every length is
// checked against the bytes actually there before it is used.
//
// A record (magic v2, frozen: Kafka's format) is
//
//	length          varint  bytes after this field
//	attributes      int8    unused
//	timestampDelta  varlong from the batch's base timestamp
//	offsetDelta     varint  from the batch's base offset
//	keyLength       varint  -1 for a null key
//	key             bytes
//	valueLength     varint  -1 for a null value
//	value           bytes
//	headerCount     varint
//	headers         headerKeyLength varint (>= 0), headerKey,
//	                headerValueLength varint (-1 for null), headerValue
//
// The messages of the errors follow Kafka's DefaultRecord and
// DefaultRecordBatch, so that a client sees the words Kafka would give.

// recordInfo is what the walk reports of one record.
type recordInfo struct {
	index          int32 // position in the batch
	timestampDelta int64
	offsetDelta    int32
	hasKey         bool
}

// minRecordSize is the smallest encoded record: a length, attributes,
// timestamp and offset deltas, null key and value, no headers.
const minRecordSize = 7

// errPrematureEOF is the walk's error for records that end before the
// declared count.
func errPrematureEOF(declared, found int32) error {
	return fmt.Errorf("%w: Incorrect declared batch size, premature EOF reached: %d records declared, %d present", ErrInvalidRecord, declared, found)
}

func errRemaining(declared int32, what string) error {
	return fmt.Errorf("%w: Incorrect declared batch size, records still remaining in file: %s after the %d declared records", ErrInvalidRecord, what, declared)
}

func errRecordStructure(index int32, format string, args ...any) error {
	return fmt.Errorf("%w: Found invalid record structure: record %d: %s", ErrInvalidRecord, index, fmt.Sprintf(format, args...))
}

// walkRecords calls fn for each record of the whole batch b (header
// included; h is its parsed header), decompressing as it goes with at most
// limit decompressed bytes. It stops at the first error: a malformed
// record, a count that does not match the records (ErrInvalidRecord), data
// its codec cannot decode (ErrCorruptMessage), the cap (ErrMessageTooLarge)
// or fn's. It returns the bytes the records took uncompressed.
func walkRecords(b []byte, h BatchHeader, limit int64, fn func(recordInfo) error) (int64, error) {
	payload := b[batchHeaderSize:h.size()]
	if h.compression() == 0 {
		return int64(len(payload)), walkRecordBytes(payload, h.RecordCount, fn)
	}
	s, err := openRecordStream(h.compression(), payload, limit)
	if err != nil {
		return 0, err
	}
	defer s.close()
	err = walkRecordStream(s.Reader, h.RecordCount, fn)
	return s.decompressed(), err
}

// walkRecordBytes walks uncompressed records in place.
func walkRecordBytes(data []byte, count int32, fn func(recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		if len(data) == 0 {
			return errPrematureEOF(count, i)
		}
		size, n := varint32(data)
		if n <= 0 {
			return errRecordStructure(i, "malformed length varint")
		}
		if size < 0 || int64(size) > int64(len(data)-n) {
			return fmt.Errorf("%w: Invalid record size: expected %d bytes in record payload, but instead the buffer has only %d remaining bytes (record %d)", ErrInvalidRecord, size, len(data)-n, i)
		}
		r, err := parseRecord(data[n : n+int(size)])
		if err != nil {
			return errRecordStructure(i, "%v", err)
		}
		r.index = i
		if err := fn(r); err != nil {
			return err
		}
		data = data[n+int(size):]
	}
	if len(data) > 0 {
		return errRemaining(count, fmt.Sprintf("%d bytes", len(data)))
	}
	return nil
}

// parseRecord checks one record body (after its length) and reads the
// fields the walk reports.
func parseRecord(b []byte) (recordInfo, error) {
	var r recordInfo
	if len(b) < 1 {
		return r, errors.New("no attributes")
	}
	pos := 1
	ts, n := binary.Varint(b[pos:])
	if n <= 0 {
		return r, errors.New("malformed timestamp delta")
	}
	pos += n
	r.timestampDelta = ts
	od, n := varint32(b[pos:])
	if n <= 0 {
		return r, errors.New("malformed offset delta")
	}
	pos += n
	r.offsetDelta = od
	for _, field := range [2]string{"key", "value"} {
		l, n := varint32(b[pos:])
		if n <= 0 {
			return r, fmt.Errorf("malformed %s length", field)
		}
		pos += n
		if l < -1 || int64(l) > int64(len(b)-pos) {
			return r, fmt.Errorf("%s length %d with %d bytes left in the record", field, l, len(b)-pos)
		}
		if field == "key" {
			r.hasKey = l >= 0
		}
		pos += max(int(l), 0)
	}
	hc, n := varint32(b[pos:])
	if n <= 0 {
		return r, errors.New("malformed header count")
	}
	pos += n
	if hc < 0 {
		return r, fmt.Errorf("invalid number of record headers %d", hc)
	}
	if int64(hc) > int64(len(b)-pos) {
		return r, fmt.Errorf("invalid number of record headers: %d is larger than the remaining size of the record", hc)
	}
	for j := int32(0); j < hc; j++ {
		kl, n := varint32(b[pos:])
		if n <= 0 {
			return r, fmt.Errorf("malformed header key length in header %d", j)
		}
		pos += n
		if kl < 0 || int64(kl) > int64(len(b)-pos) {
			return r, fmt.Errorf("invalid header key length %d in header %d with %d bytes left", kl, j, len(b)-pos)
		}
		pos += int(kl)
		vl, n := varint32(b[pos:])
		if n <= 0 {
			return r, fmt.Errorf("malformed header value length in header %d", j)
		}
		pos += n
		if vl < -1 || int64(vl) > int64(len(b)-pos) {
			return r, fmt.Errorf("invalid header value length %d in header %d with %d bytes left", vl, j, len(b)-pos)
		}
		pos += max(int(vl), 0)
	}
	if pos != len(b) {
		return r, fmt.Errorf("Invalid record size: expected to read %d bytes in record payload, but instead read %d", len(b), pos)
	}
	return r, nil
}

// varint32 decodes a zigzag varint of at most five bytes that fits an
// int32, as Kafka's ByteUtils.readVarint does; n <= 0 when b is cut short
// or the varint is too long.
func varint32(b []byte) (int32, int) {
	if len(b) > 0 && b[0] < 0x80 {
		x := uint32(b[0])
		return int32(x>>1) ^ -int32(x&1), 1
	}
	var x uint32
	for i := 0; i < 5 && i < len(b); i++ {
		c := b[i]
		if i == 4 && c > 0x0f {
			return 0, -1
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1
		}
	}
	if len(b) >= 5 {
		return 0, -1
	}
	return 0, 0
}

// walkRecordStream walks records read from a decompressing stream. It
// never buffers a record: keys, values and headers are read through and
// dropped, so its memory does not grow with the records.
func walkRecordStream(r *bufio.Reader, count int32, fn func(recordInfo) error) error {
	for i := int32(0); i < count; i++ {
		size, _, err := readVarint32(r, -1)
		if err == io.EOF {
			return errPrematureEOF(count, i)
		}
		if err != nil {
			return streamError(err, count, i)
		}
		if size < 0 {
			return fmt.Errorf("%w: Invalid record size: negative length %d (record %d)", ErrInvalidRecord, size, i)
		}
		c := streamCursor{r: r, left: int64(size)}
		rec, err := c.record()
		if err != nil {
			return streamError(err, count, i)
		}
		rec.index = i
		if err := fn(rec); err != nil {
			return err
		}
	}
	if _, err := r.ReadByte(); err == nil {
		return errRemaining(count, "more data")
	} else if err != io.EOF {
		return err
	}
	return nil
}

// streamError turns an error met inside record i into the walk's error:
// the end of the data is a premature EOF, a record too short for its
// fields is malformed, the stream's own errors (codec, cap) pass through.
func streamError(err error, count, i int32) error {
	switch {
	case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
		return errPrematureEOF(count, i)
	case errors.Is(err, errRecordShort) || errors.Is(err, errMalformedField):
		return errRecordStructure(i, "%v", err)
	}
	return err
}

var (
	errRecordShort    = errors.New("field runs past the record's length")
	errMalformedField = errors.New("malformed field")
)

// streamCursor reads the fields of one record of size left from a stream.
type streamCursor struct {
	r    *bufio.Reader
	left int64
}

func (c *streamCursor) record() (recordInfo, error) {
	var rec recordInfo
	if _, err := c.byte(); err != nil { // attributes
		return rec, err
	}
	ts, err := c.varlong()
	if err != nil {
		return rec, err
	}
	rec.timestampDelta = ts
	if rec.offsetDelta, err = c.varint(); err != nil {
		return rec, err
	}
	for field := range 2 {
		l, err := c.varint()
		if err != nil {
			return rec, err
		}
		if l < -1 {
			return rec, fmt.Errorf("%w: length %d", errMalformedField, l)
		}
		if field == 0 {
			rec.hasKey = l >= 0
		}
		if err := c.skip(int64(l)); err != nil {
			return rec, err
		}
	}
	hc, err := c.varint()
	if err != nil {
		return rec, err
	}
	if hc < 0 || int64(hc) > c.left {
		return rec, fmt.Errorf("%w: invalid number of record headers %d with %d bytes left in the record", errMalformedField, hc, c.left)
	}
	for j := int32(0); j < hc; j++ {
		kl, err := c.varint()
		if err != nil {
			return rec, err
		}
		if kl < 0 {
			return rec, fmt.Errorf("%w: invalid header key length %d in header %d", errMalformedField, kl, j)
		}
		if err := c.skip(int64(kl)); err != nil {
			return rec, err
		}
		vl, err := c.varint()
		if err != nil {
			return rec, err
		}
		if vl < -1 {
			return rec, fmt.Errorf("%w: header value length %d in header %d", errMalformedField, vl, j)
		}
		if err := c.skip(int64(vl)); err != nil {
			return rec, err
		}
	}
	if c.left != 0 {
		return rec, fmt.Errorf("%w: Invalid record size: %d bytes of the record left after its last header", errMalformedField, c.left)
	}
	return rec, nil
}

func (c *streamCursor) byte() (byte, error) {
	if c.left <= 0 {
		return 0, errRecordShort
	}
	b, err := c.r.ReadByte()
	if err != nil {
		return 0, err
	}
	c.left--
	return b, nil
}

func (c *streamCursor) varint() (int32, error) {
	v, n, err := readVarint32(c.r, c.left)
	if err != nil {
		return 0, err
	}
	c.left -= int64(n)
	return v, nil
}

func (c *streamCursor) varlong() (int64, error) {
	var x uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := c.byte()
		if err != nil {
			return 0, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			return 0, fmt.Errorf("%w: varlong too long", errMalformedField)
		}
		x |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return int64(x>>1) ^ -int64(x&1), nil
		}
	}
	return 0, fmt.Errorf("%w: varlong too long", errMalformedField)
}

// skip reads through n bytes (nothing for a null field, n = -1).
func (c *streamCursor) skip(n int64) error {
	if n <= 0 {
		return nil
	}
	if n > c.left {
		return fmt.Errorf("%w: %d bytes wanted, %d left", errRecordShort, n, c.left)
	}
	for n > 0 {
		step := int(min(n, 1<<20))
		d, err := c.r.Discard(step)
		c.left -= int64(d)
		n -= int64(d)
		if err != nil {
			return err
		}
	}
	return nil
}

// readVarint32 reads a zigzag varint32 from r and reports how many bytes
// it took; limit (when >= 0) is how many it may take.
func readVarint32(r *bufio.Reader, limit int64) (int32, int, error) {
	var x uint32
	for i := 0; i < 5; i++ {
		if limit >= 0 && int64(i) >= limit {
			return 0, i, errRecordShort
		}
		c, err := r.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				return 0, i, io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		if i == 4 && c > 0x0f {
			return 0, i + 1, fmt.Errorf("%w: varint too long", errMalformedField)
		}
		x |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			return int32(x>>1) ^ -int32(x&1), i + 1, nil
		}
	}
	return 0, 5, fmt.Errorf("%w: varint too long", errMalformedField)
}

// recordStamp is the part of a record the timestamp lookups need.
type recordStamp struct {
	Offset    int64
	Timestamp int64
}

// batchRecordStamps decodes the offset and timestamp of every record of a
// whole batch b. For LogAppendTime batches every record carries the batch's
// max timestamp, as Kafka defines it. The header's record count is not
// trusted for anything but where to stop: a batch that lies about it is
// an error once its bytes run out.
func batchRecordStamps(b []byte) ([]recordStamp, error) {
	if len(b) < batchHeaderSize {
		return nil, fmt.Errorf("%w: short batch", ErrCorruptMessage)
	}
	h := parseHeader(b)
	if int64(len(b)) < h.size() || h.size() < batchHeaderSize || h.RecordCount < 0 {
		return nil, fmt.Errorf("%w: short batch", ErrCorruptMessage)
	}
	var stamps []recordStamp
	if h.compression() == 0 {
		// Room for what the bytes can hold at most, not for the claim.
		stamps = make([]recordStamp, 0, min(int64(h.RecordCount), (h.size()-batchHeaderSize)/minRecordSize))
	}
	_, err := walkRecords(b, h, storedDecompressedLimit(len(b)), func(r recordInfo) error {
		ts := h.BaseTimestamp + r.timestampDelta
		if h.logAppendTime() {
			ts = h.MaxTimestamp
		}
		stamps = append(stamps, recordStamp{Offset: h.BaseOffset + int64(r.offsetDelta), Timestamp: ts})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	return stamps, nil
}
