package controller

import (
	"context"
	"sync"
	"time"
)

// The leadership loop, Consul's pattern: when raft makes this node leader,
// establishLeadership brings the image up to date and initialises a new
// cluster; then the loop reconciles membership with the metadata on a
// timer and whenever serf reports a change, until leadership is lost
// (revokeLeadership). Every decision is a command; the loop holds decide
// while deciding so admin operations see a consistent image.

// reconcileInterval bounds how long a missed or dropped serf event can
// leave the image out of step with membership.
const reconcileInterval = time.Second

// monitorLeadership follows raft's leadership notifications, running the
// leadership loop in its own goroutine for as long as this node leads so
// that a lost leadership can cancel it. It owns that goroutine and waits for
// it before returning.
func (c *Controller) monitorLeadership() {
	defer close(c.done)
	var stopLeading func() // non-nil while the leadership loop may run
	stepDown := func() {
		c.leaderReady.Store(false)
		if stopLeading != nil {
			stopLeading()
			stopLeading = nil
		}
	}
	for {
		select {
		case isLeader := <-c.notify:
			if !isLeader {
				stepDown()
				c.log.Info("lost controller leadership")
			} else if stopLeading == nil {
				stopLeading = c.startLeading()
			}
		case <-c.stop:
			stepDown()
			return
		}
	}
}

// startLeading runs the leadership loop in a goroutine and returns the
// function that cancels it and waits for it to end.
func (c *Controller) startLeading() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !c.establishLeadership(ctx) {
			return
		}
		defer c.revokeLeadership()
		c.leaderLoop(ctx)
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}

// establishLeadership prepares a new raft leader to act as active
// controller. The barrier makes the FSM apply every entry of earlier terms,
// so the image the controller decides on is complete; only then is the
// cluster initialised if this is its first leader.
func (c *Controller) establishLeadership(ctx context.Context) bool {
	start := time.Now()
	if err := c.node.raft.Barrier(0).Error(); err != nil {
		c.log.Warn("leadership barrier failed", "err", err)
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	if c.sessions != nil {
		// Every registered broker gets a full session with this
		// controller before it can be fenced (session.go).
		now := time.Now()
		c.sessions.start(now)
		c.seedPredecessor(now)
	}
	c.leaderReady.Store(true)
	if c.Image().ClusterID == "" {
		id := NewClusterID()
		c.decide.Lock()
		err := c.apply(ctx, initClusterCmd{ClusterID: id})
		c.decide.Unlock()
		if err != nil {
			c.log.Warn("initialise cluster failed", "err", err)
			c.leaderReady.Store(false)
			return false
		}
		c.log.Info("initialised new cluster", "cluster_id", id)
	}
	// Feature levels before any broker registers (features.go).
	if err := c.bootstrapFeatures(ctx); err != nil {
		c.log.Warn("finalize default feature levels failed", "err", err)
		c.leaderReady.Store(false)
		return false
	}
	c.log.Info("became active controller", "cluster_id", c.ClusterID(),
		"index", c.Image().Index, "took", time.Since(start))
	c.readyOnce.Do(func() { close(c.ready) })
	return true
}

// revokeLeadership stops this node deciding; raft already rejects its
// writes.
func (c *Controller) revokeLeadership() { c.leaderReady.Store(false) }

// leaderLoop reconciles at once, then on every poke, every
// reconcileInterval and when a broker session may expire, and checks
// leader balance on its own interval (leader_balance.go), until ctx ends.
func (c *Controller) leaderLoop(ctx context.Context) {
	t := time.NewTicker(reconcileInterval)
	defer t.Stop()
	sessionTimer := time.NewTimer(time.Hour)
	defer sessionTimer.Stop()
	balance, stopBalance := c.leaderBalanceTicker()
	defer stopBalance()
	for {
		c.reconcile(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.reconcileCh:
		case <-t.C:
		case <-c.scheduleSessionCheck(sessionTimer):
		case <-balance:
			c.balanceLeaders(ctx)
		}
	}
}

// pokeReconcile asks the leadership loop to reconcile soon; it never
// blocks, so serf's event goroutine can call it.
func (c *Controller) pokeReconcile() {
	select {
	case c.reconcileCh <- struct{}{}:
	default:
	}
}

// members returns the membership to reconcile against: serf's view in a
// cluster, this node alone otherwise.
func (c *Controller) members() []member {
	if c.gossip == nil {
		return []member{c.localMember()}
	}
	return c.gossip.members()
}

// registerSelf registers (or unfences) the lone node; in a cluster the
// leadership loop does this for every member, this node included.
func (c *Controller) registerSelf(ctx context.Context) error {
	c.decide.Lock()
	defer c.decide.Unlock()
	return c.reconcileAlive(ctx, c.localMember(), nil)
}
