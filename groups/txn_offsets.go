package groups

// Transactional offset commits (TxnOffsetCommit, KIP-98; KIP-447 adds the
// member checks).
//
// A transactional producer commits a group's offsets inside its
// transaction: the offsets are written to the group's partition of
// __consumer_offsets in a transactional batch of the producer (its id and
// epoch, so the partition's producer state refuses a fenced epoch) and held
// as pending, per producer id, invisible to OffsetFetch. The transaction's
// marker, which WriteTxnMarkers appends to the same partition because
// AddOffsetsToTxn added it to the transaction, settles them (CompleteTxn):
// COMMIT makes them the committed offsets, ABORT drops them. Replay does
// the same in log order (offsetReplay): transactional offset records become
// pending, their producer's marker applies or drops them, and those without
// a marker yet stay pending.
//
// A plain commit and a transaction's commit of the same partition are
// ordered by the log offsets of their records, as in Kafka: a COMMIT
// marker does not overwrite an offset committed by a later record.
//
// While a partition has pending offsets, OffsetFetch with RequireStable
// (v7+) answers it UNSTABLE_OFFSET_COMMIT, offset expiry leaves it alone
// and never deletes the group, DeleteGroups answers NON_EMPTY_GROUP (Kafka
// would tombstone the pending offsets; sluice keeps them until the
// transaction ends), and an offset tombstone (OffsetDelete, the removal of
// a deleted topic's offsets) drops them with the committed one, as replay
// of the tombstone does.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetTable is offsets by topic and partition.
type offsetTable map[string]map[int32]committedOffset

// set stores o unless the table holds an offset committed by a later
// record.
func (t offsetTable) set(topic string, partition int32, o committedOffset) {
	parts := t[topic]
	if parts == nil {
		parts = make(map[int32]committedOffset)
		t[topic] = parts
	}
	if old, ok := parts[partition]; ok && old.recordOffset > o.recordOffset {
		return
	}
	parts[partition] = o
}

// remove deletes one partition's offset.
func (t offsetTable) remove(topic string, partition int32) {
	if parts := t[topic]; parts != nil {
		delete(parts, partition)
		if len(parts) == 0 {
			delete(t, topic)
		}
	}
}

func (t offsetTable) has(topic string, partition int32) bool {
	_, ok := t[topic][partition]
	return ok
}

// CommitTxnOffsets handles TxnOffsetCommit (v0–v5). The group's members
// are checked as Kafka checks a transactional commit: from v3 a member id,
// group instance id and generation (member epoch in a consumer group) that
// do not match are UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or
// ILLEGAL_GENERATION; generation -1 without a member (and every v0–v2
// request) is accepted whatever the group's state, since older clients do
// not send their membership. A missing group is created for generation -1.
// The offsets are pending once their batch is committed to the log.
func (c *Coordinator) CommitTxnOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var todo []commitTarget
	for _, rt := range req.Topics {
		st := kmsg.NewTxnOffsetCommitResponseTopic()
		st.Topic = rt.Topic
		info, ok := c.cfg.LookupTopic(rt.Topic, [16]byte{})
		for _, rp := range rt.Partitions {
			sp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.ErrorCode = c.checkCommitPartition(info, ok && rt.Topic != "", rp.Partition, rp.Metadata)
			if sp.ErrorCode == 0 {
				leaderEpoch := rp.LeaderEpoch
				if req.Version < 2 {
					leaderEpoch = -1
				}
				todo = append(todo, newCommitTarget(len(resp.Topics), len(st.Partitions), info.Name, rp.Partition, rp.Offset, leaderEpoch, rp.Metadata))
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		for _, t := range todo {
			resp.Topics[t.topic].Partitions[t.partition].ErrorCode = code
		}
		return resp
	}
	if len(todo) == 0 {
		return resp
	}
	if req.Group == "" {
		return setAll(kerr.InvalidGroupID.Code)
	}
	// A group that is not there: ILLEGAL_GENERATION before v6,
	// GROUP_ID_NOT_FOUND from v6 (KIP-1319), as Kafka answers.
	missing := int16(kerr.IllegalGeneration.Code)
	if req.Version >= 6 {
		missing = kerr.GroupIDNotFound.Code
	}
	g, code := c.commitGroup(req.Group, req.Generation, missing)
	if code != 0 {
		return setAll(code)
	}

	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	code = g.checkTxnCommitLocked(req)
	g.mu.Unlock()
	if code != 0 {
		return setAll(code)
	}
	records := offsetRecords(g.name, todo, c.cfg.Now())
	first, err := c.appendAt(ctx, g, records, batchProducer{id: req.ProducerID, epoch: req.ProducerEpoch})
	if err != nil {
		return setAll(txnAppendErrorCode(err))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.unloaded {
		return resp
	}
	pending := make(offsetTable)
	for i, t := range todo {
		t.value.recordOffset = first + int64(i)
		pending.set(t.name, t.partitionID, t.value)
	}
	// A client that gave up waiting for this answer may have ended its
	// transaction meanwhile: a marker after these records settles them
	// now, as replay would. markerMu is taken under g.mu, so a marker
	// acknowledged later finds the offsets pending (CompleteTxn).
	if m, ok := c.markerAfter(g.partition, g.epoch, req.ProducerID, first); ok {
		if m.commit {
			for topic, parts := range pending {
				for p, o := range parts {
					g.setOffsetLocked(topic, p, o)
				}
			}
		}
		c.markerMu.Unlock()
		return resp
	}
	held := g.txnOffsets[req.ProducerID]
	if held == nil {
		g.txnOffsets[req.ProducerID] = pending
	} else {
		for topic, parts := range pending {
			for p, o := range parts {
				held.set(topic, p, o)
			}
		}
	}
	c.markerMu.Unlock()
	return resp
}

// partitionMarkers is the newest acknowledged marker of each producer id
// on one partition led at epoch. Kept until the partition is no longer led
// at that epoch: one entry per transactional producer writing there.
type partitionMarkers struct {
	epoch      int32
	byProducer map[int64]txnMarker
}

// markerAfter locks markerMu, and leaves it locked for the caller to
// unlock, and reports the newest marker of producerID on partition (led
// at epoch) if it lies after offset.
func (c *Coordinator) markerAfter(partition, epoch int32, producerID, offset int64) (txnMarker, bool) {
	c.markerMu.Lock()
	pm := c.lastMarkers[partition]
	if pm == nil || pm.epoch != epoch {
		return txnMarker{}, false
	}
	m, ok := pm.byProducer[producerID]
	return m, ok && m.offset > offset
}

// rememberMarker records m as the newest marker of its producer on
// partition, led at epoch.
func (c *Coordinator) rememberMarker(partition, epoch int32, m txnMarker) {
	c.markerMu.Lock()
	defer c.markerMu.Unlock()
	pm := c.lastMarkers[partition]
	if pm == nil || pm.epoch != epoch {
		pm = &partitionMarkers{epoch: epoch, byProducer: make(map[int64]txnMarker)}
		c.lastMarkers[partition] = pm
	}
	if old, ok := pm.byProducer[m.producerID]; !ok || old.offset < m.offset {
		pm.byProducer[m.producerID] = m
	}
}

// forgetMarkers drops the markers of partition led at epoch.
func (c *Coordinator) forgetMarkers(partition, epoch int32) {
	c.markerMu.Lock()
	defer c.markerMu.Unlock()
	if pm := c.lastMarkers[partition]; pm != nil && pm.epoch == epoch {
		delete(c.lastMarkers, partition)
	}
}

// txnAppendErrorCode maps a failed append of transactional offsets as
// Kafka's coordinator does: as any append (appendErrorCode), and a stale
// producer epoch INVALID_PRODUCER_EPOCH (which the producer takes as being
// fenced).
func txnAppendErrorCode(err error) int16 {
	code := appendErrorCode(err, true)
	if code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// checkTxnCommitLocked is Kafka's check of a transactional commit.
func (g *group) checkTxnCommitLocked(req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case g.unloaded:
		return kerr.NotCoordinator.Code
	case g.state == stateDead:
		return kerr.CoordinatorNotAvailable.Code
	case g.streams != nil:
		code := g.checkStreamsCommitLocked(req.MemberID, req.Generation) // streams_admin.go
		if code == kerr.StaleMemberEpoch.Code && req.Version < 6 {
			code = kerr.IllegalGeneration.Code
		}
		return code
	case g.consumer != nil:
		if req.Generation < 0 && len(g.consumer.members) == 0 {
			return 0
		}
		m := g.consumer.members[req.MemberID]
		switch {
		case m == nil:
			return kerr.UnknownMemberID.Code
		case req.Generation != m.epoch && req.Version >= 6:
			return kerr.StaleMemberEpoch.Code // KIP-1319
		case req.Generation != m.epoch:
			// Kafka turns STALE_MEMBER_EPOCH into ILLEGAL_GENERATION
			// for transactional commits before v6.
			return kerr.IllegalGeneration.Code
		}
		return 0
	}
	if req.Generation < 0 && g.state == stateEmpty {
		return 0
	}
	if req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil {
		return 0 // v0–v2: no membership to check
	}
	if req.InstanceID != nil {
		id, ok := g.static[*req.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case id != req.MemberID:
			return kerr.FencedInstanceID.Code
		}
	} else if g.members[req.MemberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	return 0
}

// hasTxnOffsetLocked reports whether a transaction holds a pending offset
// of the partition.
func (g *group) hasTxnOffsetLocked(topic string, partition int32) bool {
	for _, t := range g.txnOffsets {
		if t.has(topic, partition) {
			return true
		}
	}
	return false
}

// dropTxnOffsetsLocked forgets every transaction's pending offset of the
// partition, as replaying its tombstone does.
func (g *group) dropTxnOffsetsLocked(topic string, partition int32) {
	for pid, t := range g.txnOffsets {
		t.remove(topic, partition)
		if len(t) == 0 {
			delete(g.txnOffsets, pid)
		}
	}
}

// completeTxnLocked settles producerID's pending offsets: committed ones
// become the group's offsets unless a later record committed the same
// partition.
func (g *group) completeTxnLocked(producerID int64, commit bool) {
	pending := g.txnOffsets[producerID]
	if pending == nil {
		return
	}
	delete(g.txnOffsets, producerID)
	if !commit {
		return
	}
	for topic, parts := range pending {
		for p, o := range parts {
			offsetTable(g.offsets).set(topic, p, o)
		}
	}
}

// txnMarker is a transaction marker appended to a partition that was
// still loading: the load applies it unless its replay saw it.
type txnMarker struct {
	producerID int64
	commit     bool
	offset     int64
}

// CompleteTxn tells the coordinator that a COMMIT (commit set) or ABORT
// marker of producerID was appended at offset to partition of
// __consumer_offsets, led at leaderEpoch, and is committed there. Every
// group of the partition with offsets pending in that producer's
// transaction has them applied or dropped. The broker's WriteTxnMarkers
// calls it; a partition not led at that epoch is ignored (its next leader
// replays the marker from the log).
func (c *Coordinator) CompleteTxn(partition, leaderEpoch int32, producerID int64, commit bool, offset int64) {
	m := txnMarker{producerID: producerID, commit: commit, offset: offset}
	c.mu.Lock()
	s := c.shards[partition]
	if s == nil || s.epoch != leaderEpoch {
		c.mu.Unlock()
		return
	}
	if !s.loaded {
		s.markers = append(s.markers, m)
		c.mu.Unlock()
		return
	}
	c.rememberMarker(partition, leaderEpoch, m)
	all := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		all = append(all, g)
	}
	c.mu.Unlock()
	for _, g := range all {
		g.mu.Lock()
		if !g.unloaded {
			g.completeTxnLocked(producerID, commit)
		}
		g.mu.Unlock()
	}
}

// applyLateMarkers applies markers that arrived while the partition was
// loading and that its replay, which ended at replayedTo, did not see.
func applyLateMarkers(groups map[string]*group, markers []txnMarker, replayedTo int64) {
	for _, m := range markers {
		if m.offset < replayedTo {
			continue
		}
		for _, g := range groups {
			g.completeTxnLocked(m.producerID, m.commit)
		}
	}
}

// offsetReplay rebuilds the committed and pending offsets of a partition's
// groups from its records, in log order.
type offsetReplay struct {
	committed map[string]offsetTable           // group → offsets
	pending   map[int64]map[string]offsetTable // producer id → group → offsets
}

func newOffsetReplay() *offsetReplay {
	return &offsetReplay{committed: make(map[string]offsetTable), pending: make(map[int64]map[string]offsetTable)}
}

// commit replays an offset record: a plain one is committed, a
// transactional one pending for its producer.
func (r *offsetReplay) commit(producerID int64, group, topic string, partition int32, o committedOffset) {
	var t offsetTable
	if producerID < 0 {
		t = r.committed[group]
		if t == nil {
			t = make(offsetTable)
			r.committed[group] = t
		}
	} else {
		byGroup := r.pending[producerID]
		if byGroup == nil {
			byGroup = make(map[string]offsetTable)
			r.pending[producerID] = byGroup
		}
		t = byGroup[group]
		if t == nil {
			t = make(offsetTable)
			byGroup[group] = t
		}
	}
	t.set(topic, partition, o)
}

// tombstone replays an offset tombstone: the committed offset and every
// pending one of the partition go.
func (r *offsetReplay) tombstone(group, topic string, partition int32) {
	if t := r.committed[group]; t != nil {
		t.remove(topic, partition)
	}
	for _, byGroup := range r.pending {
		if t := byGroup[group]; t != nil {
			t.remove(topic, partition)
		}
	}
}

// marker replays a transaction marker of producerID.
func (r *offsetReplay) marker(producerID int64, commit bool) {
	byGroup := r.pending[producerID]
	delete(r.pending, producerID)
	if !commit {
		return
	}
	for group, t := range byGroup {
		for topic, parts := range t {
			for p, o := range parts {
				r.commit(-1, group, topic, p, o)
			}
		}
	}
}

// pendingOf returns group's pending offsets by producer id, nil when none.
func (r *offsetReplay) pendingOf(group string) map[int64]offsetTable {
	var out map[int64]offsetTable
	for pid, byGroup := range r.pending {
		if t := byGroup[group]; len(t) > 0 {
			if out == nil {
				out = make(map[int64]offsetTable)
			}
			out[pid] = t
		}
	}
	return out
}
