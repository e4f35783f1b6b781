package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CommitOffsets handles OffsetCommit (v0–v10; v10 names topics by id). A
// member of the current generation may commit; so may a simple consumer
// (generation -1, no member id) while the group has no members, which
// creates the group if needed. The commit is answered once its records are
// committed to __consumer_offsets.
func (c *Coordinator) CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	byID := req.Version >= 10
	var todo []commitTarget
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetCommitResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		info, ok := c.cfg.LookupTopic(nameUnless(byID, rt.Topic), rt.TopicID)
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			if !ok && byID {
				sp.ErrorCode = kerr.UnknownTopicID.Code
			} else {
				sp.ErrorCode = c.checkCommitPartition(info, ok, rp.Partition, rp.Metadata)
			}
			if sp.ErrorCode == 0 {
				leaderEpoch := int32(-1)
				if req.Version >= 6 {
					leaderEpoch = rp.LeaderEpoch
				}
				todo = append(todo, newCommitTarget(len(resp.Topics), len(st.Partitions), info.Name, rp.Partition, rp.Offset, leaderEpoch, rp.Metadata))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	setAll := func(code int16) *kmsg.OffsetCommitResponse {
		for _, t := range todo {
			resp.Topics[t.topic].Partitions[t.partition].ErrorCode = code
		}
		return resp
	}
	if len(todo) == 0 {
		return resp
	}
	// A member's commit to a missing group: from v9, which serves both
	// group protocols, GROUP_ID_NOT_FOUND; before, ILLEGAL_GENERATION
	// (Kafka's OffsetMetadataManager.validateOffsetCommit).
	missing := kerr.IllegalGeneration.Code
	if req.Version >= 9 {
		missing = kerr.GroupIDNotFound.Code
	}
	// The empty group id is a group like any other here: Kafka takes
	// such commits "for backwards compatibility" (GroupCoordinatorService).
	g, code := c.commitGroup(req.Group, req.Generation, missing)
	if code != 0 {
		return setAll(code)
	}

	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	now := c.cfg.Now()
	g.mu.Lock()
	code = g.checkCommitLocked(req)
	if code == 0 && g.members[req.MemberID] != nil {
		m := g.members[req.MemberID]
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
	}
	g.mu.Unlock()
	if code != 0 {
		return setAll(code)
	}
	records := offsetRecords(g.name, todo, now)
	first, err := c.appendAt(ctx, g, records, noProducer)
	if err != nil {
		return setAll(appendErrorCode(err, true))
	}
	g.mu.Lock()
	if !g.unloaded {
		for i, t := range todo {
			t.value.recordOffset = first + int64(i)
			g.setOffsetLocked(t.name, t.partitionID, t.value)
		}
	}
	g.mu.Unlock()
	return resp
}

// commitTarget is one partition's offset that an OffsetCommit or a
// TxnOffsetCommit asks to store, and where its answer sits in the response.
type commitTarget struct {
	topic, partition int // indexes into the response
	name             string
	partitionID      int32
	value            committedOffset // recordOffset and commitTimestamp set by the commit
}

func newCommitTarget(topic, partition int, name string, partitionID int32, offset int64, leaderEpoch int32, metadata *string) commitTarget {
	t := commitTarget{topic: topic, partition: partition, name: name, partitionID: partitionID,
		value: committedOffset{offset: offset, leaderEpoch: leaderEpoch}}
	if metadata != nil {
		t.value.metadata = *metadata
	}
	return t
}

// checkCommitPartition is the check of one partition shared by OffsetCommit
// and TxnOffsetCommit: the topic (known reports whether LookupTopic found
// it) must have the partition, and the metadata must fit MaxMetadataSize.
func (c *Coordinator) checkCommitPartition(info TopicInfo, known bool, partition int32, metadata *string) int16 {
	switch {
	case !known || partition < 0 || partition >= info.Partitions:
		return kerr.UnknownTopicOrPartition.Code
	case metadata != nil && len(*metadata) > c.cfg.MaxMetadataSize:
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}

// commitGroup returns the group an offset commit names, created when the
// commit's generation is -1 (a simple consumer, or an older transactional
// client) and it does not exist; otherwise the code every partition of the
// commit is answered with: missing for a group that does not exist.
func (c *Coordinator) commitGroup(name string, generation int32, missing int16) (*group, int16) {
	g, err := c.group(name, generation < 0)
	if err != nil {
		return nil, errCode(err)
	}
	if g == nil {
		return nil, missing
	}
	return g, 0
}

// offsetRecords stamps each target's offset with now as its commit
// timestamp and returns the __consumer_offsets records of group, one per
// target in order.
func offsetRecords(group string, todo []commitTarget, now time.Time) []kv {
	records := make([]kv, 0, len(todo))
	for i := range todo {
		t := &todo[i]
		t.value.commitTimestamp = now.UnixMilli()
		records = append(records, kv{key: offsetKey(group, t.name, t.partitionID), value: offsetValue(t.value)})
	}
	return records
}

// checkCommitLocked is Kafka's commit check: the classic one, or for a
// consumer group the member epoch check (checkConsumerCommitLocked).
func (g *group) checkCommitLocked(req *kmsg.OffsetCommitRequest) int16 {
	switch {
	case g.unloaded:
		return kerr.NotCoordinator.Code
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case g.consumer != nil:
		return g.checkConsumerCommitLocked(req)
	case g.streams != nil:
		return g.checkStreamsCommitLocked(req.MemberID, req.Generation) // streams_admin.go
	case g.share != nil:
		return kerr.GroupIDNotFound.Code // Kafka: "Group g is not a consumer group."
	}
	if req.InstanceID != nil {
		if id, ok := g.static[*req.InstanceID]; ok && id != req.MemberID {
			return kerr.FencedInstanceID.Code
		}
	}
	// Kafka's ClassicGroup.validateOffsetCommit: the member and its
	// generation first, so that a member that is gone or behind learns
	// it; only a current member hears that the group is rebalancing.
	switch {
	case req.Generation < 0 && g.state == stateEmpty:
		return 0
	case g.members[req.MemberID] == nil:
		return kerr.UnknownMemberID.Code
	case req.Generation != g.generation:
		return kerr.IllegalGeneration.Code
	case g.state == stateCompletingRebalance:
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// setOffsetLocked stores a committed offset unless a transaction's COMMIT
// already applied one committed by a later record.
func (g *group) setOffsetLocked(topic string, partition int32, o committedOffset) {
	offsetTable(g.offsets).set(topic, partition, o)
}

func nameUnless(byID bool, name string) string {
	if byID {
		return ""
	}
	return name
}

// FetchOffsets handles OffsetFetch (v0–v10; v8+ asks for several groups,
// v10 names topics by id). Partitions without a committed offset, and
// unknown groups, answer offset -1 without an error, as Kafka does.
func (c *Coordinator) FetchOffsets(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version < 8 {
		var topics []kmsg.OffsetFetchRequestGroupTopic
		if req.Topics != nil {
			topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range req.Topics {
				topics = append(topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
			}
		}
		rg := c.fetchGroup(req.Version, req.Group, topics, nil, -1, req.RequireStable)
		resp.ErrorCode = rg.ErrorCode
		for _, t := range rg.Topics {
			st := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				sp := kmsg.OffsetFetchResponseTopicPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata, ErrorCode: p.ErrorCode}
				if rg.ErrorCode != 0 && req.Version < 2 {
					sp.ErrorCode = rg.ErrorCode
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	}
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, c.fetchGroup(req.Version, rg.Group, rg.Topics, rg.MemberID, rg.MemberEpoch, req.RequireStable))
	}
	return resp
}

// fetchGroup answers one group; a nil topic list asks for every committed
// offset of the group. A member of a consumer group (v9+) names itself and
// its epoch: UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH when they do not match.
// With requireStable (v7+) a partition with a transaction's pending offset
// is UNSTABLE_OFFSET_COMMIT: the client retries once the transaction ends.
func (c *Coordinator) fetchGroup(version int16, name string, topics []kmsg.OffsetFetchRequestGroupTopic, memberID *string, memberEpoch int32, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.OffsetFetchResponseGroup{Group: name}
	byID := version >= 10
	g, err := c.group(name, false)
	if err != nil {
		out.ErrorCode = errCode(err)
		// Before v2 the error can only travel per partition.
		for _, t := range topics {
			st := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID}
			for _, p := range t.Partitions {
				st.Partitions = append(st.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: out.ErrorCode})
			}
			out.Topics = append(out.Topics, st)
		}
		return out
	}
	var offsets map[string]map[int32]committedOffset
	unstable := func(string, int32) bool { return false }
	if g != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.unloaded {
			out.ErrorCode = kerr.NotCoordinator.Code
			return out
		}
		if code := g.checkConsumerFetchLocked(memberID, memberEpoch); code != 0 {
			out.ErrorCode = code
			return out
		}
		if code := g.checkStreamsFetchLocked(memberID, memberEpoch); code != 0 {
			out.ErrorCode = code
			return out
		}
		if g.share != nil && g.state != stateDead {
			// Kafka's ShareGroup.validateOffsetFetch: "Group g is not a
			// consumer group." (share groups keep no committed offsets).
			out.ErrorCode = kerr.GroupIDNotFound.Code
			return out
		}
		if g.state != stateDead {
			offsets = g.offsets
			if requireStable && version >= 7 {
				unstable = g.hasTxnOffsetLocked
			}
		}
	}
	entry := func(topic string, p int32, o committedOffset, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		if unstable(topic, p) {
			return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.UnstableOffsetCommit.Code}
		}
		if !ok {
			empty := ""
			return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, Metadata: &empty}
		}
		md := o.metadata
		return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: o.offset, LeaderEpoch: o.leaderEpoch, Metadata: &md}
	}
	if topics == nil {
		for _, name := range sortedKeys(offsets) {
			st := kmsg.OffsetFetchResponseGroupTopic{Topic: name}
			if byID {
				info, ok := c.cfg.LookupTopic(name, [16]byte{})
				if !ok {
					continue
				}
				st.TopicID = info.ID
			}
			for _, p := range sortedKeys(offsets[name]) {
				st.Partitions = append(st.Partitions, entry(name, p, offsets[name][p], true))
			}
			out.Topics = append(out.Topics, st)
		}
		return out
	}
	for _, t := range topics {
		st := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID}
		name := t.Topic
		known := true
		if byID {
			info, ok := c.cfg.LookupTopic("", t.TopicID)
			name, known = info.Name, ok
		}
		for _, p := range t.Partitions {
			if !known {
				st.Partitions = append(st.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.UnknownTopicID.Code})
				continue
			}
			o, ok := offsets[name][p]
			st.Partitions = append(st.Partitions, entry(name, p, o, ok))
		}
		out.Topics = append(out.Topics, st)
	}
	return out
}

// DeleteOffsets handles OffsetDelete (v0, KIP-496): offsets of an Empty
// group, or of topics a consumer group's members do not subscribe to.
func (c *Coordinator) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	g, code := c.existingGroup(req.Group, kerr.GroupIDNotFound.Code)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	var subscribed map[string]bool
	switch {
	case g.unloaded:
		resp.ErrorCode = kerr.NotCoordinator.Code
	case g.state == stateDead, g.share != nil:
		resp.ErrorCode = kerr.GroupIDNotFound.Code // a share group has no committed offsets (Kafka: not a consumer group)
	case g.state == stateEmpty:
	case g.consumer != nil:
		subscribed = c.consumerSubscribedTopicsLocked(g)
	case g.streams != nil:
		subscribed = c.streamsSubscribedTopicsLocked(g) // streams_admin.go
	case g.protocolType == "consumer":
		subscribed = g.subscribedTopicsLocked()
	default:
		resp.ErrorCode = kerr.NonEmptyGroup.Code
	}
	if resp.ErrorCode != 0 {
		g.mu.Unlock()
		return resp
	}
	type del struct {
		topic     string
		partition int32
	}
	var dels []del
	var records []kv
	for _, rt := range req.Topics {
		st := kmsg.OffsetDeleteResponseTopic{Topic: rt.Topic}
		info, ok := c.cfg.LookupTopic(rt.Topic, [16]byte{})
		for _, rp := range rt.Partitions {
			sp := kmsg.OffsetDeleteResponseTopicPartition{Partition: rp.Partition}
			switch {
			case !ok || rp.Partition < 0 || rp.Partition >= info.Partitions:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case subscribed != nil && (subscribed[rt.Topic] || subscribed[""]):
				sp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				if _, has := g.offsets[rt.Topic][rp.Partition]; has || g.hasTxnOffsetLocked(rt.Topic, rp.Partition) {
					dels = append(dels, del{rt.Topic, rp.Partition})
					records = append(records, kv{key: offsetKey(g.name, rt.Topic, rp.Partition)})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	g.mu.Unlock()
	if len(records) == 0 {
		return resp
	}
	if err := c.append(ctx, g, records); err != nil {
		resp.ErrorCode = appendErrorCode(err, false)
		resp.Topics = nil
		return resp
	}
	g.mu.Lock()
	for _, d := range dels {
		offsetTable(g.offsets).remove(d.topic, d.partition)
		g.dropTxnOffsetsLocked(d.topic, d.partition)
	}
	g.mu.Unlock()
	return resp
}

// subscribedTopicsLocked lists the topics the members of a consumer group
// subscribe to, from their metadata for the chosen protocol. A member whose
// metadata cannot be read counts as subscribed to everything (key "").
func (g *group) subscribedTopicsLocked() map[string]bool {
	out := make(map[string]bool)
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			out[""] = true
			continue
		}
		for _, t := range md.Topics {
			out[t] = true
		}
	}
	return out
}
