package protocol

import (
	"errors"
	"io"
	"math"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// askAll writes an ApiVersions request on every connection and reports
// for each whether it was answered (true) or closed without an answer
// (false). A connection neither answered nor closed within the deadline
// fails the test.
func askAll(t *testing.T, conns []net.Conn) []bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	frame := withSize(requestFrame(req, 1, kmsg.StringPtr("flood")))
	for _, nc := range conns {
		nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		nc.Write(frame) // a connection already closed shows at the read
	}
	out := make([]bool, len(conns))
	for i, nc := range conns {
		nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := ReadFrame(nc, DefaultMaxRequestSize)
		var ne net.Error
		switch {
		case err == nil:
			out[i] = true
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("connection %d neither answered nor closed", i)
		default:
			t.Logf("connection %d: %v", i, err)
		}
	}
	return out
}

// dialAll opens n connections; the kernel completes them whether or not
// the server has accepted them yet.
func dialAll(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		conns[i] = nc
	}
	return conns
}

// TestIPConnectionRateClosesExcess: with a connection_creation_rate of 2
// on 127.0.0.1, a burst of connection attempts gets at most what the
// rate allows over Kafka's window (2/s over the 10 s a first burst is
// measured against, plus the time the burst took) answered; the rest
// are closed without an answer, each counted as throttled. A connection
// opened before the burst is served throughout.
func TestIPConnectionRateClosesExcess(t *testing.T) {
	const rate, attempts = 2, 100
	srv, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.IPConnectionRate = func(ip string) (float64, bool) { return rate, ip == "127.0.0.1" }
	})
	existing := dialRaw(t, addr)
	existing.apiVersionsAs("client")

	start := time.Now()
	answered := 0
	for _, ok := range askAll(t, dialAll(t, addr, attempts)) {
		if ok {
			answered++
		}
	}
	elapsed := time.Since(start).Seconds()
	// Kafka's Rate: a first burst is measured over (quota.window.num-1)
	// windows, so 2/s × 10 s connections (the existing one among them)
	// pass at once; later ones as the window moves on.
	if answered < rate*10-1 {
		t.Errorf("%d of %d attempts answered, want at least the burst of %d", answered, attempts, rate*10-1)
	}
	if bound := int(rate * (10 + elapsed + 1)); answered+1 > bound {
		t.Errorf("%d of %d attempts answered in %.1fs, want at most %d", answered, attempts, elapsed, bound)
	}
	st := srv.ConnQuotaStats()
	if int(st.IPThrottled) != attempts-answered {
		t.Errorf("%d throttled, want %d (every attempt not answered)", st.IPThrottled, attempts-answered)
	}
	existing.apiVersionsAs("client")
	eventually(t, "throttled connections closed", func() bool { return srv.ConnQuotaStats().DelayedClose == 0 })
	if st := srv.ConnQuotaStats(); st.IPSensors != 1 {
		t.Errorf("%d IP sensors, want 1", st.IPSensors)
	}
}

// TestIPConnectionRateOtherAddresses: a quota on another address, or
// none, throttles nothing and keeps no sensor.
func TestIPConnectionRateOtherAddresses(t *testing.T) {
	srv, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.IPConnectionRate = func(ip string) (float64, bool) { return 1, ip == "192.0.2.1" }
	})
	for i, ok := range askAll(t, dialAll(t, addr, 30)) {
		if !ok {
			t.Fatalf("attempt %d closed", i)
		}
	}
	if st := srv.ConnQuotaStats(); st.IPThrottled != 0 || st.IPSensors != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestCreationRateDelaysAccepts: over max.connection.creation.rate the
// acceptor waits before accepting more, so every attempt of a burst is
// answered, later: delayed, never refused.
func TestCreationRateDelaysAccepts(t *testing.T) {
	const attempts = 15
	srv, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnCreationRates = func() (int, int) { return 5, 5 }
		// Two samples of a second: a first burst of 5 passes at once.
		s.QuotaWindowNum, s.QuotaWindowSize = 2, time.Second
	})
	existing := dialRaw(t, addr)
	existing.apiVersionsAs("client")
	for i, ok := range askAll(t, dialAll(t, addr, attempts)) {
		if !ok {
			t.Fatalf("attempt %d closed, want it answered after a delay", i)
		}
	}
	st := srv.ConnQuotaStats()
	if st.AcceptDelays == 0 || st.IPThrottled != 0 {
		t.Fatalf("stats %+v, want accepts delayed and nothing throttled", st)
	}
	existing.apiVersionsAs("client")
}

// TestListenerCreationRateAlone: a listener's own rate delays accepts
// even with no broker-wide limit.
func TestListenerCreationRateAlone(t *testing.T) {
	srv, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnCreationRates = func() (int, int) { return math.MaxInt32, 5 }
		s.QuotaWindowNum, s.QuotaWindowSize = 2, time.Second
	})
	for i, ok := range askAll(t, dialAll(t, addr, 10)) {
		if !ok {
			t.Fatalf("attempt %d closed", i)
		}
	}
	if srv.ConnQuotaStats().AcceptDelays == 0 {
		t.Fatal("no accept delayed")
	}
}
