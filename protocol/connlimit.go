package protocol

import (
	"bufio"
	"container/list"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Connection limits, with Kafka's keys and, where sluice can, Kafka's
// semantics (SocketServer's ConnectionQuotas):
//
//   - max.connections.per.ip and max.connections.per.ip.overrides: a new
//     connection from an address that already has its limit is closed at
//     once, before anything is read from it. Every connection counts,
//     sluice's own peers included, as in Kafka; give broker hosts room with
//     an override.
//   - max.connections, broker-wide. Kafka stops accepting at the limit and
//     protects its inter-broker listener: a broker connecting there is
//     accepted anyway and the least recently used connection of another
//     listener is closed. sluice serves clients and its peers on one
//     listener, so it can only tell a peer by the client id of its first
//     request (PeerClientIDPrefixes). At the limit it therefore keeps
//     accepting, and holds each new connection on probation until its
//     first request header has arrived (within probationTimeout): a peer
//     is admitted and the least recently active client connection closed
//     to make room; a client is closed. At most maxProbation connections
//     are on probation; a new one beyond that closes the oldest, which has
//     had the longest to show its header. Stopping the accept loop, as
//     Kafka does, would leave a peer waiting in the kernel's backlog behind
//     every connection a flood has queued there; closing the oldest keeps
//     the queue moving as fast as the flood fills it, and a peer sends its
//     first request as soon as it has connected. Closing a client, where
//     Kafka would leave it waiting, is what a client sees at a refused
//     connect, and it retries the same way. A client id is not proof of
//     identity: a client claiming a peer's id escapes max.connections, but
//     never max.connections.per.ip.
//
// All three are cluster-wide dynamic in Kafka and here: ConnLimits is
// asked again for every new connection, so a change made with AlterConfigs
// applies to the next connection. Connections already open are kept when
// a limit is lowered, as in Kafka.

// ConnLimits are the connection limits in force.
type ConnLimits struct {
	// Max is max.connections: connections open at once, broker-wide.
	Max int
	// PerIP is max.connections.per.ip.
	PerIP int
	// PerIPOverrides is max.connections.per.ip.overrides as configured:
	// comma-separated host:count pairs, the host an IP address or a
	// host name (resolved when the value changes).
	PerIPOverrides string
}

// unlimited is what a Server without ConnLimits enforces.
var unlimited = ConnLimits{Max: math.MaxInt, PerIP: math.MaxInt}

const (
	// maxProbation is how many connections accepted at max.connections
	// may be waiting to show their first request at once: each costs a
	// goroutine, a 16 KiB read buffer and a file descriptor.
	maxProbation = 256
	// probationTimeout bounds that wait (or connections.max.idle.ms, if
	// shorter).
	probationTimeout = 10 * time.Second
)

// connCounts are the connections counted against max.connections and
// max.connections.per.ip: one Server's, or shared by the servers of a
// broker's listeners (Server.ShareConnLimitsWith). mu guards them and
// every counted conn's state and probationElem; it is taken after
// Server.mu, never before.
type connCounts struct {
	mu        sync.Mutex
	perIP     map[string]int // open connections by remote address
	admitted  int            // connections counted against max.connections
	probation *list.List     // of *conn accepted at max.connections, not yet admitted, oldest first
	servers   []*Server      // every server counting here
}

// Connection states, guarded by connCounts.mu.
const (
	connAdmitted  = iota // counted against max.connections
	connProbation        // accepted at max.connections, first request not seen yet
	connRefused          // probation ended in a refusal; closing
)

// ParseConnOverrides parses max.connections.per.ip.overrides: comma-
// separated host:count pairs (an IPv6 host in brackets). It does not
// resolve host names.
func ParseConnOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", item)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(item[:i]), "["), "]")
		n, err := strconv.Atoi(strings.TrimSpace(item[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a number of at least 0", item)
		}
		out[host] = n
	}
	return out, nil
}

// resolvedLimits is ConnLimits with the overrides parsed and resolved to
// IP addresses.
type resolvedLimits struct {
	raw       ConnLimits
	overrides map[string]int // by IP address, as net.IP.String writes it
}

func (l *resolvedLimits) perIP(ip string) int {
	if n, ok := l.overrides[ip]; ok {
		return n
	}
	return l.raw.PerIP
}

// limits returns the limits in force, parsing and resolving the overrides
// only when they changed. A host name that does not resolve, or an
// override that does not parse (config validation prevents it), is logged
// and skipped.
func (s *Server) limits() *resolvedLimits {
	raw := unlimited
	if s.ConnLimits != nil {
		raw = s.ConnLimits()
	}
	s.limitsMu.Lock()
	defer s.limitsMu.Unlock()
	// A resolvedLimits is never changed once returned: callers read it
	// without the lock.
	if s.resolved != nil && s.resolved.raw.PerIPOverrides == raw.PerIPOverrides {
		if s.resolved.raw != raw {
			s.resolved = &resolvedLimits{raw: raw, overrides: s.resolved.overrides}
		}
		return s.resolved
	}
	r := &resolvedLimits{raw: raw, overrides: map[string]int{}}
	hosts, err := ParseConnOverrides(raw.PerIPOverrides)
	if err != nil {
		s.logger().Error("protocol: max.connections.per.ip.overrides does not parse, ignoring it", "value", raw.PerIPOverrides, "err", err)
	}
	for host, n := range hosts {
		if ip := net.ParseIP(host); ip != nil {
			r.overrides[ip.String()] = n
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		cancel()
		if err != nil {
			s.logger().Warn("protocol: max.connections.per.ip.overrides names a host that does not resolve", "host", host, "err", err)
			continue
		}
		for _, a := range addrs {
			if ip := net.ParseIP(a); ip != nil {
				r.overrides[ip.String()] = n
			}
		}
	}
	s.resolved = r
	return r
}

// remoteIP is the address a connection is counted under.
func remoteIP(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// isPeer reports whether clientID is one of the broker's own peers'.
func (s *Server) isPeer(clientID string) bool {
	for _, p := range s.PeerClientIDPrefixes {
		if p != "" && strings.HasPrefix(clientID, p) {
			return true
		}
	}
	return false
}

// admitLocked counts a new connection from c.ip, or returns why it must
// be closed at once. At max.connections the connection goes on probation,
// and if that is full the oldest connection on probation is returned to
// be closed (it may be another listener's). s.mu must be held; it takes
// the counts' lock.
func (s *Server) admitLocked(c *conn, l *resolvedLimits) (why string, evicted *conn) {
	n := s.counts
	n.mu.Lock()
	defer n.mu.Unlock()
	if count, limit := n.perIP[c.ip], l.perIP(c.ip); count >= limit {
		return fmt.Sprintf("address already has the configured maximum of %d connections (max.connections.per.ip)", limit), nil
	}
	n.perIP[c.ip]++
	if n.admitted < l.raw.Max {
		n.admitted++
		c.state = connAdmitted
		return "", nil
	}
	if n.probation.Len() >= maxProbation {
		evicted = n.probation.Remove(n.probation.Front()).(*conn)
		evicted.probationElem = nil
		evicted.state = connRefused
	}
	c.state = connProbation
	c.probationElem = n.probation.PushBack(c)
	return "", evicted
}

// leaveProbationLocked takes c off the probation list. The counts' lock
// must be held.
func (n *connCounts) leaveProbationLocked(c *conn) {
	if c.probationElem != nil {
		n.probation.Remove(c.probationElem)
		c.probationElem = nil
	}
}

// forgetLocked undoes admitLocked when c is gone. s.mu must be held; it
// takes the counts' lock.
func (s *Server) forgetLocked(c *conn) {
	n := s.counts
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.perIP[c.ip]--; n.perIP[c.ip] <= 0 {
		delete(n.perIP, c.ip)
	}
	switch c.state {
	case connAdmitted:
		n.admitted--
	case connProbation:
		n.leaveProbationLocked(c)
	}
	c.state = connRefused
}

// onProbation reports whether c was accepted at max.connections and has
// not been admitted yet.
func (c *conn) onProbation() bool {
	n := c.srv.counts
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.state == connProbation
}

// settleProbation reads the first request header of a connection
// accepted at max.connections and admits it if it is a peer (closing the
// least recently active client connection if the broker is still at its
// limit) or if a slot has freed meanwhile. It returns false, having
// logged why, if the connection must be closed.
func (c *conn) settleProbation(br *bufio.Reader) bool {
	s := c.srv
	timeout := probationTimeout
	if s.IdleTimeout > 0 {
		timeout = min(timeout, s.IdleTimeout)
	}
	if !c.beginRead(time.Now().Add(timeout)) {
		return false
	}
	clientID, err := peekClientID(br)
	c.endRead()
	if err != nil {
		c.log.Debug("protocol: connection on probation at max.connections sent no request, closing it", "err", err)
		return false
	}
	peer := s.isPeer(clientID)
	l := s.limits()

	n := s.counts
	n.mu.Lock()
	if c.state != connProbation { // evicted from probation meanwhile
		n.mu.Unlock()
		return false
	}
	n.leaveProbationLocked(c)
	if !peer && n.admitted >= l.raw.Max {
		c.state = connRefused
		n.mu.Unlock()
		c.log.Info("protocol: refusing connection: broker has the configured maximum of connections (max.connections)", "max_connections", l.raw.Max, "client_id", clientID)
		return false
	}
	n.admitted++
	c.state = connAdmitted
	over := peer && n.admitted > l.raw.Max
	servers := n.servers
	n.mu.Unlock()
	var victim *conn
	if over {
		victim = leastRecentClient(servers)
	}
	c.peer.Store(peer)
	if victim != nil {
		c.log.Info("protocol: peer broker connected at max.connections; closing the least recently active client connection",
			"max_connections", l.raw.Max, "client_id", clientID, "closed_conn", victim.info.ID, "closed_remote", addrString(victim.info.Remote))
		victim.nc.Close()
	}
	return true
}

// leastRecentClient returns the admitted client (not peer) connection
// of any of servers whose last request is the oldest, or nil. It takes
// each server's lock in turn, and the counts' lock within it.
func leastRecentClient(servers []*Server) *conn {
	var victim *conn
	for _, s := range servers {
		s.mu.Lock()
		s.counts.mu.Lock()
		for c := range s.conns {
			if c.state != connAdmitted || c.peer.Load() {
				continue
			}
			if victim == nil || c.lastActive.Load() < victim.lastActive.Load() {
				victim = c
			}
		}
		s.counts.mu.Unlock()
		s.mu.Unlock()
	}
	return victim
}

// peekClientID returns the client id of the request frame at the head of
// br without consuming it. A client id too long to peek is returned
// empty: it cannot be a peer's.
func peekClientID(br *bufio.Reader) (string, error) {
	const fixed = 4 + headerPrefixSize + 2 // size, key, version, correlation id, client id length
	b, err := br.Peek(fixed)
	if err != nil {
		return "", err
	}
	n := int(int16(binary.BigEndian.Uint16(b[fixed-2:])))
	if n <= 0 || fixed+n > br.Size() {
		return "", nil
	}
	if b, err = br.Peek(fixed + n); err != nil {
		return "", err
	}
	return string(b[fixed:]), nil
}
