package groups

// Consumer groups seen from the admin and offset APIs: ConsumerGroupDescribe,
// the classic DescribeGroups view of a consumer group, the member epoch
// checks of OffsetCommit and OffsetFetch, and the subscribed topics that
// OffsetDelete protects.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerDescribe handles one group of ConsumerGroupDescribe (v0–v1,
// KIP-848): the group's epochs, assignor and state, and each member's
// subscription, current assignment and target assignment. A group that
// does not exist or is a classic group is GROUP_ID_NOT_FOUND.
func (c *Coordinator) ConsumerDescribe(name string) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = name
	g, code, msg := c.lockDescribedGroup(name, "consumer", func(g *group) bool { return g.consumer != nil })
	if code != 0 {
		out.ErrorCode, out.ErrorMessage = code, msg
		return out
	}
	defer g.mu.Unlock()
	cg := g.consumer
	out.State = cg.state()
	out.Epoch = cg.epoch
	out.AssignmentEpoch = cg.assignmentEpoch
	out.AssignorName = cg.assignor
	if out.AssignorName == "" {
		out.AssignorName = c.chooseAssignor(cg)
	}
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = append([]string{}, m.topicNames...)
		if m.topicRegex != "" {
			r := m.topicRegex
			dm.SubscribedTopicRegex = &r
		}
		dm.MemberType = 1
		for _, tid := range sortedTopicIDs(m.assigned) {
			info, _ := c.cfg.LookupTopic("", tid)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, kmsg.AssignmentTopicPartition{
				TopicID: tid, Topic: info.Name, Partitions: sortedKeys(m.assigned[tid]),
			})
		}
		target := cg.target[id]
		for _, tid := range sortedTopicIDs(target) {
			if len(target[tid]) == 0 {
				continue
			}
			info, _ := c.cfg.LookupTopic("", tid)
			dm.TargetAssignment.TopicPartitions = append(dm.TargetAssignment.TopicPartitions, kmsg.AssignmentTopicPartition{
				TopicID: tid, Topic: info.Name, Partitions: append([]int32(nil), target[tid]...),
			})
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// lockDescribedGroup finds the group that one group of a describe API of
// the KIP-848 style groups names (ConsumerGroupDescribe,
// StreamsGroupDescribe, ShareGroupDescribe) and returns it locked; the caller unlocks it. A
// group that does not exist or is dead is GROUP_ID_NOT_FOUND "Group %s not
// found.", one whose type isOfKind rejects is GROUP_ID_NOT_FOUND "Group %s
// is not a <kind> group.", and one whose partition this node no longer
// leads is NOT_COORDINATOR (no message); then nothing is locked and code
// and msg are the group's error.
func (c *Coordinator) lockDescribedGroup(name, kind string, isOfKind func(*group) bool) (g *group, code int16, msg *string) {
	notFound := func(format string) (*group, int16, *string) {
		m := fmt.Sprintf(format, name)
		return nil, kerr.GroupIDNotFound.Code, &m
	}
	g, code = c.existingGroup(name, kerr.GroupIDNotFound.Code)
	if code == kerr.GroupIDNotFound.Code {
		return notFound("Group %s not found.")
	}
	if code != 0 {
		return nil, code, nil
	}
	g.mu.Lock()
	switch {
	case g.unloaded:
		g.mu.Unlock()
		return nil, kerr.NotCoordinator.Code, nil
	case g.state == stateDead:
		g.mu.Unlock()
		return notFound("Group %s not found.")
	case !isOfKind(g):
		g.mu.Unlock()
		return notFound("Group %s is not a " + kind + " group.")
	}
	return g, 0, nil
}

// describeConsumerLocked is how DescribeGroups shows a consumer group, as
// Kafka does: protocol type "consumer", the assignor as the protocol, and
// each member's subscription and assignment in the classic consumer
// protocol's encoding.
func (g *group) describeConsumerLocked(out kmsg.DescribeGroupsResponseGroup, lookup func(string, [16]byte) (TopicInfo, bool)) kmsg.DescribeGroupsResponseGroup {
	cg := g.consumer
	out.State = cg.state()
	out.ProtocolType = "consumer"
	out.Protocol = cg.assignor
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		md := kmsg.NewConsumerMemberMetadata()
		md.Topics = append([]string{}, m.topicNames...)
		dm.ProtocolMetadata = md.AppendTo(nil)
		a := kmsg.NewConsumerMemberAssignment()
		for _, tid := range sortedTopicIDs(m.assigned) {
			info, _ := lookup("", tid)
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: info.Name, Partitions: sortedKeys(m.assigned[tid])})
		}
		dm.MemberAssignment = a.AppendTo(nil)
		out.Members = append(out.Members, dm)
	}
	return out
}

// checkConsumerCommitLocked is Kafka's commit check for a consumer group:
// with no members anyone may commit with a negative epoch (admin tools,
// simple consumers); otherwise the member must exist (UNKNOWN_MEMBER_ID),
// use OffsetCommit v9+ (UNSUPPORTED_VERSION) and send its member epoch
// (STALE_MEMBER_EPOCH). As KIP-1251 allows, an older epoch is accepted for
// partitions the member has held since that epoch or before, which covers
// commits racing an epoch bump that did not move those partitions.
func (g *group) checkConsumerCommitLocked(req *kmsg.OffsetCommitRequest) int16 {
	cg := g.consumer
	if req.Generation < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case req.Version < 9:
		return kerr.UnsupportedVersion.Code
	case req.Generation == m.epoch:
		return 0
	case req.Generation < 0 || req.Generation > m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	for _, t := range req.Topics {
		info, ok := g.cfg.LookupTopic(nameUnless(req.Version >= 10, t.Topic), t.TopicID)
		if !ok {
			continue // answered UNKNOWN_TOPIC_OR_PARTITION already
		}
		for _, p := range t.Partitions {
			epoch, held := m.assigned[info.ID][p.Partition]
			if !held {
				epoch, held = m.pending[info.ID][p.Partition]
			}
			if !held || epoch > req.Generation {
				return kerr.StaleMemberEpoch.Code
			}
		}
	}
	return 0
}

// checkConsumerFetchLocked is Kafka's OffsetFetch check for a consumer
// group: a request naming a member (v9+) must come from a current member
// at its current epoch. Requests without a member id pass, as do requests
// for classic groups.
func (g *group) checkConsumerFetchLocked(memberID *string, epoch int32) int16 {
	if g.consumer == nil || g.state == stateDead {
		return 0
	}
	return checkFetchMember(memberID, epoch, func(id string) (int32, bool) {
		m := g.consumer.members[id]
		if m == nil {
			return 0, false
		}
		return m.epoch, true
	})
}

// checkFetchMember is the member check of an OffsetFetch to a group whose
// members have epochs (consumer and streams groups): a request without a
// member id and with a negative epoch passes; otherwise the member must
// exist (UNKNOWN_MEMBER_ID) and send its current epoch
// (STALE_MEMBER_EPOCH). memberEpoch looks a member's epoch up.
func checkFetchMember(memberID *string, epoch int32, memberEpoch func(id string) (int32, bool)) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	if memberID == nil {
		return kerr.UnknownMemberID.Code
	}
	current, ok := memberEpoch(*memberID)
	switch {
	case !ok:
		return kerr.UnknownMemberID.Code
	case current != epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// consumerSubscribedTopicsLocked lists the topics a consumer group's
// members subscribe to (regular expressions resolved), whose offsets
// OffsetDelete must keep.
func (c *Coordinator) consumerSubscribedTopicsLocked(g *group) map[string]bool {
	all := c.topicsByName()
	out := make(map[string]bool)
	for _, m := range g.consumer.members {
		for _, n := range memberTopics(m, all) {
			out[n] = true
		}
		for _, n := range m.topicNames {
			out[n] = true
		}
	}
	return out
}
