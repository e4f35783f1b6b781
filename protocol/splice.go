package protocol

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// SplicedResponse is a response some of whose byte fields are not in memory
// but in files: Fetch's record batches, which the connection sends straight
// from the segment file with sendfile(2) instead of reading them into the
// response and writing them out again.
//
// A handler wraps its response with Splice, stores the placeholder that
// Bytes returns in each byte field that is to carry file bytes, and returns
// the SplicedResponse. The router encodes the response as usual, finds
// the placeholders in the encoding and cuts it around them; the connection
// then writes the pieces in order, the file ranges with sendfile where the
// connection and the file allow it (a TCP connection and an *os.File on
// Linux) and by reading and writing otherwise. A file range that comes up
// short while being sent (the segment was truncated or deleted under the
// reader) closes the connection: its frame is already half written, and
// the client retries on a new connection, as it would after any I/O error.
type SplicedResponse struct {
	kmsg.Response
	splices []splice
}

// splice is one file range and the placeholder standing for it.
type splice struct {
	placeholder []byte
	file        io.ReaderAt
	off, n      int64
}

// Splice wraps resp so that file ranges can be put in its byte fields.
func Splice(resp kmsg.Response) *SplicedResponse {
	return &SplicedResponse{Response: resp}
}

// placeholderSize is the length of a placeholder: a per-process random
// nonce followed by a counter, so it occurs nowhere else in an encoded
// response (it is never sent, so no client can learn the nonce and forge
// one in record bytes that are copied into a response).
const placeholderSize = 16

var (
	placeholderNonce = func() uint64 {
		var b [8]byte
		rand.Read(b[:])
		return binary.BigEndian.Uint64(b[:])
	}()
	placeholderSeq atomic.Uint64
)

// Bytes registers n bytes of file at off and returns the placeholder to
// store in the byte field that is to carry them. The file must stay
// readable at that range until the response has been written; bytes that
// are no longer there close the connection (see SplicedResponse).
func (s *SplicedResponse) Bytes(file io.ReaderAt, off, n int64) []byte {
	ph := make([]byte, placeholderSize)
	binary.BigEndian.PutUint64(ph, placeholderNonce)
	binary.BigEndian.PutUint64(ph[8:], placeholderSeq.Add(1))
	s.splices = append(s.splices, splice{placeholder: ph, file: file, off: off, n: n})
	return ph
}

// framePart is a piece of a response frame: bytes in memory, or a range of
// a file.
type framePart struct {
	mem  []byte
	file *splice
}

// responseFrame is an encoded response (without the size prefix) cut into
// parts.
type responseFrame struct {
	parts []framePart
	size  int64
	// framed, when set instead of parts, is the whole frame in one
	// buffer, size prefix included, from the response pool (pooled),
	// given back once written (framepool.go).
	framed []byte
	pooled *pooledBuf
}

// memFrame is a response that is all in memory.
func memFrame(b []byte) *responseFrame {
	return &responseFrame{parts: []framePart{{mem: b}}, size: int64(len(b))}
}

// cutFrame cuts enc, the encoding of a response holding the placeholders of
// splices, around each placeholder and its length prefix, and puts the file
// range in the placeholder's place with the length prefix rewritten for the
// range's size. A byte field's length prefix is an int32 in non-flexible
// versions (00 00 00 10 before a 16-byte placeholder) and a uvarint of
// length+1 in flexible ones (0x11); the two cannot be confused.
func cutFrame(enc []byte, splices []splice) (*responseFrame, error) {
	type found struct {
		pos int
		sp  *splice
	}
	at := make([]found, 0, len(splices))
	from := 0
	for i := range splices {
		sp := &splices[i]
		// Fields are usually encoded in the order the placeholders were
		// made; look after the previous one first.
		pos := bytes.Index(enc[from:], sp.placeholder)
		if pos >= 0 {
			pos += from
		} else if pos = bytes.Index(enc, sp.placeholder); pos < 0 {
			return nil, fmt.Errorf("protocol: splice placeholder %d not in the encoded response", i)
		}
		at = append(at, found{pos, sp})
		from = pos + placeholderSize
	}
	slices.SortFunc(at, func(a, b found) int { return a.pos - b.pos })
	f := &responseFrame{parts: make([]framePart, 0, 3*len(at)+1)}
	prev := 0
	for _, a := range at {
		var prefix []byte
		var start int
		switch {
		case a.pos >= 4 && binary.BigEndian.Uint32(enc[a.pos-4:]) == placeholderSize:
			start = a.pos - 4
			prefix = binary.BigEndian.AppendUint32(nil, uint32(a.sp.n))
		case a.pos >= 1 && enc[a.pos-1] == placeholderSize+1:
			start = a.pos - 1
			prefix = binary.AppendUvarint(nil, uint64(a.sp.n)+1)
		default:
			return nil, fmt.Errorf("protocol: splice placeholder at %d is not a byte field's value", a.pos)
		}
		if start < prev {
			return nil, fmt.Errorf("protocol: splice placeholders overlap at %d", a.pos)
		}
		f.add(framePart{mem: enc[prev:start]})
		f.add(framePart{mem: prefix})
		f.add(framePart{file: a.sp})
		prev = a.pos + placeholderSize
	}
	f.add(framePart{mem: enc[prev:]})
	return f, nil
}

func (f *responseFrame) add(p framePart) {
	if p.file != nil {
		if p.file.n == 0 {
			return
		}
		f.size += p.file.n
	} else {
		if len(p.mem) == 0 {
			return
		}
		f.size += int64(len(p.mem))
	}
	f.parts = append(f.parts, p)
}

// bytes returns the frame as one slice, reading the file ranges: what
// Router.Serve returns, and what tests and the fuzzer compare.
func (f *responseFrame) bytes() ([]byte, error) {
	if f.framed != nil {
		return f.framed[4:], nil
	}
	if len(f.parts) == 1 && f.parts[0].file == nil {
		return f.parts[0].mem, nil
	}
	out := make([]byte, 0, f.size)
	for _, p := range f.parts {
		if p.file == nil {
			out = append(out, p.mem...)
			continue
		}
		n := len(out)
		out = out[:n+int(p.file.n)]
		if err := readFull(p.file, out[n:]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readFull(sp *splice, dst []byte) error {
	if _, err := sp.file.ReadAt(dst, sp.off); err != nil {
		return fmt.Errorf("protocol: reading %d spliced bytes at %d: %w", sp.n, sp.off, err)
	}
	return nil
}

// copyChunk is the piece a file range is copied in where sendfile cannot
// send it.
const copyChunk = 256 << 10

// writeTo writes the frame with its int32 size prefix to w: runs of
// memory parts in one vectored write each, file parts with sendfile where
// sendFile can, else by reading them into a buffer a piece at a time.
func (f *responseFrame) writeTo(w io.Writer) error {
	if f.framed != nil {
		_, err := w.Write(f.framed)
		return err
	}
	var prefix [4]byte
	binary.BigEndian.PutUint32(prefix[:], uint32(f.size))
	bufs := net.Buffers{prefix[:]}
	var scratch []byte
	for i := range f.parts {
		p := &f.parts[i]
		if p.file == nil {
			bufs = append(bufs, p.mem)
			continue
		}
		if len(bufs) > 0 {
			if _, err := bufs.WriteTo(w); err != nil {
				return err
			}
			bufs = bufs[:0]
		}
		if handled, err := sendFile(w, p.file.file, p.file.off, p.file.n); handled {
			if err != nil {
				return err
			}
			continue
		}
		// Copied in pieces (a TLS connection, which must encrypt
		// them): memory stays one piece whatever the range's size.
		if want := min(p.file.n, copyChunk); int64(len(scratch)) < want {
			scratch = make([]byte, want)
		}
		for off, end := p.file.off, p.file.off+p.file.n; off < end; {
			buf := scratch[:min(int64(len(scratch)), end-off)]
			if n, err := p.file.file.ReadAt(buf, off); n < len(buf) {
				return fmt.Errorf("protocol: reading %d spliced bytes at %d: %w", len(buf), off, err)
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			off += int64(len(buf))
		}
	}
	if len(bufs) > 0 {
		if _, err := bufs.WriteTo(w); err != nil {
			return err
		}
	}
	return nil
}

// sendfileBytes counts what sendfile(2) reported sent, for SendfileBytes.
var sendfileBytes atomic.Int64

// SendfileBytes returns how many response bytes this process has sent
// with sendfile(2), as the system call reported them: the figure that shows
// Fetch's record bytes leave from the page cache without a user-space copy.
func SendfileBytes() int64 { return sendfileBytes.Load() }
