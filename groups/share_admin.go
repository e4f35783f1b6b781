package groups

// Share groups seen from the admin APIs (ShareGroupDescribe), the
// re-resolution of their subscriptions when topics change, and the
// share-partition state initialization run by the broker's loader
// (InitializeShareStates, see ShareStateInitializer).

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareDescribe handles one group of ShareGroupDescribe (v1, KIP-932): the
// group's state, epochs and assignor, and each member's rack, epoch,
// client, subscription and assignment. A group that does not exist is
// GROUP_ID_NOT_FOUND, and so is a group of another type.
func (c *Coordinator) ShareDescribe(name string) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = name
	notFound := func(format string) kmsg.ShareGroupDescribeResponseGroup {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		msg := fmt.Sprintf(format, name)
		out.ErrorMessage = &msg
		return out
	}
	g, code := c.existingGroup(name, kerr.GroupIDNotFound.Code)
	if code == kerr.GroupIDNotFound.Code {
		return notFound("Group %s not found.")
	}
	if code != 0 {
		out.ErrorCode = code
		return out
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.unloaded:
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	case g.state == stateDead:
		return notFound("Group %s not found.")
	case g.share == nil:
		return notFound("Group %s is not a share group.")
	}
	sg := g.share
	out.GroupState = sg.stateName()
	out.GroupEpoch = sg.epoch
	out.AssignmentEpoch = sg.assignmentEpoch
	out.Assignor = shareAssignorName
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID = id
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopicNames = append([]string{}, m.topicNames...)
		for _, tid := range sortedTopicIDs(m.assigned) {
			info, _ := c.cfg.LookupTopic("", tid)
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = tid, info.Name, slices.Clone(m.assigned[tid])
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// refreshShareGroup re-resolves a share group's subscription after topics
// changed (or after a load): a group whose subscribed topics differ from
// those of its target gets a new group epoch and target, as Kafka's
// metadata hash refresh does.
func (c *Coordinator) refreshShareGroup(ctx context.Context, g *group) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if g.unloaded || g.share == nil || g.state == stateDead {
		g.mu.Unlock()
		return
	}
	sg := g.share
	now := c.cfg.Now()
	all := c.topicsByName()
	topics := c.resolveShareTopics(sg, all)
	switch {
	case sg.topics == nil && hashTopics(topics) == sg.loadedHash:
		sg.topics = topics
	case !sameTopics(topics, sg.topics) && len(sg.members) > 0:
		c.maybeInitializeShareLocked(g, all, now)
		c.bumpShareGroupLocked(g, now)
	default:
		sg.topics = topics
	}
	records := g.shareRecordsLocked(now)
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist share group", "group", g.name, "err", err)
		}
	}
}

// InitializeShareStates hands the partitions that share groups wait to
// have initialized to Config.ShareStateInitializer and records the outcome
// (ShareGroupStatePartitionMetadata): initialized partitions become
// assignable at the group's next heartbeat; partitions that failed are
// forgotten, so the next heartbeat asks again. The broker calls it when
// LoadSignal fires; without an initializer it does nothing.
func (c *Coordinator) InitializeShareStates(ctx context.Context) {
	init := c.cfg.ShareStateInitializer
	if init == nil {
		return
	}
	all, _ := c.loadedGroups()
	for _, g := range all {
		if ctx.Err() != nil {
			return
		}
		g.mu.Lock()
		var todo SharePartitions
		var epoch int32
		if sg := g.share; sg != nil && !g.unloaded && g.state != stateDead && !sg.initBusy && len(sg.state.initializing) > 0 {
			todo = make(SharePartitions, len(sg.state.initializing))
			for id, t := range sg.state.initializing {
				todo[id] = slices.Clone(t.partitions)
			}
			epoch = sg.epoch
			sg.initBusy = true
		}
		g.mu.Unlock()
		if todo == nil {
			continue
		}
		err := init.InitializeShareState(ctx, g.name, epoch, todo)
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("cannot initialize share-partition state", "group", g.name, "err", err)
		}
		c.finishShareInit(ctx, g, todo, err == nil)
	}
}

// finishShareInit records the outcome of an initialization of partitions.
func (c *Coordinator) finishShareInit(ctx context.Context, g *group, done SharePartitions, ok bool) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	sg := g.share
	if sg == nil || g.unloaded || g.state == stateDead {
		g.mu.Unlock()
		return
	}
	sg.initBusy = false
	for _, id := range slices.SortedFunc(maps.Keys(done), func(a, b topicID) int { return slices.Compare(a[:], b[:]) }) {
		t, ok2 := sg.state.initializing[id]
		if !ok2 {
			continue
		}
		var left []int32
		for _, p := range t.partitions {
			if !slices.Contains(done[id], p) {
				left = append(left, p)
			}
		}
		if ok {
			sg.state.initialized[id] = shareInitTopic{name: t.name, partitions: mergeParts(sg.state.initialized[id].partitions, done[id])}
		}
		if len(left) == 0 {
			delete(sg.state.initializing, id)
			delete(sg.initSince, id)
		} else {
			t.partitions = left
			sg.state.initializing[id] = t
		}
		sg.dirty.state = true
	}
	records := g.shareRecordsLocked(c.cfg.Now())
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist share group", "group", g.name, "err", err)
		}
	}
}
