package groups

// Replay of KIP-1071 streams group records (streams_records.go) when a
// __consumer_offsets partition is loaded: the last record of each key
// wins and a tombstone deletes. What is rebuilt rather than read: the
// topology's configuration against the topics (at the first heartbeat,
// which moves the group epoch only if the configured task counts differ
// from the MetadataHash written), session deadlines (a full
// group.streams.session.timeout.ms default, 45 s, from the load, until
// the member's next heartbeat renews it with the group's own) and
// revocation deadlines (a full rebalance timeout).

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsRestoredSession is the session a restored member gets until its
// first heartbeat: Kafka's default group.streams.session.timeout.ms (the
// coordinator does not know the broker's value before a heartbeat brings
// it).
const streamsRestoredSession = 45 * time.Second

// streamsReplay collects one streams group's records while replaying.
type streamsReplay struct {
	exists          bool  // a StreamsGroupMetadataValue is live
	offset          int64 // of the last group-level record
	epoch           int32
	hash            int64
	standbys        int // of the last assignment, -1 if not written
	assignmentEpoch int32
	topology        *kmsg.StreamsGroupHeartbeatRequestTopology
	values          map[string][]byte // every live record by key, as written
	members         map[string][]byte // member id → metadata value
	currents        map[string][]byte
	targets         map[string]streamsTasks
}

// replayStreamsRecord applies one streams group record to all. A value
// that cannot be decoded is an error and changes nothing.
func replayStreamsRecord(all map[string]*streamsReplay, k decodedKey, r parsedRecord) error {
	var (
		epoch, assignmentEpoch int32
		hash                   int64
		standbys               int
		target                 streamsTasks
		topology               *kmsg.StreamsGroupHeartbeatRequestTopology
		err                    error
	)
	if r.value != nil {
		switch k.version {
		case streamsGroupMetadataKeyVersion:
			epoch, hash, standbys, err = decodeStreamsMetadata(r.value)
		case streamsGroupTargetMetadataKeyVersion:
			assignmentEpoch, err = decodeStreamsTargetMetadata(r.value)
		case streamsGroupTargetMemberKeyVersion:
			target, err = decodeStreamsTargetMember(r.value)
		case streamsGroupTopologyKeyVersion:
			topology, err = decodeStreamsTopology(r.value)
		case streamsGroupMemberMetadataKeyVersion:
			err = decodeStreamsMember(r.value, &streamsMember{})
		case streamsGroupCurrentAssignmentKeyVersion:
			err = decodeStreamsCurrent(r.value, &streamsMember{})
		}
		if err != nil {
			return err
		}
	}
	sr := all[k.group]
	if sr == nil {
		sr = &streamsReplay{
			values:   make(map[string][]byte),
			members:  make(map[string][]byte),
			currents: make(map[string][]byte),
			targets:  make(map[string]streamsTasks),
		}
		all[k.group] = sr
	}
	key := string(r.key)
	if r.value == nil {
		delete(sr.values, key)
	} else {
		sr.values[key] = r.value
	}
	switch k.version {
	case streamsGroupMetadataKeyVersion:
		sr.offset = r.offset
		if r.value == nil {
			// The group was deleted: forget everything about it.
			*sr = streamsReplay{offset: sr.offset, values: sr.values, members: sr.members, currents: sr.currents, targets: sr.targets}
			clear(sr.values)
			clear(sr.members)
			clear(sr.currents)
			clear(sr.targets)
			return nil
		}
		sr.exists, sr.epoch, sr.hash, sr.standbys = true, epoch, hash, standbys
	case streamsGroupTargetMetadataKeyVersion:
		if r.value != nil {
			sr.assignmentEpoch = assignmentEpoch
		}
	case streamsGroupTopologyKeyVersion:
		sr.offset = r.offset
		sr.topology = topology
	case streamsGroupMemberMetadataKeyVersion:
		if r.value == nil {
			delete(sr.members, k.member)
		} else {
			sr.members[k.member] = r.value
		}
	case streamsGroupCurrentAssignmentKeyVersion:
		if r.value == nil {
			delete(sr.currents, k.member)
		} else {
			sr.currents[k.member] = r.value
		}
	case streamsGroupTargetMemberKeyVersion:
		if r.value == nil {
			delete(sr.targets, k.member)
		} else {
			sr.targets[k.member] = target
		}
	}
	return nil
}

// restoreStreams makes g the streams group the replay describes.
func (g *group) restoreStreams(sr *streamsReplay, now time.Time) {
	sg := newStreamsGroup()
	sg.epoch = sr.epoch
	sg.assignmentEpoch = sr.assignmentEpoch
	hash := sr.hash
	sg.loadedHash = &hash
	if sr.standbys >= 0 {
		// Until a heartbeat brings the group's settings, an expiry
		// reassigns with the standby count last used.
		sg.assignedStandbys = sr.standbys
		sg.settings.NumStandbyReplicas = sr.standbys
	}
	if sr.topology != nil {
		sg.topology = topologyOf(sr.topology)
	}
	for id, v := range sr.members {
		m := &streamsMember{id: id, rebalanceTimeout: -1, sessionDeadline: now.Add(streamsRestoredSession)}
		if err := decodeStreamsMember(v, m); err != nil {
			continue // decoded once already while replaying
		}
		if cur := sr.currents[id]; cur != nil {
			if err := decodeStreamsCurrent(cur, m); err != nil || m.state > memberUnreleasedPartitions || m.state < memberStable {
				// A state this version does not know: start the
				// member over, as Kafka fences such a member.
				m.epoch, m.assigned, m.pending, m.state = 0, streamsTasks{}, streamsTasks{}, memberStable
			}
		}
		if m.state == memberUnrevokedPartitions {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
		sg.members[id] = m
		if m.instanceID != nil {
			sg.static[*m.instanceID] = id
		}
		sg.target[id] = sr.targets[id]
	}
	sg.written = make(map[string][]byte, len(sr.values))
	for k, v := range sr.values {
		sg.written[k] = v
	}
	g.consumer = nil
	g.streams = sg
	g.protocolType = "streams"
	g.syncStreamsStateLocked(now)
}
