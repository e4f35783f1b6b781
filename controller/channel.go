package controller

// The controller listener (controller.listener.names): one TCP port that
// carries both raft and the Kafka-protocol requests that brokers send the
// active controller, as Kafka's controller listener carries KRaft's Vote /
// Fetch and the brokers' BrokerHeartbeat, AlterPartition,
// AllocateProducerIds and forwarded admin requests.
//
// The two are told apart by the first byte of a connection, as Consul
// multiplexes raft and its RPC on one port. hashicorp/raft's
// NetworkTransport starts every command with its rpc type, 0 to 4 in raft
// v1.8 (AppendEntries, RequestVote, InstallSnapshot, TimeoutNow,
// RequestPreVote), so raft's own dialler is left untouched; a connection
// for the Kafka protocol starts with ChannelByte instead (DialController
// writes it), and after that byte it is an ordinary Kafka connection:
// size-prefixed request frames, answered in order. Every accepted
// connection is read for its first byte on its own goroutine, within
// firstByteTimeout; one that sends nothing, or a byte that is neither, is
// closed. The raft side goes to raft's transport (controllerTransport);
// the Kafka side to whoever accepts from ControllerListener (the broker's
// controller-channel server). A connection that arrives before the broker
// serves the channel waits for it, as it would in a listen backlog; once
// that side is closed, Kafka-protocol connections are closed at once.
//
// Secured (Config.ListenerTLS, when controller.listener.names maps to SSL
// or SASL_SSL), the listener speaks TLS with client certificates required
// and verified, for raft and the channel alike, and nothing in plaintext:
//
//   - raft connections start with RaftTLSByte, then a TLS handshake, then
//     raft's own stream (its rpc type byte first) inside TLS. The
//     handshake runs on the classifier's goroutine within
//     firstByteTimeout; a plaintext raft connection (first byte 0–4) or a
//     failed handshake (no certificate, one the truststore does not
//     trust) is closed and counted (Controller.RefusedPeers);
//   - channel connections start with ChannelByte, then TLS: the
//     controller channel's protocol.Server runs the handshake (its TLS
//     field), so its connections get the certificate's principal as
//     Kafka's do on an SSL controller listener;
//   - dialers do the same: raft's stream layer and DialControllerTLS
//     (heartbeats, forwarded requests) present this node's certificate.
//
// The byte before the handshake is plaintext, as Consul's RPCTLS byte is:
// it only says which protocol follows.
//
// Only a clustered node has a controller listener: raft voters on their
// controller.quorum.voters address, other nodes on an ephemeral port they
// gossip. A cluster of one runs raft in memory and opens no port, and
// needs none: it is its own controller. The active controller is always a
// voter, so brokers find its controller listener in
// controller.quorum.voters.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// ChannelByte starts a Kafka-protocol connection to a controller listener.
// It is outside raft's rpc types (0–4) and is not a byte a Kafka client
// would start with on a listener it believes speaks Kafka (a frame size
// above 1.2 GiB).
const ChannelByte byte = 'K'

// RaftTLSByte starts a raft connection on a secured controller listener:
// TLS follows, and raft's stream inside it. Like ChannelByte it is outside
// raft's rpc types.
const RaftTLSByte byte = 'T'

// ListenerTLS secures the controller listener (Config.ListenerTLS).
type ListenerTLS struct {
	// Server returns the configuration of an accepted connection's
	// handshake; it must require and verify client certificates
	// (tls.RequireAndVerifyClientCert against the cluster's truststore).
	Server func() *tls.Config
	// Client returns the configuration to dial the controller listener
	// at addr (host:port) with: the cluster's truststore, this node's
	// certificate, and addr's host as the server name.
	Client func(addr string) (*tls.Config, error)
}

// firstByteTimeout bounds the wait for an accepted connection's first
// byte. Both raft and DialController write it as soon as they connect.
const firstByteTimeout = 5 * time.Second

// DialController opens a Kafka-protocol connection to the controller
// listener at addr: dial (nil means a net.Dialer) connects, then
// ChannelByte is written. Brokers dial the active controller with it.
func DialController(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string) (net.Conn, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	conn, err := dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(firstByteTimeout)
	}
	conn.SetWriteDeadline(deadline)
	if _, err := conn.Write([]byte{ChannelByte}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("controller: open controller channel to %s: %w", addr, err)
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// DialControllerTLS opens a Kafka-protocol connection to a secured
// controller listener: ChannelByte, then a TLS handshake with cfg (the
// server requires this node's certificate). The connection returned
// speaks TLS.
func DialControllerTLS(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string, cfg *tls.Config) (net.Conn, error) {
	conn, err := DialController(ctx, dial, network, addr)
	if err != nil {
		return nil, err
	}
	tc, err := clientHandshake(ctx, conn, cfg)
	if err != nil {
		return nil, fmt.Errorf("controller: controller channel to %s: %w", addr, err)
	}
	return tc, nil
}

// clientHandshake runs the client side of TLS on conn within ctx (or
// firstByteTimeout), closing conn when it fails.
func clientHandshake(ctx context.Context, conn net.Conn, cfg *tls.Config) (*tls.Conn, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, firstByteTimeout)
		defer cancel()
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// ControllerListener returns the Kafka-protocol side of this node's
// controller listener, or nil for a cluster of one. Connections that
// start with ChannelByte are accepted from it, the byte already read. The
// caller serves it and closes it; closing it leaves raft's side open.
func (c *Controller) ControllerListener() net.Listener {
	if c.node == nil || c.node.mux == nil {
		return nil
	}
	return c.node.mux.kafkaSide()
}

// controllerMux accepts on the controller listener and hands each
// connection to raft's side or to the Kafka side by its first byte.
type controllerMux struct {
	ln    net.Listener
	raft  *muxListener
	kafka *muxListener

	// tls secures the listener; nil for a plaintext one.
	tls *ListenerTLS
	// refused counts raft connections refused for their security: in
	// plaintext on a secured listener, or failing its handshake.
	refused atomic.Uint64
	// lastRefusedLog rate-limits the Warn lines of refusals (unix nanos).
	lastRefusedLog atomic.Int64

	done      chan struct{}   // closed by close
	stop      context.Context // ends with done, for classifiers reading
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup // the accept loop and every classifier
	log       hclog.Logger
}

// refusedLogEvery bounds how often a refused raft connection is logged at
// Warn: a peer without the cluster's certificate retries all the time.
const refusedLogEvery = 10 * time.Second

// listenController listens on bind and starts splitting its connections;
// sec, if not nil, secures it.
func listenController(bind string, log hclog.Logger, sec ...*ListenerTLS) (*controllerMux, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("controller: controller listener %s: %w", bind, err)
	}
	m := &controllerMux{ln: ln, done: make(chan struct{}), log: log}
	if len(sec) > 0 {
		m.tls = sec[0]
	}
	m.stop, m.cancel = context.WithCancel(context.Background())
	m.raft = &muxListener{m: m, conns: make(chan net.Conn), closed: make(chan struct{}), owner: true}
	m.kafka = &muxListener{m: m, conns: make(chan net.Conn), closed: make(chan struct{})}
	m.wg.Add(1)
	go m.acceptLoop()
	return m, nil
}

func (m *controllerMux) kafkaSide() net.Listener { return m.kafka }

func (m *controllerMux) acceptLoop() {
	defer m.wg.Done()
	var backoff time.Duration
	for {
		conn, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Likely out of file descriptors: back off, as raft's own
			// listen loop does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			m.log.Warn("controller listener: accept failed, retrying", "backoff", backoff, "error", err)
			select {
			case <-time.After(backoff):
			case <-m.done:
				return
			}
			continue
		}
		backoff = 0
		m.wg.Add(1)
		go m.classify(conn)
	}
}

// classify reads conn's first byte and delivers it to its side.
func (m *controllerMux) classify(conn net.Conn) {
	defer m.wg.Done()
	var first [1]byte
	conn.SetReadDeadline(time.Now().Add(firstByteTimeout))
	// Closing the listener wakes a classifier still waiting.
	wake := context.AfterFunc(m.stop, func() { conn.SetReadDeadline(time.Now()) })
	_, err := conn.Read(first[:])
	if !wake() || err != nil {
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	switch {
	case first[0] == ChannelByte:
		m.kafka.deliver(conn)
	case first[0] <= 4 && m.tls != nil: // raft in plaintext
		m.refuse(conn, errors.New("raft connection in plaintext on a TLS controller listener"))
	case first[0] <= 4: // raft's rpc types
		m.raft.deliver(&prefixConn{Conn: conn, first: first[:]})
	case first[0] == RaftTLSByte && m.tls != nil:
		tc := tls.Server(conn, m.tls.Server())
		ctx, cancel := context.WithTimeout(m.stop, firstByteTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			m.refuse(conn, err)
			return
		}
		m.raft.deliver(tc)
	default:
		m.log.Warn("controller listener: closing a connection that is neither raft nor the controller channel",
			"remote", conn.RemoteAddr().String(), "first_byte", first[0])
		conn.Close()
	}
}

// refuse closes a raft connection that is not secured as the listener
// requires, counting it and logging at most every refusedLogEvery.
func (m *controllerMux) refuse(conn net.Conn, why error) {
	m.refused.Add(1)
	now := time.Now().UnixNano()
	if last := m.lastRefusedLog.Load(); now-last >= int64(refusedLogEvery) && m.lastRefusedLog.CompareAndSwap(last, now) {
		m.log.Warn("controller listener: refused a raft connection without the cluster's certificate (further refusals logged at most every 10s)",
			"remote", conn.RemoteAddr().String(), "error", why, "refused_total", m.refused.Load())
	}
	conn.Close()
}

// close stops accepting, closes the listener and waits for the
// classifiers; connections not yet delivered are closed.
func (m *controllerMux) close() error {
	var err error
	m.closeOnce.Do(func() {
		close(m.done)
		m.cancel()
		err = m.ln.Close()
		m.wg.Wait()
	})
	return err
}

// muxListener is one side of the controller listener.
type muxListener struct {
	m      *controllerMux
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
	// owner is raft's side: closing it closes the whole listener, as
	// raft's transport closes its stream layer on shutdown.
	owner bool
}

func (l *muxListener) deliver(conn net.Conn) {
	select {
	case l.conns <- conn:
	case <-l.closed:
		conn.Close()
	case <-l.m.done:
		conn.Close()
	}
}

func (l *muxListener) Accept() (net.Conn, error) {
	select {
	case conn := <-l.conns:
		return conn, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-l.m.done:
		return nil, net.ErrClosed
	}
}

func (l *muxListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	if l.owner {
		return l.m.close()
	}
	return nil
}

func (l *muxListener) Addr() net.Addr { return l.m.ln.Addr() }

// prefixConn gives back the byte the classifier read before the rest of
// the connection.
type prefixConn struct {
	net.Conn
	first []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 && len(p) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// controllerTransport is raft's TCP transport on the raft side of m,
// advertising advertise (or the bound address), with outgoing connections
// opened by dial (nil means a net.Dialer; tests pass Config.RaftDial).
func controllerTransport(m *controllerMux, advertise string, hlog hclog.Logger, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*raft.NetworkTransport, error) {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if m.tls != nil {
		dial = raftTLSDial(dial, m.tls)
	}
	layer := &dialStreamLayer{Listener: m.raft, dial: dial}
	if advertise != "" {
		a, err := net.ResolveTCPAddr("tcp", advertise)
		if err != nil {
			return nil, fmt.Errorf("controller: raft address %s: %w", advertise, err)
		}
		layer.advertise = a
	}
	if a, ok := layer.Addr().(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("controller: raft address %v is not one other nodes can dial", layer.Addr())
	}
	return raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: raftTCPMaxPool,
		Timeout: raftTCPTimeout,
		Logger:  hlog.Named("transport"),
	}), nil
}

// raftTLSDial wraps raft's dialler for a secured controller listener:
// RaftTLSByte, then the client side of TLS with this node's certificate.
func raftTLSDial(dial func(ctx context.Context, network, addr string) (net.Conn, error), sec *ListenerTLS) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg, err := sec.Client(addr)
		if err != nil {
			return nil, fmt.Errorf("controller: raft TLS to %s: %w", addr, err)
		}
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if deadline, ok := ctx.Deadline(); ok {
			conn.SetWriteDeadline(deadline)
		}
		if _, err := conn.Write([]byte{RaftTLSByte}); err != nil {
			conn.Close()
			return nil, err
		}
		conn.SetWriteDeadline(time.Time{})
		tc, err := clientHandshake(ctx, conn, cfg)
		if err != nil {
			return nil, fmt.Errorf("controller: raft to %s: %w", addr, err)
		}
		return tc, nil
	}
}

// RefusedPeers counts what this node refused for lacking the cluster's
// credentials since it started: raft connections to its controller
// listener in plaintext or without a certificate the truststore verifies
// (ListenerTLS), and gossip no key of its keyring decrypts (GossipKeys).
// Controller-channel connections that fail their handshake are the
// channel server's to log. Zero for a cluster of one.
func (c *Controller) RefusedPeers() (raft, gossip uint64) {
	if c.node != nil && c.node.mux != nil {
		raft = c.node.mux.refused.Load()
	}
	if c.gossip != nil {
		gossip = c.gossip.logw.refused.Load()
	}
	return raft, gossip
}
