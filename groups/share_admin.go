package groups

// Share groups seen from the admin APIs (ShareGroupDescribe), and the
// re-resolution of their subscriptions when topics change.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareDescribe handles one group of ShareGroupDescribe (v1, KIP-932): the
// group's state, epochs and assignor, and each member's rack, epoch,
// client, subscription and assignment. A group that does not exist is
// GROUP_ID_NOT_FOUND, and so is a group of another type.
func (c *Coordinator) ShareDescribe(name string) kmsg.ShareGroupDescribeResponseGroup {
	out := kmsg.NewShareGroupDescribeResponseGroup()
	out.GroupID = name
	g, code, msg := c.lockDescribedGroup(name, "share", func(g *group) bool { return g.share != nil })
	if code != 0 {
		out.ErrorCode, out.ErrorMessage = code, msg
		return out
	}
	defer g.mu.Unlock()
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
		c.bumpShareGroupLocked(g, now, c.shareAssignmentInterval(g.name))
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
