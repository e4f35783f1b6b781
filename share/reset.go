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
