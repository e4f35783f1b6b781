package controller

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memHeartbeats is an in-memory HeartbeatTransport for clusters of bare
// controllers: a heartbeat calls the target node's BrokerHeartbeat
// directly, over a "connection" (a context) per target that Close, or a
// cut, ends, as a closed TCP connection would.
type memHeartbeats struct {
	tc *testCluster

	mu    sync.Mutex
	conns map[int32]context.Context
	close map[int32]context.CancelFunc
	// cut drops every heartbeat, as a network cut would: silence, with
	// the connection left open.
	cut bool
}

func (tc *testCluster) heartbeatTransport() *memHeartbeats {
	return &memHeartbeats{tc: tc, conns: map[int32]context.Context{}, close: map[int32]context.CancelFunc{}}
}

func (m *memHeartbeats) Heartbeat(ctx context.Context, controllerID int32, hb Heartbeat) (HeartbeatReply, error) {
	target := m.tc.node(controllerID)
	m.mu.Lock()
	cut := m.cut
	conn := m.conns[controllerID]
	if conn == nil && target != nil && !cut {
		conn, m.close[controllerID] = context.WithCancel(context.Background())
		m.conns[controllerID] = conn
	}
	m.mu.Unlock()
	if cut {
		<-ctx.Done()
		return HeartbeatReply{}, ctx.Err()
	}
	if target == nil {
		return HeartbeatReply{}, fmt.Errorf("node %d is not running", controllerID)
	}
	return target.BrokerHeartbeat(ctx, hb, conn)
}

// setCut cuts or restores this node's heartbeats.
func (m *memHeartbeats) setCut(cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut = cut
}

func (m *memHeartbeats) Broken() <-chan struct{} { return nil }

func (m *memHeartbeats) ClosedByPeer() (int32, time.Time, bool) { return -1, time.Time{}, false }

func (m *memHeartbeats) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, cancel := range m.close {
		cancel()
		delete(m.conns, id)
		delete(m.close, id)
	}
	return nil
}
