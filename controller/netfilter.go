package controller

import (
	"context"
	"fmt"
	"log"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
)

// Test hooks that cut this node's gossip or raft links (Config.GossipAllowed,
// Config.RaftDial). Without them serf and raft use their own transports
// untouched, so the normal path pays nothing for them.

// filteredGossipTransport is memberlist's UDP/TCP transport with every
// outgoing packet and stream checked by allowed first: a refused packet is
// dropped silently, as a network cut drops it, and a refused stream fails
// to connect. When every node of a cluster filters, a node can be cut from
// the others in both directions.
type filteredGossipTransport struct {
	*memberlist.NetTransport
	allowed func(to string) bool
}

func newFilteredGossipTransport(host string, port int, logger *log.Logger, allowed func(string) bool) (*filteredGossipTransport, error) {
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("controller: gossip transport on %s:%d: %w", host, port, err)
	}
	return &filteredGossipTransport{NetTransport: nt, allowed: allowed}, nil
}

func (t *filteredGossipTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if !t.allowed(addr) {
		return time.Now(), nil
	}
	return t.NetTransport.WriteTo(b, addr)
}

func (t *filteredGossipTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return t.WriteTo(b, a.Addr)
}

func (t *filteredGossipTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if !t.allowed(addr) {
		return nil, fmt.Errorf("controller: gossip link to %s is cut", addr)
	}
	return t.NetTransport.DialTimeout(addr, timeout)
}

func (t *filteredGossipTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return t.DialTimeout(a.Addr, timeout)
}

// dialStreamLayer is raft's TCP stream layer with outgoing connections
// opened by a dial function.
type dialStreamLayer struct {
	net.Listener
	advertise net.Addr
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (s *dialStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return s.dial(ctx, "tcp", string(address))
}

func (s *dialStreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.Listener.Addr()
}
