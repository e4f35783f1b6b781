package protocol

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrameOfSize is a Produce v9 request of exactly size bytes, size
// prefix included: one partition whose records are zeros.
func produceFrameOfSize(t *testing.T, size int) []byte {
	t.Helper()
	build := func(records int) []byte {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = make([]byte, records)
		tp.Partitions = append(tp.Partitions, pp)
		req.Topics = append(req.Topics, tp)
		return withSize(requestFrame(req, 1, kmsg.StringPtr("budget")))
	}
	// The records' compact length grows with its value: settle the size
	// in a few steps.
	records := size
	f := build(records)
	for i := 0; i < 3 && len(f) != size; i++ {
		records -= len(f) - size
		f = build(records)
	}
	if len(f) != size {
		t.Fatalf("frame of %d bytes, wanted %d", len(f), size)
	}
	return f
}

// produceRouter answers every Produce with an empty response.
func produceRouter(t *testing.T) *Router {
	r := NewRouter(quietLogger(t))
	r.Register(0, 3, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	return r
}

// TestBudgetMutesConnectionUntilReleased: with a 1 MiB budget, a 900 KiB
// request held half-sent reserves its frame as it arrives; a complete
// 300 KiB request on another connection then does not fit, is not read
// to the end, let alone answered, until the first has been answered; then
// it is.
func TestBudgetMutesConnectionUntilReleased(t *testing.T) {
	srv, addr := startServer(t, produceRouter(t), func(s *Server) {
		s.MaxRequestSize = 1 << 20
		s.QueuedMaxRequestBytes = 1 << 20
	})
	frameA := produceFrameOfSize(t, 900<<10)
	frameB := produceFrameOfSize(t, 300<<10)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	a.write(frameA[:800<<10])
	eventually(t, "a's frame reserved", func() bool { return srv.RequestMemoryInUse() == int64(len(frameA)-4) })
	b.write(frameB)
	// b fits 64 KiB more, then waits for 64 KiB it cannot have.
	eventually(t, "b reserving what fits", func() bool { return srv.RequestMemoryInUse() == int64(len(frameA)-4)+frameChunk })
	b.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := b.nc.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the muted connection: read %v, want no answer yet", err)
	}
	a.write(frameA[800<<10:])
	a.readFrame()
	b.readFrame()
	eventually(t, "the budget released", func() bool { return srv.RequestMemoryInUse() == 0 })
}

// TestBudgetRefusesWhatCanNeverFit: a request whose decoding could cost
// more than the whole budget (a Metadata request of empty topic names)
// closes its connection, while a normal request on another is served.
func TestBudgetRefusesWhatCanNeverFit(t *testing.T) {
	r := NewRouter(quietLogger(t))
	r.Register(3, 0, 12, func(ctx context.Context, req *Request) (kmsg.Response, error) {
		return req.Body.ResponseKind(), nil
	})
	srv, addr := startServer(t, r, func(s *Server) {
		s.QueuedMaxRequestBytes = 100 << 20
	})
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 8
	req.Topics = make([]kmsg.MetadataRequestTopic, 1<<20) // empty names: 2 MiB
	for i := range req.Topics {
		req.Topics[i].Topic = kmsg.StringPtr("")
	}
	hostile := dialRaw(t, addr)
	hostile.write(withSize(requestFrame(req, 1, nil)))
	hostile.expectClosed()
	dialRaw(t, addr).apiVersions(3, 2)
	eventually(t, "the budget released", func() bool { return srv.RequestMemoryInUse() == 0 })
}
