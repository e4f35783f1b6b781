package controller

import (
	"context"
	"testing"
	"time"
)

// The session table decides from heartbeats and connection closes alone;
// serf's verdict only shortens the wait after a close.
func TestSessionTableExpiry(t *testing.T) {
	const timeout = 3 * time.Second
	t0 := time.Unix(1000, 0)
	inc := [16]byte{1}
	conn, closeConn := context.WithCancel(context.Background())
	defer closeConn()
	tests := []struct {
		name  string
		steps func(st *sessionTable)
		at    time.Duration // after t0
		// serfDown is what serf says of broker 1.
		serfDown               bool
		wantExpired, wantAlive bool
	}{
		{name: "new controller gives a full session", steps: func(*sessionTable) {}, at: timeout, wantExpired: false},
		{name: "no heartbeat for a session after takeover", steps: func(*sessionTable) {}, at: timeout + time.Millisecond, wantExpired: true},
		{name: "serf failure alone fences no one who heartbeats", serfDown: true,
			steps: func(st *sessionTable) { st.heartbeat(1, inc, conn, t0.Add(time.Second)) }, at: 2 * time.Second, wantAlive: true},
		{name: "silence for a session", steps: func(st *sessionTable) { st.heartbeat(1, inc, conn, t0) }, at: timeout + time.Millisecond, wantExpired: true},
		{name: "closed connection within the grace", steps: func(st *sessionTable) {
			st.heartbeat(1, inc, conn, t0)
			st.connClosed(1, conn, t0.Add(100*time.Millisecond))
		}, at: 200 * time.Millisecond},
		{name: "closed connection after the grace", steps: func(st *sessionTable) {
			st.heartbeat(1, inc, conn, t0)
			st.connClosed(1, conn, t0.Add(100*time.Millisecond))
		}, at: 100*time.Millisecond + sessionClosedGrace, wantExpired: true},
		{name: "closed connection and serf agrees", serfDown: true, steps: func(st *sessionTable) {
			st.heartbeat(1, inc, conn, t0)
			st.connClosed(1, conn, t0.Add(100*time.Millisecond))
		}, at: 150 * time.Millisecond, wantExpired: true},
		{name: "back on a new connection", serfDown: true, steps: func(st *sessionTable) {
			st.heartbeat(1, inc, conn, t0)
			st.connClosed(1, conn, t0.Add(100*time.Millisecond))
			st.heartbeat(1, inc, nil, t0.Add(150*time.Millisecond))
		}, at: time.Second, wantAlive: true},
		{name: "a stale close of an old connection is ignored", steps: func(st *sessionTable) {
			st.heartbeat(1, inc, conn, t0)
			st.heartbeat(1, inc, nil, t0.Add(50*time.Millisecond))
			st.connClosed(1, conn, t0.Add(100*time.Millisecond))
		}, at: time.Second, wantAlive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newSessionTable(timeout)
			st.start(t0)
			tt.steps(st)
			now := t0.Add(tt.at)
			if got := st.expired(1, now, tt.serfDown); got != tt.wantExpired {
				t.Errorf("expired = %v, want %v", got, tt.wantExpired)
			}
			if got := st.heartbeating(1, inc, now); got != tt.wantAlive {
				t.Errorf("heartbeating = %v, want %v", got, tt.wantAlive)
			}
			if st.heartbeating(1, [16]byte{2}, now) {
				t.Error("another incarnation counts as heartbeating")
			}
		})
	}
}
