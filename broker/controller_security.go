package broker

// The security of the cluster's own traffic (issue 19): the controller
// listener (raft and the controller channel, controller/channel.go) and
// serf's gossip.
//
// When the first of controller.listener.names maps to SSL in
// listener.security.protocol.map, the controller listener speaks TLS with
// that listener's ssl.* keys (listener.name.<l>.ssl.* over ssl.*), and
// client certificates are required whatever ssl.client.auth says: every
// peer on it is a node of the cluster, and a process without a
// certificate the truststore verifies cannot join raft, vote, heartbeat
// or forward a request. SASL_SSL is taken as SSL, with the certificate as
// the proof: sluice runs no SASL on the controller listener (a
// certificate a node presents is already what Kafka's SASL would check
// a password against). SASL_PLAINTEXT is refused: it would authenticate
// nobody here. Non-voters, which list no controller listener in
// listeners, secure their ephemeral raft port the same way.
//
// Peers are dialled at their controller.quorum.voters address (or the
// raft address a non-voter gossips), whose host is checked against the
// certificate when ssl.endpoint.identification.algorithm is https,
// Kafka's default.
//
// gossip.encryption.key encrypts and authenticates serf's gossip with
// memberlist's keyring (controller/gossip.go).

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/security"
)

// controllerSecurity is the TLS of this node's controller listener, nil
// when it is PLAINTEXT.
type controllerSecurity struct {
	listener string // its name in controller.listener.names
	server   *security.ServerTLS
	client   security.TLSConfig
}

// newControllerSecurity reads the controller listener's protocol and, for
// SSL or SASL_SSL, loads its keystore and truststore. It returns nil for
// PLAINTEXT.
func newControllerSecurity(cfg *config.Broker, logger *slog.Logger) (*controllerSecurity, error) {
	name := cfg.ControllerListenerNames()[0]
	proto := cfg.SecurityProtocol(name)
	switch proto {
	case "", protocol.ProtocolPlaintext:
		return nil, nil
	case protocol.ProtocolSASLPlaintext:
		return nil, fmt.Errorf("broker: controller listener %s: SASL_PLAINTEXT is not supported on the controller listener; use SSL (mutual TLS between the nodes)", name)
	case protocol.ProtocolSASLSSL:
		logger.Info("controller listener: SASL_SSL is served as SSL with client certificates required; no SASL runs between nodes", "listener", name)
	}
	tc := tlsConfigFor(cfg, name)
	tc.ClientAuth = "required"
	server, err := security.NewServerTLS(tc, logger.With("listener", name))
	if err != nil {
		return nil, fmt.Errorf("broker: controller listener %s: %w", name, err)
	}
	s := &controllerSecurity{listener: name, server: server, client: tc}
	// The client side loads now too, not at the first dial.
	if _, err := s.clientConfig("localhost:0"); err != nil {
		return nil, err
	}
	return s, nil
}

// clientConfig is the TLS of a connection to the controller listener at
// addr: the truststore, this node's certificate, addr's host as the name
// checked. The files are read at each dial, so renewed ones are used.
func (s *controllerSecurity) clientConfig(addr string) (*tls.Config, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c, err := security.ClientTLS(s.client, host)
	if err != nil {
		return nil, fmt.Errorf("broker: controller listener %s: %w", s.listener, err)
	}
	return c, nil
}

// listenerTLS is the controller package's view of s; nil for PLAINTEXT.
func (s *controllerSecurity) listenerTLS() *controller.ListenerTLS {
	if s == nil {
		return nil
	}
	return &controller.ListenerTLS{Server: s.server.Config, Client: s.clientConfig}
}

// secureChannel sets the controller channel's server to run the TLS
// handshake of each connection, naming its principal from the certificate
// (ssl.principal.mapping.rules of the controller listener).
func (s *controllerSecurity) secureChannel(srv *protocol.Server) {
	if s == nil {
		return
	}
	srv.TLS, srv.CertPrincipal = s.server.Config, s.server.Principal
	srv.Listener, srv.SecurityProtocol = s.listener, protocol.ProtocolSSL
}

// dial opens a controller-channel connection to addr over TLS.
func (s *controllerSecurity) dial(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), network, addr string) (net.Conn, error) {
	cfg, err := s.clientConfig(addr)
	if err != nil {
		return nil, err
	}
	return controller.DialControllerTLS(ctx, dial, network, addr, cfg)
}

// gossipKeys is gossip.encryption.key's keyring; nil for none.
func gossipKeys(cfg *config.Broker) ([][]byte, error) {
	v, _ := cfg.Get("gossip.encryption.key")
	keys, err := config.ParseGossipKeys(v)
	if err != nil {
		return nil, fmt.Errorf("broker: gossip.encryption.key: %w", err)
	}
	return keys, nil
}

// RefusedPeers counts the connections and gossip this node refused for
// lacking the cluster's credentials (controller.Controller.RefusedPeers):
// raft connections without a certificate the controller listener's
// truststore verifies, and gossip no gossip.encryption.key decrypts.
func (b *Broker) RefusedPeers() (raft, gossip uint64) { return b.ctrl.RefusedPeers() }
