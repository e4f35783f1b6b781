package groups

// Replay of KIP-848 consumer group records (consumer_records.go) when a
// __consumer_offsets partition is loaded: the last record of each key wins
// and a tombstone deletes, as for classic groups. What is rebuilt rather
// than read: the group's resolved subscription (re-resolved against the
// topics that exist by the first RefreshConsumerGroups, which starts a new
// group epoch if they changed since MetadataHash was written), session
// deadlines (a full session timeout from the load) and revocation
// deadlines (a full rebalance timeout).

import "time"

// consumerReplay collects one consumer group's records while replaying.
type consumerReplay struct {
	exists          bool  // a ConsumerGroupMetadataValue is live
	offset          int64 // of the last group-level record
	epoch           int32
	hash            int64
	assignmentEpoch int32
	members         map[string]*memberMetadataValue
	targets         map[string]map[topicID][]int32
	currents        map[string]*currentAssignmentValue
}

// replayConsumerRecord applies one consumer group record to all. A value
// that cannot be decoded is an error and changes nothing: the load skips
// the record and the key keeps what earlier records said.
func replayConsumerRecord(all map[string]*consumerReplay, k decodedKey, r parsedRecord) error {
	// Decode first, so a bad value leaves the group as it was.
	var (
		epoch, assignmentEpoch int32
		hash                   int64
		member                 *memberMetadataValue
		target                 map[topicID][]int32
		current                *currentAssignmentValue
		err                    error
	)
	if r.value != nil {
		switch k.version {
		case consumerGroupMetadataKeyVersion:
			epoch, hash, err = decodeConsumerGroupMetadata(r.value)
		case consumerGroupTargetMetadataKeyVersion:
			assignmentEpoch, err = decodeTargetMetadata(r.value)
		case consumerGroupMemberMetadataKeyVersion:
			member, err = decodeMemberMetadata(r.value)
		case consumerGroupTargetMemberKeyVersion:
			target, err = decodeTargetMember(r.value)
		case consumerGroupCurrentAssignmentKeyVersion:
			current, err = decodeCurrentAssignment(r.value)
		}
		if err != nil {
			return err
		}
	}
	cr := all[k.group]
	if cr == nil {
		cr = &consumerReplay{
			members:  make(map[string]*memberMetadataValue),
			targets:  make(map[string]map[topicID][]int32),
			currents: make(map[string]*currentAssignmentValue),
		}
		all[k.group] = cr
	}
	switch k.version {
	case consumerGroupMetadataKeyVersion:
		cr.offset = r.offset
		if r.value == nil {
			// The group was deleted: forget everything about it.
			*cr = consumerReplay{offset: cr.offset, members: cr.members, targets: cr.targets, currents: cr.currents}
			clear(cr.members)
			clear(cr.targets)
			clear(cr.currents)
			return nil
		}
		cr.exists, cr.epoch, cr.hash = true, epoch, hash
	case consumerGroupTargetMetadataKeyVersion:
		if r.value != nil {
			cr.assignmentEpoch = assignmentEpoch
		}
	case consumerGroupMemberMetadataKeyVersion:
		if r.value == nil {
			delete(cr.members, k.member)
			return nil
		}
		cr.members[k.member] = member
	case consumerGroupTargetMemberKeyVersion:
		if r.value == nil {
			delete(cr.targets, k.member)
			return nil
		}
		cr.targets[k.member] = target
	case consumerGroupCurrentAssignmentKeyVersion:
		if r.value == nil {
			delete(cr.currents, k.member)
			return nil
		}
		cr.currents[k.member] = current
	}
	return nil
}

// restoreConsumer makes g the consumer group the replay describes.
func (g *group) restoreConsumer(cr *consumerReplay, session time.Duration, now time.Time) {
	cg := newConsumerGroup()
	cg.epoch = cr.epoch
	cg.assignmentEpoch = cr.assignmentEpoch
	cg.loadedHash = cr.hash
	for id, v := range cr.members {
		m := &consumerMember{
			id: id, instanceID: v.instanceID, rackID: v.rackID,
			clientID: v.clientID, clientHost: v.clientHost,
			topicNames:       v.topicNames,
			rebalanceTimeout: time.Duration(v.rebalanceTimeoutMs) * time.Millisecond,
			sessionDeadline:  now.Add(session),
		}
		if v.topicRegex != nil {
			m.topicRegex = *v.topicRegex
		}
		if v.serverAssignor != nil {
			m.serverAssignor = *v.serverAssignor
		}
		if cur := cr.currents[id]; cur != nil {
			m.epoch, m.previousEpoch, m.state = cur.memberEpoch, cur.previousEpoch, memberState(cur.state)
			m.assigned, m.pending = cur.assigned, cur.pending
			if m.state != memberStable && m.state != memberUnrevokedPartitions && m.state != memberUnreleasedPartitions {
				// A state this version does not know: start the
				// member over, as Kafka fences such a member.
				m.epoch, m.assigned, m.pending, m.state = 0, nil, nil, memberStable
			}
			if m.state == memberUnrevokedPartitions {
				m.revokeDeadline = now.Add(m.rebalanceTimeout)
			}
		}
		cg.members[id] = m
		if m.instanceID != nil {
			cg.static[*m.instanceID] = id
		}
		cg.target[id] = cr.targets[id]
		if cg.target[id] == nil {
			cg.target[id] = map[topicID][]int32{}
		}
	}
	g.consumer = cg
	g.protocolType = "consumer"
	g.syncClassicStateLocked(now)
}
