package groups

// KIP-1071 streams groups: the StreamsGroupHeartbeat state machine (Kafka
// 4.4's GroupMetadataManager.streamsGroupHeartbeat).
//
// A streams group lives in the same group value as classic, consumer and
// share groups (the group's streams field is set), so lookup, offsets,
// listing, expiry and deletion share one code path, and the group id space
// is shared: a streams heartbeat for a classic group with members, a
// consumer or a share group is GROUP_ID_NOT_FOUND ("Group g is not a
// streams group."), a consumer heartbeat or a JoinGroup for a streams
// group likewise fails, and an empty classic group (one that only holds
// offsets, e.g. after a coordinator failover) becomes a streams group.
//
// The first member's topology (subtopologies with their source,
// repartition and changelog topics; streams_topology.go) is the group's.
// It is configured against the topics that exist: the number of tasks of
// each subtopology, the partition counts of repartition and changelog
// topics, and the statuses that block assignment (MISSING_SOURCE_TOPICS,
// MISSING_INTERNAL_TOPICS, INCORRECTLY_PARTITIONED_TOPICS). Missing
// internal topics are handed to the broker to create, as Kafka's
// coordinator hands them to its auto-topic-creation manager. A member that
// joins with a newer topology epoch while others run an older one gets
// STREAMS_INVALID_TOPOLOGY_EPOCH ("Topology updates are not supported
// yet.", as Kafka 4.4); one with an older epoch gets the STALE_TOPOLOGY
// status.
//
// The group epoch moves when a member joins, leaves or is fenced, when a
// member's process id, rack or client tags change, when the topology
// changes and when its configuration against the topics changes (topics
// created or deleted, more partitions; RefreshConsumerGroups). Each move
// computes a target assignment with the sticky task assignor
// (streams_assign.go); members converge on it one heartbeat at a time
// (streams_reconcile.go): an active task reaches its new owner only after
// the previous owner stopped reporting it.
//
// Every change is written as Kafka's StreamsGroup* records
// (streams_records.go) before the heartbeat that caused it is answered,
// so a coordinator that takes the partition over (failover, kill -9)
// replays the group (streams_load.go) and its members go on with their
// epochs and tasks. As for consumer groups, memory changes first and is
// not rolled back when the append fails (the client retries; a lost
// leadership unloads the group anyway). A heartbeat with epoch > 0 for a
// group the coordinator does not have as a streams group is answered
// UNKNOWN_MEMBER_ID (Kafka: GROUP_ID_NOT_FOUND), which the Streams client
// takes as fenced and rejoins. What is not persisted: the topology
// description of StreamsGroupTopologyDescriptionUpdate, and a pending
// SHUTDOWN_APPLICATION request.
//
// The first assignment of a group that members join is delayed
// (group.streams.initial.rebalance.delay.ms) and targets are computed at
// most once per group.streams.assignment.interval.ms, with the
// ASSIGNMENT_DELAYED status meanwhile (streams_delay.go). Where sluice
// differs from Kafka 4.4: no warm-up tasks are assigned (Kafka's Streams
// client does not run them with this protocol either).

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Status codes of StreamsGroupHeartbeatResponse.Status, Kafka's
// StreamsGroupHeartbeatResponse.Status.
const (
	streamsStatusStaleTopology                = 0
	streamsStatusMissingSourceTopics          = 1
	streamsStatusIncorrectlyPartitionedTopics = 2
	streamsStatusMissingInternalTopics        = 3
	streamsStatusShutdownApplication          = 4
)

// StreamsGroupSettings are the settings a streams group runs with: the
// broker's group.streams.* values, overridden by the group's own
// streams.* group configs. The broker hands them to every call that needs
// them, so a change applies from the next heartbeat.
type StreamsGroupSettings struct {
	SessionTimeout        time.Duration // group.streams.session.timeout.ms
	HeartbeatInterval     time.Duration // group.streams.heartbeat.interval.ms
	NumStandbyReplicas    int           // group.streams.num.standby.replicas
	MaxGroupSize          int           // group.streams.max.size; 0 is unlimited
	AcceptableRecoveryLag int64         // told to members (Kafka's internal 10000)
	// InitialRebalanceDelay holds back the first assignment of a group
	// members join (group.streams.initial.rebalance.delay.ms).
	InitialRebalanceDelay time.Duration
	// AssignmentInterval is the least time between two target
	// assignments (group.streams.assignment.interval.ms).
	AssignmentInterval time.Duration
	// RackAwareTags are the client tag keys over which standbys are
	// spread (group.streams.rack.aware.assignment.tags).
	RackAwareTags      []string
	TaskOffsetInterval time.Duration // told to members (Kafka's internal 60 s)
	// DefaultReplicationFactor is the replication factor of internal
	// topics whose TopicInfo asks for none (default.replication.factor).
	DefaultReplicationFactor int16
}

// StreamsTopicToCreate is an internal topic (repartition or changelog) of
// a streams group's topology that does not exist yet: the broker creates
// it after the heartbeat, as Kafka's coordinator asks the controller to.
type StreamsTopicToCreate struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// taskSet is a set of tasks: subtopology id → partitions.
type taskSet map[string]map[int32]bool

// streamsTasks are the three kinds of tasks of a member.
type streamsTasks struct {
	active, standby, warmup taskSet
}

func (t *taskSet) add(sub string, p int32) {
	if *t == nil {
		*t = make(taskSet)
	}
	if (*t)[sub] == nil {
		(*t)[sub] = make(map[int32]bool)
	}
	(*t)[sub][p] = true
}

func (t taskSet) has(sub string, p int32) bool { return t[sub][p] }

func (t taskSet) size() int {
	n := 0
	for _, ps := range t {
		n += len(ps)
	}
	return n
}

func (t taskSet) equal(o taskSet) bool {
	if t.size() != o.size() {
		return false
	}
	for sub, ps := range t {
		for p := range ps {
			if !o[sub][p] {
				return false
			}
		}
	}
	return true
}

func (a streamsTasks) equal(b streamsTasks) bool {
	return a.active.equal(b.active) && a.standby.equal(b.standby) && a.warmup.equal(b.warmup)
}

func (a streamsTasks) empty() bool {
	return a.active.size() == 0 && a.standby.size() == 0 && a.warmup.size() == 0
}

// wire lists t as the protocol's TaskIDs, sorted.
func (t taskSet) wire() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, sub := range sortedKeys(t) {
		if len(t[sub]) == 0 {
			continue
		}
		ids := kmsg.NewTaskIDs()
		ids.SubtopologyID = sub
		ids.Partitions = sortedKeys(t[sub])
		out = append(out, ids)
	}
	return out
}

func taskSetOf(ids []kmsg.TaskIDs) taskSet {
	var t taskSet
	for _, id := range ids {
		for _, p := range id.Partitions {
			t.add(id.SubtopologyID, p)
		}
	}
	return t
}

// streamsMember is one member of a streams group (one StreamThread of a
// Kafka Streams client; the client's threads share a process id).
type streamsMember struct {
	id                   string
	instanceID, rackID   *string
	clientID, clientHost string
	processID            string
	endpoint             *kmsg.StreamsGroupHeartbeatRequestUserEndpoint
	clientTags           map[string]string
	topologyEpoch        int32
	rebalanceTimeout     time.Duration
	taskOffsets          []kmsg.TaskOffset
	taskEndOffsets       []kmsg.TaskOffset

	epoch, previousEpoch int32
	state                memberState
	assigned, pending    streamsTasks

	sessionDeadline time.Time
	revokeDeadline  time.Time // while memberUnrevokedPartitions
}

// streamsGroup is the KIP-1071 half of a group; guarded by group.mu.
type streamsGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	topology        *streamsTopology
	configured      *configuredTopology // topology against the topics, as of the last bump
	members         map[string]*streamsMember
	static          map[string]string // group.instance.id → member id
	target          map[string]streamsTasks
	// endpointEpoch moves whenever what PartitionsByUserEndpoint says
	// changes; a member whose EndpointInformationEpoch is older gets it.
	endpointEpoch int32
	// shutdown is set when a member asked the application to shut down
	// (ShutdownApplication); every member then gets SHUTDOWN_APPLICATION
	// until the group is empty.
	shutdown bool
	// description is the last StreamsGroupTopologyDescriptionUpdate's
	// topology description, for StreamsGroupDescribe v1.
	description *kmsg.StreamsGroupTopologyDescriptionUpdateRequest
	// settings are the ones the last heartbeat brought, for what
	// happens between heartbeats (an expiry moves the group epoch).
	settings StreamsGroupSettings
	// written holds the value of each of the group's records as last
	// written to the log, by key (streams_records.go).
	written map[string][]byte
	// assignedStandbys is the standby count of the last target
	// assignment, written with the group (LastAssignmentConfigs).
	assignedStandbys int
	// delayUntil is the end of a running initial rebalance delay, zero
	// when none runs; assignedAt is when the last target was computed
	// (streams_delay.go). Neither is persisted.
	delayUntil, assignedAt time.Time
	// loadedHash is the MetadataHash of a group restored by a load,
	// until the first heartbeat configures the topology again: the
	// same hash means the topics did not change meanwhile and the
	// group epoch stays.
	loadedHash *int64
}

func newStreamsGroup() *streamsGroup {
	return &streamsGroup{
		members: make(map[string]*streamsMember),
		static:  make(map[string]string),
		target:  make(map[string]streamsTasks),
	}
}

// stateName is the group state Kafka reports for a streams group:
// Empty, NotReady (the topology cannot be assigned: topics missing or
// wrongly partitioned), Assigning, Reconciling or Stable.
func (sg *streamsGroup) stateName() string {
	switch {
	case len(sg.members) == 0:
		return "Empty"
	case sg.configured == nil && sg.loadedHash == nil, sg.configured != nil && !sg.configured.ready():
		// A group restored by a load counts as it was written until
		// its first heartbeat configures the topology again.
		return "NotReady"
	case sg.epoch > sg.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range sg.members {
		if m.state != memberStable || m.epoch != sg.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// syncStreamsStateLocked mirrors membership into the classic state field
// that offset expiry and deletion look at.
func (g *group) syncStreamsStateLocked(now time.Time) {
	if len(g.streams.members) == 0 {
		g.streams.shutdown = false
		if g.state != stateEmpty {
			g.setStateLocked(stateEmpty, now)
		}
	} else if g.state != stateStable {
		g.setStateLocked(stateStable, now)
	}
}

func streamsError(version int16, code int16, msg string) *kmsg.StreamsGroupHeartbeatResponse {
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version = version
	resp.ErrorCode = code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

// validateStreamsHeartbeat is Kafka's check of a StreamsGroupHeartbeat
// before any state is touched (INVALID_REQUEST, STREAMS_INVALID_TOPOLOGY).
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (int16, string) {
	invalid := kerr.InvalidRequest.Code
	switch {
	case req.Group == "":
		return invalid, "GroupId can't be empty."
	case req.MemberID == "":
		return invalid, "MemberId can't be empty."
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return invalid, "RackId can't be empty."
	case req.ProcessID != nil && *req.ProcessID == "":
		return invalid, "ProcessId can't be empty."
	}
	switch {
	case req.MemberEpoch == 0:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return invalid, "RebalanceTimeoutMs must be provided in first request."
		case req.Topology == nil:
			return invalid, "Topology must be non-null when (re-)joining."
		case req.ProcessID == nil:
			return invalid, "ProcessId must be provided when (re-)joining."
		case req.ActiveTasks == nil || len(req.ActiveTasks) > 0:
			return invalid, "ActiveTasks must be empty when (re-)joining."
		case req.StandbyTasks == nil || len(req.StandbyTasks) > 0:
			return invalid, "StandbyTasks must be empty when (re-)joining."
		case req.WarmupTasks == nil || len(req.WarmupTasks) > 0:
			return invalid, "WarmupTasks must be empty when (re-)joining."
		}
		if msg := validateTopology(req.Topology); msg != "" {
			return kerr.StreamsInvalidTopology.Code, msg
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return invalid, "InstanceId can't be null."
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return invalid, "MemberEpoch is invalid."
	}
	if (req.ActiveTasks == nil) != (req.StandbyTasks == nil) || (req.ActiveTasks == nil) != (req.WarmupTasks == nil) {
		return invalid, "If one of ActiveTasks, StandbyTasks and WarmupTasks is null, all must be null."
	}
	return 0, ""
}

// StreamsHeartbeat handles StreamsGroupHeartbeat (v0–v1, KIP-1071). A
// member joins with epoch 0, its topology and process id, heartbeats with
// its epoch and, when they changed, the tasks it owns; it leaves with -1
// (a static member with -2). The answer carries the member's epoch, the
// statuses that concern it and, when they changed, its tasks and the
// group's partitions by endpoint. It also returns the group's internal
// topics that do not exist yet, for the broker to create.
func (c *Coordinator) StreamsHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string, settings StreamsGroupSettings) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopicToCreate) {
	v := req.Version
	if code, msg := validateStreamsHeartbeat(req); code != 0 {
		return streamsError(v, code, msg), nil
	}
	joining := req.MemberEpoch == 0
	g, err := c.group(req.Group, joining)
	if err != nil {
		return streamsError(v, errCode(err), ""), nil
	}
	if g == nil {
		// Unknown group: the member was fenced from a group the
		// coordinator no longer has (e.g. it moved); it must rejoin.
		return streamsError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group)), nil
	}

	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	now := c.cfg.Now()
	g.mu.Lock()
	resp, create, converted := c.streamsHeartbeatGroupLocked(g, req, joining, clientID, clientHost, settings, now)
	g.mu.Unlock()
	if len(converted) > 0 {
		// The empty consumer group this streams group replaces.
		if err := c.append(ctx, g, converted); err != nil {
			return streamsError(v, appendErrorCode(err, false), ""), nil
		}
	}
	if err := c.persistStreams(ctx, g); err != nil {
		return streamsError(v, appendErrorCode(err, false), ""), nil
	}
	return resp, create
}

// streamsHeartbeatGroupLocked is StreamsHeartbeat under g.mu. converted
// are the tombstones of the consumer group's records when an empty
// consumer group becomes this streams group.
func (c *Coordinator) streamsHeartbeatGroupLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, joining bool, clientID, clientHost string, settings StreamsGroupSettings, now time.Time) (resp *kmsg.StreamsGroupHeartbeatResponse, create []StreamsTopicToCreate, converted []kv) {
	v := req.Version
	switch {
	case g.unloaded:
		return streamsError(v, kerr.NotCoordinator.Code, ""), nil, nil
	case g.state == stateDead:
		return streamsError(v, kerr.CoordinatorNotAvailable.Code, ""), nil, nil
	case g.share != nil, g.consumer != nil && len(g.consumer.members) > 0, g.streams == nil && (len(g.members) > 0 || g.state != stateEmpty):
		return streamsError(v, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a streams group.", req.Group)), nil, nil
	}
	if g.streams == nil {
		if !joining {
			// An empty group that only holds offsets: the member
			// rejoins.
			return streamsError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, req.Group)), nil, nil
		}
		if g.consumer != nil {
			converted = consumerGroupTombstones(g.name)
		}
		g.consumer = nil
		g.streams = newStreamsGroup()
		g.protocolType, g.protocol, g.leader = "streams", "", ""
	}
	g.streams.settings = settings
	if req.MemberEpoch < 0 {
		resp = c.streamsLeaveLocked(g, req, settings, now)
	} else {
		resp = c.streamsHeartbeatLocked(g, req, clientID, clientHost, settings, now)
	}
	g.syncStreamsStateLocked(now)
	if resp.ErrorCode == 0 && g.streams.configured != nil {
		create = g.streams.configured.toCreate(settings.DefaultReplicationFactor)
	}
	return resp, create, converted
}

// streamsHeartbeatLocked is a join or a regular heartbeat.
func (c *Coordinator) streamsHeartbeatLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string, settings StreamsGroupSettings, now time.Time) *kmsg.StreamsGroupHeartbeatResponse {
	v := req.Version
	sg := g.streams
	// A joining member's topology: the group's when it has none or no
	// other member runs one; a newer one while others run the group's
	// is refused (no topology updates of a running group, as Kafka 4.4).
	var joinTopology *streamsTopology
	newTopology := false
	if req.MemberEpoch == 0 {
		joinTopology = topologyOf(req.Topology)
		others := 0
		for id, o := range sg.members {
			if id != req.MemberID && o.epoch != staticLeaveEpoch {
				others++
			}
		}
		switch {
		case sg.topology == nil, others == 0 && joinTopology.epoch >= sg.topology.epoch && !joinTopology.equal(sg.topology):
			newTopology = true
		case joinTopology.epoch > sg.topology.epoch:
			return streamsError(v, kerr.StreamsInvalidTopologyEpoch.Code, "Topology updates are not supported yet.")
		}
	}
	wasEmpty := len(sg.members) == 0
	m, code, msg := c.lookupStreamsMemberLocked(g, req, settings, now)
	if code != 0 {
		return streamsError(v, code, msg)
	}

	bump := sg.epoch == 0
	if joinTopology != nil {
		if newTopology {
			sg.topology = joinTopology
			sg.configured = nil
			bump = true
		}
		m.topologyEpoch = joinTopology.epoch
	}
	if req.InstanceID != nil && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		id := *req.InstanceID
		m.instanceID = &id
		sg.static[id] = m.id
	}
	if req.RackID != nil && (m.rackID == nil || *m.rackID != *req.RackID) {
		r := *req.RackID
		m.rackID, bump = &r, true
	}
	if req.ProcessID != nil && *req.ProcessID != m.processID {
		m.processID, bump = *req.ProcessID, true
	}
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.UserEndpoint != nil && (m.endpoint == nil || m.endpoint.Host != req.UserEndpoint.Host || m.endpoint.Port != req.UserEndpoint.Port) {
		e := *req.UserEndpoint
		m.endpoint = &e
		sg.endpointEpoch++
	}
	if req.ClientTags != nil {
		tags := make(map[string]string, len(req.ClientTags))
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		if !mapsEqual(tags, m.clientTags) {
			m.clientTags, bump = tags, true
		}
	}
	if req.TaskOffsets != nil {
		m.taskOffsets = slices.Clone(req.TaskOffsets)
	}
	if req.TaskEndOffsets != nil {
		m.taskEndOffsets = slices.Clone(req.TaskEndOffsets)
	}
	if req.ShutdownApplication {
		sg.shutdown = true
	}
	m.clientID, m.clientHost = clientID, clientHost

	if sg.configured == nil {
		bump = bump || !sg.adoptLoadedConfiguration(configure(sg.topology, c.topicsByName()))
	} else if cfg := configure(sg.topology, c.topicsByName()); !cfg.sameAssignment(sg.configured) {
		bump = true
	} else {
		sg.configured = cfg // statuses may change without a new assignment
	}
	if bump {
		if wasEmpty {
			sg.startInitialDelayLocked(settings, now) // streams_delay.go
		}
		c.bumpStreamsGroupLocked(g, settings, now)
	}
	delayed := c.maybeAssignStreamsLocked(g, settings, now)

	before := m.assigned
	var owned *streamsTasks
	if req.ActiveTasks != nil {
		owned = &streamsTasks{active: taskSetOf(req.ActiveTasks), standby: taskSetOf(req.StandbyTasks), warmup: taskSetOf(req.WarmupTasks)}
	}
	c.reconcileStreamsMemberLocked(g, m, owned, now)
	m.sessionDeadline = now.Add(settings.SessionTimeout)

	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version = v
	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(settings.HeartbeatInterval / time.Millisecond)
	lag := settings.AcceptableRecoveryLag
	resp.AcceptableRecoveryLag = lag
	resp.AcceptableRecoveryLagLegacy = int32(min(lag, 1<<31-1))
	resp.TaskOffsetIntervalMillis = int32(settings.TaskOffsetInterval / time.Millisecond)
	resp.Status = sg.statusFor(m)
	if delayed != "" {
		resp.Status = append(resp.Status, streamsStatus(streamsStatusAssignmentDelayed, delayed))
	}
	if missing := missingClientTags(m, settings.RackAwareTags); missing != "" && v >= 1 {
		resp.Status = append(resp.Status, streamsStatus(streamsStatusMissingClientTags, fmt.Sprintf("The member lacks the client tags %s the rack-aware standby assignment (group.streams.rack.aware.assignment.tags) spreads tasks over; set them with client.tag.<key> in the Streams configuration.", missing)))
	}
	if req.MemberEpoch == 0 || !before.equal(m.assigned) || (owned != nil && !owned.equal(m.assigned)) {
		resp.ActiveTasks = m.assigned.active.wire()
		resp.StandbyTasks = m.assigned.standby.wire()
		resp.WarmupTasks = m.assigned.warmup.wire()
	}
	resp.EndpointInformationEpoch = sg.endpointEpoch
	if req.EndpointInformationEpoch != sg.endpointEpoch {
		resp.PartitionsByUserEndpoint = sg.partitionsByEndpoint()
	}
	return resp
}

// adoptLoadedConfiguration takes cfg as the group's configuration if the
// group was restored by a load and the topics still configure its
// topology to the task counts of the MetadataHash it was written with:
// then the target assignment of the restored epoch stands. It reports
// whether it did.
func (sg *streamsGroup) adoptLoadedConfiguration(cfg *configuredTopology) bool {
	loaded := sg.loadedHash
	sg.loadedHash = nil
	if loaded == nil || sg.epoch == 0 || *loaded != configuredHash(cfg) {
		return false
	}
	sg.configured = cfg
	return true
}

// statusFor lists the statuses a member is told about.
func (sg *streamsGroup) statusFor(m *streamsMember) []kmsg.StreamsGroupHeartbeatResponseStatus {
	out := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	add := func(code int8, detail string) {
		s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
		s.StatusCode, s.StatusDetail = code, detail
		out = append(out, s)
	}
	if sg.shutdown {
		add(streamsStatusShutdownApplication, "A KafkaStreams instance encountered a fatal error and requested a shutdown for the entire application.")
	}
	if sg.topology != nil && m.topologyEpoch < sg.topology.epoch {
		add(streamsStatusStaleTopology, fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, sg.topology.epoch))
	}
	if cfg := sg.configured; cfg != nil {
		if len(cfg.missingSource) > 0 {
			add(streamsStatusMissingSourceTopics, fmt.Sprintf("Source topics %s are missing.", joinNames(cfg.missingSource)))
		}
		if len(cfg.missingInternal) > 0 {
			var names []string
			for _, t := range cfg.missingInternal {
				names = append(names, t.Name)
			}
			add(streamsStatusMissingInternalTopics, fmt.Sprintf("Internal topics are missing: [%s]", joinNames(names)))
		}
		if len(cfg.incorrect) > 0 {
			add(streamsStatusIncorrectlyPartitionedTopics, joinNames(cfg.incorrect))
		}
	}
	return out
}

// lookupStreamsMemberLocked finds the member a heartbeat is from, creating
// it on a join, and checks its identity and epoch (UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, FENCED_MEMBER_EPOCH,
// GROUP_MAX_SIZE_REACHED).
func (c *Coordinator) lookupStreamsMemberLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, settings StreamsGroupSettings, now time.Time) (*streamsMember, int16, string) {
	sg := g.streams
	join := req.MemberEpoch == 0
	memberID := req.MemberID
	newMember := func() (*streamsMember, int16, string) {
		if settings.MaxGroupSize > 0 && len(sg.members) >= settings.MaxGroupSize {
			return nil, kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The streams group has reached its maximum capacity of %d members.", settings.MaxGroupSize)
		}
		m := &streamsMember{id: memberID, rebalanceTimeout: -1}
		sg.members[memberID] = m
		return m, 0, ""
	}
	if req.InstanceID != nil {
		instance := *req.InstanceID
		existingID, ok := sg.static[instance]
		existing := sg.members[existingID]
		if join {
			switch {
			case !ok || existing == nil:
				if m := sg.members[memberID]; m != nil {
					c.rejoinStreamsLocked(g, m)
					return m, 0, ""
				}
				return newMember()
			case existingID == memberID:
				c.rejoinStreamsLocked(g, existing)
				return existing, 0, ""
			case existing.epoch != staticLeaveEpoch:
				return nil, kerr.UnreleasedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instance, existingID)
			}
			// The static member's new incarnation takes its place.
			m := *existing
			m.id = memberID
			m.epoch = max(existing.previousEpoch, 0)
			delete(sg.members, existingID)
			sg.members[memberID] = &m
			sg.static[instance] = memberID
			if t, ok := sg.target[existingID]; ok {
				delete(sg.target, existingID)
				sg.target[memberID] = t
			}
			return &m, 0, ""
		}
		if code, msg := checkStaticInstance(instance, memberID, existingID, ok && existing != nil); code != 0 {
			return nil, code, msg
		}
	}
	m := sg.members[memberID]
	if m == nil {
		if !join {
			return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.name)
		}
		return newMember()
	}
	if join {
		c.rejoinStreamsLocked(g, m)
		return m, 0, ""
	}
	switch received := req.MemberEpoch; {
	case received > m.epoch:
		return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", received, m.epoch)
	case received < m.epoch:
		owned := streamsTasks{active: taskSetOf(req.ActiveTasks), standby: taskSetOf(req.StandbyTasks), warmup: taskSetOf(req.WarmupTasks)}
		if received != m.previousEpoch || req.ActiveTasks == nil || !owned.subsetOf(m.assigned) {
			return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its tasks and rejoin.", received, m.epoch)
		}
	}
	return m, 0, ""
}

func (a streamsTasks) subsetOf(b streamsTasks) bool {
	sub := func(x, y taskSet) bool {
		for s, ps := range x {
			for p := range ps {
				if !y[s][p] {
					return false
				}
			}
		}
		return true
	}
	return sub(a.active, b.active) && sub(a.standby, b.standby) && sub(a.warmup, b.warmup)
}

// rejoinStreamsLocked resets a known member that joins again with epoch
// 0: it owns nothing any more.
func (c *Coordinator) rejoinStreamsLocked(g *group, m *streamsMember) {
	if m.epoch != 0 || !m.assigned.empty() || !m.pending.empty() {
		g.streams.endpointEpoch++
	}
	m.previousEpoch, m.epoch = m.epoch, 0
	m.assigned, m.pending, m.state = streamsTasks{}, streamsTasks{}, memberStable
}

// streamsLeaveLocked handles epoch -1 (leave) and -2 (a static member
// leaves for now and keeps its tasks until it returns or its session
// expires).
func (c *Coordinator) streamsLeaveLocked(g *group, req *kmsg.StreamsGroupHeartbeatRequest, settings StreamsGroupSettings, now time.Time) *kmsg.StreamsGroupHeartbeatResponse {
	v := req.Version
	sg := g.streams
	var m *streamsMember
	if req.InstanceID != nil {
		id, ok := sg.static[*req.InstanceID]
		if code, msg := checkStaticInstance(*req.InstanceID, req.MemberID, id, ok && sg.members[id] != nil); code != 0 {
			return streamsError(v, code, msg)
		}
		m = sg.members[id]
	} else if m = sg.members[req.MemberID]; m == nil {
		return streamsError(v, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name))
	}
	if req.MemberEpoch == staticLeaveEpoch && m.instanceID != nil {
		if m.epoch != staticLeaveEpoch {
			m.previousEpoch, m.epoch = m.epoch, staticLeaveEpoch
		}
		m.sessionDeadline = now.Add(settings.SessionTimeout)
	} else {
		c.removeStreamsMemberLocked(g, m, settings)
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.Version = v
	resp.MemberID = req.MemberID
	resp.MemberEpoch = req.MemberEpoch
	return resp
}

// removeStreamsMemberLocked takes a member out of the group: its tasks are
// free and the group epoch moves so the others get them.
func (c *Coordinator) removeStreamsMemberLocked(g *group, m *streamsMember, settings StreamsGroupSettings) {
	sg := g.streams
	delete(sg.members, m.id)
	delete(sg.target, m.id)
	if m.instanceID != nil && sg.static[*m.instanceID] == m.id {
		delete(sg.static, *m.instanceID)
	}
	sg.endpointEpoch++
	if len(sg.members) > 0 {
		c.bumpStreamsGroupLocked(g, settings, c.cfg.Now())
	}
}

// dueLocked reports whether a member's session or revocation deadline has
// passed.
func (sg *streamsGroup) dueLocked(now time.Time) bool {
	for _, m := range sg.members {
		if !now.Before(m.sessionDeadline) || m.state == memberUnrevokedPartitions && m.rebalanceTimeout >= 0 && !now.Before(m.revokeDeadline) {
			return true
		}
	}
	return sg.assignmentDueLocked(now)
}

// tickStreams expires members whose session ended and fences those that
// did not revoke tasks within their rebalance timeout.
func (c *Coordinator) tickStreams(g *group, now time.Time) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if !g.lockIfLive(func() bool { return g.streams != nil }) {
		return
	}
	sg := g.streams
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		expired := !now.Before(m.sessionDeadline)
		stuck := m.state == memberUnrevokedPartitions && m.rebalanceTimeout >= 0 && !now.Before(m.revokeDeadline)
		if expired || stuck {
			c.cfg.Logger.Info("removing streams group member", "group", g.name, "member", id, "session_expired", expired, "revocation_timed_out", stuck)
			c.removeStreamsMemberLocked(g, m, sg.settings)
		}
	}
	if sg.assignmentDueLocked(now) {
		c.maybeAssignStreamsLocked(g, sg.settings, now) // streams_delay.go
	}
	g.syncStreamsStateLocked(now)
	g.mu.Unlock()
	if err := c.persistStreams(context.Background(), g); err != nil {
		c.cfg.Logger.Warn("cannot persist streams group", "group", g.name, "err", err)
	}
}
