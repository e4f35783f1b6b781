package groups

// Consumer group assignment: resolving subscriptions against the topics
// that exist, computing the target assignment when the group epoch moves,
// and reconciling one member towards its target (Kafka's
// CurrentAssignmentBuilder semantics):
//
//	Stable ──target epoch moved──▶ keep = assigned ∩ target
//	                               revoke = assigned − target
//	                               add = target − keep − partitions others still hold
//	  revoke ≠ ∅ and still owned:  UnrevokedPartitions, same epoch, assigned = keep
//	  otherwise:                   epoch = target epoch, assigned = keep + add,
//	                               UnreleasedPartitions if something was held back, else Stable
//	UnrevokedPartitions ──heartbeat no longer owns the revoked ones──▶ (as from Stable)
//	UnreleasedPartitions ──every heartbeat──▶ (as from Stable)
//
// A partition another member has assigned or pending revocation is never
// handed out: the new owner gets it on a heartbeat after the old owner's
// heartbeat showed it released.

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicsChanged tells the coordinator that topics were created, deleted or
// grew partitions: consumer groups re-resolve their subscriptions at the
// next RefreshConsumerGroups. It does no I/O, so the broker may call it
// from its metadata callback.
func (c *Coordinator) TopicsChanged() {
	c.mu.Lock()
	c.topicsChanged = true
	c.mu.Unlock()
	select {
	case c.loadSignal <- struct{}{}:
	default:
	}
}

// RefreshConsumerGroups re-resolves the subscriptions of consumer groups
// after TopicsChanged, and of groups just loaded: a group whose subscribed
// topics differ from those of its target assignment gets a new group epoch
// and target. The broker calls it when LoadSignal fires.
func (c *Coordinator) RefreshConsumerGroups(ctx context.Context) {
	c.mu.Lock()
	changed := c.topicsChanged
	c.topicsChanged = false
	c.mu.Unlock()
	all, _ := c.loadedGroups()
	for _, g := range all {
		if ctx.Err() != nil {
			return
		}
		g.mu.Lock()
		todo := g.consumer != nil && (changed || g.consumer.topics == nil)
		share := g.share != nil && (changed || g.share.topics == nil)
		streams := g.streams != nil && changed
		g.mu.Unlock()
		if streams {
			c.refreshStreamsGroup(ctx, g) // streams_reconcile.go
		}
		if todo {
			c.refreshConsumerGroup(ctx, g)
		}
		if share {
			c.refreshShareGroup(ctx, g) // share_admin.go
		}
	}
}

func (c *Coordinator) refreshConsumerGroup(ctx context.Context, g *group) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if !g.lockIfLive(func() bool { return g.consumer != nil }) {
		return
	}
	cg := g.consumer
	now := c.cfg.Now()
	topics := c.resolveGroupTopics(cg, c.topicsByName())
	switch {
	case cg.topics == nil && hashTopics(topics) == cg.loadedHash:
		cg.topics = topics // reloaded, and nothing moved meanwhile
	case !sameTopics(topics, cg.topics):
		c.bumpConsumerGroupLocked(g, now)
	}
	records := g.consumerRecordsLocked()
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist consumer group", "group", g.name, "err", err)
		}
	}
}

// topicsByName lists the topics that exist now.
func (c *Coordinator) topicsByName() map[string]TopicInfo {
	out := make(map[string]TopicInfo)
	for _, t := range c.cfg.ListTopics() {
		out[t.Name] = t
	}
	return out
}

// memberTopics is the subscription of m resolved against the topics that
// exist: its topic names and the topics its regular expression matches
// (Kafka's broker-side resolution includes internal topics).
func memberTopics(m *consumerMember, all map[string]TopicInfo) []string {
	var out []string
	for _, n := range m.topicNames {
		if _, ok := all[n]; ok {
			out = append(out, n)
		}
	}
	if m.topicRegex != "" {
		if re, err := compileTopicRegex(m.topicRegex); err == nil {
			for n := range all {
				if re.MatchString(n) && !slices.Contains(m.topicNames, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// resolveGroupTopics is the union of the members' resolved subscriptions.
func (c *Coordinator) resolveGroupTopics(cg *consumerGroup, all map[string]TopicInfo) map[string]topicSnapshot {
	out := make(map[string]topicSnapshot)
	for _, m := range cg.members {
		for _, n := range memberTopics(m, all) {
			out[n] = topicSnapshot{id: all[n].ID, partitions: all[n].Partitions}
		}
	}
	return out
}

func sameTopics(a, b map[string]topicSnapshot) bool {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return false
	}
	for n, t := range a {
		if o, ok := b[n]; !ok || o != t {
			return false
		}
	}
	return true
}

// hashTopics is the MetadataHash sluice writes with the group epoch.
func hashTopics(topics map[string]topicSnapshot) int64 {
	h := fnv.New64a()
	for _, n := range sortedKeys(topics) {
		t := topics[n]
		h.Write([]byte(n))
		h.Write(t.id[:])
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(t.partitions)))
	}
	return int64(h.Sum64())
}

// bumpConsumerGroupLocked moves the group epoch and computes the target
// assignment of the new epoch over the topics that exist now.
func (c *Coordinator) bumpConsumerGroupLocked(g *group, now time.Time) {
	cg := g.consumer
	all := c.topicsByName()
	cg.topics = c.resolveGroupTopics(cg, all)
	cg.epoch++
	cg.dirty.epoch = true
	c.computeTargetLocked(g, all)
}

// chooseAssignor is the server assignor the most members ask for, ties
// going to the earlier one in group.consumer.assignors; without any, the
// first of that list.
func (c *Coordinator) chooseAssignor(cg *consumerGroup) string {
	votes := make(map[string]int)
	for _, m := range cg.members {
		if m.serverAssignor != "" {
			votes[m.serverAssignor]++
		}
	}
	best, n := c.cfg.ConsumerAssignors[0], 0
	for _, name := range c.cfg.ConsumerAssignors {
		if votes[name] > n {
			best, n = name, votes[name]
		}
	}
	return best
}

// computeTargetLocked runs the group's assignor and records which members'
// targets changed.
func (c *Coordinator) computeTargetLocked(g *group, all map[string]TopicInfo) {
	cg := g.consumer
	spec := assignSpec{topics: make(map[topicID]assignTopic)}
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		am := assignMember{id: id, current: cg.target[id]}
		for _, n := range memberTopics(m, all) {
			t := all[n]
			am.topics = append(am.topics, t.ID)
			spec.topics[t.ID] = assignTopic{name: n, partitions: t.Partitions}
		}
		spec.members = append(spec.members, am)
	}
	cg.assignor = c.chooseAssignor(cg)
	result := assignorFuncs[cg.assignor](spec)
	for id := range cg.members {
		next := result[id]
		if next == nil {
			next = map[topicID][]int32{}
		}
		if !sameTarget(next, cg.target[id]) {
			cg.markTarget(id)
		}
		cg.target[id] = next
	}
	cg.assignmentEpoch = cg.epoch
	cg.dirty.targetEpoch = true
}

func sameTarget(a, b map[topicID][]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		if !slices.Equal(ps, b[id]) {
			return false
		}
	}
	return true
}

// samePartitions reports whether two assignments hold the same partitions.
func samePartitions(a, b map[topicID]map[int32]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for id, ps := range a {
		other, ok := b[id]
		if !ok || len(other) != len(ps) {
			return false
		}
		for p := range ps {
			if _, ok := other[p]; !ok {
				return false
			}
		}
	}
	return true
}

// heldByOthers lists the partitions members other than self have assigned
// or pending revocation: they cannot be handed out yet.
func (cg *consumerGroup) heldByOthers(self string) map[topicID]map[int32]bool {
	out := make(map[topicID]map[int32]bool)
	add := func(set map[topicID]map[int32]int32) {
		for id, ps := range set {
			if out[id] == nil {
				out[id] = make(map[int32]bool)
			}
			for p := range ps {
				out[id][p] = true
			}
		}
	}
	for id, m := range cg.members {
		if id != self {
			add(m.assigned)
			add(m.pending)
		}
	}
	return out
}

// reconcileMemberLocked moves m towards its target. owned is what the
// heartbeat says the member owns; ownedKnown is false for a heartbeat that
// left it out (then the member still owns everything it was given).
func (c *Coordinator) reconcileMemberLocked(g *group, m *consumerMember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, ownedKnown bool, now time.Time) {
	cg := g.consumer
	stillOwnsAny := func(set map[topicID]map[int32]int32) bool {
		if !ownedKnown {
			return true
		}
		for _, t := range owned {
			for _, p := range t.Partitions {
				if _, ok := set[t.TopicID][p]; ok {
					return true
				}
			}
		}
		return false
	}
	switch m.state {
	case memberStable:
		if m.epoch == cg.assignmentEpoch {
			return
		}
	case memberUnrevokedPartitions:
		if stillOwnsAny(m.pending) {
			return
		}
	}

	target := cg.target[m.id]
	held := cg.heldByOthers(m.id)
	keep := make(map[topicID]map[int32]int32)
	revoke := make(map[topicID]map[int32]int32)
	add := make(map[topicID][]int32)
	unreleased := false
	put := func(set map[topicID]map[int32]int32, id topicID, p, epoch int32) {
		if set[id] == nil {
			set[id] = make(map[int32]int32)
		}
		set[id][p] = epoch
	}
	for id, ps := range m.assigned {
		for p, epoch := range ps {
			if slices.Contains(target[id], p) {
				put(keep, id, p, epoch)
			} else {
				put(revoke, id, p, epoch)
			}
		}
	}
	for id, ps := range target {
		for _, p := range ps {
			if _, ok := keep[id][p]; ok {
				continue
			}
			if held[id][p] {
				unreleased = true
				continue
			}
			add[id] = append(add[id], p)
		}
	}

	before := *m
	if len(revoke) > 0 && stillOwnsAny(revoke) {
		m.state = memberUnrevokedPartitions
		m.assigned, m.pending = keep, revoke
		if before.state != memberUnrevokedPartitions {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
	} else {
		for id, ps := range add {
			for _, p := range ps {
				put(keep, id, p, cg.assignmentEpoch)
			}
		}
		m.assigned, m.pending = keep, nil
		if m.epoch != cg.assignmentEpoch {
			m.previousEpoch, m.epoch = m.epoch, cg.assignmentEpoch
		}
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleasedPartitions
		}
	}
	if before.state != m.state || before.epoch != m.epoch || !samePartitions(before.assigned, m.assigned) || !samePartitions(before.pending, m.pending) {
		cg.markCurrent(m.id)
	}
}
