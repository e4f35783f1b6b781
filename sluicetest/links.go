package sluicetest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
)

// links is one node's outgoing connections to other brokers' Kafka
// listeners (replica fetching, forwarding to the controller), which a test
// can cut per destination. Gossip and raft traffic is not affected: a cut
// node stays alive and registered, as a broker behind a broken route or a
// stalled disk does.
type links struct {
	mu    sync.Mutex
	cut   map[string]bool       // destination address → cut
	conns map[string][]net.Conn // open connections per destination
}

// dial is the node's broker.Options.Dial.
func (l *links) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	l.mu.Lock()
	cut := l.cut[addr]
	l.mu.Unlock()
	if cut {
		return nil, fmt.Errorf("sluicetest: link to %s is cut", addr)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut[addr] {
		conn.Close()
		return nil, fmt.Errorf("sluicetest: link to %s is cut", addr)
	}
	if l.conns == nil {
		l.conns = make(map[string][]net.Conn)
	}
	tc := &trackedConn{Conn: conn, l: l, addr: addr}
	l.conns[addr] = append(l.conns[addr], tc)
	return tc, nil
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	l    *links
	addr string
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.conns[c.addr] = slices.DeleteFunc(c.l.conns[c.addr], func(x net.Conn) bool { return x == c })
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// setCut cuts (closing the open connections) or restores the link to addr.
func (l *links) setCut(addr string, cut bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut == nil {
		l.cut = make(map[string]bool)
	}
	l.cut[addr] = cut
	if cut {
		for _, c := range l.conns[addr] {
			c.(*trackedConn).Conn.Close()
		}
		delete(l.conns, addr)
	}
}

// Cut stops node from reaching node to's Kafka listener: its connections
// there are closed and new ones refused until Heal. Both stay alive for
// gossip and the controller, so only replication and forwarding from node
// to node to are lost: a follower cut from its leader falls behind and
// leaves the ISR after replica.lag.time.max.ms.
func (c *Cluster) Cut(from, to int) {
	c.t.Helper()
	c.Node(from).links.setCut(c.Node(to).addr, true)
}

// Heal restores what Cut(from, to) cut.
func (c *Cluster) Heal(from, to int) {
	c.t.Helper()
	c.Node(from).links.setCut(c.Node(to).addr, false)
}
