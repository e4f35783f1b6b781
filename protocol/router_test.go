package protocol

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataHandler answers Metadata with an empty response that echoes the
// number of topics asked for as the controller id, so tests can tell the
// body was decoded.
func metadataHandler(_ context.Context, req *Request) (kmsg.Response, error) {
	in := req.Body.(*kmsg.MetadataRequest)
	resp := in.ResponseKind().(*kmsg.MetadataResponse)
	resp.ControllerID = int32(len(in.Topics))
	return resp, nil
}

// produceHandler answers nothing for acks=0, as the broker's will.
func produceHandler(_ context.Context, req *Request) (kmsg.Response, error) {
	in := req.Body.(*kmsg.ProduceRequest)
	if in.Acks == 0 {
		return nil, nil
	}
	return in.ResponseKind(), nil
}

func testRouter(t testing.TB) *Router {
	r := NewRouter(quietLogger(t))
	r.Register(3, 0, 12, metadataHandler)
	r.Register(0, 3, 9, produceHandler)
	r.Register(10, 0, 2, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	return r
}

func TestRegisterPanics(t *testing.T) {
	nop := func(context.Context, *Request) (kmsg.Response, error) { return nil, nil }
	tests := []struct {
		name     string
		key      int16
		min, max int16
		h        Handler
		want     string
	}{
		{"duplicate of built-in ApiVersions", 18, 0, 3, nop, "registered twice"},
		{"duplicate", 3, 0, 1, nop, "registered twice"},
		{"above kmsg max", 1, 0, 127, nop, "above kmsg"},
		{"unknown key", 9999, 0, 0, nop, "unknown to kmsg"},
		{"inverted range", 2, 3, 1, nop, "bad version range"},
		{"negative min", 2, -1, 1, nop, "bad version range"},
		{"nil handler", 2, 0, 1, nil, "nil handler"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRouter(quietLogger(t))
			r.Register(3, 0, 12, nop)
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, tt.want) {
					t.Fatalf("panic %v, want one mentioning %q", p, tt.want)
				}
			}()
			r.Register(tt.key, tt.min, tt.max, tt.h)
		})
	}
}

func TestVersionsSortedAndExact(t *testing.T) {
	got := testRouter(t).Versions()
	type kv struct{ key, min, max int16 }
	var flat []kv
	for _, k := range got {
		flat = append(flat, kv{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	want := []kv{{0, 3, 9}, {3, 0, 12}, {10, 0, 2}, {18, 0, kmsg.NewPtrApiVersionsRequest().MaxVersion()}}
	if !slices.Equal(flat, want) {
		t.Fatalf("Versions() = %v, want %v", flat, want)
	}
}

func TestServeDecodesAndAnswers(t *testing.T) {
	r := testRouter(t)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = make([]kmsg.MetadataRequestTopic, 3)
	out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, requestFrame(req, 11, nil))
	if err != nil {
		t.Fatal(err)
	}
	corr, resp := decodeResponse(t, out, 3, 12, 12)
	if corr != 11 || resp.(*kmsg.MetadataResponse).ControllerID != 3 {
		t.Fatalf("corr %d, resp %+v", corr, resp)
	}
}

func TestServeNoResponseForAcksZero(t *testing.T) {
	r := testRouter(t)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 7, 0
	out, err := r.Serve(context.Background(), nil, requestFrame(req, 1, nil))
	if err != nil || out != nil {
		t.Fatalf("got %x, %v; want nothing", out, err)
	}
}

// TestServeTrailingBytes documents the choice to ignore bytes after a body
// that decoded completely.
func TestServeTrailingBytes(t *testing.T) {
	r := testRouter(t)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 4
	frame := append(requestFrame(req, 1, nil), "trailing"...)
	if out, err := r.Serve(context.Background(), nil, frame); err != nil || out == nil {
		t.Fatalf("got %x, %v; want an answer", out, err)
	}
}

func TestServeClosesConnection(t *testing.T) {
	r := testRouter(t)
	errHandler := errors.New("handler says close")
	r.Register(1, 0, 4, func(context.Context, *Request) (kmsg.Response, error) {
		return nil, errHandler
	})
	r.Register(2, 0, 4, func(context.Context, *Request) (kmsg.Response, error) {
		return kmsg.NewPtrMetadataResponse(), nil // wrong key
	})
	frame := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return requestFrame(req, 1, nil)
	}
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"short header", []byte{0, 3, 0}, ErrShortHeader},
		{"client id past end", []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 50, 'x'}, ErrShortHeader},
		{"unknown api key", []byte{0x7f, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff}, ErrUnknownKey},
		{"unregistered known key", frame(kmsg.NewPtrOffsetFetchRequest(), 1), ErrUnknownKey},
		{"garbage body", append(frame(kmsg.NewPtrMetadataRequest(), 4)[:10], 0x7f, 0xff, 0xff, 0xff), ErrMalformedBody},
		{"truncated flexible body", frame(kmsg.NewPtrMetadataRequest(), 12)[:11], ErrMalformedBody},
		{"bad flexible header tags", append(frame(kmsg.NewPtrMetadataRequest(), 12)[:10], 9), ErrShortHeader},
		{"below range, no top-level error code", frame(kmsg.NewPtrProduceRequest(), 2), ErrUnsupportedVersion},
		{"above range, error code not on the wire", frame(kmsg.NewPtrFindCoordinatorRequest(), 4), ErrUnsupportedVersion},
		{"version beyond kmsg", []byte{0, 3, 0, 99, 0, 0, 0, 1, 0xff, 0xff}, ErrUnsupportedVersion},
		{"negative version", []byte{0, 3, 0xff, 0xff, 0, 0, 0, 1, 0xff, 0xff}, ErrUnsupportedVersion},
		{"handler error", frame(kmsg.NewPtrFetchRequest(), 4), errHandler},
		{"wrong response key", frame(kmsg.NewPtrListOffsetsRequest(), 1), ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := r.Serve(context.Background(), &ConnInfo{ID: 9}, tt.frame)
			if !errors.Is(err, tt.want) || out != nil {
				t.Fatalf("got %x, %v; want no answer and %v", out, err, tt.want)
			}
		})
	}
}

func TestUnsupportedVersionErrorCode(t *testing.T) {
	r := testRouter(t)
	tests := []struct {
		name string
		req  kmsg.Request
		v    int16
	}{
		{"metadata v13 above range", kmsg.NewPtrMetadataRequest(), 13},
		{"find coordinator v3 above range", kmsg.NewPtrFindCoordinatorRequest(), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.SetVersion(tt.v)
			out, err := r.Serve(context.Background(), nil, requestFrame(tt.req, 123, nil))
			if err != nil {
				t.Fatal(err)
			}
			corr, resp := decodeResponse(t, out, tt.req.Key(), tt.v, tt.v)
			code := errorCodeOf(resp)
			if corr != 123 || code != kerr.UnsupportedVersion.Code {
				t.Fatalf("corr %d, error code %d; want 123, %d", corr, code, kerr.UnsupportedVersion.Code)
			}
		})
	}
}

func errorCodeOf(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		return r.ErrorCode
	case *kmsg.FindCoordinatorResponse:
		return r.ErrorCode
	}
	return -1
}

func TestHookIntercepts(t *testing.T) {
	r := testRouter(t)
	var seen []int16
	r.Hook = func(req *Request) (kmsg.Response, error, bool) {
		seen = append(seen, req.Header.APIKey)
		if req.Header.APIKey != 3 {
			return nil, nil, false
		}
		resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = 4242
		return resp, nil, true
	}
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 7
	out, err := r.Serve(context.Background(), nil, requestFrame(req, 1, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, resp := decodeResponse(t, out, 3, 7, 7); resp.(*kmsg.MetadataResponse).ControllerID != 4242 {
		t.Fatalf("hook response not used: %+v", resp)
	}
	av := kmsg.NewPtrApiVersionsRequest()
	if out, err := r.Serve(context.Background(), nil, requestFrame(av, 2, nil)); err != nil || out == nil {
		t.Fatalf("ApiVersions through a pass-through hook: %x, %v", out, err)
	}
	if !slices.Equal(seen, []int16{3, 18}) {
		t.Fatalf("hook saw %v", seen)
	}
}

// TestErrorResponseEveryKey builds the UNSUPPORTED_VERSION answer for every
// key and version kmsg knows and checks that whenever one is offered, a
// client decoding it finds the error code.
func TestErrorResponseEveryKey(t *testing.T) {
	offered := 0
	for key := int16(0); key < 200; key++ {
		if kmsg.ResponseForKey(key) == nil {
			continue
		}
		for v := int16(0); v <= kmsg.ResponseForKey(key).MaxVersion(); v++ {
			resp, ok := errorResponse(key, v, kerr.UnsupportedVersion.Code)
			if !ok {
				continue
			}
			offered++
			out := AppendResponse(nil, 1, ResponseHeaderVersion(key, v), resp)
			_, got := decodeResponse(t, out, key, v, v)
			if code := reflect.ValueOf(got).Elem().FieldByName("ErrorCode").Int(); code != int64(kerr.UnsupportedVersion.Code) {
				t.Fatalf("%s v%d: decoded error code %d", kmsg.NameForKey(key), v, code)
			}
		}
	}
	if offered == 0 {
		t.Fatal("no key offered an UNSUPPORTED_VERSION response")
	}
	t.Logf("%d key/version pairs can answer UNSUPPORTED_VERSION", offered)
}

// A handler that sets Request.NetworkTime is told, once, after it has
// answered, the time the router spent on the request besides it.
func TestServeReportsNetworkTime(t *testing.T) {
	r := NewRouter(quietLogger(t))
	var calls []time.Duration
	answered := false
	r.Register(3, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		req.NetworkTime = func(d time.Duration) {
			if !answered {
				t.Error("network time reported before the handler answered")
			}
			calls = append(calls, d)
		}
		resp, err := metadataHandler(ctx, req)
		answered = true
		return resp, err
	})
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	if _, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, requestFrame(req, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] < 0 {
		t.Fatalf("network time reported %v, want once, not negative", calls)
	}
}
