package controller

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// The sending side of broker sessions (session.go): every node of a
// cluster heartbeats to the active controller every HeartbeatInterval,
// in-process when it is the active controller itself, otherwise through
// Config.Heartbeats, which the broker implements as one long-lived
// connection to the controller channel on the active controller's
// controller listener (channel.go) carrying BrokerHeartbeat requests
// (KIP-631's API 63).
//
// The node also remembers when the last heartbeat that the controller
// answered was sent. A broker that has not had one answered for longer
// than its session timeout has been fenced by now, or will be at any
// moment, and another replica elected; it must stop acknowledging
// acks=all writes as leader (ControllerSessionLapsed). Counting from the
// time the heartbeat was sent, not answered, makes the broker give up no
// later than the controller can fence it.

// Default timings, used when Config leaves them zero; the broker passes
// broker.session.timeout.ms and broker.heartbeat.interval.ms, whose
// sluice defaults are the same (config/broker_keys.go).
//
// Kafka's defaults are 9 s and 2 s. sluice detects a killed process through
// its closed heartbeat connection, so the session timeout only bounds
// silence: a network cut, a paused process or a dead host. 3 s keeps the
// unavailability of a partition whose leader was cut off to a few seconds,
// and is six heartbeat intervals, so a broker on a loaded two-CPU machine
// that misses a few heartbeats (or is descheduled for a second) is not
// fenced. A heartbeat is a few dozen bytes; two per second per broker
// cost nothing.
const (
	DefaultSessionTimeout    = 3 * time.Second
	DefaultHeartbeatInterval = 500 * time.Millisecond
)

// HeartbeatTransport carries this node's heartbeats to the active
// controller when that is another node. An implementation keeps one
// connection per controller open between heartbeats (the controller
// learns from its closing that this process is gone), redials at once
// when it breaks, and must be safe for use by one goroutine at a time.
type HeartbeatTransport interface {
	// Heartbeat sends hb to node controllerID, the active controller,
	// and returns its answer; the transport knows where its controller
	// listener is. An error is a transport failure or
	// the controller's refusal (NOT_CONTROLLER), wrapping the kerr code.
	// It returns when ctx ends.
	Heartbeat(ctx context.Context, controllerID int32, hb Heartbeat) (HeartbeatReply, error)
	// ClosedByPeer reports the controller whose end of a heartbeat
	// connection closed most recently, and when the closing was seen;
	// ok is false if none did. A process's kernel closes its connections
	// when it dies, so this is how a node that becomes controller knows
	// its predecessor's process is gone.
	ClosedByPeer() (controllerID int32, at time.Time, ok bool)
	// Broken returns a channel that is closed once the current connection
	// has failed (the controller's side closed it, say), or nil if there
	// is no connection; the heartbeat loop then sends at once, so a live
	// broker is back on a new connection well within the controller's
	// grace for a closed one. It is not called during Heartbeat.
	Broken() <-chan struct{}
	// Close closes the connection.
	Close() error
}

// heartbeater is this node's sending side.
type heartbeater struct {
	interval, timeout time.Duration
	transport         HeartbeatTransport
	// lastContact is the UnixNano send time of the newest heartbeat the
	// active controller answered; 0 before the first.
	lastContact atomic.Int64
	// controllerFenced is the active controller's latest answer.
	controllerFenced atomic.Bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// errNoHeartbeatTransport is what a heartbeat to another node fails with
// when the node has no transport (controller-only tests).
var errNoHeartbeatTransport = errors.New("controller: no heartbeat transport")

// startHeartbeats starts the heartbeat loop of a clustered node.
func (c *Controller) startHeartbeats() {
	h := &heartbeater{
		interval:  c.cfg.HeartbeatInterval,
		timeout:   c.cfg.SessionTimeout,
		transport: c.cfg.Heartbeats,
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	c.heartbeats = h
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		c.heartbeatLoop(ctx, h)
	}()
}

// stopHeartbeats stops the loop and closes its connection; the active
// controller sees it close at once.
func (c *Controller) stopHeartbeats() {
	h := c.heartbeats
	if h == nil {
		return
	}
	h.cancel()
	h.wg.Wait()
	if h.transport != nil {
		if err := h.transport.Close(); err != nil {
			c.log.Debug("closing heartbeat transport", "err", err)
		}
	}
}

// heartbeatLoop sends a heartbeat every interval until ctx ends. A failed
// heartbeat is retried after a short pause rather than a whole interval:
// a new controller, or a redial, should not cost the session an interval.
func (c *Controller) heartbeatLoop(ctx context.Context, h *heartbeater) {
	t := time.NewTimer(0)
	defer t.Stop()
	failures := 0
	for {
		var broken <-chan struct{}
		if h.transport != nil {
			broken = h.transport.Broken()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-broken:
		}
		wait := h.interval
		if err := c.sendHeartbeat(ctx, h); err != nil {
			failures++
			if failures == 1 || failures%20 == 0 {
				c.log.Info("heartbeat to the active controller failed", "controller", c.ActiveControllerID(), "failures", failures, "err", err)
			}
			wait = min(h.interval, 50*time.Millisecond*time.Duration(failures))
		} else {
			if failures > 0 {
				c.log.Info("heartbeats to the active controller answered again", "controller", c.ActiveControllerID(), "after_failures", failures)
			}
			failures = 0
		}
		t.Reset(wait)
	}
}

// errNoController is a heartbeat sent while no controller is known.
var errNoController = errors.New("controller: no active controller known")

// sendHeartbeat sends one heartbeat and records the contact if the active
// controller answered it.
func (c *Controller) sendHeartbeat(ctx context.Context, h *heartbeater) error {
	id := c.ActiveControllerID()
	if id < 0 {
		return errNoController
	}
	hb := Heartbeat{BrokerID: c.cfg.NodeID, BrokerEpoch: -1, Incarnation: c.incarnation, MetadataOffset: c.MetadataLogEnd()}
	if addr, lid := c.node.raft.LeaderWithID(); nodeIDOf(lid) == id {
		hb.ControllerAddr = string(addr)
	}
	if b := c.Image().Brokers[c.cfg.NodeID]; b != nil && b.Incarnation == c.incarnation {
		hb.BrokerEpoch = b.Epoch
	}
	if c.cfg.OfflineReplicas != nil {
		hb.Offline = c.cfg.OfflineReplicas()
	}
	sent := time.Now()
	var (
		reply HeartbeatReply
		err   error
	)
	switch {
	case id == c.cfg.NodeID:
		reply, err = c.BrokerHeartbeat(ctx, hb, nil)
	case h.transport == nil:
		err = errNoHeartbeatTransport
	default:
		// A heartbeat must be answered well within the session; one
		// that is not is retried (on the same connection).
		rctx, cancel := context.WithTimeout(ctx, max(h.interval, h.timeout/3))
		reply, err = h.transport.Heartbeat(rctx, id, hb)
		cancel()
	}
	if err != nil {
		return err
	}
	h.lastContact.Store(sent.UnixNano())
	h.controllerFenced.Store(reply.Fenced)
	return nil
}

// seedPredecessor tells a new active controller's session table that the
// previous controller's process is gone, if this node saw its heartbeat
// connection to it close within the last session: that broker is then
// fenced as soon as serf confirms it or the grace for a closed connection
// passes, instead of after the full session every other broker gets.
func (c *Controller) seedPredecessor(now time.Time) {
	h := c.heartbeats
	if h == nil || h.transport == nil {
		return
	}
	id, at, ok := h.transport.ClosedByPeer()
	if !ok || id == c.cfg.NodeID || now.Sub(at) > c.cfg.SessionTimeout {
		return
	}
	c.sessions.seedClosed(id, at)
	c.log.Info("previous controller's heartbeat connection closed; fencing it unless it heartbeats", "broker", id, "closed_ago", now.Sub(at))
}

// ControllerSessionLapsed reports whether this broker has gone longer than
// its session timeout without the active controller answering a
// heartbeat. Such a broker has been fenced by now, or is about to be, and
// another replica elected: it must not acknowledge acks=all writes as a
// leader. A node that is a cluster of one never lapses.
func (c *Controller) ControllerSessionLapsed() bool {
	h := c.heartbeats
	if h == nil {
		return false
	}
	last := h.lastContact.Load()
	return last == 0 || time.Since(time.Unix(0, last)) > h.timeout
}
