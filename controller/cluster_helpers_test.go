package controller

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// In-process multi-node clusters: every node is a real Controller with raft
// over TCP and serf on 127.0.0.1 ephemeral ports, each with its own temp
// dir, all in the test process.

// freeAddrs returns n distinct 127.0.0.1 addresses with ports that were
// free a moment ago. Voters must know each other's raft addresses before
// any starts, so the ports are reserved this way; serf binds UDP and TCP
// on its port. All n listeners are held open until every port is chosen:
// a port released at once can be handed out again by the next Listen,
// which gave one node the same port for raft and gossip.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	addrs := make([]string, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// freeAddr is freeAddrs for one address.
func freeAddr(t *testing.T) string {
	t.Helper()
	return freeAddrs(t, 1)[0]
}

type testCluster struct {
	t      *testing.T
	voters []Voter
	seeds  []string
	mu     sync.Mutex
	nodes  map[int32]*Controller
	cfgs   map[int32]Config
}

// newTestCluster starts voters 1..n concurrently and waits for every Open.
// All nodes get the same gossip.join list, each its own address included.
func newTestCluster(t *testing.T, n int, tweak func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, nodes: map[int32]*Controller{}, cfgs: map[int32]Config{}}
	addrs := freeAddrs(t, 2*n)
	for id := int32(1); id <= int32(n); id++ {
		tc.voters = append(tc.voters, Voter{ID: id, Addr: addrs[2*(id-1)]})
		tc.seeds = append(tc.seeds, addrs[2*(id-1)+1])
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range tc.voters {
		cfg := tc.config(tc.voters[i].ID, tc.seeds[i])
		if tweak != nil {
			tweak(&cfg)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tc.open(cfg); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(tc.closeAll)
	return tc
}

// config is node id's config with gossip on gossipAddr.
func (tc *testCluster) config(id int32, gossipAddr string) Config {
	cfg := testConfig(tc.t, filepath.Join(tc.t.TempDir(), fmt.Sprintf("node%d", id)))
	cfg.NodeID = id
	cfg.Port = 9090 + id
	cfg.Voters = tc.voters
	cfg.GossipAddr = gossipAddr
	cfg.GossipJoin = tc.seeds
	cfg.Heartbeats = tc.heartbeatTransport()
	return cfg
}

// open opens a node and records it; the cluster closes it at the end.
func (tc *testCluster) open(cfg Config) (*Controller, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := Open(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open node %d: %w", cfg.NodeID, err)
	}
	tc.mu.Lock()
	tc.nodes[cfg.NodeID], tc.cfgs[cfg.NodeID] = c, cfg
	tc.mu.Unlock()
	return c, nil
}

func (tc *testCluster) node(id int32) *Controller {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[id]
}

// running returns the nodes not stopped, by id.
func (tc *testCluster) running() map[int32]*Controller {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := map[int32]*Controller{}
	for id, c := range tc.nodes {
		out[id] = c
	}
	return out
}

// stop closes node id gracefully, or crashes it (no leadership transfer, no
// serf leave: the others must detect the failure).
func (tc *testCluster) stop(id int32, crash bool) {
	tc.mu.Lock()
	c := tc.nodes[id]
	delete(tc.nodes, id)
	tc.mu.Unlock()
	c.close(!crash)
}

func (tc *testCluster) closeAll() {
	for id := range tc.running() {
		tc.stop(id, false)
	}
}

// leader waits until every running node agrees on one active controller
// that is running and has established leadership, and returns its id.
func (tc *testCluster) leader(timeout time.Duration) int32 {
	tc.t.Helper()
	var id int32
	waitFor(tc.t, timeout, "an agreed active controller", func() bool {
		nodes := tc.running()
		id = -1
		for _, c := range nodes {
			got := c.ActiveControllerID()
			if got == -1 || (id != -1 && got != id) {
				return false
			}
			id = got
		}
		l, ok := nodes[id]
		return ok && l.leaderReady.Load()
	})
	return id
}

// waitFor polls cond until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitAllImages waits until cond holds for the image of every running node.
func (tc *testCluster) waitAllImages(timeout time.Duration, what string, cond func(*Image) bool) {
	tc.t.Helper()
	waitFor(tc.t, timeout, what+" on every node", func() bool {
		for _, c := range tc.running() {
			if !cond(c.Image()) {
				return false
			}
		}
		return true
	})
}
