package share

// The persister: where share-partition state is kept so that a new
// partition leader can carry on where the old one stopped. Its operations
// are Kafka's Persister's, which the share coordinator serves with the
// InitializeShareGroupState (83), ReadShareGroupState (84),
// WriteShareGroupState (85), DeleteShareGroupState (86) and
// ReadShareGroupStateSummary (87) APIs over __share_group_state. Here they
// take one partition each; the durable implementation may batch them.

import (
	"context"
	"errors"
	"sync"
)

// Key names one share-partition: a share group and a topic partition (by
// topic id, as the share APIs name topics).
type Key struct {
	Group     string
	TopicID   [16]byte
	Partition int32
}

// StateBatch is one run of offsets [First, Last] with the same state and
// delivery count: Kafka's PersisterStateBatch.
type StateBatch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int16
}

// PartitionState is what is persisted of one share-partition: Kafka's
// ReadShareGroupState / WriteShareGroupState partition data.
type PartitionState struct {
	// StartOffset is the SPSO; -1 in an initialized state means "not
	// started yet": the leader starts from share.auto.offset.reset.
	StartOffset int64
	// StateEpoch is bumped when the group's offsets are reset or altered
	// (InitializeShareGroupState), fencing writes of the old epoch.
	StateEpoch int32
	// LeaderEpoch is the partition leader epoch of the writer; writes of
	// an older leader epoch are fenced (FENCED_LEADER_EPOCH).
	LeaderEpoch int32
	Batches     []StateBatch
}

// Summary is ReadShareGroupStateSummary's answer for one partition: what
// DescribeShareGroupOffsets reports.
type Summary struct {
	StartOffset int64
	StateEpoch  int32
	LeaderEpoch int32
	// DeliveryComplete is how many offsets at or past StartOffset are
	// ACKNOWLEDGED or ARCHIVED (ReadShareGroupStateSummary v1), -1 when
	// not known.
	DeliveryComplete int32
}

// Persister errors.
var (
	// ErrStateNotFound: nothing is persisted for the partition (Kafka
	// answers a read of such a partition with start offset -1).
	ErrStateNotFound = errors.New("share: no persisted state")
	// ErrFencedLeaderEpoch: a write from an older partition leader
	// (FENCED_LEADER_EPOCH).
	ErrFencedLeaderEpoch = errors.New("share: fenced leader epoch")
	// ErrFencedStateEpoch: a write of an older state epoch
	// (FENCED_STATE_EPOCH).
	ErrFencedStateEpoch = errors.New("share: fenced state epoch")
)

// Persister keeps share-partition state. Implementations are safe for
// concurrent use; returned states are the caller's to keep.
type Persister interface {
	// InitializeState sets a partition's start offset and state epoch
	// with no in-flight records (the group coordinator does this when a
	// group first uses a partition, and when offsets are reset or
	// altered).
	InitializeState(ctx context.Context, key Key, stateEpoch int32, startOffset int64) error
	// ReadState returns the state of a partition for a leader of
	// leaderEpoch, ErrStateNotFound if none is persisted.
	ReadState(ctx context.Context, key Key, leaderEpoch int32) (PartitionState, error)
	// WriteState replaces a partition's state; ErrFencedLeaderEpoch or
	// ErrFencedStateEpoch when st comes from an older leader or epoch.
	WriteState(ctx context.Context, key Key, st PartitionState) error
	// DeleteState removes a partition's state (DeleteShareGroupOffsets,
	// DeleteGroups); deleting nothing is no error.
	DeleteState(ctx context.Context, key Key) error
	// ReadSummary returns a partition's start offset and epochs,
	// ErrStateNotFound if none is persisted.
	ReadSummary(ctx context.Context, key Key) (Summary, error)
}

// MemoryPersister keeps share-partition state in this process's memory.
// It fences as the share coordinator does, but what it holds is lost when
// the process stops, and another broker cannot read it: after a partition
// leader moves to another broker, the new leader finds no state and starts
// the share-partition afresh from share.auto.offset.reset.
type MemoryPersister struct {
	mu     sync.Mutex
	states map[Key]PartitionState
}

// NewMemoryPersister returns an empty MemoryPersister.
func NewMemoryPersister() *MemoryPersister {
	return &MemoryPersister{states: make(map[Key]PartitionState)}
}

func cloneState(st PartitionState) PartitionState {
	st.Batches = append([]StateBatch(nil), st.Batches...)
	return st
}

// InitializeState implements Persister.
func (m *MemoryPersister) InitializeState(_ context.Context, key Key, stateEpoch int32, startOffset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.states[key]; ok && stateEpoch < old.StateEpoch {
		return ErrFencedStateEpoch
	}
	m.states[key] = PartitionState{StartOffset: startOffset, StateEpoch: stateEpoch, LeaderEpoch: -1}
	return nil
}

// ReadState implements Persister.
func (m *MemoryPersister) ReadState(_ context.Context, key Key, leaderEpoch int32) (PartitionState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[key]
	if !ok {
		return PartitionState{}, ErrStateNotFound
	}
	if leaderEpoch < st.LeaderEpoch {
		return PartitionState{}, ErrFencedLeaderEpoch
	}
	return cloneState(st), nil
}

// WriteState implements Persister.
func (m *MemoryPersister) WriteState(_ context.Context, key Key, st PartitionState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.states[key]; ok {
		if st.LeaderEpoch < old.LeaderEpoch {
			return ErrFencedLeaderEpoch
		}
		if st.StateEpoch < old.StateEpoch {
			return ErrFencedStateEpoch
		}
	}
	m.states[key] = cloneState(st)
	return nil
}

// DeleteState implements Persister.
func (m *MemoryPersister) DeleteState(_ context.Context, key Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.states, key)
	return nil
}

// ReadSummary implements Persister.
func (m *MemoryPersister) ReadSummary(_ context.Context, key Key) (Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.states[key]
	if !ok {
		return Summary{}, ErrStateNotFound
	}
	return Summary{StartOffset: st.StartOffset, StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, DeliveryComplete: DeliveryCompleteCount(st)}, nil
}
