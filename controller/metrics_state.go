package controller

// What the broker's metrics listener reads of the controller at scrape time
// (broker/metrics_state*.go): the raft state of this node, serf's members
// by state, and the leader elections this node applied while it was the
// active controller. Nothing here is on a request path: the election count
// is two atomic adds per metadata command that moves a leader.

import (
	"slices"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// electionCounts are the leader elections applied on this node while it
// led raft, so a cluster-wide sum counts each election once (the active
// controller applies every command while it leads). A leader change of an
// existing partition to a live leader is an election (a partition going
// offline is not); it is unclean when the new leader was in neither the
// partition's ISR nor its eligible leader replicas (KIP-966).
type electionCounts struct {
	raft           atomic.Pointer[raft.Raft]
	clean, unclean atomic.Uint64
}

// countElection notes in b whether old becoming p is an election.
func (b *imageBuilder) countElection(old, p *Partition) {
	if old == nil || p.Leader < 0 || p.Leader == old.Leader {
		return
	}
	b.elections++
	if !slices.Contains(old.ISR, p.Leader) && !slices.Contains(old.ELR, p.Leader) {
		b.unclean++
	}
}

// note adds the elections of an applied command if this node leads raft.
func (e *electionCounts) note(b *imageBuilder) {
	if b.elections == 0 {
		return
	}
	r := e.raft.Load()
	if r == nil || r.State() != raft.Leader {
		return
	}
	e.clean.Add(uint64(b.elections - b.unclean))
	e.unclean.Add(uint64(b.unclean))
}

// Elections returns the leader elections this node applied as the active
// controller since it started, all of them and the unclean ones.
func (c *Controller) Elections() (all, unclean uint64) {
	u := c.fsm.elections.unclean.Load()
	return c.fsm.elections.clean.Load() + u, u
}

// RaftStatus is this node's view of the metadata log (hashicorp/raft).
type RaftStatus struct {
	// State is raft's role: "leader", "follower", "candidate" or
	// "shutdown"; a non-voter is a follower.
	State string
	// LeaderID is the raft leader's node id, -1 when none is known.
	LeaderID int32
	// Term is raft's current term (KRaft's epoch).
	Term uint64
	// CommitIndex, AppliedIndex and LastIndex are raft indexes: the
	// highest committed entry this node knows, the last it applied to
	// the image, the last in its log.
	CommitIndex, AppliedIndex, LastIndex uint64
	// Voters and NonVoters count the latest raft configuration's servers
	// (a Staging server counts as a non-voter); Voter is whether this
	// node is one of the voters.
	Voters, NonVoters int
	Voter             bool
}

// RaftStatus reads this node's raft state.
func (c *Controller) RaftStatus() RaftStatus {
	r := c.node.raft
	st := RaftStatus{
		LeaderID:     c.ActiveControllerID(),
		Term:         r.CurrentTerm(),
		CommitIndex:  r.CommitIndex(),
		AppliedIndex: r.AppliedIndex(),
		LastIndex:    r.LastIndex(),
	}
	switch r.State() {
	case raft.Leader:
		st.State = "leader"
	case raft.Candidate:
		st.State = "candidate"
	case raft.Shutdown:
		st.State = "shutdown"
	default:
		st.State = "follower"
	}
	if servers, err := c.raftConfiguration(); err == nil {
		for _, s := range servers {
			if s.Suffrage == raft.Voter {
				st.Voters++
				st.Voter = st.Voter || s.ID == raftServerID(c.cfg.NodeID)
			} else {
				st.NonVoters++
			}
		}
	}
	return st
}

// GossipMembers counts the sluice members serf knows by state ("alive",
// "leaving", "left", "failed"); a lone node (no serf) counts itself alive.
func (c *Controller) GossipMembers() map[string]int {
	out := map[string]int{"alive": 0, "leaving": 0, "left": 0, "failed": 0}
	for _, m := range c.members() {
		switch m.Status {
		case memberAlive:
			out["alive"]++
		case memberLeaving:
			out["leaving"]++
		case memberLeft:
			out["left"]++
		case memberFailed:
			out["failed"]++
		}
	}
	return out
}
