package groups

// Streams groups seen from the admin APIs (StreamsGroupDescribe,
// StreamsGroupTopologyDescriptionUpdate) and the member epoch checks of
// offset commits and fetches by streams members (Kafka's
// StreamsGroup.validateOffsetCommit / validateOffsetFetch, as for consumer
// groups).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topology description statuses of StreamsGroupDescribe v1.
const (
	topologyDescriptionNotRequested = 0
	topologyDescriptionNotStored    = 1
	topologyDescriptionAvailable    = 3
)

// streamsAssignorName is the only task assignor (group.streams.assignors).
const streamsAssignorName = "sticky"

// StreamsDescribe handles one group of StreamsGroupDescribe (v0–v1,
// KIP-1071): the group's state, epochs and topology, and each member's
// process, endpoint, topology epoch, task offsets, current and target
// assignment. A group that does not exist, or is not a streams group, is
// GROUP_ID_NOT_FOUND.
func (c *Coordinator) StreamsDescribe(name string, version int16, includeDescription bool) kmsg.StreamsGroupDescribeResponseGroup {
	out := kmsg.NewStreamsGroupDescribeResponseGroup()
	out.Group = name
	g, code, msg := c.lockDescribedGroup(name, "streams", func(g *group) bool { return g.streams != nil })
	if code != 0 {
		out.ErrorCode, out.ErrorMessage = code, msg
		return out
	}
	defer g.mu.Unlock()
	sg := g.streams
	out.State = sg.stateName()
	out.Epoch = sg.epoch
	out.AssignmentEpoch = sg.assignmentEpoch
	if version >= 1 {
		a := streamsAssignorName
		out.AssignorName = &a
		out.TopologyDescriptionStatus = topologyDescriptionNotRequested
		if includeDescription {
			out.TopologyDescriptionStatus = topologyDescriptionNotStored
			if d := sg.description; d != nil && sg.topology != nil && d.TopologyEpoch == sg.topology.epoch {
				desc := kmsg.NewStreamsGroupDescribeResponseGroupTopologyDescription()
				desc.Subtopologies = d.TopologyDescription.Subtopologies
				desc.GlobalStores = d.TopologyDescription.GlobalStores
				out.TopologyDescription = &desc
				out.TopologyDescriptionStatus = topologyDescriptionAvailable
			}
		}
	}
	if sg.topology != nil {
		t := kmsg.NewStreamsGroupDescribeResponseGroupTopology()
		t.Epoch = sg.topology.epoch
		cfg := sg.configured
		if cfg == nil {
			cfg = configure(sg.topology, c.topicsByName()) // restored by a load, not heartbeated yet
		}
		if cfg.ready() {
			t.Subtopologies = sg.topology.wire()
		}
		out.Topology = &t
	}
	out.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		dm.MemberID = id
		dm.MemberEpoch = m.epoch
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.TopologyEpoch = m.topologyEpoch
		dm.ProcessID = m.processID
		if m.endpoint != nil {
			e := kmsg.NewStreamsGroupDescribeResponseGroupMemberUserEndpoint()
			e.Host, e.Port = m.endpoint.Host, m.endpoint.Port
			dm.UserEndpoint = &e
		}
		dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, k := range sortedKeys(m.clientTags) {
			t := kmsg.NewStreamsGroupDescribeResponseGroupMemberClientTag()
			t.Key, t.Value = k, m.clientTags[k]
			dm.ClientTags = append(dm.ClientTags, t)
		}
		dm.TaskOffsets = append([]kmsg.TaskOffset{}, m.taskOffsets...)
		dm.TaskEndOffsets = append([]kmsg.TaskOffset{}, m.taskEndOffsets...)
		dm.Assignment = m.assigned.describe()
		dm.TargetAssignment = sg.target[id].describe()
		out.Members = append(out.Members, dm)
	}
	return out
}

func (t streamsTasks) describe() kmsg.StreamsAssignment {
	a := kmsg.NewStreamsAssignment()
	a.ActiveTasks = t.active.wire()
	a.StandbyTasks = t.standby.wire()
	a.WarmupTasks = t.warmup.wire()
	return a
}

// StreamsTopologyDescriptionUpdate handles
// StreamsGroupTopologyDescriptionUpdate (v0): a member of the group hands
// in the description of the group's topology, which StreamsGroupDescribe
// v1 returns when asked. It is held in memory (Kafka stores it through
// group.streams.topology.description.plugin.class, which sluice does not
// accept): a coordinator change forgets it.
func (c *Coordinator) StreamsTopologyDescriptionUpdate(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	fail := func(code int16, format string, args ...any) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
		resp.ErrorCode = code
		if format != "" {
			msg := fmt.Sprintf(format, args...)
			resp.ErrorMessage = &msg
		}
		return resp
	}
	if req.Group == "" {
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty.")
	}
	g, code := c.existingGroup(req.Group, kerr.GroupIDNotFound.Code)
	if code != 0 {
		return fail(code, "")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.unloaded:
		return fail(kerr.NotCoordinator.Code, "")
	case g.state == stateDead, g.streams == nil:
		return fail(kerr.GroupIDNotFound.Code, "Group %s is not a streams group.", req.Group)
	case g.streams.members[req.MemberID] == nil:
		return fail(kerr.UnknownMemberID.Code, "Member %s is not a member of group %s.", req.MemberID, req.Group)
	case g.streams.topology == nil || req.TopologyEpoch != g.streams.topology.epoch:
		return fail(kerr.StreamsInvalidTopologyEpoch.Code, "Topology epoch %d is not the group's.", req.TopologyEpoch)
	}
	d := *req
	g.streams.description = &d
	return resp
}

// streamsSubscribedTopicsLocked lists the topics a streams group with
// members reads (its topology's source topics, those its regular
// expressions match, and its repartition topics), whose offsets
// OffsetDelete must keep (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka's
// StreamsGroup does.
func (c *Coordinator) streamsSubscribedTopicsLocked(g *group) map[string]bool {
	out := map[string]bool{}
	cfg := configure(g.streams.topology, c.topicsByName())
	for _, topics := range cfg.sources {
		for _, t := range topics {
			out[t] = true
		}
	}
	if t := g.streams.topology; t != nil {
		for _, s := range t.subs {
			for _, name := range s.sourceTopics {
				out[name] = true
			}
		}
	}
	return out
}

// checkStreamsCommitLocked is the member epoch check of an OffsetCommit
// to a streams group: a current member at its current epoch, or an admin
// commit (no member, generation -1) to a group without members.
func (g *group) checkStreamsCommitLocked(memberID string, generation int32) int16 {
	sg := g.streams
	if generation < 0 && memberID == "" && len(sg.members) == 0 {
		return 0
	}
	m := sg.members[memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case generation != m.epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// checkStreamsFetchLocked is the OffsetFetch check for a streams group: a
// request naming a member must come from a current member at its current
// epoch.
func (g *group) checkStreamsFetchLocked(memberID *string, epoch int32) int16 {
	if g.streams == nil || g.state == stateDead {
		return 0
	}
	return checkFetchMember(memberID, epoch, func(id string) (int32, bool) {
		m := g.streams.members[id]
		if m == nil {
			return 0, false
		}
		return m.epoch, true
	})
}
