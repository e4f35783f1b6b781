package share

// What the share-group offset admin APIs (DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups, served
// by the group coordinator: broker/90_*.go to 92_*.go and
// 42_delete_groups.go) need of this package beyond the Persister: a way to
// make this broker's loaded share-partition of a key load again after its
// state was altered or deleted, so that its next fetch starts from the new
// start offset; and the delivery-complete count of KIP-1226 that
// DescribeShareGroupOffsets computes the lag from, read from
// Summary.DeliveryComplete.
//
// A share-partition loaded on another broker (the partition's leader when
// it is not the group coordinator) learns of an altered state through the
// state epoch: the group coordinator initializes the state with a greater
// epoch, so that leader's next write of the older epoch is fenced
// (ErrFencedStateEpoch).

import "context"

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

// DeliveryCompleteOf returns KIP-1226's delivery-complete count of key's
// state (how many offsets at or past its start offset are ACKNOWLEDGED or
// ARCHIVED), what DescribeShareGroupOffsets computes the lag from, as the
// persister's summary reports it (ReadShareGroupStateSummary v1); -1 when
// it is not known: no state, or not started.
func DeliveryCompleteOf(ctx context.Context, p Persister, key Key) int64 {
	s, err := p.ReadSummary(ctx, key)
	if err != nil || s.StartOffset < 0 || s.DeliveryComplete < 0 {
		return -1
	}
	return int64(s.DeliveryComplete)
}
