package protocol

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConnInfo identifies the connection a request arrived on. ID is unique for
// the life of a Server and is what logs use to tie requests together.
type ConnInfo struct {
	ID     uint64
	Remote net.Addr
	Local  net.Addr
	// Listener is the name of the listener the connection arrived on
	// (e.g. PLAINTEXT, SASL_SSL, INTERNAL) and SecurityProtocol its
	// protocol (auth.go); empty for a ConnInfo made outside a Server.
	Listener         string
	SecurityProtocol string
	// ctx ends when the server has closed the connection; nil for a
	// ConnInfo made outside a Server (tests), which never ends.
	ctx context.Context
	// principal is who the connection authenticated as (auth.go); nil
	// means Anonymous.
	principal atomic.Pointer[Principal]
	// software is the client software name and version the connection's
	// ApiVersions (v3+, KIP-511) gave; nil before one.
	software atomic.Pointer[[2]string]
}

// ClientSoftware returns the client software name and version the
// connection's ApiVersions gave (KIP-511), empty before one.
func (c *ConnInfo) ClientSoftware() (name, version string) {
	if s := c.software.Load(); s != nil {
		return s[0], s[1]
	}
	return "", ""
}

// Principal returns who the connection authenticated as: Anonymous on a
// PLAINTEXT listener, and until a SASL exchange or a client certificate
// says otherwise.
func (c *ConnInfo) Principal() Principal {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return Anonymous
}

// SetPrincipal records who the connection authenticated as. The Server
// calls it; tests may, on a ConnInfo of their own.
func (c *ConnInfo) SetPrincipal(p Principal) { c.principal.Store(&p) }

// Context returns a context that is cancelled once the connection is
// closed, for whatever reason: the peer closed it or died (its kernel
// closes the socket), the server shut down, or a handler error closed it.
// A broker's heartbeat session uses it to learn at once that the broker
// process behind the connection is gone.
func (c *ConnInfo) Context() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// Request is one decoded request.
type Request struct {
	Header Header
	// Body is the decoded request, its version already set to
	// Header.APIVersion. Byte fields may alias the frame it was read
	// from; the frame is never reused, so handlers may keep them, except
	// for the api keys registered with ReuseFrames, whose frame's buffer
	// serves later requests once this one has been answered.
	Body kmsg.Request
	// Conn is shared by every request on the connection; read it, do
	// not modify it.
	Conn *ConnInfo
	// Size is the request's frame size in bytes (header and body,
	// without the size prefix), what Kafka's quotas charge a produce
	// request (RequestChannel.Request.sizeInBytes).
	Size int
	// RemoteTime, when the handler sets it, is the part of its time the
	// request spent parked waiting on others rather than worked on: a
	// Fetch long poll, a Produce waiting for acks=all, a change waiting
	// on the controller (Kafka's RemoteTime, reported to Router.Observe).
	RemoteTime time.Duration
	// ThrottleMillis is for a handler that sends no response but put its
	// client over a quota (Produce with acks=0): the connection is muted
	// for that long, as a response's throttle_time_ms would mute it
	// (throttle.go).
	ThrottleMillis int32
	// NetworkTime, when the handler sets it, is called once the answer
	// is encoded with the time the router spent on the request besides
	// the handler: decoding it and encoding the answer, the work of
	// Kafka's network threads, which its request quota counts too.
	NetworkTime func(time.Duration)
}

// Handler serves one request. Kafka errors travel inside the response's
// error codes; a non-nil error means something Kafka would close the
// connection for, and it is logged (api key, version, client id, connection)
// and the connection closed. A nil response with a nil error sends nothing,
// which is how Produce with acks=0 is answered.
//
// The response may be built with req.Body.ResponseKind(); the router sets
// its version to the request's before encoding either way.
type Handler func(ctx context.Context, req *Request) (kmsg.Response, error)

// route is one registered api key.
type route struct {
	key, minVersion, maxVersion int16
	// advertisedMin is the lowest version ApiVersions lists: minVersion,
	// unless RegisterAdvertisedFrom listed refused versions below it.
	advertisedMin int16
	// advertisedMax is the highest version ApiVersions lists: maxVersion,
	// unless RegisterBeyondKmsg served a version it does not list.
	advertisedMax int16
	// newBody, when set (RegisterBeyondKmsg), makes the request bodies
	// instead of kmsg.RequestForKey.
	newBody func() kmsg.Request
	handler Handler
	// reuseFrame: the handler keeps no byte of its request once it has
	// returned, so the frame's buffer may be reused (ReuseFrames).
	reuseFrame bool
}

// Router decodes request frames, checks versions against what is registered
// and dispatches to the handler registered for the api key. Register every
// key before serving: registration takes a lock, but a client that asked
// ApiVersions before a late Register would hold a stale table.
type Router struct {
	logger *slog.Logger

	// Hook, when set, sees every well-formed request at a supported
	// version (ApiVersions included) before its handler. If it returns
	// handled=true, its response and error are used as the handler's
	// would be and the handler is not called. It exists for tests, as a
	// way to inject errors or delays into any API without a fake broker;
	// set it before serving.
	Hook func(req *Request) (resp kmsg.Response, err error, handled bool)
	// Observe, when set, is called on the connection's goroutine once a
	// request that reached its handler (or Hook) has been answered —
	// its response written, or nothing to send — with the response
	// (nil for none) and when each phase happened (observe.go). It must
	// be cheap; set it before serving.
	Observe func(req *Request, resp kmsg.Response, t *RequestTimes)

	mu     sync.RWMutex
	routes map[int16]route
	// features is the source of ApiVersions' feature levels
	// (SetFeatures), nil for none.
	features func() Features
}

// NewRouter returns a router with ApiVersions (key 18) registered at every
// version kmsg knows. A nil logger means slog.Default().
func NewRouter(logger *slog.Logger) *Router {
	if logger == nil {
		logger = slog.Default()
	}
	r := &Router{logger: logger, routes: make(map[int16]route)}
	r.Register(apiVersionsKey, 0, kmsg.NewPtrApiVersionsRequest().MaxVersion(), r.serveApiVersions)
	return r
}

// Register installs h for api key at versions [minVersion, maxVersion]. It
// panics on a second registration of the same key, on a key kmsg does not
// know, and on a range kmsg cannot decode: all are programming errors that
// would otherwise surface as a client seeing an ApiVersions table the broker
// cannot honour.
func (r *Router) Register(key, minVersion, maxVersion int16, h Handler) {
	r.RegisterAdvertisedFrom(key, minVersion, minVersion, maxVersion, h)
}

// RegisterAdvertisedFrom is Register, except that ApiVersions lists the key
// from advertisedMin although only [minVersion, maxVersion] is served: a
// request at a version in between is refused like any other unsupported
// version. Kafka 4 does this for Produce alone (v0–2 listed, refused since
// KIP-896; KAFKA-18659), because librdkafka before 2.11.1 takes a Produce
// minimum above 0 to mean the broker cannot take gzip, snappy or lz4
// batches and silently sends them uncompressed. It panics like Register,
// and on an advertisedMin outside [0, minVersion].
func (r *Router) RegisterAdvertisedFrom(key, advertisedMin, minVersion, maxVersion int16, h Handler) {
	req := kmsg.RequestForKey(key)
	switch {
	case req == nil:
		panic(fmt.Sprintf("protocol: register api key %d: unknown to kmsg", key))
	case h == nil:
		panic(fmt.Sprintf("protocol: register api key %d: nil handler", key))
	case minVersion < 0 || minVersion > maxVersion:
		panic(fmt.Sprintf("protocol: register api key %d: bad version range %d..%d", key, minVersion, maxVersion))
	case maxVersion > req.MaxVersion():
		panic(fmt.Sprintf("protocol: register api key %d: max version %d above kmsg's %d", key, maxVersion, req.MaxVersion()))
	case advertisedMin < 0 || advertisedMin > minVersion:
		panic(fmt.Sprintf("protocol: register api key %d: advertised min version %d outside 0..%d", key, advertisedMin, minVersion))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.routes[key]; dup {
		panic(fmt.Sprintf("protocol: api key %d (%s) registered twice", key, kmsg.NameForKey(key)))
	}
	r.routes[key] = route{key: key, minVersion: minVersion, maxVersion: maxVersion, advertisedMin: advertisedMin, advertisedMax: maxVersion, handler: h}
}

// RegisterBeyondKmsg is Register for a key served at versions above
// kmsg's: newBody makes each request body (its ReadFrom decoding every
// version in [minVersion, maxVersion], its IsFlexible telling the request
// header's version), and ApiVersions lists the key up to advertisedMax
// only, so that a version Kafka serves only when asked (an unstable one)
// can be answered without being offered. It panics as Register does, on
// a nil newBody, and on an advertisedMax outside [minVersion, maxVersion].
func (r *Router) RegisterBeyondKmsg(key, minVersion, maxVersion, advertisedMax int16, newBody func() kmsg.Request, h Handler) {
	switch {
	case kmsg.RequestForKey(key) == nil:
		panic(fmt.Sprintf("protocol: register api key %d: unknown to kmsg", key))
	case h == nil || newBody == nil:
		panic(fmt.Sprintf("protocol: register api key %d: nil handler or body", key))
	case minVersion < 0 || minVersion > maxVersion:
		panic(fmt.Sprintf("protocol: register api key %d: bad version range %d..%d", key, minVersion, maxVersion))
	case advertisedMax < minVersion || advertisedMax > maxVersion:
		panic(fmt.Sprintf("protocol: register api key %d: advertised max version %d outside %d..%d", key, advertisedMax, minVersion, maxVersion))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.routes[key]; dup {
		panic(fmt.Sprintf("protocol: api key %d (%s) registered twice", key, kmsg.NameForKey(key)))
	}
	r.routes[key] = route{key: key, minVersion: minVersion, maxVersion: maxVersion, advertisedMin: minVersion, advertisedMax: advertisedMax, newBody: newBody, handler: h}
}

// ReuseFrames lets the connection reuse the buffer of a request of api
// key, registered before, for later requests once it has been answered
// (framepool.go): its handler, and Hook and Observe, keep no byte field
// of the request (they alias the frame) and start nothing that reads one
// after the response is written. Produce is the one worth it: its frames
// are the large ones, and its records are copied into the log by the
// append. It panics on a key not registered.
func (r *Router) ReuseFrames(key int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.routes[key]
	if !ok {
		panic(fmt.Sprintf("protocol: ReuseFrames for api key %d, not registered", key))
	}
	rt.reuseFrame = true
	r.routes[key] = rt
}

// reusesFrame reports whether ReuseFrames was called for key.
func (r *Router) reusesFrame(key int16) bool {
	rt, ok := r.lookup(key)
	return ok && rt.reuseFrame
}

// Versions returns the registered keys and version ranges sorted by key:
// exactly what ApiVersions advertises, advertised minimums included.
func (r *Router) Versions() []kmsg.ApiVersionsResponseApiKey {
	r.mu.RLock()
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(r.routes))
	for _, rt := range r.routes {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = rt.key, rt.advertisedMin, rt.advertisedMax
		out = append(out, k)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return out
}

func (r *Router) lookup(key int16) (route, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rt, ok := r.routes[key]
	return rt, ok
}

// Serve handles one request frame (header and body, without the size
// prefix) and returns the response frame (without the size prefix), or nil
// when nothing is to be sent. A non-nil error means the connection must be
// closed; Serve has already logged why.
//
// Trailing bytes after a body that decoded completely are ignored: kmsg's
// decoders do not check for leftovers and neither does Kafka's request
// parsing (RequestContext.parseRequest), so refusing them would reject
// clients Kafka accepts and buy nothing.
func (r *Router) Serve(ctx context.Context, conn *ConnInfo, frame []byte) ([]byte, error) {
	f, _, err := r.serve(ctx, conn, frame, nil)
	if err != nil || f == nil {
		return nil, err
	}
	return f.bytes()
}

// serve is Serve without reading a SplicedResponse's file ranges into
// memory: the connection writes them with sendfile. It also returns the
// throttle the handler set (throttle.go), which the connection applies.
// A non-nil sv is filled for Observe once the handler has run.
func (r *Router) serve(ctx context.Context, conn *ConnInfo, frame []byte, sv *servedReq) (*responseFrame, throttle, error) {
	start := time.Now()
	h, rest, err := parseHeaderPrefix(frame)
	if err != nil {
		return nil, throttle{}, r.refuse(conn, h, false, err)
	}
	rt, ok := r.lookup(h.APIKey)
	if !ok {
		return nil, throttle{}, r.refuse(conn, h, true, fmt.Errorf("%w: %d", ErrUnknownKey, h.APIKey))
	}
	if h.APIVersion < rt.minVersion || h.APIVersion > rt.maxVersion {
		out, err := r.unsupportedVersion(conn, h, rt)
		if err != nil {
			return nil, throttle{}, err
		}
		return memFrame(out), throttle{}, nil
	}
	var body kmsg.Request
	if rt.newBody != nil {
		body = rt.newBody()
	} else {
		body = kmsg.RequestForKey(h.APIKey)
	}
	body.SetVersion(h.APIVersion)
	hv, _ := RequestHeaderVersion(h.APIKey, h.APIVersion)
	if hv == RequestHeaderV2 || (rt.newBody != nil && body.IsFlexible()) {
		if rest, err = skipTags(rest); err != nil {
			return nil, throttle{}, r.refuse(conn, h, true, err)
		}
	}
	if err := body.ReadFrom(rest); err != nil {
		return nil, throttle{}, r.refuse(conn, h, true, fmt.Errorf("%w: %v", ErrMalformedBody, err))
	}
	req := &Request{Header: h, Body: body, Conn: conn, Size: len(frame)}

	var resp kmsg.Response
	handled := false
	if hook := r.Hook; hook != nil {
		resp, err, handled = hook(req)
	}
	var handling time.Duration
	called := time.Now()
	if !handled {
		resp, err = rt.handler(ctx, req)
		handling = time.Since(called)
	}
	if sv != nil && err == nil {
		sv.req, sv.resp, sv.start, sv.done = req, resp, called, called.Add(handling)
	}
	if req.NetworkTime != nil {
		// Deferred: the answer's encoding is network time too.
		defer func() { req.NetworkTime(time.Since(start) - handling) }()
	}
	if err != nil {
		r.logger.Error("protocol: handler failed, closing connection", r.attrs(conn, h, true, err)...)
		return nil, throttle{}, err
	}
	if resp == nil {
		return nil, noResponseThrottle(req), nil
	}
	if resp.Key() != h.APIKey {
		err := fmt.Errorf("%w: got key %d", ErrBadResponse, resp.Key())
		r.logger.Error("protocol: handler bug, closing connection", r.attrs(conn, h, true, err)...)
		return nil, throttle{}, err
	}
	resp.SetVersion(h.APIVersion)
	th := responseThrottle(resp)
	rhv := ResponseHeaderVersion(h.APIKey, h.APIVersion)
	sr, ok := resp.(*SplicedResponse)
	if sv != nil && (!ok || len(sr.splices) == 0) {
		// A connection's answer is encoded, size prefix first, into
		// a pooled buffer, which it gives back once it is written.
		box := getResponseBuf()
		box.b = AppendResponse(append(box.b[:0], 0, 0, 0, 0), h.CorrelationID, rhv, resp)
		binary.BigEndian.PutUint32(box.b, uint32(len(box.b)-4))
		sv.frame = responseFrame{framed: box.b, pooled: box, size: int64(len(box.b) - 4)}
		return &sv.frame, th, nil
	}
	enc := AppendResponse(nil, h.CorrelationID, rhv, resp)
	if !ok || len(sr.splices) == 0 {
		return memFrame(enc), th, nil
	}
	f, err := cutFrame(enc, sr.splices)
	if err != nil {
		r.logger.Error("protocol: handler bug, closing connection", r.attrs(conn, h, true, err)...)
		return nil, throttle{}, err
	}
	return f, th, nil
}

// refuse logs a request the client got wrong and returns err, which closes
// the connection. These are logged at Warn: a buggy or hostile client is
// worth noticing but is not a fault of the broker.
func (r *Router) refuse(conn *ConnInfo, h Header, haveHeader bool, err error) error {
	r.logger.Warn("protocol: closing connection", r.attrs(conn, h, haveHeader, err)...)
	return err
}

func (r *Router) attrs(conn *ConnInfo, h Header, haveHeader bool, err error) []any {
	a := make([]any, 0, 12)
	if conn != nil {
		a = append(a, "conn", conn.ID, "remote", addrString(conn.Remote))
	}
	if haveHeader {
		a = append(a, "api_key", h.APIKey, "api_version", h.APIVersion, "client_id", h.clientID())
	}
	return append(a, "err", err)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
