package protocol

import (
	"context"
	"errors"
	"os"
	"syscall"
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

// TestSharedBudget: a server made with ShareBudgetWith charges the other
// server's budget, so a frame arriving on the second listener mutes a
// request on the first, as one queued.max.request.bytes for the broker.
func TestSharedBudget(t *testing.T) {
	first, firstAddr := startServer(t, produceRouter(t), func(s *Server) {
		s.MaxRequestSize = 1 << 20
		s.QueuedMaxRequestBytes = 1 << 20
	})
	second, secondAddr := startServer(t, produceRouter(t), func(s *Server) {
		s.MaxRequestSize = 1 << 20
		s.ShareBudgetWith = first
	})
	frameA := produceFrameOfSize(t, 900<<10)
	frameB := produceFrameOfSize(t, 300<<10)
	a, b := dialRaw(t, secondAddr), dialRaw(t, firstAddr)
	a.write(frameA[:800<<10])
	eventually(t, "a's frame charged to the shared budget", func() bool {
		return first.RequestMemoryInUse() == int64(len(frameA)-4) && second.RequestMemoryInUse() == first.RequestMemoryInUse()
	})
	b.write(frameB)
	b.nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var one [1]byte
	if _, err := b.nc.Read(one[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection muted by the other listener's request: read %v, want no answer yet", err)
	}
	a.write(frameA[800<<10:])
	a.readFrame()
	b.readFrame()
	eventually(t, "the budget released", func() bool { return first.RequestMemoryInUse() == 0 })
}

// TestBudgetRefusesWhatCanNeverFit: a request whose decoding could cost
// more than the whole budget closes its connection, while a normal
// request on another is served: a DescribeGroups of empty group names,
// refused from its size and api key alone, and a Metadata request of
// empty topic names, refused once the walk of its body has counted them.
func TestBudgetRefusesWhatCanNeverFit(t *testing.T) {
	describeGroups := kmsg.NewPtrDescribeGroupsRequest()
	describeGroups.Groups = make([]string, 1<<20) // 2 MiB
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.Version = 8
	metadata.Topics = make([]kmsg.MetadataRequestTopic, 1<<20) // 2 MiB
	for i := range metadata.Topics {
		metadata.Topics[i].Topic = kmsg.StringPtr("")
	}
	for _, req := range []kmsg.Request{describeGroups, metadata} {
		t.Run(kmsg.NameForKey(req.Key()), func(t *testing.T) {
			r := NewRouter(quietLogger(t))
			r.Register(req.Key(), 0, req.MaxVersion(), func(ctx context.Context, req *Request) (kmsg.Response, error) {
				return req.Body.ResponseKind(), nil
			})
			srv, addr := startServer(t, r, func(s *Server) {
				s.QueuedMaxRequestBytes = 64 << 20
			})
			hostile := dialRaw(t, addr)
			// Refused once its api key is known, the frame may be cut
			// off by a reset while it is still being written.
			hostile.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if _, err := hostile.nc.Write(withSize(requestFrame(req, 1, nil))); err != nil && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("write: %v", err)
			}
			hostile.expectClosed()
			dialRaw(t, addr).apiVersions(3, 2)
			eventually(t, "the budget released", func() bool { return srv.RequestMemoryInUse() == 0 })
		})
	}
}

// TestMemoryBudget steps the budget through its rules without a network.
func TestMemoryBudget(t *testing.T) {
	ctx := context.Background()
	granted := func(ch chan error) bool {
		select {
		case err := <-ch:
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	waiters := func(b *memoryBudget, n int) {
		eventually(t, "waiters queued", func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return len(b.waiters) == n
		})
	}
	acquire := func(b *memoryBudget, ctx context.Context, n, held int64) chan error {
		ch := make(chan error, 1)
		go func() {
			_, err := b.acquire(ctx, n, held, nil)
			ch <- err
		}()
		return ch
	}

	t.Run("fits, then waits until released", func(t *testing.T) {
		b := &memoryBudget{limit: 100}
		if !granted(acquire(b, ctx, 60, 0)) {
			t.Fatal("60 of 100 not granted")
		}
		second := acquire(b, ctx, 50, 0)
		waiters(b, 1)
		// A later, smaller request does not overtake the waiter.
		third := acquire(b, ctx, 10, 0)
		waiters(b, 2)
		b.release(60)
		if !granted(second) || !granted(third) {
			t.Fatal("waiters not granted after release")
		}
		if b.inUse() != 60 {
			t.Fatalf("in use %d, want 60", b.inUse())
		}
	})

	t.Run("every byte held by waiters: the oldest goes over", func(t *testing.T) {
		b := &memoryBudget{limit: 100}
		for range 2 {
			if !granted(acquire(b, ctx, 50, 0)) {
				t.Fatal("50 of 100 not granted")
			}
		}
		// Both holders now want to grow: neither can, and nobody else
		// will release, so the first is granted beyond the limit.
		first := acquire(b, ctx, 50, 50)
		waiters(b, 1) // the other holder could still release
		second := acquire(b, ctx, 50, 50)
		if !granted(first) {
			t.Fatal("deadlock: the oldest waiter was not granted")
		}
		waiters(b, 1) // the second still waits
		b.release(100)
		if !granted(second) {
			t.Fatal("the second waiter not granted after release")
		}
	})

	t.Run("a cancelled wait reserves nothing", func(t *testing.T) {
		b := &memoryBudget{limit: 100}
		granted(acquire(b, ctx, 100, 0))
		cctx, cancel := context.WithCancel(ctx)
		ch := acquire(b, cctx, 10, 0)
		waiters(b, 1)
		cancel()
		if err := <-ch; err == nil {
			t.Fatal("cancelled acquire succeeded")
		}
		b.release(100)
		if b.inUse() != 0 || len(b.waiters) != 0 {
			t.Fatalf("in use %d, %d waiters after a cancelled wait", b.inUse(), len(b.waiters))
		}
	})

	t.Run("unbounded", func(t *testing.T) {
		b := &memoryBudget{limit: -1}
		if !granted(acquire(b, ctx, 1<<40, 0)) {
			t.Fatal("unbounded budget waited")
		}
	})
}
