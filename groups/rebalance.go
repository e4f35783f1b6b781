package groups

// The rebalance half of the classic state machine: join phases, their
// completion, member removal and the timers Tick steps.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// maxRebalanceTimeoutLocked is the longest rebalance timeout of the members,
// how long a join phase may last.
func (g *group) maxRebalanceTimeoutLocked() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// prepareRebalanceLocked starts a join phase. A group that was Empty waits
// group.initial.rebalance.delay.ms first so that members starting together
// land in one generation.
func (g *group) prepareRebalanceLocked(now time.Time) {
	if g.state == stateCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
			g.failSyncLocked(m, kerr.RebalanceInProgress.Code)
		}
	}
	rebalanceTimeout := g.maxRebalanceTimeoutLocked()
	if g.state == stateEmpty && g.cfg.InitialRebalanceDelay > 0 {
		g.initialDelay = true
		g.newMemberAdded = false
		g.joinDeadline = now.Add(g.cfg.InitialRebalanceDelay)
		g.delayRemaining = max(rebalanceTimeout-g.cfg.InitialRebalanceDelay, 0)
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(rebalanceTimeout)
	}
	g.setStateLocked(statePreparingRebalance, now)
}

// allJoinedLocked reports whether every member (and every member id handed
// out by KIP-394) is waiting in JoinGroup.
func (g *group) allJoinedLocked() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.joinCh == nil {
			return false
		}
	}
	return true
}

// tryCompleteJoinLocked ends the join phase early when everyone is in.
func (g *group) tryCompleteJoinLocked(now time.Time) {
	if g.state == statePreparingRebalance && !g.initialDelay && g.allJoinedLocked() {
		g.completeJoinLocked(now)
	}
}

// completeJoinLocked ends the join phase: dynamic members that did not
// rejoin are removed (static ones are kept, KIP-345), the generation moves
// on, a protocol is chosen, and every waiting member gets its JoinGroup
// answer, the leader with every member's metadata.
func (g *group) completeJoinLocked(now time.Time) {
	for id, m := range g.members {
		if m.joinCh == nil && m.instanceID == nil {
			g.removeLocked(id)
		}
	}
	if len(g.members) == 0 {
		g.generation++
		g.protocol = ""
		g.leader = ""
		g.setStateLocked(stateEmpty, now)
		g.dirty = true
		return
	}
	if l := g.members[g.leader]; l == nil || l.joinCh == nil {
		g.leader = ""
		for _, m := range g.sortedMembersLocked() {
			if m.joinCh != nil {
				g.leader = m.id
				break
			}
		}
		if g.leader == "" {
			// Only static members that have not rejoined: wait for them.
			g.joinDeadline = now.Add(g.maxRebalanceTimeoutLocked())
			return
		}
	}
	g.generation++
	g.protocol = g.selectProtocolLocked()
	g.setStateLocked(stateCompletingRebalance, now)
	g.syncDeadline = now.Add(g.maxRebalanceTimeoutLocked())
	for _, m := range g.members {
		m.assignment = nil
		if m.joinCh == nil {
			continue
		}
		resp := g.joinResponseLocked(m.joinVersion, m.id, m.id == g.leader, false)
		m.joinCh <- resp
		m.joinCh = nil
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
	}
}

// joinResponseLocked is a successful JoinGroup answer for member id; the
// leader's carries the members and their metadata for the chosen protocol.
func (g *group) joinResponseLocked(version int16, id string, withMembers, skipAssignment bool) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	pt, p := g.protocolType, g.protocol
	resp.ProtocolType = &pt
	resp.Protocol = &p
	resp.LeaderID = g.leader
	resp.MemberID = id
	resp.SkipAssignment = skipAssignment
	if withMembers {
		for _, m := range g.sortedMembersLocked() {
			rm := kmsg.NewJoinGroupResponseMember()
			rm.MemberID = m.id
			rm.InstanceID = m.instanceID
			rm.ProtocolMetadata = m.metadataFor(g.protocol)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp
}

// selectProtocolLocked picks the protocol every member supports that most
// members prefer; a tie goes to the leader's preference.
func (g *group) selectProtocolLocked() string {
	counts := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			counts[p.Name]++
		}
	}
	supported := func(name string) bool { return counts[name] == len(g.members) }
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if supported(p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", -1
	if l := g.members[g.leader]; l != nil {
		for _, p := range l.protocols {
			if supported(p.Name) && votes[p.Name] > bestVotes {
				best, bestVotes = p.Name, votes[p.Name]
			}
		}
	}
	return best
}

// supportsProtocolsLocked is Kafka's check that a joining member can be
// part of the group: the same protocol type and a protocol every current
// member supports.
func (g *group) supportsProtocolsLocked(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(ps) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	counts := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			counts[p.Name]++
		}
	}
	for _, p := range ps {
		if counts[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// removeLocked forgets a member, answering its waits with UNKNOWN_MEMBER_ID.
func (g *group) removeLocked(id string) {
	m := g.members[id]
	if m == nil {
		return
	}
	g.failJoinLocked(m, kerr.UnknownMemberID.Code)
	g.failSyncLocked(m, kerr.UnknownMemberID.Code)
	delete(g.members, id)
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == id {
		g.leader = ""
		for _, o := range g.sortedMembersLocked() {
			g.leader = o.id
			break
		}
	}
}

// removeAndRebalanceLocked removes a member that left or expired and moves
// the group on: a settled group rebalances, a join phase may now be complete.
func (g *group) removeAndRebalanceLocked(id string, now time.Time) {
	g.removeLocked(id)
	switch g.state {
	case stateStable, stateCompletingRebalance:
		g.prepareRebalanceLocked(now)
		g.tryCompleteJoinLocked(now)
	case statePreparingRebalance:
		g.tryCompleteJoinLocked(now)
	}
}

// tickLocked steps the group's timers to now.
func (g *group) tickLocked(now time.Time) {
	if g.unloaded || g.state == stateDead {
		return
	}
	for id, deadline := range g.pending {
		if !now.Before(deadline) {
			delete(g.pending, id)
			g.tryCompleteJoinLocked(now)
		}
	}
	for _, m := range g.sortedMembersLocked() {
		if g.members[m.id] != m || m.joinCh != nil || m.syncCh != nil {
			continue // gone already, or waiting and so alive
		}
		if !now.Before(m.heartbeatDeadline) {
			g.removeAndRebalanceLocked(m.id, now)
		}
	}
	switch g.state {
	case statePreparingRebalance:
		if now.Before(g.joinDeadline) {
			return
		}
		if g.initialDelay && g.newMemberAdded && g.delayRemaining > 0 {
			d := min(g.cfg.InitialRebalanceDelay, g.delayRemaining)
			g.delayRemaining = max(g.delayRemaining-d, 0)
			g.newMemberAdded = false
			g.joinDeadline = now.Add(d)
			return
		}
		g.initialDelay = false
		g.completeJoinLocked(now)
	case stateCompletingRebalance:
		if now.Before(g.syncDeadline) {
			return
		}
		var late []string
		for _, m := range g.members {
			if m.syncCh == nil {
				late = append(late, m.id)
			}
		}
		if len(late) == 0 {
			return
		}
		for _, id := range late {
			g.removeLocked(id)
		}
		g.prepareRebalanceLocked(now)
	}
}
