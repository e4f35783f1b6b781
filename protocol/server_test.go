package protocol

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadFramesCloseOnlyTheirConnection sends each kind of bad frame on its
// own connection and checks that connection is closed while a raw
// connection and a real client opened beforehand keep working.
func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	r := testRouter(t)
	srv, addr := startServer(t, r, func(s *Server) { s.MaxRequestSize = 1 << 20 })

	good := dialRaw(t, addr)
	good.apiVersions(3, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two connections", func() bool { return srv.NumConnections() == 2 })

	metadataV4 := kmsg.NewPtrMetadataRequest()
	metadataV4.Version = 4
	validHeader := requestFrame(metadataV4, 7, kmsg.StringPtr("bad"))[:13] // header: 8 + 2 + len("bad")
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"over max size", binary.BigEndian.AppendUint32(nil, 1<<20+1)},
		{"2 GiB claimed", binary.BigEndian.AppendUint32(nil, 0x7fffffff)},
		{"negative size", binary.BigEndian.AppendUint32(nil, 0xffffffff)},
		{"too small for a header", withSize([]byte{0, 18, 0, 0})},
		{"zero size", []byte{0, 0, 0, 0}},
		{"garbage after a valid header", withSize(append(validHeader, 0x7f, 0xff, 0xff, 0xff, 'x'))},
		{"unknown api key", withSize([]byte{0x12, 0x34, 0, 0, 0, 0, 0, 1, 0xff, 0xff})},
		{"version beyond kmsg", withSize([]byte{0, 3, 0x40, 0, 0, 0, 0, 1, 0xff, 0xff})},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := dialRaw(t, addr)
			bad.write(tt.bytes)
			bad.expectClosed()

			good.apiVersions(int16(i%6), int32(100+i))
			if _, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl); err != nil {
				t.Fatalf("client after bad connection: %v", err)
			}
			eventually(t, "bad connection gone", func() bool { return srv.NumConnections() == 2 })
		})
	}
}

// TestOrderedResponses pipelines requests whose handlers finish in reverse
// order and checks responses still come back in request order, with nothing
// sent for acks=0.
func TestOrderedResponses(t *testing.T) {
	r := testRouter(t)
	release := make(chan struct{})
	r.Register(1, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return req.Body.ResponseKind(), nil
	})
	_, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)

	slow := kmsg.NewPtrFetchRequest()
	slow.Version = 4
	acks0 := kmsg.NewPtrProduceRequest()
	acks0.Version, acks0.Acks = 7, 0
	fast := kmsg.NewPtrMetadataRequest()
	fast.Version = 9
	var stream []byte
	stream = append(stream, withSize(requestFrame(slow, 1, nil))...)
	stream = append(stream, withSize(requestFrame(acks0, 2, nil))...)
	stream = append(stream, withSize(requestFrame(fast, 3, nil))...)
	c.write(stream)
	time.AfterFunc(50*time.Millisecond, func() { close(release) })

	if corr, _ := decodeResponse(t, c.readFrame(), 1, 4, 4); corr != 1 {
		t.Fatalf("first response has correlation id %d, want 1", corr)
	}
	if corr, _ := decodeResponse(t, c.readFrame(), 3, 9, 9); corr != 3 {
		t.Fatalf("second response has correlation id %d, want 3 (acks=0 gets none)", corr)
	}
}

func TestHandlerPanicClosesOnlyThatConnection(t *testing.T) {
	r := testRouter(t)
	r.Register(1, 0, 12, func(context.Context, *Request) (kmsg.Response, error) {
		panic("handler bug")
	})
	_, addr := startServer(t, r, nil)
	good := dialRaw(t, addr)
	good.apiVersions(2, 1)
	bad := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 4
	bad.write(withSize(requestFrame(fetch, 1, nil)))
	bad.expectClosed()
	good.apiVersions(2, 2)
}

// TestShutdownAnswersInFlight checks Shutdown cancels the handler's context,
// still delivers its response, closes idle connections and waits.
func TestShutdownAnswersInFlight(t *testing.T) {
	r := testRouter(t)
	started := make(chan struct{})
	r.Register(1, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		close(started)
		<-ctx.Done() // a long poll cut short by shutdown
		resp := req.Body.ResponseKind().(*kmsg.FetchResponse)
		resp.ThrottleMillis = 9
		return resp, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Router: r, Logger: quietLogger(t)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), ln) }()
	addr := ln.Addr().String()

	idle := dialRaw(t, addr)
	idle.apiVersions(0, 1)
	busy := dialRaw(t, addr)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 4
	busy.write(withSize(requestFrame(fetch, 77, nil)))
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve returned %v", err)
	}
	if n := srv.NumConnections(); n != 0 {
		t.Fatalf("%d connections after shutdown", n)
	}
	corr, resp := decodeResponse(t, busy.readFrame(), 1, 4, 4)
	if corr != 77 || resp.(*kmsg.FetchResponse).ThrottleMillis != 9 {
		t.Fatalf("in-flight response: corr %d, %+v", corr, resp)
	}
	busy.expectClosed()
	idle.expectClosed()
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("listener still accepting after shutdown")
	}
}

// TestShutdownDeadline checks a handler that ignores its context cannot
// hold Shutdown past its deadline.
func TestShutdownDeadline(t *testing.T) {
	r := testRouter(t)
	stuck := make(chan struct{})
	started := make(chan struct{})
	r.Register(1, 0, 12, func(context.Context, *Request) (kmsg.Response, error) {
		close(started)
		<-stuck
		return nil, nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Router: r, Logger: quietLogger(t)}
	go srv.Serve(context.Background(), ln)
	c := dialRaw(t, ln.Addr().String())
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 4
	c.write(withSize(requestFrame(fetch, 1, nil)))
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v, want deadline exceeded", err)
	}
	c.expectClosed()
	// Once the handler lets go, a second Shutdown sees every goroutine out.
	close(stuck)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := srv.Shutdown(ctx2); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestServeContextCancel(t *testing.T) {
	r := testRouter(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Router: r, Logger: quietLogger(t)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	c := dialRaw(t, ln.Addr().String())
	c.apiVersions(1, 1)
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v", err)
	}
	c.expectClosed()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		t.Fatal(err)
	}
}

func TestIdleTimeout(t *testing.T) {
	_, addr := startServer(t, testRouter(t), func(s *Server) { s.IdleTimeout = 100 * time.Millisecond })
	c := dialRaw(t, addr)
	c.apiVersions(0, 1)
	c.expectClosed()
}
