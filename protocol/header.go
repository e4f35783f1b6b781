package protocol

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request header versions. Which one a request carries is not written on the
// wire; it follows from the api key and version (see RequestHeaderVersion),
// which is why the fixed prefix (key, version, correlation id) must be read
// before the rest of the header can be.
const (
	// RequestHeaderV0 is api key, api version and correlation id. Only
	// ControlledShutdown v0 ever used it.
	RequestHeaderV0 int16 = 0
	// RequestHeaderV1 adds a nullable client id.
	RequestHeaderV1 int16 = 1
	// RequestHeaderV2 adds tagged fields (KIP-482) after the client id,
	// which stays a non-compact nullable string so that a broker can read
	// it before it knows whether the request is flexible.
	RequestHeaderV2 int16 = 2
)

// Response header versions.
const (
	// ResponseHeaderV0 is the correlation id only.
	ResponseHeaderV0 int16 = 0
	// ResponseHeaderV1 adds tagged fields; sluice never sends any, so it
	// is the correlation id followed by a zero tag count.
	ResponseHeaderV1 int16 = 1
)

const (
	apiVersionsKey        int16 = 18
	controlledShutdownKey int16 = 7
	// headerPrefixSize is api key, api version and correlation id: the
	// smallest header there is, and so the smallest acceptable frame.
	headerPrefixSize = 8
)

// Header is a decoded request header.
type Header struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id (or the
	// header is v0, which has none).
	ClientID *string
}

// clientID returns the client id for logs, where null and empty read the same.
func (h Header) clientID() string {
	if h.ClientID == nil {
		return ""
	}
	return *h.ClientID
}

// RequestHeaderVersion returns the request header version used by api key at
// version, and false if kmsg does not know the key at that version. The
// answer is derived from kmsg rather than kept in a table of our own so that
// it cannot drift from the body codec: a request is flexible (header v2)
// exactly when its body is.
func RequestHeaderVersion(key, version int16) (int16, bool) {
	req := kmsg.RequestForKey(key)
	if req == nil || version < 0 || version > req.MaxVersion() {
		return 0, false
	}
	if key == controlledShutdownKey && version == 0 {
		return RequestHeaderV0, true
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		return RequestHeaderV2, true
	}
	return RequestHeaderV1, true
}

// ResponseHeaderVersion returns the response header version for a response
// to api key at version. ApiVersions always answers with header v0, even at
// flexible versions: a client that sent a version the broker does not know
// must still be able to find the error code (KIP-511), and it can only do so
// if the header it parses does not depend on the version it asked for.
func ResponseHeaderVersion(key, version int16) int16 {
	if key == apiVersionsKey {
		return ResponseHeaderV0
	}
	resp := kmsg.ResponseForKey(key)
	if resp == nil {
		return ResponseHeaderV0
	}
	resp.SetVersion(version)
	if resp.IsFlexible() {
		return ResponseHeaderV1
	}
	return ResponseHeaderV0
}

// parseHeaderPrefix reads the part of a request header that does not depend
// on the header version being known: api key, api version, correlation id
// and, for header v1 and v2, the client id. It returns what follows (the
// header's tagged fields when flexible, then the body).
//
// For a key or version kmsg does not know, the header version is unknown;
// the client id is then read as if the header were v1, which is right for
// every request header since v0 was retired, and good enough to log.
func parseHeaderPrefix(frame []byte) (Header, []byte, error) {
	var h Header
	if len(frame) < headerPrefixSize {
		return h, nil, fmt.Errorf("%w: %d bytes", ErrShortHeader, len(frame))
	}
	h.APIKey = int16(binary.BigEndian.Uint16(frame[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	rest := frame[headerPrefixSize:]
	if h.APIKey == controlledShutdownKey && h.APIVersion == 0 {
		return h, rest, nil
	}
	if len(rest) < 2 {
		return h, nil, fmt.Errorf("%w: no client id length", ErrShortHeader)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	rest = rest[2:]
	switch {
	case n == -1:
	case n < 0 || int(n) > len(rest):
		return h, nil, fmt.Errorf("%w: client id length %d with %d bytes left", ErrShortHeader, n, len(rest))
	default:
		s := string(rest[:n])
		h.ClientID = &s
		rest = rest[n:]
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section (KIP-482): an unsigned varint count,
// then per field an unsigned varint tag, an unsigned varint size and that
// many bytes. No request header tag is defined today, so all are skipped.
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, fmt.Errorf("%w: bad tag count", ErrShortHeader)
	}
	b = b[n:]
	// Every field takes at least two bytes, so a count larger than half
	// of what is left is a lie; checking it bounds the loop below.
	if count > uint64(len(b)/2) {
		return nil, fmt.Errorf("%w: %d tags in %d bytes", ErrShortHeader, count, len(b))
	}
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return nil, fmt.Errorf("%w: bad tag", ErrShortHeader)
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return nil, fmt.Errorf("%w: bad tag size", ErrShortHeader)
		}
		b = b[uint64(n)+size:]
	}
	return b, nil
}

// ParseRequestHeader decodes the header at the start of frame (a request
// without its size prefix) and returns it with the request body that
// follows. It fails if the key or version is unknown to kmsg, because then
// the header version, and so where the body starts, cannot be known.
func ParseRequestHeader(frame []byte) (Header, []byte, error) {
	h, rest, err := parseHeaderPrefix(frame)
	if err != nil {
		return h, nil, err
	}
	hv, ok := RequestHeaderVersion(h.APIKey, h.APIVersion)
	if !ok {
		return h, nil, fmt.Errorf("%w: key %d version %d", ErrUnknownVersion, h.APIKey, h.APIVersion)
	}
	if hv == RequestHeaderV2 {
		if rest, err = skipTags(rest); err != nil {
			return h, nil, err
		}
	}
	return h, rest, nil
}

// AppendRequestHeader appends h encoded as request header version hv. A v2
// header is written with no tagged fields.
func AppendRequestHeader(dst []byte, h Header, hv int16) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIVersion))
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	if hv == RequestHeaderV0 {
		return dst
	}
	if h.ClientID == nil {
		dst = binary.BigEndian.AppendUint16(dst, 0xffff)
	} else {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(*h.ClientID)))
		dst = append(dst, *h.ClientID...)
	}
	if hv == RequestHeaderV2 {
		dst = append(dst, 0)
	}
	return dst
}

// AppendResponse appends a response frame body (without the size prefix):
// the response header of version hv for correlationID, then resp encoded at
// its own version.
func AppendResponse(dst []byte, correlationID int32, hv int16, resp kmsg.Response) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if hv == ResponseHeaderV1 {
		dst = append(dst, 0)
	}
	return resp.AppendTo(dst)
}
