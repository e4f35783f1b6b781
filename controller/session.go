package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Broker sessions: who is alive, as the active controller decides it.
//
// serf is how nodes find each other; the controller decides who is alive
// (KRaft's model: BrokerHeartbeat and broker.session.timeout.ms). Every
// broker of a cluster heartbeats to the active controller every
// HeartbeatInterval over one long-lived connection (heartbeat.go on the
// sending side, the broker's BrokerHeartbeat handler on this one). The
// active controller keeps a session per broker and fences a registered
// broker when
//
//   - its session expired: no heartbeat for SessionTimeout. That is what a
//     network cut, a paused process or a dead host look like: silence,
//     which can only be told from a slow broker by waiting;
//   - or its heartbeat connection closed and no heartbeat came on another
//     one within sessionClosedGrace, or serf also reports the member failed
//     or gone. A killed process's kernel closes its sockets at once, a
//     signal that cannot lie, so kill -9 still fails over in well under a
//     second; a live broker whose connection broke redials at once and is
//     back within the grace.
//
// serf's member events only make the leadership loop look sooner: a member
// serf declares failed that still heartbeats over an open connection is
// alive, so a gossip-only cut of the controller fences nobody, and a broker
// that cannot reach the controller is fenced although serf still sees it.
//
// A new active controller has seen no heartbeats yet, so it gives every
// registered broker a full session from the moment it took over before
// fencing it, as KRaft's controller does. A fenced broker is unfenced (and
// a new process registered) only once it heartbeats, from the incarnation
// serf gossips for it.
//
// The table takes the time from its callers so tests can step it.

// sessionClosedGrace is how long after a broker's heartbeat connection
// closed the controller waits for a heartbeat on a new connection before
// fencing it. The broker redials at once when its connection breaks, so a
// live broker is back within a few milliseconds; 300 ms leaves room for a
// loaded machine while keeping a kill -9 failover well below a second.
const sessionClosedGrace = 300 * time.Millisecond

// sessionTable is the active controller's view of broker sessions.
type sessionTable struct {
	timeout time.Duration

	mu sync.Mutex
	// since is when this node became active controller; a registered
	// broker without a session is alive until since+timeout.
	since    time.Time
	byBroker map[int32]*brokerSession
}

// brokerSession is one broker's latest heartbeat.
type brokerSession struct {
	incarnation   [16]byte
	lastHeartbeat time.Time
	// conn is the connection heartbeats arrive on (nil for the controller's
	// own broker, which heartbeats in-process); closedAt is when it closed,
	// zero while it is open.
	conn     context.Context
	closedAt time.Time
}

func newSessionTable(timeout time.Duration) *sessionTable {
	return &sessionTable{timeout: timeout, byBroker: map[int32]*brokerSession{}}
}

// start forgets every session: this node has just become active
// controller at now.
func (t *sessionTable) start(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.since = now
	t.byBroker = map[int32]*brokerSession{}
}

// heartbeat records a heartbeat of broker id's process inc, received at now
// on conn. It reports whether conn is new for this session, so the caller
// watches it for closing.
func (t *sessionTable) heartbeat(id int32, inc [16]byte, conn context.Context, now time.Time) (newConn bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byBroker[id]
	if s == nil {
		s = &brokerSession{}
		t.byBroker[id] = s
	}
	newConn = s.conn != conn
	s.incarnation, s.lastHeartbeat, s.conn = inc, now, conn
	if newConn {
		s.closedAt = time.Time{}
	}
	return newConn && conn != nil
}

// seedClosed records, on a fresh table, that broker id's heartbeat
// connection to the previous controller closed at at (seedPredecessor).
func (t *sessionTable) seedClosed(id int32, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byBroker[id] == nil {
		t.byBroker[id] = &brokerSession{lastHeartbeat: at, conn: closedConn, closedAt: at}
	}
}

// closedConn stands for a connection this controller never saw, which the
// seeded session of seedClosed had.
var closedConn = context.Background()

// connClosed records that conn closed at now. It reports whether conn was
// broker id's heartbeat connection, open until now.
func (t *sessionTable) connClosed(id int32, conn context.Context, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byBroker[id]
	if s == nil || s.conn != conn || !s.closedAt.IsZero() {
		return false
	}
	s.closedAt = now
	return true
}

// expired reports whether broker id's session is over at now: no
// heartbeat for the session timeout (counted from since for a broker
// that has not heartbeated to this controller yet), or its connection
// closed sessionClosedGrace ago, or closed at all when serfDown (serf
// reports the member failed or gone).
func (t *sessionTable) expired(id int32, now time.Time, serfDown bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byBroker[id]
	if s == nil {
		return now.Sub(t.since) > t.timeout
	}
	if !s.closedAt.IsZero() && (serfDown || now.Sub(s.closedAt) >= sessionClosedGrace) {
		return true
	}
	return now.Sub(s.lastHeartbeat) > t.timeout
}

// heartbeating reports whether process inc of broker id holds a live
// session at now: it heartbeated within the session timeout and its
// connection is open. Only such a broker is registered or unfenced.
func (t *sessionTable) heartbeating(id int32, inc [16]byte, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byBroker[id]
	return s != nil && s.incarnation == inc && s.closedAt.IsZero() && now.Sub(s.lastHeartbeat) <= t.timeout
}

// nextExpiry is the earliest time after now at which a session of one of
// ids may expire, or the zero time if none can.
func (t *sessionTable) nextExpiry(ids []int32, now time.Time) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var next time.Time
	consider := func(at time.Time) {
		if at.After(now) && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	for _, id := range ids {
		s := t.byBroker[id]
		switch {
		case s == nil:
			consider(t.since.Add(t.timeout + time.Millisecond))
		case !s.closedAt.IsZero():
			consider(s.closedAt.Add(sessionClosedGrace))
		default:
			consider(s.lastHeartbeat.Add(t.timeout + time.Millisecond))
		}
	}
	return next
}

// Heartbeat is one BrokerHeartbeat: which broker process is alive.
type Heartbeat struct {
	BrokerID int32
	// BrokerEpoch is the epoch of the broker's registration as its own
	// image shows it, or -1 before it has seen one.
	BrokerEpoch int64
	// Incarnation identifies the broker process (serf gossips the same).
	Incarnation [16]byte
	// MetadataOffset is the last index of the broker's metadata log
	// (BrokerHeartbeat's CurrentMetadataOffset), -1 if not reported;
	// DescribeQuorum reports it (quorum.go).
	MetadataOffset int64
	// ControllerAddr is the active controller's raft address, its
	// controller listener, as this node's raft knows it: the transport
	// dials it when controller.quorum.voters does not name the
	// controller (a voter added by AddRaftVoter).
	ControllerAddr string
	// Offline is the broker's failed log directories and the replicas
	// offline with them (log_dirs.go).
	Offline OfflineReport
}

// HeartbeatReply is the active controller's answer to a heartbeat.
type HeartbeatReply struct {
	// Fenced is true while the controller has this process fenced or not
	// yet registered.
	Fenced bool
}

// BrokerHeartbeat records hb on the active controller. conn is a context
// that ends when the connection the heartbeat came on closes (nil for the
// controller's own broker); the controller watches it, so a broker whose
// process dies is fenced at once. A node that is not the active
// controller answers NOT_CONTROLLER.
func (c *Controller) BrokerHeartbeat(ctx context.Context, hb Heartbeat, conn context.Context) (HeartbeatReply, error) {
	if err := ctx.Err(); err != nil {
		return HeartbeatReply{}, fmt.Errorf("%w: %v", kerr.RequestTimedOut, err)
	}
	if err := c.requireLeader(); err != nil || c.sessions == nil {
		return HeartbeatReply{}, errNotController
	}
	id := hb.BrokerID
	c.recordHeartbeatProgress(id, hb.MetadataOffset, time.Now())
	if c.sessions.heartbeat(id, hb.Incarnation, conn, time.Now()) {
		context.AfterFunc(conn, func() {
			if c.sessions.connClosed(id, conn, time.Now()) {
				c.log.Info("broker heartbeat connection closed", "broker", id)
				c.pokeReconcile()
			}
		})
	}
	b := c.Image().Brokers[id]
	fenced := b == nil || b.Fenced || b.Incarnation != hb.Incarnation
	if fenced {
		// Register or unfence it now rather than at the next tick.
		c.pokeReconcile()
	} else {
		c.noteOfflineReport(id, hb.Offline)
	}
	return HeartbeatReply{Fenced: fenced}, nil
}

// unavailable returns the registered brokers the active controller must
// not count on: those whose session is over. members is serf's view, used
// only as a hint that a closed heartbeat connection means a dead process.
func (c *Controller) unavailable(img *Image, members []member) map[int32]bool {
	down := map[int32]bool{}
	if c.sessions == nil {
		return down // a cluster of one: the only broker is this process
	}
	serfDown := map[int32]bool{}
	known := map[int32]bool{}
	for _, m := range members {
		known[m.ID] = true
		if m.Status == memberFailed || m.Status == memberLeft {
			serfDown[m.ID] = true
		}
	}
	now := time.Now()
	for id := range img.Brokers {
		if c.sessions.expired(id, now, serfDown[id] || !known[id]) {
			down[id] = true
		}
	}
	return down
}

// scheduleSessionCheck returns a channel that fires when the next session
// of a registered, unfenced broker may expire, so the leadership loop
// fences it on time rather than at its next periodic reconcile; nil (never
// fires) when there is nothing to wait for.
func (c *Controller) scheduleSessionCheck(timer *time.Timer) <-chan time.Time {
	if c.sessions == nil {
		return nil
	}
	var ids []int32
	for id, b := range c.Image().Brokers {
		if !b.Fenced {
			ids = append(ids, id)
		}
	}
	now := time.Now()
	next := c.sessions.nextExpiry(ids, now)
	if next.IsZero() {
		return nil
	}
	timer.Reset(next.Sub(now))
	return timer.C
}
