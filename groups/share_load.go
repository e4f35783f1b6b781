package groups

// Replay of share group records (share_records.go) when a
// __consumer_offsets partition is loaded: the last record of each key wins
// and a tombstone deletes. What is rebuilt rather than read: the resolved
// subscription (compared with MetadataHash at the first refresh, which
// starts a new group epoch if topics changed meanwhile) and session
// deadlines (a full session timeout from the load). Initializing
// partitions are retried by the next heartbeat.

import "time"

// shareReplay collects one share group's records while replaying.
type shareReplay struct {
	exists          bool
	offset          int64 // of the last group-level record
	epoch           int32
	hash            int64
	assignmentEpoch int32
	assignmentMs    int64 // AssignmentTimestamp of the target metadata
	state           *shareStateValue
	members         map[string]*shareMemberValue
	targets         map[string]map[topicID][]int32
	currents        map[string]*shareCurrentValue
}

// replayShareRecord applies one share group record to all. A value that
// cannot be decoded is an error and changes nothing.
func replayShareRecord(all map[string]*shareReplay, k decodedKey, r parsedRecord) error {
	var (
		epoch, assignmentEpoch int32
		hash, assignmentMs     int64
		member                 *shareMemberValue
		target                 map[topicID][]int32
		current                *shareCurrentValue
		state                  *shareStateValue
		err                    error
	)
	if r.value != nil {
		switch k.version {
		case shareGroupMetadataKeyVersion:
			epoch, hash, err = decodeShareGroupMetadata(r.value)
		case shareGroupTargetMetadataKeyVersion:
			assignmentEpoch, assignmentMs, err = decodeShareTargetMetadata(r.value)
		case shareGroupMemberMetadataKeyVersion:
			member, err = decodeShareMember(r.value)
		case shareGroupTargetMemberKeyVersion:
			target, err = decodeTargetMember(r.value)
		case shareGroupCurrentAssignmentKeyVersion:
			current, err = decodeShareCurrent(r.value)
		case shareGroupStatePartitionMetadataKeyVersion:
			state, err = decodeShareState(r.value)
		}
		if err != nil {
			return err
		}
	}
	sr := all[k.group]
	if sr == nil {
		sr = &shareReplay{
			members:  make(map[string]*shareMemberValue),
			targets:  make(map[string]map[topicID][]int32),
			currents: make(map[string]*shareCurrentValue),
		}
		all[k.group] = sr
	}
	switch k.version {
	case shareGroupMetadataKeyVersion:
		sr.offset = r.offset
		if r.value == nil {
			*sr = shareReplay{offset: sr.offset, members: sr.members, targets: sr.targets, currents: sr.currents}
			clear(sr.members)
			clear(sr.targets)
			clear(sr.currents)
			return nil
		}
		sr.exists, sr.epoch, sr.hash = true, epoch, hash
	case shareGroupTargetMetadataKeyVersion:
		if r.value != nil {
			sr.assignmentEpoch, sr.assignmentMs = assignmentEpoch, assignmentMs
		}
	case shareGroupStatePartitionMetadataKeyVersion:
		sr.state = state
	case shareGroupMemberMetadataKeyVersion:
		if r.value == nil {
			delete(sr.members, k.member)
			return nil
		}
		sr.members[k.member] = member
	case shareGroupTargetMemberKeyVersion:
		if r.value == nil {
			delete(sr.targets, k.member)
			return nil
		}
		sr.targets[k.member] = target
	case shareGroupCurrentAssignmentKeyVersion:
		if r.value == nil {
			delete(sr.currents, k.member)
			return nil
		}
		sr.currents[k.member] = current
	}
	return nil
}

// restoreShare makes g the share group the replay describes.
func (g *group) restoreShare(sr *shareReplay, session time.Duration, now time.Time) {
	sg := newShareGroup()
	sg.epoch = sr.epoch
	sg.assignmentEpoch = sr.assignmentEpoch
	if sr.assignmentMs > 0 {
		// The assignment interval runs from the last computation, as
		// Kafka's AssignmentTimestamp makes it do after a load.
		sg.assignmentTime = time.UnixMilli(sr.assignmentMs)
	}
	sg.loadedHash = sr.hash
	if sr.state != nil {
		sg.hasState = true
		sg.state = *sr.state
		for id := range sg.state.initializing {
			sg.initSince[id] = time.Time{} // retried by the next heartbeat
		}
	}
	for id, v := range sr.members {
		m := &shareMember{
			id: id, rackID: v.rackID, clientID: v.clientID, clientHost: v.clientHost,
			topicNames: v.topicNames, sessionDeadline: now.Add(session),
		}
		if cur := sr.currents[id]; cur != nil {
			m.epoch, m.previousEpoch, m.assigned = cur.memberEpoch, cur.previousEpoch, cur.assigned
		}
		sg.members[id] = m
		sg.target[id] = sr.targets[id]
		if sg.target[id] == nil {
			sg.target[id] = map[topicID][]int32{}
		}
	}
	g.share = sg
	g.protocolType = "share"
	g.syncShareStateLocked(now)
}
