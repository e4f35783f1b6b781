package protocol

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// twoListeners starts two servers sharing their connection limits (the
// listeners of one broker).
func twoListeners(t *testing.T, limits ConnLimits) (first, second *Server, firstAddr, secondAddr string) {
	first, firstAddr = startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnLimits = func() ConnLimits { return limits }
		s.PeerClientIDPrefixes = []string{"peer-"}
	})
	second, secondAddr = startServer(t, NewRouter(quietLogger(t)), func(s *Server) {
		s.ConnLimits = func() ConnLimits { return limits }
		s.PeerClientIDPrefixes = []string{"peer-"}
		s.ShareConnLimitsWith = first
	})
	return first, second, firstAddr, secondAddr
}

// TestSharedConnLimitsPerIP: max.connections.per.ip counts an address's
// connections to every listener sharing the limits, as Kafka's
// ConnectionQuotas does; a connection closed on one frees the slot for
// another.
func TestSharedConnLimitsPerIP(t *testing.T) {
	first, _, firstAddr, secondAddr := twoListeners(t, ConnLimits{Max: 100, PerIP: 1})
	held := dialRaw(t, firstAddr)
	held.apiVersionsAs("client")
	dialRaw(t, secondAddr).expectClosed()
	held.nc.Close()
	eventually(t, "the first listener's connection is gone", func() bool { return first.NumConnections() == 0 })
	dialRaw(t, secondAddr).apiVersionsAs("client")
}

// TestSharedConnLimitsMax: max.connections counts every listener's
// connections together: with one listener's client holding the only
// slot, a client of the other is refused, and a peer of the other is
// admitted and closes that least recently active client.
func TestSharedConnLimitsMax(t *testing.T) {
	_, second, firstAddr, secondAddr := twoListeners(t, ConnLimits{Max: 1, PerIP: 100})
	client := dialRaw(t, secondAddr)
	client.apiVersionsAs("client")

	refused := dialRaw(t, firstAddr)
	refused.write(withSize(requestFrame(kmsg.NewPtrApiVersionsRequest(), 1, kmsg.StringPtr("client"))))
	refused.expectClosed()

	dialRaw(t, firstAddr).apiVersionsAs("peer-2")
	client.expectClosed()
	eventually(t, "the second listener's client is gone", func() bool { return second.NumConnections() == 0 })
}
