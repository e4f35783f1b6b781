package protocol

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// quietLogger keeps expected connection-closing warnings out of test output
// unless the test fails verbosely.
func quietLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// requestFrame encodes req (at its set version) as a request frame body,
// header included, without the size prefix, the way a client would.
func requestFrame(req kmsg.Request, correlationID int32, clientID *string) []byte {
	hv, ok := RequestHeaderVersion(req.Key(), req.GetVersion())
	if !ok {
		hv = RequestHeaderV2
	}
	h := Header{APIKey: req.Key(), APIVersion: req.GetVersion(), CorrelationID: correlationID, ClientID: clientID}
	return req.AppendTo(AppendRequestHeader(nil, h, hv))
}

// withSize prefixes body with its int32 size.
func withSize(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// decodeResponse parses a response frame body (without size prefix) as a
// client would: header version from the key and version it asked with,
// then the body at respVersion.
func decodeResponse(t testing.TB, frame []byte, key, askedVersion, respVersion int16) (int32, kmsg.Response) {
	t.Helper()
	if len(frame) < 4 {
		t.Fatalf("response frame of %d bytes", len(frame))
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	rest := frame[4:]
	if ResponseHeaderVersion(key, askedVersion) == ResponseHeaderV1 {
		var err error
		if rest, err = skipTags(rest); err != nil {
			t.Fatalf("response header tags: %v", err)
		}
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(respVersion)
	if err := resp.ReadFrom(rest); err != nil {
		t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(key), respVersion, err)
	}
	return corr, resp
}

// startServer serves router on a fresh loopback listener and shuts the
// server down when the test ends.
func startServer(t testing.TB, router *Router, configure func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Router: router, Logger: quietLogger(t)}
	if configure != nil {
		configure(srv)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return srv, ln.Addr().String()
}

// rawConn is a hand-driven client connection for sending bytes no real
// client would.
type rawConn struct {
	t  testing.TB
	nc net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// readFrame reads one response frame (without size prefix).
func (c *rawConn) readFrame() []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	frame, err := ReadFrame(c.nc, DefaultMaxRequestSize)
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	return frame
}

// expectClosed asserts the server closes the connection without answering.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if err == nil || n != 0 {
		c.t.Fatalf("read %d bytes (err %v), want the connection closed", n, err)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		c.t.Fatalf("connection still open after 5s")
	}
	if err != io.EOF {
		// A reset is also a close; anything else is unexpected.
		c.t.Logf("connection closed with %v", err)
	}
}

// apiVersions sends an ApiVersions request at version over c and returns
// the decoded response.
func (c *rawConn) apiVersions(version int16, correlationID int32) *kmsg.ApiVersionsResponse {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	c.write(withSize(requestFrame(req, correlationID, kmsg.StringPtr("raw"))))
	corr, resp := decodeResponse(c.t, c.readFrame(), 18, version, version)
	if corr != correlationID {
		c.t.Fatalf("correlation id %d, want %d", corr, correlationID)
	}
	return resp.(*kmsg.ApiVersionsResponse)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
