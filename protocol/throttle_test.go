package protocol

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// served records when each request's handler started and returned, by
// correlation id.
type served struct {
	mu            sync.Mutex
	start, finish map[int32]time.Time
}

// throttleRouter answers the Metadata request with correlation id 1 with
// throttle_time_ms set to throttleMs (the others with 0), and every
// Produce with no response and ThrottleMillis set.
func throttleRouter(t *testing.T, throttleMs int32) (*Router, *served) {
	s := &served{start: map[int32]time.Time{}, finish: map[int32]time.Time{}}
	r := NewRouter(quietLogger(t))
	note := func(req *Request, m map[int32]time.Time) {
		s.mu.Lock()
		m[req.Header.CorrelationID] = time.Now()
		s.mu.Unlock()
	}
	r.Register(3, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		note(req, s.start)
		resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
		if req.Header.CorrelationID == 1 {
			resp.ThrottleMillis = throttleMs
		}
		note(req, s.finish)
		return resp, nil
	})
	r.Register(0, 3, 11, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		note(req, s.start)
		req.ThrottleMillis = throttleMs
		note(req, s.finish)
		return nil, nil
	})
	return r, s
}

func (s *served) times(corr int32) (start, finish time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.start[corr], s.finish[corr]
}

// KIP-219: a response with throttle_time_ms at a version that lets the
// client throttle itself is sent at once, and the connection is then
// muted: a request pipelined behind it is not read (its handler does not
// start) before the throttle time has passed.
func TestThrottleMutesAfterResponse(t *testing.T) {
	const throttle = 300 * time.Millisecond
	r, s := throttleRouter(t, int32(throttle.Milliseconds()))
	_, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)
	first := kmsg.NewPtrMetadataRequest()
	first.Version = 9
	second := kmsg.NewPtrMetadataRequest()
	second.Version = 9
	c.write(append(withSize(requestFrame(first, 1, nil)), withSize(requestFrame(second, 2, nil))...))

	corr, resp := decodeResponse(t, c.readFrame(), 3, 9, 9)
	if corr != 1 || resp.(*kmsg.MetadataResponse).ThrottleMillis != int32(throttle.Milliseconds()) {
		t.Fatalf("first response: correlation %d, throttle %d", corr, resp.(*kmsg.MetadataResponse).ThrottleMillis)
	}
	_, finished := s.times(1)
	if corr, _ := decodeResponse(t, c.readFrame(), 3, 9, 9); corr != 2 {
		t.Fatalf("second response has correlation %d", corr)
	}
	// The second request was not read until the throttle had passed.
	if started, _ := s.times(2); started.Sub(finished) < throttle {
		t.Fatalf("second request served %v after the throttled answer, want at least %v (muted)", started.Sub(finished), throttle)
	}
}

// Before KIP-219 (Metadata < v6) the client does not throttle itself: the
// response is held back for the throttle time instead.
func TestThrottleDelaysOldVersions(t *testing.T) {
	const throttle = 300 * time.Millisecond
	r, s := throttleRouter(t, int32(throttle.Milliseconds()))
	_, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 5
	c.write(withSize(requestFrame(req, 1, nil)))
	frame := c.readFrame()
	got := time.Now()
	if corr, _ := decodeResponse(t, frame, 3, 5, 5); corr != 1 {
		t.Fatalf("correlation %d", corr)
	}
	if _, finished := s.times(1); got.Sub(finished) < throttle {
		t.Fatalf("response arrived %v after its handler answered, want it held for %v", got.Sub(finished), throttle)
	}
	// Held, not muted after: the next request is read at once.
	req2 := kmsg.NewPtrMetadataRequest()
	req2.Version = 5
	c.write(withSize(requestFrame(req2, 2, nil)))
	if corr, _ := decodeResponse(t, c.readFrame(), 3, 5, 5); corr != 2 {
		t.Fatalf("correlation %d", corr)
	}
}

// A request answered with nothing (Produce acks=0) mutes the connection
// for Request.ThrottleMillis.
func TestThrottleWithoutResponse(t *testing.T) {
	const throttle = 300 * time.Millisecond
	r, s := throttleRouter(t, int32(throttle.Milliseconds()))
	_, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)
	produce := kmsg.NewPtrProduceRequest()
	produce.Version, produce.Acks = 9, 0
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	c.write(append(withSize(requestFrame(produce, 7, nil)), withSize(requestFrame(meta, 8, nil))...))
	if corr, _ := decodeResponse(t, c.readFrame(), 3, 9, 9); corr != 8 {
		t.Fatalf("correlation %d", corr)
	}
	_, finished := s.times(7)
	if started, _ := s.times(8); started.Sub(finished) < throttle {
		t.Fatalf("request after a throttled acks=0 produce served after %v, want at least %v", started.Sub(finished), throttle)
	}
}

// A server shutting down does not wait out a mute.
func TestThrottleEndsAtShutdown(t *testing.T) {
	r, _ := throttleRouter(t, 3_600_000)
	srv, addr := startServer(t, r, nil)
	c := dialRaw(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	c.write(withSize(requestFrame(req, 1, nil)))
	c.readFrame()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a muted connection: %v", err)
	}
}

// A mute longer than connections.max.idle.ms closes the connection once
// that much has passed, after the response or instead of a held one.
func TestThrottleLongerThanIdleTimeoutCloses(t *testing.T) {
	for _, version := range []int16{9, 5} { // after the response; held
		r, _ := throttleRouter(t, 3_600_000)
		_, addr := startServer(t, r, func(s *Server) { s.IdleTimeout = 200 * time.Millisecond })
		c := dialRaw(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = version
		c.write(withSize(requestFrame(req, 1, nil)))
		if version >= 6 {
			c.readFrame()
		}
		c.expectClosed()
	}
}
