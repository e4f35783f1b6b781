package groups

// Streams group assignment: the target assignment computed when the
// group epoch moves, and the reconciliation of one member towards its
// target (Kafka 4.4's streams CurrentAssignmentBuilder):
//
//	Stable ──target epoch moved──▶ keep = assigned ∩ target (per kind)
//	                               revoke = assigned − target
//	                               add = target − keep − unreleased
//	  revoke ≠ ∅ and still owned:  UnrevokedTasks, same epoch, assigned = keep
//	  otherwise:                   epoch = target epoch, assigned = keep + add,
//	                               UnreleasedTasks if something was held back
//	UnrevokedTasks ──heartbeat no longer owns the revoked ones──▶ (as from Stable)
//	UnreleasedTasks ──every heartbeat──▶ (as from Stable)
//
// An active task is unreleased while another member owns it as active
// (assigned or pending revocation) or the member's own process still
// holds it as a standby or warm-up; a standby or warm-up task while the
// member's process holds the task in any role. So two members never run
// the same active task, and a process never holds two copies of a task.

import (
	"context"
	"time"
)

// bumpStreamsGroupLocked moves the group epoch and configures the
// topology against the topics that exist now; the target assignment of
// the new epoch follows at once unless the initial rebalance delay or the
// assignment interval holds it back (streams_delay.go).
func (c *Coordinator) bumpStreamsGroupLocked(g *group, settings StreamsGroupSettings, now time.Time) {
	sg := g.streams
	sg.configured = configure(sg.topology, c.topicsByName())
	sg.epoch++
	c.maybeAssignStreamsLocked(g, settings, now)
}

// assignStreamsLocked computes the target assignment of the group epoch
// (empty while the topology cannot be assigned).
func (c *Coordinator) assignStreamsLocked(g *group, settings StreamsGroupSettings, now time.Time) {
	sg := g.streams
	sg.configured = configure(sg.topology, c.topicsByName()) // the topics as they are now, after a delay
	var members []streamsAssignMember
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		members = append(members, streamsAssignMember{id: id, processID: m.processID, clientTags: m.clientTags, previous: sg.target[id]})
	}
	tasks := sg.configured.tasks
	if tasks == nil {
		tasks = map[string]int32{}
	}
	sg.target = assignStreamsTasks(members, tasks, settings.NumStandbyReplicas, settings.RackAwareTags)
	sg.assignedStandbys = settings.NumStandbyReplicas
	sg.assignmentEpoch = sg.epoch
	sg.assignedAt = now
}

// reconcileStreamsMemberLocked moves m towards its target. owned is what
// the heartbeat says the member owns, nil when it left its tasks out
// (then it still owns everything it was given).
func (c *Coordinator) reconcileStreamsMemberLocked(g *group, m *streamsMember, owned *streamsTasks, now time.Time) {
	sg := g.streams
	stillOwnsAny := func(set streamsTasks) bool {
		if owned == nil {
			return !set.empty()
		}
		for _, pair := range [][2]taskSet{{set.active, owned.active}, {set.standby, owned.standby}, {set.warmup, owned.warmup}} {
			for sub, ps := range pair[0] {
				for p := range ps {
					if pair[1][sub][p] {
						return true
					}
				}
			}
		}
		return false
	}
	targetEpoch, target := sg.targetOf(m.id)
	switch m.state {
	case memberStable:
		if m.epoch == targetEpoch {
			return
		}
	case memberUnrevokedPartitions:
		if stillOwnsAny(m.pending) {
			return
		}
	}

	// Who holds what, apart from m.
	activeOwner := make(map[taskID]string)           // task → member id
	processHolds := make(map[taskID]map[string]bool) // task → processes holding it as standby or warm-up
	activeProcess := make(map[taskID]string)         // task → process of its active owner
	for id, o := range sg.members {
		if id == m.id {
			continue
		}
		for _, set := range []taskSet{o.assigned.active, o.pending.active} {
			for sub, ps := range set {
				for p := range ps {
					activeOwner[taskID{sub, p}] = id
					activeProcess[taskID{sub, p}] = o.processID
				}
			}
		}
		for _, set := range []taskSet{o.assigned.standby, o.pending.standby, o.assigned.warmup, o.pending.warmup} {
			for sub, ps := range set {
				for p := range ps {
					t := taskID{sub, p}
					if processHolds[t] == nil {
						processHolds[t] = make(map[string]bool)
					}
					processHolds[t][o.processID] = true
				}
			}
		}
	}
	unreleasedActive := func(t taskID) bool {
		return activeOwner[t] != "" || processHolds[t][m.processID]
	}
	unreleasedOther := func(t taskID) bool {
		return activeProcess[t] == m.processID && activeOwner[t] != "" || processHolds[t][m.processID]
	}

	var keep, revoke, add streamsTasks
	unreleased := false
	diff := func(current, want taskSet, keep, revoke, add *taskSet, isUnreleased func(taskID) bool) {
		for sub, ps := range current {
			for p := range ps {
				if want.has(sub, p) {
					keep.add(sub, p)
				} else {
					revoke.add(sub, p)
				}
			}
		}
		for sub, ps := range want {
			for p := range ps {
				if keep.has(sub, p) {
					continue
				}
				if isUnreleased(taskID{sub, p}) {
					unreleased = true
					continue
				}
				add.add(sub, p)
			}
		}
	}
	diff(m.assigned.active, target.active, &keep.active, &revoke.active, &add.active, unreleasedActive)
	diff(m.assigned.standby, target.standby, &keep.standby, &revoke.standby, &add.standby, unreleasedOther)
	diff(m.assigned.warmup, target.warmup, &keep.warmup, &revoke.warmup, &add.warmup, unreleasedOther)

	before := *m
	if !revoke.empty() && stillOwnsAny(revoke) {
		m.state = memberUnrevokedPartitions
		m.assigned, m.pending = keep, revoke
		if before.state != memberUnrevokedPartitions {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
	} else {
		for _, pair := range [][2]*taskSet{{&keep.active, &add.active}, {&keep.standby, &add.standby}, {&keep.warmup, &add.warmup}} {
			for sub, ps := range *pair[1] {
				for p := range ps {
					pair[0].add(sub, p)
				}
			}
		}
		m.assigned, m.pending = keep, streamsTasks{}
		if m.epoch != targetEpoch {
			m.previousEpoch, m.epoch = m.epoch, targetEpoch
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleasedPartitions
		}
	}
	if !before.assigned.equal(m.assigned) {
		sg.endpointEpoch++
	}
}

// refreshStreamsGroup re-configures a streams group's topology after
// topics changed: a change of its tasks moves the group epoch.
func (c *Coordinator) refreshStreamsGroup(ctx context.Context, g *group) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if !g.lockIfLive(func() bool { return g.streams != nil && g.streams.topology != nil }) {
		return
	}
	sg := g.streams
	cfg := configure(sg.topology, c.topicsByName())
	switch {
	case sg.configured == nil && sg.adoptLoadedConfiguration(cfg):
	case !cfg.sameAssignment(sg.configured):
		c.bumpStreamsGroupLocked(g, sg.settings, c.cfg.Now())
	default:
		sg.configured = cfg
	}
	g.mu.Unlock()
	if err := c.persistStreams(ctx, g); err != nil {
		c.cfg.Logger.Warn("cannot persist streams group", "group", g.name, "err", err)
	}
}
