// Package sluicetest starts real sluice nodes in-process for tests: each on
// an ephemeral loopback port with its own temporary data directory and short
// timings, with helpers to restart a node cleanly, crash it (its files left
// as kill -9 would leave them), connect a franz-go client, and wait for a
// condition with a deadline instead of sleeping.
package sluicetest

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/config"
)

// Node is one in-process sluice broker.
type Node struct {
	t         testing.TB
	Dir       string
	Overrides []string
	Broker    *broker.Broker
	addr      string
	name      string // set for cluster nodes, tags their log lines
	links     links  // outgoing connections to other brokers (Cluster.Cut)
	// gossipAddr and raftAddr are the node's gossip and raft listeners
	// ("" when unknown); gossipLinks and raftLinks are its outgoing gossip
	// and raft links (Cluster.CutGossip, Cluster.CutRaft).
	gossipAddr, raftAddr   string
	gossipLinks, raftLinks links
	// listenerAddrs are the addresses of the node's Kafka listeners
	// besides the first (addr), by name, kept so a restart binds the
	// same ports; a listener first started on port 0 keeps the port it
	// got.
	listenerAddrs map[string]string
}

// Start starts a single node with the given broker property overrides
// (key=value, Kafka's names) on a free loopback port.
func Start(t testing.TB, overrides ...string) *Node {
	t.Helper()
	n := &Node{t: t, Dir: t.TempDir(), Overrides: overrides}
	n.start("127.0.0.1:0")
	t.Cleanup(func() {
		if n.Broker != nil {
			n.Broker.Close()
		}
	})
	return n
}

func (n *Node) start(addr string) {
	n.t.Helper()
	if err := n.open(addr, 30*time.Second); err != nil {
		n.t.Fatalf("sluicetest: %v", err)
	}
}

// open starts the broker with its Kafka listener on addr; it does not fail
// the test, so cluster nodes can start from several goroutines at once.
func (n *Node) open(addr string, timeout time.Duration) error {
	// New groups do not wait for more members (Kafka's default is 3s);
	// a test's own overrides come later and win.
	ovr := []string{"log.dirs=" + n.Dir, "group.initial.rebalance.delay.ms=0"}
	// "{node.dir}" in an override is this node's data directory, so one
	// cluster-wide override can give every node several log dirs.
	for _, o := range n.Overrides {
		ovr = append(ovr, strings.ReplaceAll(o, "{node.dir}", n.Dir))
	}
	cfg, err := config.Load("", ovr)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	var ln net.Listener
	// A restarted node must come back on the same port: clients and the
	// metadata keep its address.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err = net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// The other Kafka listeners come back on the ports they had.
	others := map[string]net.Listener{}
	closeOthers := func() {
		for _, l := range others {
			l.Close()
		}
	}
	for name, a := range n.listenerAddrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			ln.Close()
			closeOthers()
			return fmt.Errorf("listen %s: %w", name, err)
		}
		others[name] = l
	}
	logger := slog.New(slog.NewTextHandler(testWriter{n.t}, &slog.HandlerOptions{Level: logLevel()}))
	if n.name != "" {
		logger = logger.With("test_node", n.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	b, err := broker.New(ctx, cfg, broker.Options{Logger: logger, Listener: ln, Listeners: others, Dial: n.links.dial,
		GossipAllowed: n.gossipLinks.allowed, RaftDial: n.raftLinks.dial})
	if err != nil {
		ln.Close()
		closeOthers()
		return fmt.Errorf("start broker: %w", err)
	}
	n.Broker = b
	n.addr = b.Addr()
	for _, l := range cfg.KafkaListeners()[1:] {
		if n.listenerAddrs == nil {
			n.listenerAddrs = map[string]string{}
		}
		n.listenerAddrs[l.Name] = b.ListenerAddr(l.Name)
	}
	return nil
}

// ListenerAddr is the address of the node's Kafka listener named name
// (upper case), the first one's included.
func (n *Node) ListenerAddr(name string) string {
	if a := n.Broker.ListenerAddr(name); a != "" {
		return a
	}
	return n.listenerAddrs[name]
}

// ClientOn returns a franz-go client seeded with the node's listener
// named name, closed at the end of the test. A listener speaking TLS or
// SASL needs the matching opts (kgo.DialTLSConfig, kgo.SASL).
func (n *Node) ClientOn(name string, opts ...kgo.Opt) *kgo.Client {
	n.t.Helper()
	addr := n.ListenerAddr(name)
	if addr == "" {
		n.t.Fatalf("sluicetest: node has no listener %s", name)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		n.t.Fatalf("sluicetest: client: %v", err)
	}
	n.t.Cleanup(cl.Close)
	return cl
}

// Addr is the node's Kafka listener address.
func (n *Node) Addr() string { return n.addr }

// Restart stops the node cleanly and starts it again on the same port and
// data directory.
func (n *Node) Restart() {
	n.t.Helper()
	if err := n.Broker.Close(); err != nil {
		n.t.Fatalf("sluicetest: close: %v", err)
	}
	n.start(n.addr)
}

// CrashRestart stops the node without syncing, checkpointing or marking
// the shutdown clean, then starts it again, so start-up runs recovery.
func (n *Node) CrashRestart() {
	n.t.Helper()
	n.Broker.Crash()
	n.start(n.addr)
}

// Stop stops the node cleanly without restarting it.
func (n *Node) Stop() {
	n.t.Helper()
	if err := n.Broker.Close(); err != nil {
		n.t.Fatalf("sluicetest: close: %v", err)
	}
}

// Client returns a franz-go client seeded with this node, closed at the end
// of the test.
func (n *Node) Client(opts ...kgo.Opt) *kgo.Client {
	n.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.addr)}, opts...)...)
	if err != nil {
		n.t.Fatalf("sluicetest: client: %v", err)
	}
	n.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client for this node.
func (n *Node) Admin(opts ...kgo.Opt) *kadm.Client {
	return kadm.NewClient(n.Client(opts...))
}

// WaitFor polls cond until it returns nil or the timeout passes, then fails
// the test with cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %v", timeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func logLevel() slog.Level {
	switch strings.ToLower(os.Getenv("SLUICE_TEST_LOG")) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
