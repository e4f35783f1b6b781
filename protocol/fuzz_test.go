package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds returns valid request streams (size-prefixed frames) for the
// seed corpus: the requests every client sends first.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	add := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		f := withSize(requestFrame(req, int32(len(seeds)), kmsg.StringPtr("fuzz")))
		seeds = append(seeds, f)
		return f
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0.0"
	for _, v := range []int16{0, 3, 4, 5} {
		add(av, v)
	}
	future := AppendRequestHeader(nil, Header{APIKey: 18, APIVersion: 127, CorrelationID: 1}, RequestHeaderV2)
	seeds = append(seeds, withSize(future))

	md := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	md.Topics = append(md.Topics, topic)
	for _, v := range []int16{1, 9, 12, 13} {
		add(md, v)
	}

	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "orders"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = []byte("not really a record batch, but bytes")
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	add(pr, 3)
	p9 := add(pr, 9)
	pr.Acks = 0
	p0 := add(pr, 7)

	// A pipelined stream, and one whose second frame is cut short.
	seeds = append(seeds, append(append([]byte{}, p9...), p0...))
	seeds = append(seeds, append(append([]byte{}, p9...), p0[:len(p0)/2]...))
	return append(seeds, saslSeeds()...)
}

// saslSeeds are streams a client sends a SASL listener (sasl.go): the
// authentication in both framings, a re-authentication, and what a
// client must not send before it has authenticated.
func saslSeeds() [][]byte {
	frame := func(req kmsg.Request, v int16) []byte {
		req.SetVersion(v)
		return withSize(requestFrame(req, 7, kmsg.StringPtr("fuzz")))
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0.0"
	handshake := func(v int16, mechanism string) []byte {
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Mechanism = mechanism
		return frame(hs, v)
	}
	authenticate := func(v int16, token []byte) []byte {
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.SASLAuthBytes = token
		return frame(a, v)
	}
	md := frame(kmsg.NewPtrMetadataRequest(), 12)
	good, bad := plainToken("alice", "alice-secret"), plainToken("alice", "wrong")
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	return [][]byte{
		cat(frame(av, 3), handshake(1, "PLAIN"), authenticate(2, good), md, handshake(1, "PLAIN"), authenticate(1, good), md),
		cat(frame(av, 4), handshake(0, "PLAIN"), withSize(good), md),
		cat(handshake(1, "PLAIN"), authenticate(0, bad)),
		cat(handshake(1, "PLAIN"), authenticate(2, good), handshake(1, "PLAIN-TOO"), authenticate(2, good)),
		cat(handshake(1, "PLAIN"), authenticate(2, good), handshake(1, "PLAIN"), authenticate(2, plainToken("bob", "bob-secret"))),
		cat(handshake(0, "SCRAM-SHA-256")),
		cat(handshake(0, "PLAIN"), []byte{0, 0, 0, 0}),
		cat(frame(av, 3), md),
		cat(frame(av, 3), frame(av, 3)),
		cat(handshake(1, "PLAIN"), md),
		binary.BigEndian.AppendUint32(nil, saslMaxReceiveSize+1),
	}
}

// FuzzServe feeds arbitrary bytes through what a connection does with them:
// frame parsing, header, body decode and routing. It must never panic, and
// every response it produces must decode as a client would decode it.
func FuzzServe(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	r := NewRouter(slog.New(slog.DiscardHandler))
	r.Register(3, 0, 12, metadataHandler)
	r.Register(0, 3, 9, produceHandler)
	r.Register(10, 0, 2, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	conn := &ConnInfo{ID: 1}
	saslSrv := &Server{Router: fuzzSASLRouter(), ReauthMax: time.Hour}
	f.Fuzz(func(t *testing.T, stream []byte) {
		saslSrv.SASL = newFakeSASL() // its count of exchanges starts again
		serveSASLStream(t, saslSrv, stream)
		in := bytes.NewReader(stream)
		for {
			frame, err := ReadFrame(in, 1<<20)
			if err != nil {
				var sizeErr *FrameSizeError
				if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.As(err, &sizeErr) {
					t.Fatalf("unexpected read error %v", err)
				}
				return
			}
			out, err := r.Serve(context.Background(), conn, frame)
			if err != nil {
				return // the connection would be closed
			}
			if out == nil {
				continue
			}
			checkFuzzResponse(t, r, frame, out)
		}
	})
}

// checkFuzzResponse decodes out as the client that sent frame would.
func checkFuzzResponse(t *testing.T, r *Router, frame, out []byte) {
	h, _, err := parseHeaderPrefix(frame)
	if err != nil {
		t.Fatalf("answered a frame whose header does not parse: %v", err)
	}
	rt, ok := r.lookup(h.APIKey)
	if !ok {
		t.Fatalf("answered unregistered key %d", h.APIKey)
	}
	respVersion := h.APIVersion
	if h.APIKey == apiVersionsKey && (h.APIVersion < rt.minVersion || h.APIVersion > rt.maxVersion) {
		respVersion = 0
	}
	corr, _ := decodeResponse(t, out, h.APIKey, h.APIVersion, respVersion)
	if corr != h.CorrelationID {
		t.Fatalf("correlation id %d, want %d", corr, h.CorrelationID)
	}
}

// fuzzSASLRouter is the router behind the fuzzed SASL listener: Metadata,
// and keys 17 and 36 answering ILLEGAL_SASL_STATE as the broker does.
func fuzzSASLRouter() *Router {
	r := NewRouter(slog.New(slog.DiscardHandler))
	r.Register(3, 0, 12, metadataHandler)
	r.Register(17, 0, 1, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	r.Register(36, 0, 2, func(_ context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	return r
}

// serveSASLStream runs stream through a whole connection of a SASL
// listener, authentication included (sasl.go), on a connection that reads
// stream then EOF and keeps what is written. The connection must end
// without a panic, and what it wrote must be whole size-prefixed frames.
func serveSASLStream(t *testing.T, srv *Server, stream []byte) {
	watch := &panicWatch{}
	srv.Logger = slog.New(watch)
	srv.init()
	nc := &streamConn{in: bytes.NewReader(stream)}
	srv.startConn(context.Background(), nc)
	srv.wg.Wait()
	if watch.panicked.Load() {
		t.Fatalf("panic serving a SASL connection")
	}
	for out := nc.out.Bytes(); len(out) > 0; {
		if len(out) < 4 {
			t.Fatalf("%d trailing bytes written, not a frame", len(out))
		}
		size := binary.BigEndian.Uint32(out)
		if uint64(size) > uint64(len(out)-4) {
			t.Fatalf("a %d-byte frame with %d bytes written", size, len(out)-4)
		}
		out = out[4+size:]
	}
}

// streamConn is a net.Conn that reads a fixed stream, then EOF, and keeps
// what is written to it. Deadlines are ignored: reads never block.
type streamConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *streamConn) Read(b []byte) (int, error)  { return c.in.Read(b) }
func (c *streamConn) Write(b []byte) (int, error) { return c.out.Write(b) }
func (c *streamConn) Close() error                { return nil }
func (c *streamConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092}
}
func (c *streamConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// panicWatch is a slog handler noting whether a connection logged a
// recovered panic.
type panicWatch struct{ panicked atomic.Bool }

func (w *panicWatch) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (w *panicWatch) WithAttrs([]slog.Attr) slog.Handler           { return w }
func (w *panicWatch) WithGroup(string) slog.Handler                { return w }
func (w *panicWatch) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "panic") {
		w.panicked.Store(true)
	}
	return nil
}
