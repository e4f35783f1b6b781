package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"
)

// Reconciling membership with the metadata, on the active controller only.
// Each step reads the current image, decides with the pure functions of
// election.go and writes one command; a failed step is logged and tried
// again on the next reconcile.

// raftMembershipTimeout bounds adding or removing a non-voter.
const raftMembershipTimeout = 5 * time.Second

// reconcile brings the image in line with membership: brokers whose
// session is over are fenced, heartbeating members are registered and
// unfenced (and non-voters added to raft), and offline partitions that
// can elect a leader do so.
func (c *Controller) reconcile(ctx context.Context) {
	members := c.members()
	c.reconcileMetadata(ctx, members)
	// Raft membership changes wait for a commit; they need no decide lock,
	// and admin operations should not queue behind them.
	c.reconcileNonVoters(members)
}

// reconcileMetadata writes the registrations, fences, unfences and
// elections that broker sessions call for. serf supplies each member's
// endpoint and incarnation; whether a broker is alive is its session's
// (session.go), so serf's verdict alone fences nobody.
func (c *Controller) reconcileMetadata(ctx context.Context, members []member) {
	c.decide.Lock()
	defer c.decide.Unlock()
	if c.requireLeader() != nil {
		return
	}
	down := c.unavailable(c.Image(), members)
	now := time.Now()
	for _, m := range members {
		if down[m.ID] || m.Status == memberLeft {
			continue
		}
		// A lone node's view of itself needs no heartbeat; a gossiped
		// member is registered and unfenced only while it heartbeats.
		if m.Gossiped && !c.sessions.heartbeating(m.ID, m.Incarnation, now) {
			continue
		}
		if err := c.reconcileAlive(ctx, m, down); err != nil {
			c.log.Warn("reconcile alive member failed", "broker", m.ID, "err", err)
		}
	}
	for id := range down {
		if err := c.fenceBroker(ctx, id, down, false); err != nil {
			c.log.Warn("fence broker failed", "broker", id, "err", err)
		}
	}
	if err := c.reconcileOfflineReplicas(ctx, down); err != nil {
		c.log.Warn("recording offline log dirs failed", "err", err)
	}
	if err := c.electOfflineLocked(ctx, down); err != nil {
		c.log.Warn("offline partition election failed", "err", err)
	}
	if err := c.completeReassignmentsLocked(ctx, down); err != nil {
		c.log.Warn("completing partition reassignments failed", "err", err)
	}
}

// liveness returns who may lead or stay in sync according to img, with the
// brokers in down treated as fenced already.
func liveness(img *Image, down map[int32]bool) liveFunc {
	return func(id int32) bool {
		b := img.Brokers[id]
		return b != nil && !b.Fenced && !down[id]
	}
}

// unclean returns the unclean election policy of the current image.
func (c *Controller) unclean(img *Image) func(*Topic) bool {
	return uncleanPolicy(img, c.cfg.NodeID, c.cfg.UncleanLeaderElection)
}

// minISR returns each topic's effective min.insync.replicas in img.
func (c *Controller) minISR(img *Image) func(*Topic) int {
	return minISRPolicy(img, c.cfg.NodeID, c.cfg.MinInsyncReplicas)
}

// reconcileAlive registers member m if the image does not hold its current
// endpoint (or, for a gossiped member, its current process) and unfences
// it, electing it leader of the offline partitions it is in sync for.
// Decide must be held.
//
// A lone node re-registers only when its endpoint changed, so restarts do
// not grow the log. A gossiped member re-registers on every process start,
// getting a new broker epoch as in KRaft; the new process's Open waits for
// that registration to know it has caught up.
func (c *Controller) reconcileAlive(ctx context.Context, m member, down map[int32]bool) error {
	if err := c.requireLeader(); err != nil {
		return fmt.Errorf("controller: register broker %d: %w", m.ID, err)
	}
	b := c.Image().Brokers[m.ID]
	if m.Gossiped && b != nil && !b.Fenced && b.Incarnation != m.Incarnation {
		// A new process of a broker the image still shows alive: it
		// restarted faster than failure detection, and its disk may have
		// lost what it had acknowledged. Fence the old process first, so
		// the broker leaves every ISR and leads nothing it did not win
		// back by an election below; it rejoins ISRs by catching up.
		if err := c.fenceBroker(ctx, m.ID, down, false); err != nil {
			return fmt.Errorf("controller: fence previous process of broker %d: %w", m.ID, err)
		}
		b = c.Image().Brokers[m.ID]
	}
	if m.Gossiped && b != nil && b.Incarnation != m.Incarnation && !m.CleanShutdown {
		// The new process follows an unclean shutdown: its log may have
		// lost records it held, so it leaves every ISR and ELR before it
		// is unfenced (KIP-966; elr.go).
		if err := c.removeUncleanReplica(ctx, m.ID, down); err != nil {
			return fmt.Errorf("controller: unclean shutdown of broker %d: %w", m.ID, err)
		}
	}
	if b == nil || b.Host != m.Host || b.Port != m.Port || b.Rack != m.Rack || !slices.Equal(b.Endpoints, m.Endpoints) ||
		(m.Gossiped && b.Incarnation != m.Incarnation) {
		err := c.apply(ctx, registerBrokerCmd{
			ID:          m.ID,
			Host:        m.Host,
			Port:        m.Port,
			Rack:        m.Rack,
			Endpoints:   m.Endpoints,
			Incarnation: m.Incarnation,
			// A returning broker stays fenced until the unfence below,
			// which also elects it where that is now possible.
			Fenced: b != nil && b.Fenced,
		})
		if err != nil {
			return fmt.Errorf("controller: register broker %d: %w", m.ID, err)
		}
	}
	img := c.Image()
	b = img.Brokers[m.ID]
	if !b.Fenced || (b.ShutDown && b.Incarnation == m.Incarnation) {
		return nil // unfenced, or this very process asked to be fenced
	}
	up := func(id int32) bool { return id == m.ID || liveness(img, down)(id) }
	err := c.apply(ctx, unfenceBrokerCmd{
		ID:      m.ID,
		Epoch:   b.Epoch,
		Changes: planOfflineElections(img, up, c.unclean(img), c.minISR(img)),
	})
	if err != nil {
		return fmt.Errorf("controller: unfence broker %d: %w", m.ID, err)
	}
	c.log.Info("unfenced broker", "broker", m.ID, "epoch", b.Epoch)
	return nil
}

// fenceBroker fences broker id, removing it from every ISR and moving the
// leadership of its partitions, in one command. down lists other brokers
// known to be dead, which are not elected. A controlled fence is the
// broker's own request and applies even to a broker fenced already (to
// mark it shut down). Decide must be held.
func (c *Controller) fenceBroker(ctx context.Context, id int32, down map[int32]bool, controlled bool) error {
	img := c.Image()
	b := img.Brokers[id]
	if b == nil || (b.Fenced && (!controlled || b.ShutDown)) {
		return nil
	}
	gone := map[int32]bool{id: true}
	for d := range down {
		gone[d] = true
	}
	changes := planRemoveReplica(img, id, liveness(img, gone), c.unclean(img), c.minISR(img))
	err := c.apply(ctx, fenceBrokerCmd{ID: id, Epoch: b.Epoch, Changes: changes, Controlled: controlled})
	if err != nil {
		return err
	}
	c.log.Info("fenced broker", "broker", id, "epoch", b.Epoch, "controlled", controlled, "partitions_changed", len(changes))
	return nil
}

// removeUncleanReplica takes broker id, whose new process follows an
// unclean shutdown, out of every ISR and ELR in one command, electing
// where that moves a leadership; nothing is written while ELR is not
// tracked or no partition holds id. Decide must be held.
func (c *Controller) removeUncleanReplica(ctx context.Context, id int32, down map[int32]bool) error {
	img := c.Image()
	gone := map[int32]bool{id: true}
	for d := range down {
		gone[d] = true
	}
	changes := planUncleanShutdown(img, id, liveness(img, gone), c.unclean(img), c.minISR(img))
	if len(changes) == 0 {
		return nil
	}
	if err := c.apply(ctx, changePartitionsCmd{Changes: changes}); err != nil {
		return err
	}
	c.log.Info("removed uncleanly restarted broker from ISRs and ELRs", "broker", id, "partitions_changed", len(changes))
	return nil
}

// electOfflineLocked elects leaders for offline partitions that can have
// one now: an in-sync replica came back, or unclean election was enabled.
// Decide must be held.
func (c *Controller) electOfflineLocked(ctx context.Context, down map[int32]bool) error {
	img := c.Image()
	changes := planOfflineElections(img, liveness(img, down), c.unclean(img), c.minISR(img))
	if len(changes) == 0 {
		return nil
	}
	return c.apply(ctx, changePartitionsCmd{Changes: changes})
}

// reconcileNonVoters adds alive brokers that are not voters to raft as
// non-voters, so they replicate the metadata log, and removes those that
// left gracefully. Failed non-voters stay: raft backs off replicating to
// them and they catch up when they return.
func (c *Controller) reconcileNonVoters(members []member) {
	if c.gossip == nil || c.requireLeader() != nil {
		return
	}
	fut := c.node.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		c.log.Warn("read raft configuration failed", "err", err)
		return
	}
	servers := map[raft.ServerID]raft.Server{}
	for _, s := range fut.Configuration().Servers {
		servers[s.ID] = s
	}
	for _, m := range members {
		id := raftServerID(m.ID)
		s, inConfig := servers[id]
		// A voter of controller.quorum.voters is raft's own while it is
		// in the configuration; once RemoveRaftVoter took it out it is
		// a non-voter like any broker (quorum.go).
		if (c.cfg.voterAddr(m.ID) != "" && inConfig) || m.RaftAddr == "" {
			continue
		}
		switch {
		case m.Status == memberAlive && (!inConfig || s.Address != raft.ServerAddress(m.RaftAddr)):
			if err := c.node.raft.AddNonvoter(id, raft.ServerAddress(m.RaftAddr), 0, raftMembershipTimeout).Error(); err != nil {
				c.log.Warn("add raft non-voter failed", "broker", m.ID, "err", err)
			} else {
				c.log.Info("added raft non-voter", "broker", m.ID, "addr", m.RaftAddr)
			}
		case m.Status == memberLeft && inConfig && s.Suffrage != raft.Voter:
			if err := c.node.raft.RemoveServer(id, 0, raftMembershipTimeout).Error(); err != nil {
				c.log.Warn("remove raft non-voter failed", "broker", m.ID, "err", err)
			}
		}
	}
}
