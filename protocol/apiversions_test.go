package protocol

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	rt.maxVersion, rt.advertisedMax = 2, 2
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

// apiVersionsV5 serves an ApiVersions v5 request naming clusterID and
// nodeID and returns the error code and the number of keys answered.
func apiVersionsV5(t *testing.T, r *Router, clusterID *string, nodeID int32) (int16, int) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 5
	req.ClientSoftwareName, req.ClientSoftwareVersion = "sluice-test", "0.1.0"
	req.ClusterID, req.NodeID = clusterID, nodeID
	out, err := r.Serve(context.Background(), &ConnInfo{ID: 1}, requestFrame(req, 9, kmsg.StringPtr("c")))
	if err != nil {
		t.Fatalf("ApiVersions v5: connection closed: %v", err)
	}
	_, resp := decodeResponse(t, out, 18, 5, 5)
	av := resp.(*kmsg.ApiVersionsResponse)
	return av.ErrorCode, len(av.ApiKeys)
}

// TestApiVersionsV5Identity: KIP-1242's check against the identity the
// broker gave the router, and no check without one.
func TestApiVersionsV5Identity(t *testing.T) {
	r := testRouter(t)
	all := len(r.Versions())
	cluster, other := "c-1", "c-2"
	check := func(what string, clusterID *string, nodeID int32, wantCode int16) {
		t.Helper()
		code, keys := apiVersionsV5(t, r, clusterID, nodeID)
		wantKeys := all
		if wantCode != 0 {
			wantKeys = 0
		}
		if code != wantCode || keys != wantKeys {
			t.Errorf("%s: %v with %d keys, want %v with %d", what, kerr.ErrorForCode(code), keys, kerr.ErrorForCode(wantCode), wantKeys)
		}
	}
	// No identity (the controller channel): only the pairing is checked.
	check("no identity, named ids", &other, 9, 0)
	check("no identity, node without cluster", nil, 9, kerr.InvalidRequest.Code)

	var known string // the cluster id, once the broker knows it
	r.SetIdentity(func() (string, int32) { return known, 4 })
	check("identity without a cluster id yet", &other, 9, 0)
	known = cluster
	check("bootstrapping", nil, -1, 0)
	check("right ids", &cluster, 4, 0)
	check("other cluster", &other, 4, kerr.RebootstrapRequired.Code)
	check("other node", &cluster, 5, kerr.RebootstrapRequired.Code)
	check("node without cluster", nil, 4, kerr.InvalidRequest.Code)
	check("cluster without node", &cluster, -1, kerr.InvalidRequest.Code)
	r.SetIdentity(nil)
	check("identity removed", &other, 4, 0)
}

// TestApiVersionsV5RealClient: franz-go names the cluster and node it
// learned from Metadata when it connects to a discovered broker; with the
// right identity it gets the table and its request through.
func TestApiVersionsV5RealClient(t *testing.T) {
	const cluster, node = "c-real", int32(7)
	r := NewRouter(quietLogger(t))
	r.SetIdentity(func() (string, int32) { return cluster, node })
	var mu sync.Mutex
	var named []string
	r.Hook = func(req *Request) (kmsg.Response, error, bool) {
		if av, ok := req.Body.(*kmsg.ApiVersionsRequest); ok && av.Version >= 5 && av.ClusterID != nil {
			mu.Lock()
			named = append(named, fmt.Sprintf("%s/%d", *av.ClusterID, av.NodeID))
			mu.Unlock()
		}
		return nil, nil, false
	}
	addr := serveAsBroker(t, r, cluster, node)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	// A request to broker 7 opens its own connection, named with both ids.
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(node))); err != nil {
		t.Fatalf("request through discovered broker %d: %v", node, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(named, fmt.Sprintf("%s/%d", cluster, node)) {
		t.Fatalf("franz-go named %v in ApiVersions v5, want %s/%d", named, cluster, node)
	}
}

// TestApiVersionsV5RealClientMisrouted: a franz-go client whose Metadata
// says node 7 of cluster "c-stale" is at this address, which is node 7 of
// "c-here", is told REBOOTSTRAP_REQUIRED when it connects there, and
// rebootstraps instead of talking to the wrong cluster.
func TestApiVersionsV5RealClientMisrouted(t *testing.T) {
	const node = int32(7)
	r := NewRouter(quietLogger(t))
	r.SetIdentity(func() (string, int32) { return "c-here", node })
	addr := serveAsBroker(t, r, "c-stale", node)

	var logged sync.Map
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(0),
		kgo.WithLogger(logFunc(func(_ kgo.LogLevel, msg string, _ ...any) {
			if strings.Contains(msg, "REBOOTSTRAP_REQUIRED") {
				logged.Store(msg, true)
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The seed connection names no ids and is answered.
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	// The connection to node 7 names c-stale/7 and is refused.
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl.Broker(int(node))); err == nil {
		t.Fatal("request through the misrouted connection succeeded")
	}
	n := 0
	logged.Range(func(any, any) bool { n++; return true })
	if n == 0 {
		t.Fatal("franz-go did not report REBOOTSTRAP_REQUIRED")
	}
}

// logFunc adapts a function to kgo.Logger.
type logFunc func(level kgo.LogLevel, msg string, kv ...any)

func (f logFunc) Level() kgo.LogLevel                           { return kgo.LogLevelWarn }
func (f logFunc) Log(level kgo.LogLevel, msg string, kv ...any) { f(level, msg, kv...) }

// serveAsBroker starts a server for r whose Metadata answers that it is
// node of cluster, at the address it listens on, and returns that address.
func serveAsBroker(t *testing.T, r *Router, cluster string, node int32) string {
	t.Helper()
	var mu sync.Mutex
	var host string
	var port int32
	r.Register(3, 0, 12, func(_ context.Context, req *Request) (kmsg.Response, error) {
		resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
		resp.ClusterID = kmsg.StringPtr(cluster)
		resp.ControllerID = node
		mu.Lock()
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: node, Host: host, Port: port}}
		mu.Unlock()
		return resp, nil
	})
	_, addr := startServer(t, r, nil)
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	pn, _ := strconv.Atoi(p)
	mu.Lock()
	host, port = h, int32(pn)
	mu.Unlock()
	return addr
}
