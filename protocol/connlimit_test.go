package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsAs sends an ApiVersions v3 request with client id id over c
// and reads the answer.
func (c *rawConn) apiVersionsAs(id string) {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1.0"
	c.write(withSize(requestFrame(req, 1, kmsg.StringPtr(id))))
	c.readFrame()
}

// TestMaxConnectionsAdmitsPeerEvictingLeastRecentClient: at
// max.connections a client is refused, a peer broker is admitted, and the
// client connection whose last request is the oldest is closed to make
// room; the other stays served.
func TestMaxConnectionsAdmitsPeerEvictingLeastRecentClient(t *testing.T) {
	srv, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnLimits = func() ConnLimits { return ConnLimits{Max: 2, PerIP: 100} }
		s.PeerClientIDPrefixes = []string{"peer-"}
	})
	oldest, recent := dialRaw(t, addr), dialRaw(t, addr)
	oldest.apiVersionsAs("client")
	recent.apiVersionsAs("client")

	refused := dialRaw(t, addr)
	refused.write(withSize(requestFrame(kmsg.NewPtrApiVersionsRequest(), 1, kmsg.StringPtr("client"))))
	refused.expectClosed()

	dialRaw(t, addr).apiVersionsAs("peer-7")
	oldest.expectClosed()
	recent.apiVersionsAs("client")
	eventually(t, "two connections open", func() bool { return srv.NumConnections() == 2 })
}

// TestPerIPOverride: an override applies to its address only.
func TestPerIPOverride(t *testing.T) {
	_, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnLimits = func() ConnLimits { return ConnLimits{Max: 100, PerIP: 0, PerIPOverrides: "127.0.0.1:1"} }
	})
	dialRaw(t, addr).apiVersionsAs("client")
	dialRaw(t, addr).expectClosed()
}

func TestParseConnOverrides(t *testing.T) {
	got, err := ParseConnOverrides(" 127.0.0.1:5, [::1]:0,host.example:7 ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["127.0.0.1"] != 5 || got["::1"] != 0 || got["host.example"] != 7 {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"host", "host:x", "host:-1", ":3"} {
		if _, err := ParseConnOverrides(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestProbationFullClosesOldest: at max.connections, silent connections
// fill the probation list; one more connection closes the oldest of them
// instead of waiting behind them, so a peer arriving after a flood is
// still read and admitted at once.
func TestProbationFullClosesOldest(t *testing.T) {
	_, addr := startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnLimits = func() ConnLimits { return ConnLimits{Max: 1, PerIP: 10000} }
		s.PeerClientIDPrefixes = []string{"peer-"}
	})
	dialRaw(t, addr).apiVersionsAs("client")
	silent := make([]*rawConn, maxProbation)
	for i := range silent {
		silent[i] = dialRaw(t, addr)
	}
	dialRaw(t, addr).apiVersionsAs("peer-1")
	silent[0].expectClosed()
}
