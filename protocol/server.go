package protocol

import (
	"container/list"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicedev/sluice/quotas"
)

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("protocol: server closed")

// Server accepts Kafka connections and serves their requests through a
// Router. The zero value with Router set is ready to use; set fields before
// the first Serve.
//
// Each connection has one goroutine that reads a request, serves it, writes
// the response and only then reads the next: Kafka mutes a connection while
// a request is in flight, so responses go out in request order and a client
// cannot make the broker buffer an unbounded backlog. Pipelining clients
// still work; their next requests wait in the socket buffer.
//
// Lock order: Server.mu before connCounts.mu before conn.mu.
type Server struct {
	Router *Router
	// MaxRequestSize is socket.request.max.bytes; 0 means
	// DefaultMaxRequestSize. A frame claiming more closes its connection
	// before anything is allocated for it.
	MaxRequestSize int32
	// IdleTimeout is connections.max.idle.ms: a connection that sends
	// nothing for this long after its last answer is closed, and so is one
	// whose request frame has not arrived completely this long after its
	// first byte (a slow-loris client is never idle, but never done
	// either; Kafka has no separate key for it). Time a connection spends
	// muted by the memory budget does not count. 0 or less means never.
	IdleTimeout time.Duration
	// QueuedMaxRequestBytes is queued.max.request.bytes, the request
	// memory budget shared by every connection (budget.go): frames being
	// read and requests being served, each charged its frame and what
	// decoding it may cost (decodecost.go). 0 or less means unbounded.
	QueuedMaxRequestBytes int64
	// ShareBudgetWith, if set, makes this server charge its requests to
	// that server's memory budget (and ignore QueuedMaxRequestBytes), so
	// one queued.max.request.bytes covers every listener of a broker, as
	// Kafka's memory pool does.
	ShareBudgetWith *Server
	// ConnLimits, if set, returns the connection limits in force; it is
	// called for every new connection, so it should be cheap. nil means
	// no limits (connlimit.go).
	ConnLimits func() ConnLimits
	// ShareConnLimitsWith, if set, makes this server count its
	// connections against max.connections and max.connections.per.ip
	// together with that server's (and every other server sharing with
	// it), as Kafka counts them across all the listeners of a broker.
	ShareConnLimitsWith *Server
	// PeerClientIDPrefixes are the client id prefixes of the broker's own
	// peers, whose connections max.connections must not lock out.
	PeerClientIDPrefixes []string
	// ConnCreationRates, if set, returns max.connection.creation.rate in
	// force broker-wide and for the listener
	// (listener.name.<l>.max.connection.creation.rate, else the
	// broker-wide value), new connections a second; math.MaxInt32 is
	// Kafka's default, no limit. It is called for every new connection.
	// nil means no limits (connquota.go).
	ConnCreationRates func() (broker, listener int)
	// IPConnectionRate, if set, returns the connection_creation_rate
	// quota of an IP address (KIP-612) and whether one is set; it is
	// called for every new connection (connquota.go).
	IPConnectionRate func(ip string) (float64, bool)
	// QuotaWindowNum and QuotaWindowSize are quota.window.num and
	// quota.window.size.seconds, the samples connection rates are
	// measured over; 0 means Kafka's defaults, 11 and 1 s.
	QuotaWindowNum  int
	QuotaWindowSize time.Duration
	// Logger receives connection-level logs; nil means slog.Default().
	Logger *slog.Logger

	// Listener is the listener's name and SecurityProtocol its security
	// protocol (auth.go), "" meaning PLAINTEXT; every connection's
	// ConnInfo carries both.
	Listener         string
	SecurityProtocol string
	// TLS, set on SSL and SASL_SSL listeners, returns the TLS
	// configuration for a new connection; it is called for every
	// connection, so a reloaded keystore serves the next one.
	TLS func() *tls.Config
	// CertPrincipal maps a client certificate the TLS handshake verified
	// to the connection's principal (ssl.principal.mapping.rules); nil
	// means Kafka's default, User:<the subject's RFC 2253 name>.
	CertPrincipal func(*x509.Certificate) Principal
	// SASL, set on SASL_PLAINTEXT and SASL_SSL listeners, authenticates
	// every connection before it is served anything but ApiVersions.
	SASL SASLServer
	// ReauthMax is connections.max.reauth.ms: a SASL session lasts at
	// most this long before the client must re-authenticate (KIP-368);
	// 0 means forever.
	ReauthMax time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: how
	// long a failed login's answer is held before the connection closes.
	FailedAuthDelay time.Duration

	nextConnID atomic.Uint64
	budget     *memoryBudget
	// opened and closedConns count the connections admitted and those
	// that have ended since the server was made (ConnectionTotals).
	opened, closedConns atomic.Uint64

	limitsMu sync.Mutex
	resolved *resolvedLimits

	rateMu sync.Mutex
	rates  *connRates // connquota.go

	initOnce sync.Once
	// shutdownCtx is cancelled by Shutdown. Every connection's context
	// derives from it, so handlers see the shutdown and wind up.
	shutdownCtx    context.Context
	shutdownCancel context.CancelFunc

	mu        sync.Mutex
	closing   bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	counts    *connCounts    // max.connections and max.connections.per.ip (connlimit.go)
	wg        sync.WaitGroup // one per connection goroutine
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		s.shutdownCtx, s.shutdownCancel = context.WithCancel(context.Background())
		s.listeners = make(map[net.Listener]struct{})
		s.conns = make(map[*conn]struct{})
		if o := s.ShareConnLimitsWith; o != nil && o != s {
			o.init()
			s.counts = o.counts
		} else {
			s.counts = &connCounts{perIP: make(map[string]int), probation: list.New()}
		}
		s.counts.mu.Lock()
		s.counts.servers = append(s.counts.servers, s)
		s.counts.mu.Unlock()
		if o := s.ShareBudgetWith; o != nil && o != s {
			o.init()
			s.budget = o.budget
		} else {
			s.budget = &memoryBudget{limit: s.QueuedMaxRequestBytes}
		}
	})
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func (s *Server) maxRequestSize() int32 {
	if s.MaxRequestSize > 0 {
		return s.MaxRequestSize
	}
	return DefaultMaxRequestSize
}

// Serve accepts connections on ln until Shutdown is called, ctx is done or
// the listener fails, and serves each on its own goroutine. Handlers get a
// context derived from ctx that is also cancelled by Shutdown; when ctx is
// done, ln is closed and this listener's connections finish their in-flight
// request and close. Serve returns ErrServerClosed after Shutdown, ctx.Err()
// after ctx is done, or the accept error. It does not wait for connections;
// Shutdown does. ln is closed on return.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.Router == nil {
		ln.Close()
		return errors.New("protocol: Server.Router is nil")
	}
	s.init()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	// connCtx outlives Serve when the listener fails, so its link to
	// shutdownCtx is never unregistered: Shutdown must still reach the
	// connections this listener accepted.
	connCtx, cancel := context.WithCancel(ctx)
	context.AfterFunc(s.shutdownCtx, cancel)
	// Closing the listener is what unblocks Accept when ctx is done.
	defer context.AfterFunc(connCtx, func() { ln.Close() })()

	// This listener's connection rate sensor (connquota.go).
	var listenerRate quotas.ConnectionRate
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			switch {
			case closing:
				return ErrServerClosed
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, net.ErrClosed):
				return err
			}
			// Likely out of file descriptors: back off instead of
			// spinning, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.logger().Warn("protocol: accept failed, retrying", "listener", ln.Addr().String(), "backoff", backoff, "err", err)
			select {
			case <-time.After(backoff):
			case <-connCtx.Done():
			}
			continue
		}
		backoff = 0
		if !s.admitRate(connCtx, nc, &listenerRate) {
			continue
		}
		s.startConn(connCtx, nc)
	}
}

// startConn registers nc and starts its goroutine, or closes it if the
// server is already shutting down or a connection limit refuses it
// (connlimit.go). The WaitGroup Add happens under mu with closing false,
// so it always precedes Shutdown's Wait.
func (s *Server) startConn(ctx context.Context, nc net.Conn) {
	connCtx, closed := context.WithCancel(context.Background())
	c := &conn{
		srv:    s,
		nc:     nc,
		closed: closed,
		ip:     remoteIP(nc.RemoteAddr()),
		info: ConnInfo{
			ID:     s.nextConnID.Add(1),
			Remote: nc.RemoteAddr(),
			Local:  nc.LocalAddr(),
			ctx:    connCtx,

			Listener:         s.Listener,
			SecurityProtocol: s.SecurityProtocol,
		},
	}
	c.lastActive.Store(time.Now().UnixNano())
	l := s.limits()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		nc.Close()
		closed()
		return
	}
	why, evicted := s.admitLocked(c, l)
	if why != "" {
		s.mu.Unlock()
		nc.Close()
		closed()
		s.logger().Info("protocol: refusing connection: "+why, "remote", addrString(c.info.Remote))
		return
	}
	s.conns[c] = struct{}{}
	s.opened.Add(1)
	s.wg.Add(1)
	s.mu.Unlock()
	if evicted != nil {
		s.logger().Debug("protocol: closing the oldest connection on probation at max.connections to make room", "conn", evicted.info.ID, "remote", addrString(evicted.info.Remote))
		evicted.nc.Close()
	}
	go c.serve(ctx)
}

func (s *Server) removeConn(c *conn) {
	s.closedConns.Add(1)
	s.mu.Lock()
	delete(s.conns, c)
	s.forgetLocked(c)
	s.mu.Unlock()
	s.wg.Done()
}

// RequestMemoryInUse returns the bytes of the request memory budget
// (QueuedMaxRequestBytes) reserved now: frames being read and requests
// being served.
func (s *Server) RequestMemoryInUse() int64 {
	s.init()
	return s.budget.inUse()
}

// ConnectionTotals returns how many connections this server admitted
// and how many of those have closed, since it was made: Kafka's
// connection-creation-total and connection-close-total of the listener.
// Connections refused at once (connection limits, shutdown) count in
// neither.
func (s *Server) ConnectionTotals() (opened, closed uint64) {
	return s.opened.Load(), s.closedConns.Load()
}

// NumConnections returns the number of open client connections.
func (s *Server) NumConnections() int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Shutdown stops accepting, cancels every handler's context, lets requests
// already read finish and be answered, closes every connection and waits
// for all connection goroutines. Connections idle between requests are
// closed at once. If ctx ends first, every connection is closed forcibly
// (unblocking writes to clients that stopped reading) and ctx.Err() is
// returned without waiting further: a handler that ignores its context
// could otherwise hold Shutdown forever.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.mu.Lock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	// Cancelling wakes every connection blocked reading (see
	// conn.interrupt) and every handler watching its context.
	s.shutdownCancel()
	s.closeThrottled()

	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close()
		}
		s.mu.Unlock()
		return ctx.Err()
	}
}
