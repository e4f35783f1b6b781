package groups

// KIP-848 consumer groups: the ConsumerGroupHeartbeat state machine.
//
// A consumer group lives in the same group value as a classic one (the
// group's consumer field is set) so committed offsets, deletion, expiry and
// listing share one code path. Its state is the group epoch, the target
// assignment (computed by a server-side assignor whenever the group epoch
// moves) with its epoch, and per member the subscription, member epoch and
// current assignment. Members converge on the target one heartbeat at a
// time (consumer_reconcile.go): a partition moves to a new owner only after
// its previous owner's heartbeat shows it no longer owns it.
//
// The group epoch moves when a member joins, leaves or is fenced, when a
// subscription (topic names or regular expression) changes, and when the
// subscribed topics change in the metadata (created, deleted, more
// partitions; RefreshConsumerGroups). Every change is written as Kafka's
// consumer group records (consumer_records.go) before the heartbeat that
// caused it is answered; unlike Kafka, memory changes first and is not
// rolled back when the append fails (the client retries; a lost leadership
// unloads the group anyway).

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is Kafka's MemberState of a consumer group member; the values
// are the ones written in ConsumerGroupCurrentMemberAssignmentValue.
type memberState int8

const (
	memberStable               memberState = 0 // reconciled with the target
	memberUnrevokedPartitions  memberState = 1 // must revoke partitions first
	memberUnreleasedPartitions memberState = 2 // waits for others to release partitions
)

// Special member epochs of the heartbeat request.
const (
	leaveEpoch       = -1 // the member leaves the group
	staticLeaveEpoch = -2 // a static member leaves and will come back
)

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	topicNames       []string // sorted subscribed topic names
	topicRegex       string   // "" when none
	serverAssignor   string   // "" when the member names none
	rebalanceTimeout time.Duration

	epoch, previousEpoch int32
	state                memberState
	// assigned and pending (partitions pending revocation) map topic id
	// → partition → the epoch at which the member got the partition.
	assigned, pending map[topicID]map[int32]int32

	sessionDeadline time.Time
	revokeDeadline  time.Time // while memberUnrevokedPartitions
}

// topicSnapshot is what the group knows of one subscribed topic.
type topicSnapshot struct {
	id         topicID
	partitions int32
}

// consumerGroup is the KIP-848 half of a group; guarded by group.mu.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	assignor        string
	members         map[string]*consumerMember
	static          map[string]string // group.instance.id → member id
	target          map[string]map[topicID][]int32

	// topics is the resolved subscription of the whole group as of the
	// last target assignment: subscribed topics that exist. nil after a
	// reload until the first refresh, which then compares loadedHash.
	topics     map[string]topicSnapshot
	loadedHash int64

	dirty consumerDirty
}

// consumerDirty lists what must be written to the log.
type consumerDirty struct {
	classicTombstone bool // the group was a classic one
	epoch            bool
	targetEpoch      bool
	metadata         map[string]bool // member id → metadata (tombstone if gone)
	target           map[string]bool
	current          map[string]bool
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members: make(map[string]*consumerMember),
		static:  make(map[string]string),
		target:  make(map[string]map[topicID][]int32),
	}
}

func (d *consumerDirty) mark(set *map[string]bool, id string) {
	if *set == nil {
		*set = make(map[string]bool)
	}
	(*set)[id] = true
}

func (cg *consumerGroup) markMetadata(id string) { cg.dirty.mark(&cg.dirty.metadata, id) }
func (cg *consumerGroup) markTarget(id string)   { cg.dirty.mark(&cg.dirty.target, id) }
func (cg *consumerGroup) markCurrent(id string)  { cg.dirty.mark(&cg.dirty.current, id) }

// state is the group state Kafka reports for a consumer group.
func (cg *consumerGroup) state() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.epoch > cg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.state != memberStable || m.epoch != cg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// syncClassicStateLocked mirrors membership into the classic state field
// that offset expiry, deletion and OffsetDelete look at: Empty without
// members (from when it became empty), Stable with.
func (g *group) syncClassicStateLocked(now time.Time) {
	if len(g.consumer.members) == 0 {
		if g.state != stateEmpty {
			g.setStateLocked(stateEmpty, now)
		}
	} else if g.state != stateStable {
		g.setStateLocked(stateStable, now)
	}
}

// heartbeatError is a heartbeat answer carrying only an error.
func heartbeatError(version int16, code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = version
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// newConsumerMemberID is a member id as Kafka's Uuid.toString writes it:
// 16 random bytes in unpadded URL-safe base64.
func newConsumerMemberID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validateHeartbeat is Kafka's check of a ConsumerGroupHeartbeat request
// before any state is touched: INVALID_REQUEST for a malformed request,
// INVALID_REGULAR_EXPRESSION, UNSUPPORTED_ASSIGNOR.
func (c *Coordinator) validateHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	// In the order of Kafka's
	// GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid,
	// with its messages.
	invalid := kerr.InvalidRequest.Code
	switch {
	case req.MemberID == "" && (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveEpoch):
		return invalid, "MemberId can't be empty."
	case req.Group == "":
		return invalid, "GroupId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return invalid, "RackId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return invalid, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return invalid, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return invalid, "MemberEpoch is invalid."
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := compileTopicRegex(*req.SubscribedTopicRegex); err != nil {
			return kerr.InvalidRegularExpression.Code, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *req.SubscribedTopicRegex, err)
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %v.", *req.ServerAssignor, c.cfg.ConsumerAssignors)
	}
	return 0, ""
}

// compileTopicRegex compiles a subscription regular expression. Kafka uses
// RE2/J, whose syntax is Go's, and matches whole topic names.
func compileTopicRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// ConsumerGroupSettings are the settings one KIP-848 consumer group may
// override with its group configs (consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms). A zero field means the coordinator's
// Config value (the broker's group.consumer.* default).
type ConsumerGroupSettings struct {
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
}

// consumerSettings fills the zero fields of s with the coordinator's
// defaults.
func (c *Coordinator) consumerSettings(s ConsumerGroupSettings) ConsumerGroupSettings {
	if s.SessionTimeout <= 0 {
		s.SessionTimeout = c.cfg.ConsumerSessionTimeout
	}
	if s.HeartbeatInterval <= 0 {
		s.HeartbeatInterval = c.cfg.ConsumerHeartbeatInterval
	}
	return s
}

// restoredSettings returns the settings of consumer group name for the
// members restored when its partition loads.
func (c *Coordinator) restoredSettings(name string) ConsumerGroupSettings {
	var s ConsumerGroupSettings
	if c.cfg.ConsumerGroupSettings != nil {
		s = c.cfg.ConsumerGroupSettings(name)
	}
	return c.consumerSettings(s)
}

// ConsumerHeartbeat handles ConsumerGroupHeartbeat (v0–v1, KIP-848). A
// member joins with epoch 0 (v1 clients choose their member id, v0 members
// get one), heartbeats with its epoch and the partitions it owns, and
// leaves with epoch -1 (a static member with -2, keeping its assignment
// for its return). The answer carries the member's epoch and, when it
// changed or the request was a full one, its assignment.
//
// settings are the group's own session timeout and heartbeat interval (its
// group configs, which the broker reads from metadata on every heartbeat):
// the member's session is renewed with the session timeout in force at
// this heartbeat and is told the heartbeat interval in force now, so a
// change applies from each member's next heartbeat, as in Kafka.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, settings ConsumerGroupSettings) *kmsg.ConsumerGroupHeartbeatResponse {
	settings = c.consumerSettings(settings)
	v := req.Version
	if code, msg := c.validateHeartbeat(req); code != 0 {
		return heartbeatError(v, code, msg)
	}
	joining := req.MemberEpoch == 0
	g, err := c.group(req.Group, joining)
	if err != nil {
		return heartbeatError(v, errCode(err), "")
	}
	if g == nil {
		return heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Consumer group %s not found.", req.Group))
	}

	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	now := c.cfg.Now()
	g.mu.Lock()
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	switch {
	case g.unloaded:
		resp = heartbeatError(v, kerr.NotCoordinator.Code, "")
	case g.state == stateDead:
		resp = heartbeatError(v, kerr.CoordinatorNotAvailable.Code, "")
	case g.share != nil, g.streams != nil && len(g.streams.members) > 0:
		resp = heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", req.Group))
	case g.consumer == nil && (!joining || len(g.members) > 0 || g.state != stateEmpty):
		resp = heartbeatError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", req.Group))
	default:
		if g.streams != nil {
			// An empty streams group (held in memory only) becomes a
			// consumer group.
			g.streams = nil
			g.protocolType = ""
		}
		if g.consumer == nil {
			// An empty classic group (or one that only holds offsets)
			// becomes a consumer group.
			g.consumer = newConsumerGroup()
			g.consumer.dirty.classicTombstone = g.protocolType != "" || g.generation > 0
			g.wasConsumer = false
			g.protocolType, g.protocol, g.leader = "consumer", "", ""
		}
		if req.MemberEpoch < 0 {
			resp = c.consumerLeaveLocked(g, req, settings, now)
		} else {
			resp = c.consumerHeartbeatLocked(g, req, clientID, clientHost, settings, now)
		}
		g.syncClassicStateLocked(now)
	}
	records := g.consumerRecordsLocked()
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			return heartbeatError(v, appendErrorCode(err, false), "")
		}
	}
	return resp
}

// consumerHeartbeatLocked is a join or a regular heartbeat.
func (c *Coordinator) consumerHeartbeatLocked(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string, settings ConsumerGroupSettings, now time.Time) *kmsg.ConsumerGroupHeartbeatResponse {
	v := req.Version
	cg := g.consumer
	memberID := req.MemberID
	if memberID == "" {
		memberID = newConsumerMemberID() // v0 join
	}
	m, code, msg := c.lookupConsumerMemberLocked(g, req, memberID, now)
	if code != 0 {
		return heartbeatError(v, code, msg)
	}

	// Take what the request carries; null fields mean "unchanged".
	bump := cg.epoch == 0
	changed := false
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		id := *req.InstanceID
		m.instanceID = &id
		cg.static[id] = m.id
		changed = true
	}
	if req.RackID != nil && (m.rackID == nil || *m.rackID != *req.RackID) {
		r := *req.RackID
		m.rackID, changed = &r, true
	}
	if req.RebalanceTimeoutMillis >= 0 {
		d := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		changed = changed || d != m.rebalanceTimeout
		m.rebalanceTimeout = d
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.serverAssignor {
		m.serverAssignor, changed = *req.ServerAssignor, true
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.topicNames) {
			m.topicNames, changed, bump = names, true, true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.topicRegex {
		m.topicRegex, changed, bump = *req.SubscribedTopicRegex, true, true
	}
	if clientID != m.clientID || clientHost != m.clientHost {
		m.clientID, m.clientHost, changed = clientID, clientHost, true
	}
	if changed {
		cg.markMetadata(m.id)
	}
	if bump {
		c.bumpConsumerGroupLocked(g, now)
	}

	before := m.assigned
	ownedKnown := req.Topics != nil
	c.reconcileMemberLocked(g, m, req.Topics, ownedKnown, now)
	m.sessionDeadline = now.Add(settings.SessionTimeout)

	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = v
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(settings.HeartbeatInterval / time.Millisecond)
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !samePartitions(before, m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, tid := range sortedTopicIDs(m.assigned) {
			t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			t.TopicID = tid
			t.Partitions = sortedKeys(m.assigned[tid])
			a.Topics = append(a.Topics, t)
		}
		resp.Assignment = &a
	}
	return resp
}

// lookupConsumerMemberLocked finds the member a heartbeat is from, creating
// it on a join, and checks its identity and epoch: UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, FENCED_MEMBER_EPOCH,
// GROUP_MAX_SIZE_REACHED.
func (c *Coordinator) lookupConsumerMemberLocked(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, memberID string, now time.Time) (*consumerMember, int16, string) {
	cg := g.consumer
	join := req.MemberEpoch == 0
	full := func() bool {
		return c.cfg.ConsumerMaxGroupSize > 0 && len(cg.members) >= c.cfg.ConsumerMaxGroupSize
	}
	newMember := func() *consumerMember {
		m := &consumerMember{id: memberID, rebalanceTimeout: -1}
		cg.members[memberID] = m
		cg.markMetadata(memberID)
		cg.markCurrent(memberID)
		return m
	}
	maxSize := func() (*consumerMember, int16, string) {
		return nil, kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", c.cfg.ConsumerMaxGroupSize)
	}

	if req.InstanceID != nil {
		instance := *req.InstanceID
		existingID, ok := cg.static[instance]
		existing := cg.members[existingID]
		if join {
			switch {
			case !ok || existing == nil:
				if m := cg.members[memberID]; m != nil {
					c.rejoinLocked(g, m)
					return m, 0, ""
				}
				if full() {
					return maxSize()
				}
				return newMember(), 0, ""
			case existingID == memberID:
				c.rejoinLocked(g, existing)
				return existing, 0, ""
			case existing.epoch != staticLeaveEpoch:
				return nil, kerr.UnreleasedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instance, existingID)
			}
			return c.replaceStaticLocked(g, existing, memberID), 0, ""
		}
		if code, msg := checkStaticInstance(instance, memberID, existingID, ok && existing != nil); code != 0 {
			return nil, code, msg
		}
	}

	m := cg.members[memberID]
	if m == nil {
		if !join {
			return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.name)
		}
		if full() {
			return maxSize()
		}
		return newMember(), 0, ""
	}
	if join {
		// A known member rejoining at epoch 0 has given up its
		// partitions (it lost a response or was fenced): it is taken
		// back in place and reconciled from scratch.
		c.rejoinLocked(g, m)
		return m, 0, ""
	}
	if code, msg := checkMemberEpoch(m, req.MemberEpoch, req.Topics); code != 0 {
		return nil, code, msg
	}
	return m, 0, ""
}

// checkMemberEpoch is Kafka's epoch check of a regular heartbeat: a
// greater epoch is fenced, and so is a smaller one unless it is the
// previous epoch and the member owns a subset of its assignment (the
// answer that bumped the epoch was lost).
func checkMemberEpoch(m *consumerMember, received int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) (int16, string) {
	switch {
	case received > m.epoch:
		return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
	case received < m.epoch:
		if received != m.previousEpoch || owned == nil || !ownsSubset(owned, m.assigned) {
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", received, m.epoch)
		}
	}
	return 0, ""
}

func ownsSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, assigned map[topicID]map[int32]int32) bool {
	for _, t := range owned {
		for _, p := range t.Partitions {
			if _, ok := assigned[t.TopicID][p]; !ok {
				return false
			}
		}
	}
	return true
}

// rejoinLocked resets a member that rejoins with epoch 0: it owns nothing
// any more, so what it had is free and it is reconciled afresh.
func (c *Coordinator) rejoinLocked(g *group, m *consumerMember) {
	if m.epoch != 0 || len(m.assigned) > 0 || len(m.pending) > 0 || m.state != memberStable {
		m.previousEpoch, m.epoch = m.epoch, 0
		m.assigned, m.pending, m.state = nil, nil, memberStable
		g.consumer.markCurrent(m.id)
	}
}

// replaceStaticLocked hands a static member that left temporarily (epoch
// -2) over to its new incarnation: the new member id takes its epoch,
// assignment and target, and the group epoch stays (KIP-345 for KIP-848).
func (c *Coordinator) replaceStaticLocked(g *group, old *consumerMember, newID string) *consumerMember {
	cg := g.consumer
	m := *old
	m.id = newID
	m.epoch = old.previousEpoch
	if m.epoch < 0 {
		m.epoch = 0
	}
	delete(cg.members, old.id)
	cg.members[newID] = &m
	cg.static[*m.instanceID] = newID
	if t, ok := cg.target[old.id]; ok {
		delete(cg.target, old.id)
		cg.target[newID] = t
		cg.markTarget(newID)
	}
	for _, id := range []string{old.id, newID} {
		cg.markMetadata(id)
		cg.markTarget(id)
		cg.markCurrent(id)
	}
	return &m
}

// checkStaticInstance is the check of the instance id that a heartbeat of
// a consumer or streams group member sends when it does not join: the id
// must belong to a current member (owned; otherwise UNKNOWN_MEMBER_ID),
// and that member, ownerID, must be the sender, memberID (otherwise
// FENCED_INSTANCE_ID), as in Kafka. It returns the error code and message,
// or 0.
func checkStaticInstance(instance, memberID, ownerID string, owned bool) (int16, string) {
	switch {
	case !owned:
		return kerr.UnknownMemberID.Code, fmt.Sprintf("Instance id %s is unknown.", instance)
	case ownerID != memberID:
		return kerr.FencedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, instance, ownerID)
	}
	return 0, ""
}

// consumerLeaveLocked handles epoch -1 (leave) and -2 (a static member
// leaves for now and keeps its assignment until it returns or its session
// expires). A leave names the member by id; a static one may also send its
// instance id, which must be the member's.
func (c *Coordinator) consumerLeaveLocked(g *group, req *kmsg.ConsumerGroupHeartbeatRequest, settings ConsumerGroupSettings, now time.Time) *kmsg.ConsumerGroupHeartbeatResponse {
	v := req.Version
	cg := g.consumer
	var m *consumerMember
	if req.InstanceID != nil {
		id, ok := cg.static[*req.InstanceID]
		if code, msg := checkStaticInstance(*req.InstanceID, req.MemberID, id, ok && cg.members[id] != nil); code != 0 {
			return heartbeatError(v, code, msg)
		}
		m = cg.members[id]
	} else if m = cg.members[req.MemberID]; m == nil {
		return heartbeatError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
	}
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		if m.epoch != staticLeaveEpoch {
			m.previousEpoch, m.epoch = m.epoch, staticLeaveEpoch
			cg.markCurrent(m.id)
		}
		m.sessionDeadline = now.Add(settings.SessionTimeout)
	} else {
		c.removeConsumerMemberLocked(g, m, now)
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = v
	id := req.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = req.MemberEpoch
	return resp
}

// removeConsumerMemberLocked takes a member out of the group (it left, its
// session expired or it did not revoke in time): its partitions are free,
// and the group epoch moves so the others get them.
func (c *Coordinator) removeConsumerMemberLocked(g *group, m *consumerMember, now time.Time) {
	cg := g.consumer
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
	cg.markMetadata(m.id)
	cg.markTarget(m.id)
	cg.markCurrent(m.id)
	c.bumpConsumerGroupLocked(g, now)
}

// dueLocked reports whether a member's session or revocation deadline has
// passed at now: whether tickConsumer has anything to do.
func (cg *consumerGroup) dueLocked(now time.Time) bool {
	for _, m := range cg.members {
		if m == nil {
			continue
		}
		if !now.Before(m.sessionDeadline) || m.state == memberUnrevokedPartitions && m.rebalanceTimeout >= 0 && !now.Before(m.revokeDeadline) {
			return true
		}
	}
	return false
}

// tickConsumer expires members whose session ended and fences those that
// did not revoke partitions within their rebalance timeout, then writes
// what changed.
func (c *Coordinator) tickConsumer(ctx context.Context, g *group, now time.Time) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if !g.lockIfLive(func() bool { return g.consumer != nil }) {
		return
	}
	cg := g.consumer
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		if m == nil {
			continue
		}
		expired := !now.Before(m.sessionDeadline)
		stuck := m.state == memberUnrevokedPartitions && m.rebalanceTimeout >= 0 && !now.Before(m.revokeDeadline)
		if expired || stuck {
			c.cfg.Logger.Info("removing consumer group member", "group", g.name, "member", id, "session_expired", expired, "revocation_timed_out", stuck)
			c.removeConsumerMemberLocked(g, m, now)
		}
	}
	g.syncClassicStateLocked(now)
	records := g.consumerRecordsLocked()
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist consumer group", "group", g.name, "err", err)
		}
	}
}

// consumerRecordsLocked takes the records the last changes call for.
func (g *group) consumerRecordsLocked() []kv {
	cg := g.consumer
	if cg == nil {
		return nil
	}
	d := cg.dirty
	cg.dirty = consumerDirty{}
	var out []kv
	if d.classicTombstone {
		out = append(out, kv{key: groupKey(g.name)})
	}
	// Members that are gone: assignment, target, then metadata, as
	// Kafka orders the tombstones.
	for _, id := range sortedKeys(d.metadata) {
		if cg.members[id] == nil {
			out = append(out,
				kv{key: memberKeyOf(consumerGroupCurrentAssignmentKeyVersion, g.name, id)},
				kv{key: memberKeyOf(consumerGroupTargetMemberKeyVersion, g.name, id)},
				kv{key: memberKeyOf(consumerGroupMemberMetadataKeyVersion, g.name, id)})
		}
	}
	for _, id := range sortedKeys(d.metadata) {
		if m := cg.members[id]; m != nil {
			out = append(out, kv{key: memberKeyOf(consumerGroupMemberMetadataKeyVersion, g.name, id), value: m.metadataValue().encode()})
		}
	}
	if d.epoch {
		out = append(out, kv{key: groupKeyOf(consumerGroupMetadataKeyVersion, g.name), value: consumerGroupMetadataValue(cg.epoch, hashTopics(cg.topics))})
	}
	for _, id := range sortedKeys(d.target) {
		if cg.members[id] == nil {
			continue
		}
		out = append(out, kv{key: memberKeyOf(consumerGroupTargetMemberKeyVersion, g.name, id), value: targetMemberValue(cg.target[id])})
	}
	if d.targetEpoch {
		out = append(out, kv{key: groupKeyOf(consumerGroupTargetMetadataKeyVersion, g.name), value: targetMetadataValue(cg.assignmentEpoch)})
	}
	for _, id := range sortedKeys(d.current) {
		m := cg.members[id]
		if m == nil {
			continue
		}
		v := currentAssignmentValue{memberEpoch: m.epoch, previousEpoch: m.previousEpoch, state: int8(m.state), assigned: m.assigned, pending: m.pending}
		out = append(out, kv{key: memberKeyOf(consumerGroupCurrentAssignmentKeyVersion, g.name, id), value: v.encode()})
	}
	return out
}

func (m *consumerMember) metadataValue() *memberMetadataValue {
	v := &memberMetadataValue{
		instanceID: m.instanceID, rackID: m.rackID,
		clientID: m.clientID, clientHost: m.clientHost,
		topicNames:         m.topicNames,
		rebalanceTimeoutMs: int32(m.rebalanceTimeout / time.Millisecond),
	}
	if v.topicNames == nil {
		v.topicNames = []string{}
	}
	if m.topicRegex != "" {
		r := m.topicRegex
		v.topicRegex = &r
	}
	if m.serverAssignor != "" {
		a := m.serverAssignor
		v.serverAssignor = &a
	}
	return v
}

// consumerTombstonesLocked are the group-level tombstones of a consumer
// group being deleted (it has no members left).
func (g *group) consumerTombstonesLocked() []kv {
	if g.consumer == nil {
		return nil
	}
	return consumerGroupTombstones(g.name)
}

// consumerGroupTombstones are the group-level tombstones of consumer
// group name: written when it is deleted, or when it became a classic
// group (Kafka deletes an empty consumer group a classic member joins).
func consumerGroupTombstones(name string) []kv {
	return []kv{
		{key: groupKeyOf(consumerGroupTargetMetadataKeyVersion, name)},
		{key: groupKeyOf(consumerGroupMetadataKeyVersion, name)},
	}
}
