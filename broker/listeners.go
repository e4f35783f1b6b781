package broker

// Kafka listeners (issue 19): every listener not in
// controller.listener.names serves Kafka clients on its own socket, with
// its own security protocol from listener.security.protocol.map, as
// Kafka's SocketServer runs one acceptor per listener. Each is a
// protocol.Server with the listener's name and protocol on every
// connection (ConnInfo.Listener), its TLS and SASL (listener_security.go),
// and one request-memory budget for all of them (queued.max.request.bytes
// is broker-wide in Kafka's memory pool too). max.connections and
// max.connections.per.ip count every listener's connections together, as
// Kafka's ConnectionQuotas does; a peer broker (known by its client id) is
// admitted at max.connections on any listener, closing the least recently
// active client connection of any. A listener's
// listener.name.<l>.max.connection.creation.rate is its own.
//
// A broker registers every advertised listener (controller.Broker.Endpoints)
// and tells a client the endpoints of the listener it is connected to
// (listener_view.go). Brokers reach each other on the inter-broker
// listener (inter.broker.listener.name, else the listener named after
// security.inter.broker.protocol): its endpoint is also the registration's
// Host and Port, which replica fetchers and the peer client dial.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// kafkaListener is one listener serving Kafka clients.
type kafkaListener struct {
	cfg      config.Listener // as configured: name, bind host and port
	protocol string          // listener.security.protocol.map's value
	ln       net.Listener
	server   *protocol.Server
}

// openListeners binds every Kafka listener, in listeners' order: the
// first is opts.Listener when set, any other opts.Listeners[name] when
// set, else a socket on its configured address. On error every socket
// already bound is closed.
func openListeners(cfg *config.Broker, opts Options) ([]*kafkaListener, error) {
	var out []*kafkaListener
	closeAll := func() {
		for _, l := range out {
			l.ln.Close()
		}
	}
	for i, l := range cfg.KafkaListeners() {
		ln := opts.Listeners[l.Name]
		if i == 0 && opts.Listener != nil {
			ln = opts.Listener
		}
		if ln == nil {
			var err error
			ln, err = net.Listen("tcp", net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))))
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("broker: listeners: %s: %w", l.Name, err)
			}
		}
		proto := cfg.SecurityProtocol(l.Name)
		if proto == "" {
			proto = protocol.ProtocolPlaintext
		}
		out = append(out, &kafkaListener{cfg: l, protocol: proto, ln: ln})
	}
	if len(out) == 0 {
		return nil, errors.New("broker: listeners has no Kafka listener (every one is a controller listener)")
	}
	return out, nil
}

// newServers makes each listener's protocol.Server. The first owns the
// request-memory budget; the others share it.
func (b *Broker) newServers() error {
	cfg := b.cfg
	for i, l := range b.listeners {
		name := l.cfg.Name
		s := &protocol.Server{
			Router:                b.router,
			MaxRequestSize:        cfg.SocketRequestMaxBytes,
			IdleTimeout:           time.Duration(cfg.ConnectionsMaxIdleMs) * time.Millisecond,
			QueuedMaxRequestBytes: cfg.QueuedMaxRequestBytes,
			// The forwarding client and the replica fetchers
			// (replica_fetcher.go): max.connections must not lock them out.
			PeerClientIDPrefixes: []string{peerClientIDPrefix, "sluice-replica-fetcher-"},
			ConnLimits: func() protocol.ConnLimits {
				maxConns, perIP, overrides := cfg.ConnectionLimits(b.dynamicBrokerConfigs(b.metadata()))
				return protocol.ConnLimits{Max: int(maxConns), PerIP: int(perIP), PerIPOverrides: overrides}
			},
			// max.connection.creation.rate and connection_creation_rate of
			// the ip entities (KIP-612), the listener's own rate included.
			ConnCreationRates: func() (int, int) {
				perBroker, clusterDefault := b.dynamicBrokerConfigs(b.metadata())
				rate, listenerRate := cfg.ConnectionCreationRates(name, perBroker, clusterDefault)
				return int(rate), int(listenerRate)
			},
			IPConnectionRate: func(ip string) (float64, bool) { return b.clientQuotas().ResolveIP(ip) },
			QuotaWindowNum:   int(cfg.QuotaWindowNum),
			QuotaWindowSize:  time.Duration(cfg.QuotaWindowSizeSecs) * time.Second,
			Logger:           b.logger.With("component", "network", "listener", name),

			Listener:         name,
			SecurityProtocol: l.protocol,
		}
		if i > 0 {
			// One request-memory budget and one count of
			// connections for the broker, as Kafka's memory pool and
			// ConnectionQuotas span its listeners.
			s.ShareBudgetWith = b.listeners[0].server
			s.ShareConnLimitsWith = b.listeners[0].server
		}
		if err := b.secureServer(s, l); err != nil {
			return err
		}
		l.server = s
	}
	return nil
}

// serveListeners serves every Kafka listener until ctx ends; the first
// listener's error (or nil) goes to serveErr.
func (b *Broker) serveListeners(ctx context.Context) {
	for i, l := range b.listeners {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			err := l.server.Serve(ctx, l.ln)
			if i == 0 {
				b.serveErr <- err
			} else if err != nil && ctx.Err() == nil && !errors.Is(err, protocol.ErrServerClosed) {
				b.logger.Error("listener stopped serving", "listener", l.cfg.Name, "err", err)
			}
		}()
	}
}

// shutdownServers stops every listener's server, waiting (within ctx)
// for requests in flight.
func (b *Broker) shutdownServers(ctx context.Context) error {
	var errs []error
	for _, l := range b.listeners {
		if err := l.server.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("listener %s: %w", l.cfg.Name, err))
		}
	}
	return errors.Join(errs...)
}

// listener returns the Kafka listener named name, or nil.
func (b *Broker) listener(name string) *kafkaListener {
	for _, l := range b.listeners {
		if l.cfg.Name == name {
			return l
		}
	}
	return nil
}

// interBrokerListener is the listener brokers dial each other on.
func (b *Broker) interBrokerListener() *kafkaListener {
	if l := b.listener(b.cfg.InterBrokerListener()); l != nil {
		return l
	}
	return b.listeners[0]
}

// advertisedEndpoint is the host and port clients are told to connect to
// for listener l: its advertised.listeners entry when one is set, else
// the address it is actually bound to (which differs from listeners when
// the port is 0 or a test handed in its own socket); an advertised port 0
// or empty host takes the bound one. ok is false for a listener
// advertised.listeners leaves out, which Kafka does not advertise; the
// inter-broker listener is always advertised.
func (b *Broker) advertisedEndpoint(l *kafkaListener) (host string, port int32, ok bool) {
	addr := l.ln.Addr().(*net.TCPAddr)
	host, port = addr.IP.String(), int32(addr.Port)
	switch {
	case addr.IP.IsUnspecified() && l.cfg.Host == "":
		host = "127.0.0.1"
	case l.cfg.Host != "":
		host = l.cfg.Host
	}
	if _, set := b.cfg.Get("advertised.listeners"); !set {
		return host, port, true
	}
	for _, a := range b.cfg.AdvertisedListeners {
		if a.Name != l.cfg.Name {
			continue
		}
		if a.Host != "" {
			host = a.Host
		}
		if a.Port != 0 {
			port = a.Port
		}
		return host, port, true
	}
	return host, port, l == b.interBrokerListener()
}

// advertised is the inter-broker listener's advertised host and port: the
// registration's Host and Port, what peers dial.
func (b *Broker) advertised() (string, int32) {
	host, port, _ := b.advertisedEndpoint(b.interBrokerListener())
	return host, port
}

// advertisedEndpoints are every advertised Kafka listener, registered
// with the broker.
func (b *Broker) advertisedEndpoints() []controller.Endpoint {
	var out []controller.Endpoint
	for _, l := range b.listeners {
		if host, port, ok := b.advertisedEndpoint(l); ok {
			out = append(out, controller.Endpoint{Listener: l.cfg.Name, Host: host, Port: port, SecurityProtocol: l.protocol})
		}
	}
	return out
}

// ListenerAddr is the address the named Kafka listener is bound to, ""
// for no such listener.
func (b *Broker) ListenerAddr(name string) string {
	if l := b.listener(name); l != nil {
		return l.ln.Addr().String()
	}
	return ""
}
