package protocol

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sameKeys(t testing.TB, got, want []kmsg.ApiVersionsResponseApiKey) {
	t.Helper()
	eq := func(a, b kmsg.ApiVersionsResponseApiKey) bool {
		return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
	}
	if !slices.EqualFunc(got, want, eq) {
		t.Fatalf("api keys %+v, want %+v", got, want)
	}
}

func TestApiVersionsSupported(t *testing.T) {
	r := testRouter(t)
	for _, version := range []int16{0, 1, 2, 3, 4, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = version
		req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "0.1.0"
		out, err := r.Serve(context.Background(), nil, requestFrame(req, 1000+int32(version), kmsg.StringPtr("c")))
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		// decodeResponse uses header v0 for ApiVersions at every
		// version; a flexible header would leave a stray tag byte that
		// breaks the body decode.
		corr, resp := decodeResponse(t, out, 18, version, version)
		av := resp.(*kmsg.ApiVersionsResponse)
		if corr != 1000+int32(version) || av.ErrorCode != 0 || av.ThrottleMillis != 0 {
			t.Fatalf("v%d: corr %d, error %d, throttle %d", version, corr, av.ErrorCode, av.ThrottleMillis)
		}
		sameKeys(t, av.ApiKeys, r.Versions())
	}
}

func TestApiVersionsFallback(t *testing.T) {
	r := testRouter(t)
	for _, version := range []int16{6, 127, -1} {
		// The body is whatever a future version holds; the broker must
		// not try to parse it.
		frame := AppendRequestHeader(nil, Header{APIKey: 18, APIVersion: version, CorrelationID: 5, ClientID: kmsg.StringPtr("future")}, RequestHeaderV2)
		frame = append(frame, 0xff, 0x00, 0x13)
		out, err := r.Serve(context.Background(), nil, frame)
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		corr, resp := decodeResponse(t, out, 18, version, 0)
		av := resp.(*kmsg.ApiVersionsResponse)
		if corr != 5 || av.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: corr %d, error %d", version, corr, av.ErrorCode)
		}
		sameKeys(t, av.ApiKeys, r.Versions())
	}
}

func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	r := testRouter(t)
	for _, name := range []string{"", "-leading", "trailing.", "spa ce"} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
		out, err := r.Serve(context.Background(), nil, requestFrame(req, 1, nil))
		if err != nil {
			t.Fatal(err)
		}
		_, resp := decodeResponse(t, out, 18, 3, 3)
		if av := resp.(*kmsg.ApiVersionsResponse); av.ErrorCode != kerr.InvalidRequest.Code || len(av.ApiKeys) != 0 {
			t.Fatalf("name %q: error %d with %d keys, want INVALID_REQUEST and none", name, av.ErrorCode, len(av.ApiKeys))
		}
	}
}

// TestApiVersionsRealClient asks ApiVersions through franz-go, which first
// negotiates the ApiVersions version itself on connect.
func TestApiVersionsRealClient(t *testing.T) {
	r := testRouter(t)
	_, addr := startServer(t, r, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("error code %d", resp.ErrorCode)
	}
	sameKeys(t, resp.ApiKeys, r.Versions())
}

// TestApiVersionsClientDowngrade makes the broker support only ApiVersions
// v0..2 and checks a real client recovers from the KIP-511 fallback.
func TestApiVersionsClientDowngrade(t *testing.T) {
	r := NewRouter(quietLogger(t))
	r.Register(3, 0, 12, metadataHandler)
	// Swap the built-in registration for a narrower one.
	r.mu.Lock()
	rt := r.routes[18]
	rt.maxVersion = 2
	r.routes[18] = rt
	r.mu.Unlock()
	_, addr := startServer(t, r, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version > 2 || resp.ErrorCode != 0 {
		t.Fatalf("got v%d with error %d", resp.Version, resp.ErrorCode)
	}
	sameKeys(t, resp.ApiKeys, r.Versions())
}
