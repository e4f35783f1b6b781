package share

// What the share-group offset admin APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups, served
// by the group coordinator: broker/90_*.go to 92_*.go and
// 42_delete_groups.go) need of this package beyond the Persister: a way to
// make this broker's loaded share-partition of a key load again after its
// state was altered or deleted, so that its next fetch starts from the new
// start offset.
//
// A share-partition loaded on another broker (the partition's leader when
// it is not the group coordinator) learns of an altered state through the
// state epoch: the group coordinator initializes the state with a greater
// epoch, so that leader's next write of the older epoch is fenced
// (ErrFencedStateEpoch): the change is undone, the share-partition turns
// stale and is loaded again, from the new state, at its next use
// (partition.go). A deleted state fences nothing: a leader elsewhere that
// still holds the share-partition may write its state again, as Kafka's
// share coordinator accepts a write of a key it holds nothing of; with the
// group empty that happens only when one of its acquisition locks expires.
// Revalidate is how such a leader notices, when the next consumer opens
// its share session.

import (
	"context"
	"errors"
)

// Forget drops this broker's loaded share-partition of key, if any, so
// that its next use loads it again from the persister: after the group
// coordinator altered or deleted its state. A fetch that holds the
// dropped share-partition finishes with it; its writes carry the older
// state epoch.
func (m *Manager) Forget(key Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.parts, key)
}

// Revalidate compares this broker's loaded share-partition of key, if
// any, with the state the persister holds, and drops it when that state
// was altered (a greater state epoch) or deleted since it was loaded, so
// that its next use loads the new state. ShareFetch calls it when a
// member opens a share session (ShareSessionEpoch 0): a group's offsets
// change only while the group is empty, so the next consumer always opens
// a session first, and a share-partition loaded here that has nothing to
// write would otherwise never meet the fence. It costs one summary read
// per partition of a new session, and none for a partition not loaded.
func (m *Manager) Revalidate(ctx context.Context, key Key) error {
	p, ok := m.Lookup(key)
	if !ok {
		return nil
	}
	p.mu.Lock()
	loaded, epoch := p.initialized, p.stateEpoch
	p.mu.Unlock()
	if !loaded {
		return nil
	}
	s, err := m.persister.ReadSummary(ctx, key)
	switch {
	case errors.Is(err, ErrStateNotFound):
	case err != nil:
		return err
	case s.StateEpoch <= epoch:
		return nil
	}
	m.forget(key, p)
	return nil
}
