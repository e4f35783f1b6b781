package protocol

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestRequestHeaderVersion(t *testing.T) {
	tests := []struct {
		name         string
		key, version int16
		want         int16
		ok           bool
	}{
		{"controlled shutdown v0 has no client id", 7, 0, RequestHeaderV0, true},
		{"controlled shutdown v1", 7, 1, RequestHeaderV1, true},
		{"produce v8 not flexible", 0, 8, RequestHeaderV1, true},
		{"produce v9 flexible", 0, 9, RequestHeaderV2, true},
		{"api versions v2", 18, 2, RequestHeaderV1, true},
		{"api versions v3 flexible", 18, 3, RequestHeaderV2, true},
		{"metadata beyond kmsg", 3, 127, 0, false},
		{"negative version", 3, -1, 0, false},
		{"unknown key", 9999, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := RequestHeaderVersion(tt.key, tt.version)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("RequestHeaderVersion(%d, %d) = %d, %v; want %d, %v", tt.key, tt.version, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestResponseHeaderVersion(t *testing.T) {
	tests := []struct {
		name         string
		key, version int16
		want         int16
	}{
		{"api versions v3 still v0", 18, 3, ResponseHeaderV0},
		{"api versions v0", 18, 0, ResponseHeaderV0},
		{"metadata v8", 3, 8, ResponseHeaderV0},
		{"metadata v9 flexible", 3, 9, ResponseHeaderV1},
		{"produce v9 flexible", 0, 9, ResponseHeaderV1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ResponseHeaderVersion(tt.key, tt.version); got != tt.want {
				t.Fatalf("ResponseHeaderVersion(%d, %d) = %d, want %d", tt.key, tt.version, got, tt.want)
			}
		})
	}
}

func TestRequestHeaderRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		h    Header
		hv   int16
	}{
		{"v0 controlled shutdown", Header{APIKey: 7, APIVersion: 0, CorrelationID: 42}, RequestHeaderV0},
		{"v1 with client id", Header{APIKey: 3, APIVersion: 8, CorrelationID: -7, ClientID: kmsg.StringPtr("my-app")}, RequestHeaderV1},
		{"v1 null client id", Header{APIKey: 3, APIVersion: 1, CorrelationID: 1}, RequestHeaderV1},
		{"v1 empty client id", Header{APIKey: 0, APIVersion: 3, CorrelationID: 1, ClientID: kmsg.StringPtr("")}, RequestHeaderV1},
		{"v2 with client id", Header{APIKey: 3, APIVersion: 12, CorrelationID: 1 << 30, ClientID: kmsg.StringPtr("kgo")}, RequestHeaderV2},
		{"v2 null client id", Header{APIKey: 18, APIVersion: 3, CorrelationID: 0}, RequestHeaderV2},
	}
	body := []byte{0xde, 0xad, 0xbe, 0xef}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := append(AppendRequestHeader(nil, tt.h, tt.hv), body...)
			got, rest, err := ParseRequestHeader(frame)
			if err != nil {
				t.Fatal(err)
			}
			if got.APIKey != tt.h.APIKey || got.APIVersion != tt.h.APIVersion || got.CorrelationID != tt.h.CorrelationID {
				t.Fatalf("got %+v, want %+v", got, tt.h)
			}
			if (got.ClientID == nil) != (tt.h.ClientID == nil) || (got.ClientID != nil && *got.ClientID != *tt.h.ClientID) {
				t.Fatalf("client id %v, want %v", got.ClientID, tt.h.ClientID)
			}
			if !bytes.Equal(rest, body) {
				t.Fatalf("body %x, want %x", rest, body)
			}
			// Every strict prefix of the header is malformed.
			hdrLen := len(frame) - len(body)
			for i := range hdrLen {
				if _, _, err := ParseRequestHeader(frame[:i]); !errors.Is(err, ErrShortHeader) {
					t.Fatalf("prefix of %d bytes: err %v, want ErrShortHeader", i, err)
				}
			}
		})
	}
}

// TestRequestHeaderMatchesClient checks our header encoding against the one
// franz-go's clients put on the wire, which is independent of ours.
func TestRequestHeaderMatchesClient(t *testing.T) {
	for _, version := range []int16{0, 2, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = version
		req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
		clientFrame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("cid")).AppendRequest(nil, req, 99)
		if want := requestFrame(req, 99, kmsg.StringPtr("cid")); !bytes.Equal(clientFrame[4:], want) {
			t.Fatalf("v%d: client frame %x, ours %x", version, clientFrame[4:], want)
		}
		h, body, err := ParseRequestHeader(clientFrame[4:])
		if err != nil || h.CorrelationID != 99 || *h.ClientID != "cid" {
			t.Fatalf("v%d: parsed %+v, %v", version, h, err)
		}
		got := kmsg.NewPtrApiVersionsRequest()
		got.Version = version
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("v%d body: %v", version, err)
		}
	}
}

func TestRequestHeaderTaggedFields(t *testing.T) {
	h := Header{APIKey: 3, APIVersion: 12, CorrelationID: 5, ClientID: kmsg.StringPtr("c")}
	frame := AppendRequestHeader(nil, h, RequestHeaderV1) // v1 prefix, tags by hand
	frame = append(frame, 2, 0, 3, 'a', 'b', 'c', 7, 0, 'B')
	_, rest, err := ParseRequestHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	if string(rest) != "B" {
		t.Fatalf("rest %q, want body B", rest)
	}
	bad := [][]byte{
		{5, 0, 0},      // count larger than the bytes can hold
		{1, 0, 9, 'x'}, // field size past the end
		{1, 0x80},      // truncated varint
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // varint overflow
	}
	for i, tags := range bad {
		f := append(AppendRequestHeader(nil, h, RequestHeaderV1), tags...)
		if _, _, err := ParseRequestHeader(f); !errors.Is(err, ErrShortHeader) {
			t.Errorf("case %d: err %v, want ErrShortHeader", i, err)
		}
	}
}

func TestAppendResponseHeader(t *testing.T) {
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	v1 := AppendResponse(nil, 77, ResponseHeaderV1, resp)
	v0 := AppendResponse(nil, 77, ResponseHeaderV0, resp)
	if len(v1) != len(v0)+1 || v1[4] != 0 || !bytes.Equal(v1[:4], v0[:4]) {
		t.Fatalf("v1 %x should be v0 %x plus an empty tag section after the correlation id", v1, v0)
	}
	corr, _ := decodeResponse(t, v1, 3, 12, 12)
	if corr != 77 {
		t.Fatalf("correlation id %d", corr)
	}
}
