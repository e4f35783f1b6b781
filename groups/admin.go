package groups

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Describe handles one group of DescribeGroups (v0–v6). Members carry their
// metadata and assignment only while the group is Stable, as in Kafka. An
// unknown group is Dead with no error before v6 and GROUP_ID_NOT_FOUND from
// v6 on (KIP-1043).
func (c *Coordinator) Describe(version int16, name string) kmsg.DescribeGroupsResponseGroup {
	out := kmsg.NewDescribeGroupsResponseGroup()
	out.Group = name
	g, err := c.group(name, false)
	if err != nil {
		out.ErrorCode = errCode(err)
		return out
	}
	dead := func() kmsg.DescribeGroupsResponseGroup {
		out.State = stateDead.String()
		if version >= 6 {
			out.ErrorCode = kerr.GroupIDNotFound.Code
			msg := fmt.Sprintf("Group %s not found.", name)
			out.ErrorMessage = &msg
		}
		return out
	}
	if g == nil {
		return dead()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unloaded {
		out.ErrorCode = kerr.NotCoordinator.Code
		return out
	}
	if g.state == stateDead || g.share != nil || g.streams != nil {
		// A share or streams group is not a classic group: Kafka
		// answers as for a group that does not exist.
		return dead()
	}
	if g.consumer != nil {
		return g.describeConsumerLocked(out, c.cfg.LookupTopic)
	}
	out.State = g.state.String()
	out.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		out.Protocol = g.protocol
	}
	for _, m := range g.sortedMembersLocked() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.ProtocolMetadata = []byte{}
		dm.MemberAssignment = []byte{}
		if stable {
			if md := m.metadataFor(g.protocol); md != nil {
				dm.ProtocolMetadata = md
			}
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// List handles ListGroups (v0–v5): every group this node coordinates,
// filtered by state (v4+, case-insensitive) and type (v5+: "classic",
// "consumer" for KIP-848 groups, "share" for KIP-932 share groups).
func (c *Coordinator) List(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	all, loading := c.loadedGroups()
	if loading {
		// As Kafka's GroupCoordinatorService: the answer is the error
		// alone, and the client asks again.
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp
	}
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, g := range all {
		c.catchUp(context.Background(), g)
		g.mu.Lock()
		st, pt, dead := g.state.String(), g.protocolType, g.state == stateDead || g.unloaded
		typ := "classic"
		if g.consumer != nil {
			st, typ = g.consumer.state(), "consumer"
		}
		if g.share != nil {
			st, typ = g.share.stateName(), "share"
		}
		if g.streams != nil {
			st, typ = g.streams.stateName(), "streams"
		}
		g.mu.Unlock()
		if dead || !matches(req.StatesFilter, st) || !matches(req.TypesFilter, typ) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.name, pt, st, typ
		resp.Groups = append(resp.Groups, lg)
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// Delete handles one group of DeleteGroups (v0–v3): only a group without
// members can go; its offsets and metadata are tombstoned.
func (c *Coordinator) Delete(ctx context.Context, name string) int16 {
	g, err := c.group(name, false)
	if err != nil {
		return errCode(err)
	}
	if g == nil {
		return kerr.GroupIDNotFound.Code
	}
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	switch {
	case g.unloaded:
		g.mu.Unlock()
		return kerr.NotCoordinator.Code
	case g.state == stateDead:
		g.mu.Unlock()
		return kerr.GroupIDNotFound.Code
	case g.state != stateEmpty, len(g.txnOffsets) > 0:
		// A transaction's pending offsets keep the group until the
		// transaction ends (txn_offsets.go).
		g.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	var records []kv
	for _, topic := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[topic]) {
			records = append(records, kv{key: offsetKey(g.name, topic, p)})
		}
	}
	if g.share != nil {
		records = append(records, g.shareTombstonesLocked()...)
	} else if g.streams != nil {
		records = append(records, g.streamsTombstonesLocked()...) // streams_records.go
	} else if g.consumer != nil {
		records = append(records, g.consumerTombstonesLocked()...)
	} else {
		records = append(records, kv{key: groupKey(g.name)})
		if g.wasConsumer {
			records = append(records, consumerGroupTombstones(g.name)...)
		}
	}
	g.mu.Unlock()
	if err := c.append(ctx, g, records); err != nil {
		return appendErrorCode(err, false)
	}
	g.mu.Lock()
	g.setStateLocked(stateDead, c.cfg.Now())
	g.offsets = make(map[string]map[int32]committedOffset)
	g.mu.Unlock()
	return 0
}
