package controller

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"
)

// waitGossip polls cond for up to 20s.
func waitGossip(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Gossip keys: the first encrypts, every key decrypts. Nodes holding both
// keys in either order (the middle of a rolling rotation) form one
// cluster; a node with a key outside the ring, or with none, is refused
// and never becomes a member.
func TestGossipKeyring(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16), bytes.Repeat([]byte{3}, 32)
	logger := slog.New(slog.DiscardHandler)
	start := func(id int32, keys [][]byte, seeds ...string) *gossip {
		t.Helper()
		g, err := startGossip("127.0.0.1:0", id, map[string]string{}, seeds, func() {}, nil, keys, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.shutdown(false) })
		return g
	}
	a := start(1, [][]byte{k1, k2})
	b := start(2, [][]byte{k2, k1}, a.addr())
	waitGossip(t, "nodes holding both keys form a cluster", func() error {
		if a.serf.NumNodes() != 2 || b.serf.NumNodes() != 2 {
			return fmt.Errorf("members: %d and %d", a.serf.NumNodes(), b.serf.NumNodes())
		}
		return nil
	})

	// A key outside the ring.
	c := start(3, [][]byte{k3}, a.addr())
	waitGossip(t, "the refusal", func() error {
		if n := c.logw.refused.Load() + a.logw.refused.Load(); n < 3 {
			return fmt.Errorf("%d refusals", n)
		}
		return nil
	})
	if n := a.serf.NumNodes(); n != 2 {
		t.Errorf("a node with another key joined: %d members", n)
	}
	// Without keys at all: refused outright.
	d := start(4, nil, a.addr())
	before := a.logw.refused.Load()
	waitGossip(t, "the plaintext refusal", func() error {
		if a.logw.refused.Load() == before {
			return fmt.Errorf("no refusal yet")
		}
		return nil
	})
	if a.serf.NumNodes() != 2 || d.serf.NumNodes() != 1 {
		t.Errorf("a plaintext node joined: %d and %d members", a.serf.NumNodes(), d.serf.NumNodes())
	}
}
