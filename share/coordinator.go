package share

// The share coordinator (KIP-932): the keeper of share-partition state in
// the internal topic __share_group_state. The coordinator of a key
// (group, topic id, partition) is the leader of the state partition that
// "group:topicId:partition" hashes to (PartitionFor); this Coordinator
// serves the state partitions its broker leads, each rebuilt from the
// partition's records when the broker becomes its leader (load, in
// coordinator_load.go), answering ErrCoordinatorLoadInProgress until
// then and ErrNotCoordinator for a partition the broker does not lead.
//
// Every change is one record appended to the state partition and
// replicated before the in-memory state changes (a write that fails
// changes nothing here; one whose outcome is unknown reloads the
// partition). A change is a ShareUpdate record, or a ShareSnapshot record
// when the key is new, its state epoch changes, or
// share.coordinator.snapshot.update.records.per.snapshot updates followed
// its last snapshot, so a load replays at most one snapshot and its
// updates per key. Writes carry the share-partition leader's epoch and the
// state epoch: one from an older leader is fenced (ErrFencedLeaderEpoch),
// one of an older state epoch too (ErrFencedStateEpoch); a read with a
// newer leader epoch records it, fencing the old leader's later writes.
//
// Maintain, every 5 minutes, writes a new snapshot of each share-partition
// that had no record for that long (Kafka's cold-partition snapshots) and
// deletes the records below the oldest snapshot still needed (Kafka's
// pruning), so the topic holds about one snapshot and its updates per
// share-partition and its retention never removes a live one.
//
// sluice differs from Kafka's share coordinator in: it serialises the
// writes of one state partition (Kafka batches them,
// share.coordinator.append.linger.ms).

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedev/sluice/internal/keyhash"
)

// StateTopic is the share coordinator's internal topic.
const StateTopic = "__share_group_state"

// Coordinator errors, mapped to Kafka's codes by the broker.
var (
	// ErrNotCoordinator: this broker does not lead the key's state
	// partition (NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("share: not the share coordinator")
	// ErrCoordinatorLoadInProgress: the state partition is being loaded
	// (COORDINATOR_LOAD_IN_PROGRESS).
	ErrCoordinatorLoadInProgress = errors.New("share: share coordinator loading")
)

// StateLog is the coordinator's access to the state partitions this
// broker leads.
type StateLog interface {
	// Append appends one batch as leader of partition at leaderEpoch
	// and returns its last offset once it is replicated (acks=all);
	// ErrNotCoordinator when the broker no longer leads partition at
	// that epoch.
	Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) (int64, error)
	// Read returns the batches of partition from offset on, below the
	// high watermark, and the high watermark; it waits first until a
	// new leader's high watermark covers what the old leader committed.
	Read(ctx context.Context, partition int32, offset int64) (data []byte, hw int64, err error)
	// Prune deletes the records of partition below offset (its log
	// start offset moves up to it), as leader at leaderEpoch.
	Prune(ctx context.Context, partition, leaderEpoch int32, offset int64) error
}

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// SnapshotEvery is
	// share.coordinator.snapshot.update.records.per.snapshot (500); 0
	// writes a snapshot at every change.
	SnapshotEvery int
	Now           func() time.Time
	Logger        *slog.Logger
}

// Coordinator is the share coordinator of the __share_group_state
// partitions a broker leads. Its methods are safe for concurrent use.
type Coordinator struct {
	cfg CoordinatorConfig
	log StateLog

	mu         sync.Mutex
	partitions int32                     // of __share_group_state; 0 until it exists
	parts      map[int32]*statePartition // led partitions
	signal     chan struct{}
}

// statePartition is one led state partition.
type statePartition struct {
	index  int32
	epoch  int32 // its leader epoch
	loaded bool  // replayed; guarded by Coordinator.mu

	// wmu serialises the changes of the partition: append, then apply.
	wmu  sync.Mutex
	keys map[Key]*keyState // guarded by wmu once loaded
	// end is the offset after the last record read or appended, pruned
	// the offset the records below which were deleted; guarded by wmu.
	end, pruned int64
}

// keyState is the coordinator's state of one share-partition.
type keyState struct {
	st            PartitionState
	snapshotEpoch int32
	updates       int // update records since the last snapshot
	createTime    int64
	snapOffset    int64 // offset of the last snapshot record
	lastWrite     int64 // unix ms of the last record (of its load, for a loaded key)
}

// NewCoordinator returns a Coordinator that leads no partition yet.
func NewCoordinator(cfg CoordinatorConfig, log StateLog) *Coordinator {
	if cfg.SnapshotEvery < 0 {
		cfg.SnapshotEvery = 500
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Coordinator{cfg: cfg, log: log, parts: make(map[int32]*statePartition), signal: make(chan struct{}, 1)}
}

// CoordinatorKey is the key a share-partition's coordinator is found by
// (FindCoordinator key type 2): "group:topicId:partition", the topic id as
// Kafka's Uuid.toString writes it.
func CoordinatorKey(k Key) string {
	return k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.TopicID[:]) + ":" + strconv.Itoa(int(k.Partition))
}

// PartitionFor is the __share_group_state partition of a coordinator key
// (CoordinatorKey) for a topic of partitions partitions, as Kafka places
// it: abs(key.hashCode()) % partitions.
func PartitionFor(coordinatorKey string, partitions int32) int32 {
	return keyhash.Partition(coordinatorKey, partitions)
}

// SetLeadership tells the coordinator how many partitions
// __share_group_state has and which it leads at which leader epoch. A
// partition newly led, or led at a new epoch, is loaded again
// (LoadSignal); one no longer led is dropped.
func (c *Coordinator) SetLeadership(partitions int32, led map[int32]int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.partitions = partitions
	load := false
	for i, sp := range c.parts {
		if e, ok := led[i]; !ok || e != sp.epoch {
			delete(c.parts, i)
		}
	}
	for i, e := range led {
		if _, ok := c.parts[i]; !ok {
			c.parts[i] = &statePartition{index: i, epoch: e}
			load = true
		}
	}
	if load {
		c.kick()
	}
}

func (c *Coordinator) kick() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// LoadSignal fires when a partition waits to be loaded.
func (c *Coordinator) LoadSignal() <-chan struct{} { return c.signal }

// Loading reports whether a led partition is not loaded yet.
func (c *Coordinator) Loading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, sp := range c.parts {
		if !sp.loaded {
			return true
		}
	}
	return false
}

// partitionOf returns the loaded state partition of key.
func (c *Coordinator) partitionOf(key Key) (*statePartition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitions <= 0 {
		return nil, ErrNotCoordinator
	}
	sp := c.parts[PartitionFor(CoordinatorKey(key), c.partitions)]
	switch {
	case sp == nil:
		return nil, ErrNotCoordinator
	case !sp.loaded:
		return nil, ErrCoordinatorLoadInProgress
	}
	return sp, nil
}

// current reports whether sp is still the led, loaded partition.
func (c *Coordinator) current(sp *statePartition) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.parts[sp.index] != sp:
		return ErrNotCoordinator
	case !sp.loaded:
		return ErrCoordinatorLoadInProgress
	}
	return nil
}

// begin locks sp for a change of key's state.
func (c *Coordinator) begin(key Key) (*statePartition, error) {
	sp, err := c.partitionOf(key)
	if err != nil {
		return nil, err
	}
	sp.wmu.Lock()
	if err := c.current(sp); err != nil {
		sp.wmu.Unlock()
		return nil, err
	}
	return sp, nil
}

// appendRecord appends r to sp and applies it to sp's keys once it is
// replicated. A failed append applies nothing; one that may have reached
// the log (anything but a refusal before it was written) has sp loaded
// again, so that memory follows the log.
func (c *Coordinator) appendRecord(ctx context.Context, sp *statePartition, r *stateRecord) error {
	now := c.cfg.Now().UnixMilli()
	batch := buildStateBatch(encodeStateKey(r.typ, r.key), encodeStateValue(r), now)
	offset, err := c.log.Append(ctx, sp.index, sp.epoch, batch)
	if err != nil {
		if !errors.Is(err, ErrNotCoordinator) {
			c.mu.Lock()
			if c.parts[sp.index] == sp {
				sp.loaded = false
				c.kick()
			}
			c.mu.Unlock()
		}
		return err
	}
	applyRecord(sp.keys, r, offset, now)
	sp.end = max(sp.end, offset+1)
	return nil
}

// InitializeState sets key's start offset and state epoch with no
// in-flight records (InitializeShareGroupState): a new snapshot.
// ErrFencedStateEpoch when the key's state has this or a newer state
// epoch already, as Kafka's share coordinator answers.
func (c *Coordinator) InitializeState(ctx context.Context, key Key, stateEpoch int32, startOffset int64) error {
	sp, err := c.begin(key)
	if err != nil {
		return err
	}
	defer sp.wmu.Unlock()
	ks := sp.keys[key]
	if ks != nil && ks.st.StateEpoch >= stateEpoch {
		return ErrFencedStateEpoch
	}
	st := PartitionState{StartOffset: startOffset, StateEpoch: stateEpoch, LeaderEpoch: -1}
	return c.appendRecord(ctx, sp, c.snapshotRecord(key, ks, st))
}

// snapshotRecord is a ShareSnapshot of st for key, whose state so far is
// ks (nil for none).
func (c *Coordinator) snapshotRecord(key Key, ks *keyState, st PartitionState) *stateRecord {
	now := c.cfg.Now().UnixMilli()
	r := &stateRecord{typ: recordSnapshot, key: key, stateEpoch: st.StateEpoch, leaderEpoch: st.LeaderEpoch,
		startOffset: st.StartOffset, createTime: now, writeTime: now, batches: st.Batches}
	if ks != nil {
		r.snapshotEpoch = ks.snapshotEpoch + 1
		r.createTime = ks.createTime
	}
	return r
}

// ReadState returns key's state for a share-partition leader of
// leaderEpoch (ReadShareGroupState): ErrStateNotFound when there is none,
// ErrFencedLeaderEpoch when a newer leader has read or written it. A newer
// leader epoch (not -1) is recorded first, fencing the older leader.
func (c *Coordinator) ReadState(ctx context.Context, key Key, leaderEpoch int32) (PartitionState, error) {
	sp, err := c.begin(key)
	if err != nil {
		return PartitionState{}, err
	}
	defer sp.wmu.Unlock()
	ks := sp.keys[key]
	switch {
	case ks == nil:
		return PartitionState{}, ErrStateNotFound
	case leaderEpoch != -1 && leaderEpoch < ks.st.LeaderEpoch:
		return PartitionState{}, ErrFencedLeaderEpoch
	case leaderEpoch != -1 && leaderEpoch > ks.st.LeaderEpoch:
		r := &stateRecord{typ: recordUpdate, key: key, snapshotEpoch: ks.snapshotEpoch, leaderEpoch: leaderEpoch, startOffset: -1}
		if ks.updates+1 >= c.cfg.SnapshotEvery {
			st := cloneState(ks.st)
			st.LeaderEpoch = leaderEpoch
			r = c.snapshotRecord(key, ks, st)
		}
		if err := c.appendRecord(ctx, sp, r); err != nil {
			return PartitionState{}, err
		}
		ks = sp.keys[key]
	}
	return cloneState(ks.st), nil
}

// WriteState records st as key's state (WriteShareGroupState): its start
// offset (unless -1) and batches merged over what is kept, as Kafka's
// coordinator combines them. ErrFencedLeaderEpoch or ErrFencedStateEpoch
// when st comes from an older leader or state epoch.
func (c *Coordinator) WriteState(ctx context.Context, key Key, st PartitionState) error {
	sp, err := c.begin(key)
	if err != nil {
		return err
	}
	defer sp.wmu.Unlock()
	ks := sp.keys[key]
	if ks == nil || st.StateEpoch != ks.st.StateEpoch || ks.updates+1 >= c.cfg.SnapshotEvery {
		if ks != nil {
			if st.StateEpoch < ks.st.StateEpoch {
				return ErrFencedStateEpoch
			}
			if st.LeaderEpoch < ks.st.LeaderEpoch {
				return ErrFencedLeaderEpoch
			}
			st = mergeState(ks.st, st)
		}
		return c.appendRecord(ctx, sp, c.snapshotRecord(key, ks, st))
	}
	if st.LeaderEpoch < ks.st.LeaderEpoch {
		return ErrFencedLeaderEpoch
	}
	return c.appendRecord(ctx, sp, &stateRecord{typ: recordUpdate, key: key, snapshotEpoch: ks.snapshotEpoch,
		leaderEpoch: st.LeaderEpoch, startOffset: st.StartOffset, batches: st.Batches})
}

// DeleteState removes key's state (DeleteShareGroupState): tombstones of
// its snapshot and update keys. Deleting nothing is no error.
func (c *Coordinator) DeleteState(ctx context.Context, key Key) error {
	sp, err := c.begin(key)
	if err != nil {
		return err
	}
	defer sp.wmu.Unlock()
	if sp.keys[key] == nil {
		return nil
	}
	if err := c.appendRecord(ctx, sp, &stateRecord{typ: recordSnapshot, key: key, tombstone: true}); err != nil {
		return err
	}
	return c.appendRecord(ctx, sp, &stateRecord{typ: recordUpdate, key: key, tombstone: true})
}

// ReadSummary returns key's start offset and epochs
// (ReadShareGroupStateSummary), ErrStateNotFound when it has no state.
func (c *Coordinator) ReadSummary(_ context.Context, key Key) (Summary, error) {
	sp, err := c.begin(key)
	if err != nil {
		return Summary{}, err
	}
	defer sp.wmu.Unlock()
	ks := sp.keys[key]
	if ks == nil {
		return Summary{}, ErrStateNotFound
	}
	return Summary{StartOffset: ks.st.StartOffset, StateEpoch: ks.st.StateEpoch, LeaderEpoch: ks.st.LeaderEpoch, DeliveryComplete: DeliveryCompleteCount(ks.st)}, nil
}

// DeliveryCompleteCount is how many offsets at or past st's start offset
// are ACKNOWLEDGED or ARCHIVED (ReadShareGroupStateSummary v1).
func DeliveryCompleteCount(st PartitionState) int32 {
	var n int64
	for _, b := range st.Batches {
		if b.State == Acknowledged || b.State == Archived {
			n += b.Last - max(b.First, st.StartOffset) + 1
		}
	}
	return int32(min(max(n, 0), 1<<31-1))
}

// applyRecord applies one record, at offset, read back at a load or just
// appended at now (unix ms).
func applyRecord(keys map[Key]*keyState, r *stateRecord, offset, now int64) {
	if r.tombstone {
		delete(keys, r.key)
		return
	}
	ks := keys[r.key]
	if r.typ == recordSnapshot {
		keys[r.key] = &keyState{
			st:            PartitionState{StartOffset: r.startOffset, StateEpoch: r.stateEpoch, LeaderEpoch: r.leaderEpoch, Batches: r.batches},
			snapshotEpoch: r.snapshotEpoch,
			createTime:    r.createTime,
			snapOffset:    offset,
			lastWrite:     now,
		}
		return
	}
	if ks == nil {
		return // an update without its snapshot: nothing to apply it to
	}
	upd := PartitionState{StartOffset: r.startOffset, StateEpoch: ks.st.StateEpoch, LeaderEpoch: r.leaderEpoch, Batches: r.batches}
	ks.st = mergeState(ks.st, upd)
	ks.updates++
	ks.lastWrite = now
}

// Maintain writes a new snapshot of every share-partition of the loaded
// state partitions that has had no record for coldAfter (Kafka's
// snapshots of cold partitions), then deletes the records of each state
// partition below the oldest snapshot still needed (Kafka's pruning), so
// that __share_group_state holds about one snapshot and its updates per
// share-partition, and its retention never removes a live one. The broker
// calls it periodically.
func (c *Coordinator) Maintain(ctx context.Context, coldAfter time.Duration) {
	c.mu.Lock()
	var parts []*statePartition
	for _, sp := range c.parts {
		if sp.loaded {
			parts = append(parts, sp)
		}
	}
	c.mu.Unlock()
	for _, sp := range parts {
		if ctx.Err() != nil {
			return
		}
		c.maintainPartition(ctx, sp, coldAfter)
	}
}

func (c *Coordinator) maintainPartition(ctx context.Context, sp *statePartition, coldAfter time.Duration) {
	sp.wmu.Lock()
	defer sp.wmu.Unlock()
	if c.current(sp) != nil {
		return
	}
	cold := c.cfg.Now().Add(-coldAfter).UnixMilli()
	var keys []Key
	for k, ks := range sp.keys {
		if ks.lastWrite <= cold {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		ks := sp.keys[k]
		if err := c.appendRecord(ctx, sp, c.snapshotRecord(k, ks, cloneState(ks.st))); err != nil {
			return // reloading, or no longer led
		}
	}
	keep := sp.end
	for _, ks := range sp.keys {
		keep = min(keep, ks.snapOffset)
	}
	if keep <= sp.pruned {
		return
	}
	if err := c.log.Prune(ctx, sp.index, sp.epoch, keep); err != nil {
		c.cfg.Logger.Info("cannot prune "+StateTopic, "partition", sp.index, "offset", keep, "err", err)
		return
	}
	sp.pruned = keep
}

// mergeState combines an update with the state so far, as Kafka's
// PersisterStateBatchCombiner: a new start offset (unless -1) and leader
// epoch; the update's batches replace the offsets they cover; batches
// below the start offset are dropped.
func mergeState(old, upd PartitionState) PartitionState {
	out := PartitionState{StartOffset: old.StartOffset, StateEpoch: max(old.StateEpoch, upd.StateEpoch), LeaderEpoch: max(old.LeaderEpoch, upd.LeaderEpoch)}
	if upd.StartOffset >= 0 {
		out.StartOffset = upd.StartOffset
	}
	ub := append([]StateBatch(nil), upd.Batches...)
	sortBatches(ub)
	var merged []StateBatch
	j := 0
	for _, b := range sortedBatches(old.Batches) {
		// The parts of b that no batch of the update covers.
		for j < len(ub) && ub[j].Last < b.First {
			j++
		}
		for k := j; k < len(ub) && ub[k].First <= b.Last && b.First <= b.Last; k++ {
			if b.First < ub[k].First {
				merged = append(merged, StateBatch{First: b.First, Last: ub[k].First - 1, State: b.State, DeliveryCount: b.DeliveryCount})
			}
			b.First = max(b.First, ub[k].Last+1)
		}
		if b.First <= b.Last {
			merged = append(merged, b)
		}
	}
	merged = append(merged, ub...)
	for _, b := range merged {
		if b.Last < out.StartOffset {
			continue
		}
		b.First = max(b.First, out.StartOffset)
		out.Batches = append(out.Batches, b)
	}
	sortBatches(out.Batches)
	return out
}

func sortBatches(bs []StateBatch) {
	slices.SortFunc(bs, func(a, b StateBatch) int { return cmp.Compare(a.First, b.First) })
}

func sortedBatches(bs []StateBatch) []StateBatch {
	out := append([]StateBatch(nil), bs...)
	sortBatches(out)
	return out
}
