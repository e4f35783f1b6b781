package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sync handles SyncGroup (v0–v5). Followers wait for the leader; the
// leader's assignment is persisted before anyone gets theirs.
func (c *Coordinator) Sync(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	fail := func(code int16) *kmsg.SyncGroupResponse {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp
	}
	g, code := c.existingGroup(req.Group, kerr.UnknownMemberID.Code)
	if code != 0 {
		return fail(code)
	}
	g.mu.Lock()
	resp, wait, persist := g.syncLocked(req)
	gen := g.generation
	g.mu.Unlock()
	if persist {
		err := c.persist(ctx, g)
		g.mu.Lock()
		if g.generation == gen && g.state == stateCompletingRebalance && !g.unloaded {
			if err != nil {
				code := appendErrorCode(err, false)
				for _, m := range g.members {
					g.failSyncLocked(m, code)
				}
				g.prepareRebalanceLocked(c.cfg.Now())
			} else {
				g.setStateLocked(stateStable, c.cfg.Now())
				for _, m := range g.members {
					if m.syncCh != nil {
						m.syncCh <- g.syncResponseLocked(req.Version, m)
						m.syncCh = nil
					}
				}
			}
		}
		g.mu.Unlock()
	}
	if wait == nil {
		return resp
	}
	select {
	case r := <-wait:
		r.Version = req.Version
		return r
	case <-ctx.Done():
		return fail(kerr.RebalanceInProgress.Code)
	}
}

func (g *group) syncLocked(req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse, bool) {
	fail := func(code int16) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse, bool) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp, nil, false
	}
	if code := g.checkMemberLocked(req.MemberID, req.InstanceID, req.Generation); code != 0 {
		return fail(code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case stateStable:
		return g.syncResponseLocked(req.Version, m), nil, false
	case stateCompletingRebalance:
		if m.syncCh != nil {
			g.failSyncLocked(m, kerr.RebalanceInProgress.Code)
		}
		ch := make(chan *kmsg.SyncGroupResponse, 1)
		m.syncCh = ch
		if m.id != g.leader {
			return nil, ch, false
		}
		// The leader's assignment: members it left out get an empty one.
		for _, o := range g.members {
			o.assignment = []byte{}
		}
		for _, a := range req.GroupAssignment {
			if o := g.members[a.MemberID]; o != nil {
				o.assignment = a.MemberAssignment
			}
		}
		return nil, ch, true
	}
	return fail(kerr.UnknownMemberID.Code)
}

func (g *group) syncResponseLocked(version int16, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType = &pt
	resp.Protocol = &p
	resp.MemberAssignment = m.assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp
}

// checkMemberLocked is the common check of Sync, Heartbeat and member
// commits: the group is served here, the member is known, the static
// instance is not fenced, and the generation is current.
func (g *group) checkMemberLocked(memberID string, instanceID *string, generation int32) int16 {
	switch {
	case g.unloaded:
		return kerr.NotCoordinator.Code
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	}
	m := g.members[memberID]
	if instanceID != nil {
		if id, ok := g.static[*instanceID]; ok && id != memberID {
			return kerr.FencedInstanceID.Code
		}
	}
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// Heartbeat handles Heartbeat (v0–v4): it keeps the member alive and tells
// it, with REBALANCE_IN_PROGRESS, that it must rejoin. While the group's
// partition loads it answers no error, as Kafka does.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	g, code := c.existingGroup(req.Group, kerr.UnknownMemberID.Code)
	if code == kerr.CoordinatorLoadInProgress.Code {
		// As Kafka's GroupCoordinatorService: while the partition
		// loads, the member is answered as if all were well (clients
		// take this code in a heartbeat answer as unexpected).
		return resp
	}
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	now := c.cfg.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateEmpty {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp
	}
	if code := g.checkMemberLocked(req.MemberID, req.InstanceID, req.Generation); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	m := g.members[req.MemberID]
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	if g.state == statePreparingRebalance {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
	}
	return resp
}

// Leave handles LeaveGroup (v0–v5; v3+ batches members, KIP-345, and may
// name a static member by instance id alone).
func (c *Coordinator) Leave(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	result := func(code int16) *kmsg.LeaveGroupResponse {
		if req.Version < 3 {
			resp.ErrorCode = code
			return resp
		}
		for _, lm := range members {
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID, ErrorCode: code})
		}
		return resp
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	g, err := c.group(req.Group, false)
	if err != nil {
		resp.ErrorCode = errCode(err)
		return resp
	}
	if g == nil {
		return result(kerr.UnknownMemberID.Code)
	}
	now := c.cfg.Now()
	g.mu.Lock()
	switch {
	case g.unloaded:
		g.mu.Unlock()
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp
	case g.state == stateDead:
		g.mu.Unlock()
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	for _, lm := range members {
		code := g.leaveLocked(now, lm)
		if req.Version < 3 {
			resp.ErrorCode = code
			continue
		}
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID, ErrorCode: code})
	}
	dirty := g.takeDirtyLocked()
	g.mu.Unlock()
	if dirty {
		c.persist(ctx, g)
	}
	return resp
}

func (g *group) leaveLocked(now time.Time, lm kmsg.LeaveGroupRequestMember) int16 {
	id := lm.MemberID
	if lm.InstanceID != nil {
		known, ok := g.static[*lm.InstanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if id != "" && id != known {
			return kerr.FencedInstanceID.Code
		}
		id = known
	}
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		g.tryCompleteJoinLocked(now)
		return 0
	}
	if g.members[id] == nil {
		return kerr.UnknownMemberID.Code
	}
	g.removeAndRebalanceLocked(id, now)
	return 0
}
