package sluicetest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
)

// links is one node's outgoing connections of one kind, which a test can
// cut per destination: to other brokers' Kafka listeners (replica
// fetching, transaction markers), to their raft listeners (raft, and the
// controller channel that carries heartbeats, ISR changes and forwarded
// admin requests to the controller), or to their gossip addresses (packets and streams, checked
// through allowed). Each kind is cut on its own: a node whose Kafka links
// are cut stays in gossip and raft, as a broker behind a broken route does.
type links struct {
	mu    sync.Mutex
	cut   map[string]linkState  // destination address → how it is cut
	conns map[string][]net.Conn // open connections per destination
}

// linkState is how a link is cut.
type linkState int

const (
	linkUp linkState = iota
	// linkRefused closes the open connections and refuses new ones, as a
	// firewall rejecting with resets does.
	linkRefused
	// linkDropped is silence, as a firewall dropping packets: open
	// connections stay open but what is written on them is lost (the
	// other side hears nothing), and new connections hang until their
	// dial times out. Healing closes the connections it silenced, whose
	// streams lost bytes.
	linkDropped
)

func (l *links) state(addr string) linkState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut[addr]
}

// dial is the node's broker.Options.Dial (and raft's dial).
func (l *links) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	switch l.state(addr) {
	case linkRefused:
		return nil, fmt.Errorf("sluicetest: link to %s is cut", addr)
	case linkDropped:
		<-ctx.Done()
		return nil, fmt.Errorf("sluicetest: link to %s is dropped: %w", addr, ctx.Err())
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut[addr] != linkUp {
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

// allowed reports whether the link to addr is up; it filters gossip,
// whose packets need no connection.
func (l *links) allowed(addr string) bool {
	return l.state(addr) == linkUp
}

// trackedConn forgets itself when closed, and loses what is written on it
// while its link is dropped.
type trackedConn struct {
	net.Conn
	l    *links
	addr string
}

func (c *trackedConn) Write(p []byte) (int, error) {
	if c.l.state(c.addr) == linkDropped {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	c.l.conns[c.addr] = slices.DeleteFunc(c.l.conns[c.addr], func(x net.Conn) bool { return x == c })
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// setCut cuts (closing the open connections) or restores the link to addr.
func (l *links) setCut(addr string, cut bool) {
	st := linkUp
	if cut {
		st = linkRefused
	}
	l.set(addr, st)
}

// set puts the link to addr in state st. Open connections are closed when
// it is refused, and when it comes back from being dropped.
func (l *links) set(addr string, st linkState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cut == nil {
		l.cut = make(map[string]linkState)
	}
	was := l.cut[addr]
	l.cut[addr] = st
	if st == linkRefused || (was == linkDropped && st != linkDropped) {
		for _, c := range l.conns[addr] {
			c.(*trackedConn).Conn.Close()
		}
		delete(l.conns, addr)
	}
}

// Cut stops node from reaching node to's Kafka listener: its connections
// there are closed and new ones refused until Heal. Both stay alive for
// gossip and the controller (whose channel runs on the raft listener), so
// only replication from node to node to is lost: a follower cut from its leader falls behind and
// leaves the ISR after replica.lag.time.max.ms.
func (c *Cluster) Cut(from, to int) {
	c.t.Helper()
	c.Node(from).links.setCut(c.Node(to).addr, true)
}

// Drop makes the link from node from to node to's Kafka listener silent:
// connections stay open, but nothing written on them arrives, and new ones
// hang until their dial times out — packets dropped by a firewall, which
// only a timeout tells from a slow peer. Heal restores it.
func (c *Cluster) Drop(from, to int) {
	c.t.Helper()
	c.Node(from).links.set(c.Node(to).addr, linkDropped)
}

// Heal restores what Cut(from, to) or Drop(from, to) cut.
func (c *Cluster) Heal(from, to int) {
	c.t.Helper()
	c.Node(from).links.setCut(c.Node(to).addr, false)
}

// CutGossip cuts node id's gossip from every other node, both ways: serf
// on id soon declares every other member failed and the others declare id
// failed, while raft, the controller channel (heartbeats) and the Kafka
// listeners (replication) are untouched — a firewall rule on the gossip port.
func (c *Cluster) CutGossip(id int) {
	c.t.Helper()
	c.setGossipCut(id, true)
}

// HealGossip restores what CutGossip(id) cut.
func (c *Cluster) HealGossip(id int) {
	c.t.Helper()
	c.setGossipCut(id, false)
}

func (c *Cluster) setGossipCut(id int, cut bool) {
	n := c.Node(id)
	for _, o := range c.nodes {
		if o == n {
			continue
		}
		n.gossipLinks.setCut(o.gossipAddr, cut)
		o.gossipLinks.setCut(n.gossipAddr, cut)
	}
}

// CutRaft cuts the raft links between nodes a and b, both ways (open
// connections are closed, new ones refused): raft and the controller
// channel that shares its listener (heartbeats, ISR changes, forwarded
// admin requests); gossip and Kafka links stay.
// Only voters have raft addresses the cluster knows; a non-voter's link
// to a voter is cut on the voter's side alone.
func (c *Cluster) CutRaft(a, b int) {
	c.t.Helper()
	c.setRaftCut(a, b, true)
}

// DropRaft makes the raft links between a and b silent, both ways, as
// Drop does for Kafka links.
func (c *Cluster) DropRaft(a, b int) {
	c.t.Helper()
	na, nb := c.Node(a), c.Node(b)
	if nb.raftAddr != "" {
		na.raftLinks.set(nb.raftAddr, linkDropped)
	}
	if na.raftAddr != "" {
		nb.raftLinks.set(na.raftAddr, linkDropped)
	}
}

// HealRaft restores what CutRaft(a, b) or DropRaft(a, b) cut.
func (c *Cluster) HealRaft(a, b int) {
	c.t.Helper()
	c.setRaftCut(a, b, false)
}

func (c *Cluster) setRaftCut(a, b int, cut bool) {
	na, nb := c.Node(a), c.Node(b)
	if nb.raftAddr != "" {
		na.raftLinks.setCut(nb.raftAddr, cut)
	}
	if na.raftAddr != "" {
		nb.raftLinks.setCut(na.raftAddr, cut)
	}
}
