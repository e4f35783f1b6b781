package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxRequestSize is Kafka's default socket.request.max.bytes (100 MiB).
const DefaultMaxRequestSize int32 = 104857600

// Sentinel errors. Each one means the connection it happened on is closed;
// they are wrapped with detail and meant for errors.Is.
var (
	// ErrFrameTooLarge: the size prefix exceeds the server's maximum.
	ErrFrameTooLarge = errors.New("protocol: request frame larger than socket.request.max.bytes")
	// ErrFrameTooSmall: the size prefix is negative or too small to hold
	// the smallest request header.
	ErrFrameTooSmall = errors.New("protocol: request frame size negative or smaller than a header")
	// ErrShortHeader: the request header is truncated or malformed.
	ErrShortHeader = errors.New("protocol: malformed request header")
	// ErrUnknownVersion: kmsg does not know the api key at that version,
	// so neither the header nor the body can be parsed.
	ErrUnknownVersion = errors.New("protocol: api key or version unknown to the codec")
	// ErrUnknownKey: no handler is registered for the api key.
	ErrUnknownKey = errors.New("protocol: api key not registered")
	// ErrUnsupportedVersion: the version is outside the registered range
	// and no UNSUPPORTED_VERSION response can be encoded for it.
	ErrUnsupportedVersion = errors.New("protocol: api version not supported")
	// ErrMalformedBody: kmsg could not decode the request body.
	ErrMalformedBody = errors.New("protocol: malformed request body")
	// ErrBadResponse: a handler returned a response of another api key.
	ErrBadResponse = errors.New("protocol: handler returned a response for a different api key")
)

// FrameSizeError reports a size prefix that was refused before anything was
// allocated for it. Its Unwrap is ErrFrameTooLarge or ErrFrameTooSmall.
type FrameSizeError struct {
	Size int32 // the claimed size
	Max  int32 // the limit in force
	err  error
}

func (e *FrameSizeError) Error() string {
	return fmt.Sprintf("%v: claimed %d bytes, max %d", e.err, e.Size, e.Max)
}

func (e *FrameSizeError) Unwrap() error { return e.err }

// frameChunk is how much readFrame allocates before any of a frame's bytes
// have arrived, and the step it grows by (doubling) as they do. Growing with
// the data received, instead of allocating the claimed size up front, means
// a client that claims 100 MiB and sends nothing costs 64 KiB, not 100 MiB.
const frameChunk = 64 << 10

// checkFrameSize validates a size prefix against max.
func checkFrameSize(size, max int32) error {
	switch {
	case size < headerPrefixSize:
		return &FrameSizeError{Size: size, Max: max, err: ErrFrameTooSmall}
	case size > max:
		return &FrameSizeError{Size: size, Max: max, err: ErrFrameTooLarge}
	}
	return nil
}

// ReadFrame reads one size-prefixed request frame from r and returns its
// contents (header and body, without the prefix). The size is checked
// against max before any buffer is allocated; a refused size returns a
// *FrameSizeError. The returned slice is freshly allocated and never reused,
// because decoded requests alias it (kmsg decodes byte fields such as
// Produce records as sub-slices of the frame), so handlers may keep them.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(prefix[:]))
	if err := checkFrameSize(size, max); err != nil {
		return nil, err
	}
	return readBody(r, int(size))
}

// readBody reads exactly size bytes, growing its buffer as bytes arrive.
func readBody(r io.Reader, size int) ([]byte, error) {
	buf := make([]byte, 0, min(size, frameChunk))
	for len(buf) < size {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(size, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// WriteFrame writes body with its int32 size prefix in one vectored write,
// so the prefix costs neither a copy of body nor a separate packet.
func WriteFrame(w io.Writer, body []byte) error {
	return memFrame(body).writeTo(w)
}
