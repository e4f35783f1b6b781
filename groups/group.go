package groups

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// state is a classic group's state, Kafka's GroupState.
type state int8

const (
	stateEmpty state = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	stateDead
)

func (s state) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	}
	return "Dead"
}

// committedOffset is one partition's committed offset.
type committedOffset struct {
	offset          int64
	leaderEpoch     int32
	metadata        string
	commitTimestamp int64
	// recordOffset is where the record that committed it sits in
	// __consumer_offsets: of a plain commit and a transaction's commit of
	// the same partition, the later record wins (txn_offsets.go).
	recordOffset int64
}

// member is one member of a classic group.
type member struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	protocolType     string
	protocols        []kmsg.JoinGroupRequestProtocol
	assignment       []byte

	// joinCh is set while the member waits in JoinGroup; joinVersion is
	// that request's version, which shapes the response.
	joinCh      chan *kmsg.JoinGroupResponse
	joinVersion int16
	// syncCh is set while the member waits in SyncGroup.
	syncCh chan *kmsg.SyncGroupResponse

	heartbeatDeadline time.Time
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether a rejoin carries the member's current
// protocols, in which case a Stable group need not rebalance.
func (m *member) sameProtocols(ps []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, ps, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// group is one classic group. Every field but the immutable ones is guarded
// by mu; writeMu orders the group's appends to the log (see persist).
type group struct {
	name      string
	partition int32
	epoch     int32
	cfg       *Config

	writeMu sync.Mutex

	mu           sync.Mutex
	state        state
	unloaded     bool // the partition's leadership was lost
	protocolType string
	protocol     string
	generation   int32
	leader       string
	members      map[string]*member
	static       map[string]string    // group.instance.id → member id
	pending      map[string]time.Time // KIP-394 member ids handed out → expiry
	stateSince   time.Time
	dirty        bool // metadata must be persisted by the caller

	// joinDeadline ends the PreparingRebalance phase. During the initial
	// delay of a new group (group.initial.rebalance.delay.ms) the phase
	// ends only at the deadline, extended while members keep arriving.
	joinDeadline   time.Time
	initialDelay   bool
	delayRemaining time.Duration
	newMemberAdded bool
	// syncDeadline ends the CompletingRebalance phase: members that have
	// not sent SyncGroup by then are removed.
	syncDeadline time.Time

	offsets map[string]map[int32]committedOffset
	// txnOffsets are transactional offset commits waiting for their
	// transaction's marker, by producer id (txn_offsets.go).
	txnOffsets map[int64]offsetTable

	// consumer is set for a KIP-848 consumer group (consumer.go); its
	// classic fields then stay empty but for state (Empty or Stable)
	// and protocolType ("consumer").
	consumer *consumerGroup
	// wasConsumer is set when an empty consumer group became this
	// classic group and its consumer group records are not tombstoned
	// yet: the next classic metadata record, or the group's deletion,
	// writes the tombstones (consumerGroupTombstones), so the consumer
	// group does not come back at a load once compaction removed the
	// classic records that superseded it.
	wasConsumer bool

	// share is set for a KIP-932 share group (share.go); its classic
	// fields then stay empty but for state (Empty or Stable) and
	// protocolType ("share").
	share *shareGroup

	// streams is set for a KIP-1071 streams group (streams.go); its
	// classic fields then stay empty but for state (Empty or Stable)
	// and protocolType ("streams").
	streams *streamsGroup
}

func newGroup(name string, partition, epoch int32, cfg *Config, now time.Time) *group {
	return &group{
		name: name, partition: partition, epoch: epoch, cfg: cfg,
		members:    make(map[string]*member),
		static:     make(map[string]string),
		pending:    make(map[string]time.Time),
		offsets:    make(map[string]map[int32]committedOffset),
		txnOffsets: make(map[int64]offsetTable),
		stateSince: now,
	}
}

func (g *group) setStateLocked(s state, now time.Time) {
	g.state = s
	g.stateSince = now
}

// takeDirtyLocked reports and clears whether the metadata must be persisted.
func (g *group) takeDirtyLocked() bool {
	d := g.dirty
	g.dirty = false
	return d
}

// restore sets the group from its persisted metadata.
func (g *group) restore(v *kmsg.GroupMetadataValue, now time.Time) {
	g.protocolType = v.ProtocolType
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocol = *v.Protocol
	}
	if v.Leader != nil {
		g.leader = *v.Leader
	}
	for _, vm := range v.Members {
		m := &member{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			sessionTimeout:   time.Duration(vm.SessionTimeoutMillis) * time.Millisecond,
			rebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
			protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.protocol, Metadata: vm.Subscription}},
			assignment:       vm.Assignment,
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		m.heartbeatDeadline = now.Add(m.sessionTimeout)
		g.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}
	if len(g.members) > 0 {
		g.setStateLocked(stateStable, now)
	} else {
		g.setStateLocked(stateEmpty, now)
		if v.Version >= 2 && v.CurrentStateTimestamp > 0 {
			// Offset retention counts from when the group became Empty.
			g.stateSince = time.UnixMilli(v.CurrentStateTimestamp)
		}
	}
}

// metadataValueLocked is the group's GroupMetadataValue record.
func (g *group) metadataValueLocked() []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupMetadataValueVersion
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	if g.protocol != "" {
		p := g.protocol
		v.Protocol = &p
	}
	if g.leader != "" {
		l := g.leader
		v.Leader = &l
	}
	v.CurrentStateTimestamp = g.stateSince.UnixMilli()
	for _, m := range g.sortedMembersLocked() {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.id
		vm.InstanceID = m.instanceID
		vm.ClientID = m.clientID
		vm.ClientHost = m.clientHost
		vm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		vm.Subscription = m.metadataFor(g.protocol)
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		vm.Assignment = m.assignment
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// lockIfLive takes g.mu for the timers and topic refreshes of consumer,
// share and streams groups, and reports true when the group is still
// loaded on this node, not dead, and ofKind (called under g.mu) says it is
// still the kind of group the caller works on. Otherwise it releases g.mu
// again and reports false.
func (g *group) lockIfLive(ofKind func() bool) bool {
	g.mu.Lock()
	if g.unloaded || g.state == stateDead || !ofKind() {
		g.mu.Unlock()
		return false
	}
	return true
}

func (g *group) sortedMembersLocked() []*member {
	out := make([]*member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *member) int { return cmp.Compare(a.id, b.id) })
	return out
}

// unloadLocked answers every waiting member NOT_COORDINATOR: the partition
// moved (or the broker stops) and the client must find the coordinator again.
func (g *group) unloadLocked() {
	g.unloaded = true
	for _, m := range g.members {
		g.failJoinLocked(m, kerr.NotCoordinator.Code)
		g.failSyncLocked(m, kerr.NotCoordinator.Code)
	}
}

func (g *group) failJoinLocked(m *member, code int16) {
	if m.joinCh == nil {
		return
	}
	resp := joinError(m.joinVersion, code, m.id)
	m.joinCh <- resp
	m.joinCh = nil
}

func (g *group) failSyncLocked(m *member, code int16) {
	if m.syncCh == nil {
		return
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = code
	m.syncCh <- resp
	m.syncCh = nil
}

func joinError(version int16, code int16, memberID string) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	empty := ""
	if version < 7 {
		resp.Protocol = &empty
	}
	return resp
}
