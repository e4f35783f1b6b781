package groups

// KIP-932 share groups: the ShareGroupHeartbeat state machine (Kafka 4.4's
// GroupMetadataManager.shareGroupHeartbeat).
//
// A share group lives in the same group value as classic and consumer
// groups (the group's share field is set), so lookup, loading, listing and
// deletion share one code path, and the group id space is shared: a share
// heartbeat for a group id that is a classic or consumer group is
// GROUP_ID_NOT_FOUND ("Group g is not a share group."), a consumer
// heartbeat for a share group id likewise, and a classic JoinGroup is
// INCONSISTENT_GROUP_PROTOCOL.
//
// Its state is the group epoch, the target assignment (computed by the
// simple assignor, share_assign.go, whenever the group epoch moves) with
// its epoch, and per member the subscribed topic names, member epoch and
// assigned partitions. Unlike a consumer group a partition may be assigned
// to several members at once and nothing needs to be revoked first, so a
// member reconciles in one step: at its next heartbeat its epoch becomes
// the target epoch and its assignment the target, filtered to the topics
// it subscribes to. A member joins with epoch 0 and the member id it chose
// (KIP-1082); a known member sending epoch 0 again is taken back with its
// current epoch and assignment, as Kafka 4.4 accepts epoch 0 from any
// member. It leaves with epoch -1. A member whose session
// (group.share.session.timeout.ms, or the group's share.session.timeout.ms)
// ends without a heartbeat is removed.
//
// Share-partition state (share_init.go): a partition is assignable only
// once its share state is initialized (Kafka's ShareGroupStatePartitionMetadata record and
// InitializeShareGroupState to the share coordinator). When the group
// subscribes to a topic whose partitions are neither initialized nor being
// initialized, the heartbeat records them as initializing. With no
// Config.ShareStateInitializer they count as initialized at once (the
// share partitions start from share.auto.offset.reset when first fetched);
// with one, the broker's loader runs InitializeShareStates, which calls it
// and records the partitions initialized (or forgets them on failure, so
// the next heartbeat retries). The next heartbeat then sees initialized
// partitions that the target does not cover and moves the group epoch.
//
// Every change is written as Kafka's share group records
// (share_records.go) before the heartbeat that caused it is answered; as
// for consumer groups, memory changes first and is not rolled back when
// the append fails (the client retries; a lost leadership unloads the
// group anyway).

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareAssignorName is the only share group assignor (group.share.assignors).
const shareAssignorName = "simple"

// ShareGroupSettings are the settings one share group may override with
// its group configs (share.session.timeout.ms, share.heartbeat.interval.ms
// and share.assignment.interval.ms). A zero SessionTimeout or
// HeartbeatInterval means the coordinator's Config value (the broker's
// group.share.* default).
type ShareGroupSettings struct {
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// AssignmentInterval is the least time between two computations of
	// the group's target assignment (KIP-1263's assignment batching,
	// share.assignment.interval.ms, else group.share.assignment.interval.ms):
	// a change of the group (a member joins, leaves or changes its
	// subscription, a topic changes) moves the group epoch at once, but
	// the assignor runs again only once the interval since its last run
	// has passed, at the first heartbeat after that; until then members
	// keep the last target. 0: at every change, as before KIP-1263.
	AssignmentInterval time.Duration
}

// shareMember is one member of a share group.
type shareMember struct {
	id                   string
	rackID               *string
	clientID, clientHost string
	topicNames           []string // sorted, no repeats
	epoch, previousEpoch int32
	assigned             map[topicID][]int32
	sessionDeadline      time.Time
}

// shareGroup is the KIP-932 half of a group; guarded by group.mu.
type shareGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	// assignmentTime is when target was last computed (zero: never, or
	// not since a load); the next computation waits for the group's
	// assignment interval past it.
	assignmentTime time.Time
	members        map[string]*shareMember
	target         map[string]map[topicID][]int32

	// topics is the resolved subscription of the whole group as of the
	// last target assignment (subscribed topics that exist); nil after a
	// reload until the first refresh compares loadedHash.
	topics     map[string]topicSnapshot
	loadedHash int64

	// state is the share-partition state of the group's partitions
	// (ShareGroupStatePartitionMetadata); hasState says whether a record
	// of it exists, so that deletion tombstones it.
	state    shareStateValue
	hasState bool
	// initSince is when each initializing topic was last handed to the
	// initializer (or recorded), for the retry of a stuck initialization;
	// initBusy is set while InitializeShareStates works on the group.
	initSince map[topicID]time.Time
	initBusy  bool

	dirty shareDirty
}

// shareDirty lists what must be written to the log.
type shareDirty struct {
	epoch, targetEpoch, state bool
	metadata, target, current map[string]bool // member id → record (tombstone if gone)
}

func newShareGroup() *shareGroup {
	return &shareGroup{
		members:   make(map[string]*shareMember),
		target:    make(map[string]map[topicID][]int32),
		state:     shareStateValue{initializing: map[topicID]shareInitTopic{}, initialized: map[topicID]shareInitTopic{}, deleting: map[topicID]string{}},
		initSince: make(map[topicID]time.Time),
	}
}

func (sg *shareGroup) markMetadata(id string) { mark(&sg.dirty.metadata, id) }
func (sg *shareGroup) markTarget(id string)   { mark(&sg.dirty.target, id) }
func (sg *shareGroup) markCurrent(id string)  { mark(&sg.dirty.current, id) }

func mark(set *map[string]bool, id string) {
	if *set == nil {
		*set = make(map[string]bool)
	}
	(*set)[id] = true
}

// stateName is the group state Kafka reports for a share group.
func (sg *shareGroup) stateName() string {
	if len(sg.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// syncShareStateLocked mirrors membership into the classic state field
// that deletion and listing look at.
func (g *group) syncShareStateLocked(now time.Time) {
	if len(g.share.members) == 0 {
		if g.state != stateEmpty {
			g.setStateLocked(stateEmpty, now)
		}
	} else if g.state != stateStable {
		g.setStateLocked(stateStable, now)
	}
}

// isBlankLocked reports whether g holds nothing yet (just created by the
// lookup of a joining heartbeat), so it may become a share group.
func (g *group) isBlankLocked() bool {
	return g.share == nil && g.consumer == nil && !g.wasConsumer && g.protocolType == "" && g.generation == 0 &&
		len(g.members) == 0 && len(g.offsets) == 0 && len(g.txnOffsets) == 0 && g.state == stateEmpty
}

func shareHeartbeatError(code int16, msg string) *kmsg.ShareGroupHeartbeatResponse {
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = 1
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateShareHeartbeat is Kafka's
// throwIfShareGroupHeartbeatRequestIsInvalid: INVALID_REQUEST with its
// messages, before any state is touched.
func validateShareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) string {
	switch {
	case req.MemberID == "":
		return "MemberId can't be empty."
	case req.GroupID == "":
		return "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < leaveEpoch:
		return "MemberEpoch is invalid."
	}
	return ""
}

// shareSettings fills the zero fields of s with the coordinator's defaults.
func (c *Coordinator) shareSettings(s ShareGroupSettings) ShareGroupSettings {
	if s.SessionTimeout <= 0 {
		s.SessionTimeout = c.cfg.ShareSessionTimeout
	}
	if s.HeartbeatInterval <= 0 {
		s.HeartbeatInterval = c.cfg.ShareHeartbeatInterval
	}
	return s
}

// ShareHeartbeat handles ShareGroupHeartbeat (v1, KIP-932). settings are
// the group's own session timeout and heartbeat interval (its group
// configs, read by the broker on every heartbeat). The answer carries the
// member's epoch, the heartbeat interval and, for a join, a request that
// names its subscription, or a changed assignment, the member's
// assignment.
func (c *Coordinator) ShareHeartbeat(ctx context.Context, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, settings ShareGroupSettings) *kmsg.ShareGroupHeartbeatResponse {
	settings = c.shareSettings(settings)
	if msg := validateShareHeartbeat(req); msg != "" {
		return shareHeartbeatError(kerr.InvalidRequest.Code, msg)
	}
	joining := req.MemberEpoch == 0
	g, err := c.group(req.GroupID, joining)
	if err != nil {
		return shareHeartbeatError(errCode(err), "")
	}
	if g == nil {
		return shareHeartbeatError(kerr.GroupIDNotFound.Code, fmt.Sprintf("Share group %s not found.", req.GroupID))
	}

	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	now := c.cfg.Now()
	g.mu.Lock()
	var resp *kmsg.ShareGroupHeartbeatResponse
	switch {
	case g.unloaded:
		resp = shareHeartbeatError(kerr.NotCoordinator.Code, "")
	case g.state == stateDead:
		resp = shareHeartbeatError(kerr.CoordinatorNotAvailable.Code, "")
	case g.share == nil && !(joining && g.isBlankLocked()):
		if g.share == nil && g.isBlankLocked() {
			resp = shareHeartbeatError(kerr.GroupIDNotFound.Code, fmt.Sprintf("Share group %s not found.", req.GroupID))
		} else {
			resp = shareHeartbeatError(kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a share group.", req.GroupID))
		}
	default:
		if g.share == nil {
			g.share = newShareGroup()
			g.protocolType = "share"
		}
		if req.MemberEpoch == leaveEpoch {
			resp = c.shareLeaveLocked(g, req, now)
		} else {
			resp = c.shareHeartbeatLocked(g, req, clientID, clientHost, settings, now)
		}
		g.syncShareStateLocked(now)
	}
	records := g.shareRecordsLocked(now)
	signal := g.share != nil && c.cfg.ShareStateInitializer != nil && len(g.share.state.initializing) > 0 && !g.share.initBusy
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			return shareHeartbeatError(appendErrorCode(err, false), "")
		}
	}
	if signal {
		c.signalLoad()
	}
	return resp
}

// signalLoad wakes the broker's loader (LoadSignal).
func (c *Coordinator) signalLoad() {
	select {
	case c.loadSignal <- struct{}{}:
	default:
	}
}

// shareLeaveLocked handles epoch -1: the member must exist (no epoch check,
// as in Kafka); its partitions go to the others.
func (c *Coordinator) shareLeaveLocked(g *group, req *kmsg.ShareGroupHeartbeatRequest, now time.Time) *kmsg.ShareGroupHeartbeatResponse {
	m := g.share.members[req.MemberID]
	if m == nil {
		return shareHeartbeatError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
	}
	c.removeShareMemberLocked(g, m, now)
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = 1
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = leaveEpoch
	return resp
}

// removeShareMemberLocked takes a member out (it left or its session
// expired) and moves the group epoch so the others get a new target.
func (c *Coordinator) removeShareMemberLocked(g *group, m *shareMember, now time.Time) {
	sg := g.share
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	sg.markMetadata(m.id)
	sg.markTarget(m.id)
	sg.markCurrent(m.id)
	c.bumpShareGroupLocked(g, now, c.shareAssignmentInterval(g.name))
}

// shareHeartbeatLocked is a join or a regular heartbeat.
func (c *Coordinator) shareHeartbeatLocked(g *group, req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string, settings ShareGroupSettings, now time.Time) *kmsg.ShareGroupHeartbeatResponse {
	sg := g.share
	m := sg.members[req.MemberID]
	if m == nil && c.cfg.ShareMaxGroupSize > 0 && len(sg.members) >= c.cfg.ShareMaxGroupSize {
		return shareHeartbeatError(kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", c.cfg.ShareMaxGroupSize))
	}
	if m == nil {
		if req.MemberEpoch != 0 {
			return shareHeartbeatError(kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
		}
		m = &shareMember{id: req.MemberID}
		sg.members[m.id] = m
		sg.markMetadata(m.id)
		sg.markCurrent(m.id)
		c.cfg.Logger.Info("member joins the share group", "group", g.name, "member", m.id)
	} else if code, msg := checkShareMemberEpoch(m, req.MemberEpoch); code != 0 {
		return shareHeartbeatError(code, msg)
	}

	changed, subscriptionChanged := false, false
	if req.RackID != nil && (m.rackID == nil || *m.rackID != *req.RackID) {
		r := *req.RackID
		m.rackID, changed = &r, true
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topicNames) {
			m.topicNames, changed, subscriptionChanged = names, true, true
		}
	}
	if clientID != m.clientID || clientHost != m.clientHost {
		m.clientID, m.clientHost, changed = clientID, clientHost, true
	}
	if changed {
		sg.markMetadata(m.id)
	}

	all := c.topicsByName()
	c.maybeInitializeShareLocked(g, all, now)
	// A target computation already pending (the assignment interval has
	// not passed) covers newly initialized partitions: no further bump.
	pending := sg.assignmentEpoch != sg.epoch
	if subscriptionChanged || (!pending && sg.initializedAssignmentPending(all)) || (sg.topics != nil && !sameTopics(c.resolveShareTopics(sg, all), sg.topics)) {
		c.bumpShareGroupLocked(g, now, settings.AssignmentInterval)
	} else {
		c.maybeAssignShareLocked(g, now, settings.AssignmentInterval)
	}

	before := m.assigned
	c.reconcileShareMemberLocked(g, m, subscriptionChanged, all)
	m.sessionDeadline = now.Add(settings.SessionTimeout)

	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.Version = 1
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(settings.HeartbeatInterval / time.Millisecond)
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || !sameTarget(before, m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, tid := range sortedTopicIDs(m.assigned) {
			tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			tp.TopicID = tid
			tp.Partitions = slices.Clone(m.assigned[tid])
			a.TopicPartitions = append(a.TopicPartitions, tp)
		}
		resp.Assignment = &a
	}
	return resp
}

// checkShareMemberEpoch is Kafka 4.4's throwIfShareGroupMemberEpochIsInvalid:
// epoch 0 is always accepted (a rejoin), a greater epoch is fenced, and so
// is a smaller one unless it is the previous epoch (the answer that moved
// the epoch was lost).
func checkShareMemberEpoch(m *shareMember, received int32) (int16, string) {
	switch {
	case received == 0:
	case received > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch && received != m.previousEpoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", received, m.epoch, m.previousEpoch)
	}
	return 0, ""
}

// subscribedNames is the union of the members' subscribed topic names.
func (sg *shareGroup) subscribedNames() map[string]bool {
	out := make(map[string]bool)
	for _, m := range sg.members {
		for _, n := range m.topicNames {
			out[n] = true
		}
	}
	return out
}

// resolveShareTopics is the group's subscription resolved against the
// topics that exist.
func (c *Coordinator) resolveShareTopics(sg *shareGroup, all map[string]TopicInfo) map[string]topicSnapshot {
	out := make(map[string]topicSnapshot)
	for n := range sg.subscribedNames() {
		if t, ok := all[n]; ok {
			out[n] = topicSnapshot{id: t.ID, partitions: t.Partitions}
		}
	}
	return out
}

// shareAssignmentInterval is the assignment interval of the group, for
// changes made outside a heartbeat (a member's session ends, a topic
// changes): its settings as the broker gives them, else 0.
func (c *Coordinator) shareAssignmentInterval(group string) time.Duration {
	if c.cfg.ShareGroupSettings == nil {
		return 0
	}
	return c.cfg.ShareGroupSettings(group).AssignmentInterval
}

// bumpShareGroupLocked moves the group epoch and computes the target
// assignment of the new epoch, unless interval has not passed since the
// last computation (maybeAssignShareLocked).
func (c *Coordinator) bumpShareGroupLocked(g *group, now time.Time, interval time.Duration) {
	sg := g.share
	sg.topics = c.resolveShareTopics(sg, c.topicsByName())
	sg.epoch++
	sg.dirty.epoch = true
	c.maybeAssignShareLocked(g, now, interval)
}

// maybeAssignShareLocked computes the target assignment of the group
// epoch when it is behind it and the assignment interval allows (Kafka
// 4.4's canComputeNextTargetAssignment: no computation since the group was
// loaded, an interval of 0, or interval passed since the last one).
func (c *Coordinator) maybeAssignShareLocked(g *group, now time.Time, interval time.Duration) {
	sg := g.share
	if sg.assignmentEpoch == sg.epoch {
		return
	}
	if interval > 0 && !sg.assignmentTime.IsZero() && now.Before(sg.assignmentTime.Add(interval)) {
		return
	}
	c.assignShareLocked(g, now)
}

// assignShareLocked computes the target assignment of the group epoch
// over the initialized partitions of the subscribed topics that exist
// now.
func (c *Coordinator) assignShareLocked(g *group, now time.Time) {
	sg := g.share
	all := c.topicsByName()
	spec := shareAssignSpec{topics: make(map[topicID]int32)}
	for _, t := range sg.topics {
		init := sg.state.initialized[t.id]
		var parts []int32
		for _, p := range init.partitions {
			if p < t.partitions {
				parts = append(parts, p)
			}
		}
		if len(parts) > 0 {
			spec.topics[t.id] = int32(len(parts))
			spec.partitions = append(spec.partitions, shareTopicParts{id: t.id, partitions: parts})
		}
	}
	slices.SortFunc(spec.partitions, func(a, b shareTopicParts) int { return slices.Compare(a.id[:], b.id[:]) })
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		am := shareAssignMember{id: id, current: sg.target[id]}
		for _, n := range m.topicNames {
			if t, ok := all[n]; ok {
				am.topics = append(am.topics, t.ID)
			}
		}
		spec.members = append(spec.members, am)
	}
	result := assignShareSimple(spec)
	for id := range sg.members {
		next := result[id]
		if next == nil {
			next = map[topicID][]int32{}
		}
		if !sameTarget(next, sg.target[id]) {
			sg.markTarget(id)
		}
		sg.target[id] = next
	}
	sg.assignmentEpoch = sg.epoch
	sg.assignmentTime = now
	sg.dirty.targetEpoch = true
}

// reconcileShareMemberLocked gives m its target, filtered to the topics it
// subscribes to, when the target epoch moved past its epoch or its
// subscription changed (Kafka's ShareGroupAssignmentBuilder).
func (c *Coordinator) reconcileShareMemberLocked(g *group, m *shareMember, subscriptionChanged bool, all map[string]TopicInfo) {
	sg := g.share
	if m.epoch == sg.assignmentEpoch && !subscriptionChanged {
		return
	}
	subscribed := make(map[topicID]bool)
	for _, n := range m.topicNames {
		if t, ok := all[n]; ok {
			subscribed[t.ID] = true
		}
	}
	next := make(map[topicID][]int32)
	for id, ps := range sg.target[m.id] {
		if subscribed[id] && len(ps) > 0 {
			next[id] = slices.Clone(ps)
		}
	}
	changed := !sameTarget(next, m.assigned)
	m.assigned = next
	if m.epoch != sg.assignmentEpoch {
		m.previousEpoch, m.epoch = m.epoch, sg.assignmentEpoch
		changed = true
	}
	if changed {
		sg.markCurrent(m.id)
	}
}

// dueLocked reports whether a member's session has ended at now.
func (sg *shareGroup) dueLocked(now time.Time) bool {
	for _, m := range sg.members {
		if !now.Before(m.sessionDeadline) {
			return true
		}
	}
	return false
}

// tickShare removes members whose session ended and writes what changed.
func (c *Coordinator) tickShare(ctx context.Context, g *group, now time.Time) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if !g.lockIfLive(func() bool { return g.share != nil }) {
		return
	}
	sg := g.share
	for _, id := range sortedKeys(sg.members) {
		if m := sg.members[id]; !now.Before(m.sessionDeadline) {
			c.cfg.Logger.Info("removing share group member whose session expired", "group", g.name, "member", id)
			c.removeShareMemberLocked(g, m, now)
		}
	}
	g.syncShareStateLocked(now)
	records := g.shareRecordsLocked(now)
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist share group", "group", g.name, "err", err)
		}
	}
}

// shareRecordsLocked takes the records the last changes call for, in
// Kafka's order: tombstones of members that are gone (current assignment,
// target, metadata), member metadata, the group epoch, the state
// partition metadata, targets, the target epoch, current assignments.
func (g *group) shareRecordsLocked(now time.Time) []kv {
	sg := g.share
	if sg == nil {
		return nil
	}
	d := sg.dirty
	sg.dirty = shareDirty{}
	var out []kv
	for _, id := range sortedKeys(d.metadata) {
		if sg.members[id] == nil {
			out = append(out,
				kv{key: memberKeyOf(shareGroupCurrentAssignmentKeyVersion, g.name, id)},
				kv{key: memberKeyOf(shareGroupTargetMemberKeyVersion, g.name, id)},
				kv{key: memberKeyOf(shareGroupMemberMetadataKeyVersion, g.name, id)})
		}
	}
	for _, id := range sortedKeys(d.metadata) {
		if m := sg.members[id]; m != nil {
			v := shareMemberValue{rackID: m.rackID, clientID: m.clientID, clientHost: m.clientHost, topicNames: m.topicNames}
			if v.topicNames == nil {
				v.topicNames = []string{}
			}
			out = append(out, kv{key: memberKeyOf(shareGroupMemberMetadataKeyVersion, g.name, id), value: v.encode()})
		}
	}
	if d.epoch {
		out = append(out, kv{key: groupKeyOf(shareGroupMetadataKeyVersion, g.name), value: shareGroupMetadataValue(sg.epoch, hashTopics(sg.topics))})
	}
	if d.state {
		out = append(out, kv{key: groupKeyOf(shareGroupStatePartitionMetadataKeyVersion, g.name), value: sg.state.encode()})
		sg.hasState = true
	}
	for _, id := range sortedKeys(d.target) {
		if sg.members[id] != nil {
			out = append(out, kv{key: memberKeyOf(shareGroupTargetMemberKeyVersion, g.name, id), value: targetMemberValue(sg.target[id])})
		}
	}
	if d.targetEpoch {
		out = append(out, kv{key: groupKeyOf(shareGroupTargetMetadataKeyVersion, g.name), value: shareTargetMetadataValue(sg.assignmentEpoch, now.UnixMilli())})
	}
	for _, id := range sortedKeys(d.current) {
		if m := sg.members[id]; m != nil {
			v := shareCurrentValue{memberEpoch: m.epoch, previousEpoch: m.previousEpoch, assigned: m.assigned}
			out = append(out, kv{key: memberKeyOf(shareGroupCurrentAssignmentKeyVersion, g.name, id), value: v.encode()})
		}
	}
	return out
}

// shareTombstonesLocked are the tombstones of an empty share group being
// deleted, in the order of Kafka's ShareGroup.createGroupTombstoneRecords.
func (g *group) shareTombstonesLocked() []kv {
	return []kv{
		{key: groupKeyOf(shareGroupTargetMetadataKeyVersion, g.name)},
		{key: groupKeyOf(shareGroupStatePartitionMetadataKeyVersion, g.name)},
		{key: groupKeyOf(shareGroupMetadataKeyVersion, g.name)},
	}
}

// restoredShareSettings returns the settings of share group name for the
// members restored when its partition loads.
func (c *Coordinator) restoredShareSettings(name string) ShareGroupSettings {
	var s ShareGroupSettings
	if c.cfg.ShareGroupSettings != nil {
		s = c.cfg.ShareGroupSettings(name)
	}
	return c.shareSettings(s)
}
