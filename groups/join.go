package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Join handles JoinGroup (v0–v9). It blocks until the group's join phase
// completes, ctx ends or the coordinator loses the group.
func (c *Coordinator) Join(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	v := req.Version
	if req.Group == "" {
		return joinError(v, kerr.InvalidGroupID.Code, req.MemberID)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.cfg.MinSessionTimeout || session > c.cfg.MaxSessionTimeout {
		return joinError(v, kerr.InvalidSessionTimeout.Code, req.MemberID)
	}
	g, err := c.group(req.Group, req.MemberID == "")
	if err != nil {
		return joinError(v, errCode(err), req.MemberID)
	}
	if g == nil {
		return joinError(v, kerr.UnknownMemberID.Code, req.MemberID)
	}
	g.mu.Lock()
	resp, wait, persist := g.joinLocked(c.cfg.Now(), req, clientID, clientHost)
	g.mu.Unlock()
	if persist {
		// A static member replaced its old id in a settled group: the new
		// id must be durable before it is handed out (KIP-345).
		if err := c.persist(ctx, g); err != nil {
			return joinError(v, appendErrorCode(err, false), req.MemberID)
		}
	}
	if wait == nil {
		return resp
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		return joinError(v, kerr.RebalanceInProgress.Code, req.MemberID)
	}
}

// joinLocked is JoinGroup's state machine step. It returns either an
// immediate response or a channel that the completion of the join phase
// answers on, and whether the group's metadata must be persisted first.
func (g *group) joinLocked(now time.Time, req *kmsg.JoinGroupRequest, clientID, clientHost string) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
	v := req.Version
	fail := func(code int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
		return joinError(v, code, req.MemberID), nil, false
	}
	if g.unloaded {
		return fail(kerr.NotCoordinator.Code)
	}
	if g.state == stateDead {
		return fail(kerr.CoordinatorNotAvailable.Code)
	}
	if g.share != nil {
		// A share group never takes classic members, as in Kafka.
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	if g.streams != nil {
		if len(g.streams.members) > 0 {
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		g.streams = nil // an empty streams group (held in memory only) becomes a classic one
		g.protocolType = ""
	}
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			// No online migration: a consumer group with members
			// does not take classic members.
			return fail(kerr.InconsistentGroupProtocol.Code)
		}
		// An empty consumer group becomes a classic one; its offsets stay.
		g.consumer = nil
		g.protocolType = ""
		g.wasConsumer = true
	}
	if !g.supportsProtocolsLocked(req.ProtocolType, req.Protocols) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	rebalanceTimeout := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if v == 0 || rebalanceTimeout <= 0 {
		rebalanceTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	}
	newMember := func(id string) *member {
		return &member{
			id: id, instanceID: req.InstanceID, clientID: clientID, clientHost: clientHost,
			sessionTimeout:   time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: rebalanceTimeout,
			protocols:        req.Protocols,
			protocolType:     req.ProtocolType,
		}
	}
	full := func() bool {
		return g.cfg.MaxGroupSize > 0 && len(g.members)+len(g.pending) >= g.cfg.MaxGroupSize
	}

	if req.MemberID == "" {
		if req.InstanceID != nil {
			if oldID, ok := g.static[*req.InstanceID]; ok {
				return g.replaceStaticLocked(now, req, oldID, newMember)
			}
		}
		if full() {
			return fail(kerr.GroupMaxSizeReached.Code)
		}
		id := newMemberID(clientID)
		if req.InstanceID != nil {
			id = newMemberID(*req.InstanceID)
		} else if v >= 4 {
			// KIP-394: hand out the id and make the client come back
			// with it, so a client that never returns leaves no member.
			g.pending[id] = now.Add(time.Duration(req.SessionTimeoutMillis) * time.Millisecond)
			return joinError(v, kerr.MemberIDRequired.Code, id), nil, false
		}
		return g.addMemberLocked(now, newMember(id), v)
	}

	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		return g.addMemberLocked(now, newMember(req.MemberID), v)
	}
	m := g.members[req.MemberID]
	if m == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	if req.InstanceID != nil && g.static[*req.InstanceID] != req.MemberID {
		return fail(kerr.FencedInstanceID.Code)
	}
	switch g.state {
	case statePreparingRebalance:
		return g.updateMemberLocked(now, m, req, v, rebalanceTimeout)
	case stateCompletingRebalance:
		if m.sameProtocols(req.Protocols) {
			// The member lost its JoinGroup answer: send it again.
			return g.joinResponseLocked(v, m.id, m.id == g.leader, false), nil, false
		}
		return g.updateMemberLocked(now, m, req, v, rebalanceTimeout)
	case stateStable:
		if m.id == g.leader || !m.sameProtocols(req.Protocols) {
			return g.updateMemberLocked(now, m, req, v, rebalanceTimeout)
		}
		// A follower with nothing new may go on to SyncGroup.
		return g.joinResponseLocked(v, m.id, false, false), nil, false
	}
	return fail(kerr.UnknownMemberID.Code)
}

// addMemberLocked adds a member and waits for the join phase.
func (g *group) addMemberLocked(now time.Time, m *member, version int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
	if len(g.members) == 0 {
		// The first member of an Empty group sets its protocol type.
		g.protocolType = m.protocolType
	}
	g.members[m.id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.newMemberAdded = true
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	return g.awaitJoinLocked(now, m, version)
}

// updateMemberLocked takes a known member's new protocols and rebalances.
func (g *group) updateMemberLocked(now time.Time, m *member, req *kmsg.JoinGroupRequest, version int16, rebalanceTimeout time.Duration) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
	m.protocols = req.Protocols
	m.rebalanceTimeout = rebalanceTimeout
	m.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	return g.awaitJoinLocked(now, m, version)
}

// awaitJoinLocked parks the member in the join phase, starting one if the
// group is not rebalancing yet.
func (g *group) awaitJoinLocked(now time.Time, m *member, version int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
	if m.joinCh != nil {
		// A second JoinGroup from the same member replaces the first.
		g.failJoinLocked(m, kerr.RebalanceInProgress.Code)
	}
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	m.joinCh = ch
	m.joinVersion = version
	if g.state != statePreparingRebalance {
		g.prepareRebalanceLocked(now)
	}
	g.tryCompleteJoinLocked(now)
	return nil, ch, false
}

// replaceStaticLocked handles a static member that comes back without its
// member id (a restarted process, KIP-345): it gets a new id, the old one is
// fenced, and a settled group does not rebalance when nothing changed.
func (g *group) replaceStaticLocked(now time.Time, req *kmsg.JoinGroupRequest, oldID string, newMember func(string) *member) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse, bool) {
	v := req.Version
	old := g.members[oldID]
	g.failJoinLocked(old, kerr.FencedInstanceID.Code)
	g.failSyncLocked(old, kerr.FencedInstanceID.Code)
	m := newMember(newMemberID(*req.InstanceID))
	m.assignment = old.assignment
	m.heartbeatDeadline = now.Add(m.sessionTimeout)
	delete(g.members, oldID)
	g.members[m.id] = m
	g.static[*req.InstanceID] = m.id
	if g.leader == oldID {
		g.leader = m.id
	}
	switch g.state {
	case stateStable:
		// Kafka rebalances only if the protocol the group would choose
		// now differs from the current one; new metadata alone does not.
		if g.selectProtocolLocked() == g.protocol {
			// Nothing changed: hand out the current generation. A
			// leader is told to skip the assignment (v9+) and still
			// gets the members so it can watch their metadata.
			isLeader := m.id == g.leader
			return g.joinResponseLocked(v, m.id, isLeader && v >= 9, isLeader && v >= 9), nil, true
		}
		return g.awaitJoinLocked(now, m, v)
	}
	return g.awaitJoinLocked(now, m, v)
}
