package share

// The share-partitions a broker leads (Kafka's SharePartitionManager's
// cache): created at the first ShareFetch of a group for a partition this
// broker leads, loaded from the persister, dropped when the partition's
// leadership moves.

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Manager holds the share-partitions of the partitions this broker leads.
// Its methods are safe for concurrent use.
type Manager struct {
	persister Persister

	mu    sync.Mutex
	parts map[Key]*Partition
}

// NewManager returns a Manager that keeps state through persister.
func NewManager(persister Persister) *Manager {
	return &Manager{persister: persister, parts: make(map[Key]*Partition)}
}

// Persister returns the manager's persister.
func (m *Manager) Persister() Persister { return m.persister }

// Partition returns the share-partition of key for a leader of
// leaderEpoch, with settings. A share-partition of an older leader epoch
// (this broker lost and regained the leadership since) is dropped and
// loaded again. A new one is loaded from the persister; when nothing is
// persisted, or the persisted start offset is -1 (initialized by the group
// coordinator, not started), it starts at initialOffset(), the offset
// share.auto.offset.reset names, and that is persisted.
func (m *Manager) Partition(ctx context.Context, key Key, leaderEpoch int32, settings Settings, initialOffset func() (int64, error)) (*Partition, error) {
	m.mu.Lock()
	p, ok := m.parts[key]
	if !ok || p.leaderEpoch != leaderEpoch || p.stale.Load() {
		p = newPartition(key, m.persister, leaderEpoch)
		m.parts[key] = p
	}
	m.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	p.settings = settings.normalized()
	if p.initialized {
		return p, nil
	}
	st, err := m.persister.ReadState(ctx, key, leaderEpoch)
	switch {
	case errors.Is(err, ErrStateNotFound):
		st = PartitionState{StartOffset: -1}
	case err != nil:
		m.forget(key, p)
		return nil, err
	}
	if st.StartOffset < 0 {
		off, err := initialOffset()
		if err != nil {
			m.forget(key, p)
			return nil, err
		}
		st = PartitionState{StartOffset: off, StateEpoch: st.StateEpoch}
	}
	st.LeaderEpoch = leaderEpoch
	p.loadLocked(st)
	p.resumeDeadLettersLocked()
	p.leaderEpoch = leaderEpoch
	if err := m.persister.WriteState(ctx, key, p.snapshotLocked()); err != nil {
		p.dead = nil
		m.forget(key, p)
		return nil, err
	}
	p.initialized = true
	p.flushDeadLettersLocked()
	return p, nil
}

func (m *Manager) forget(key Key, p *Partition) {
	m.mu.Lock()
	if m.parts[key] == p {
		delete(m.parts, key)
	}
	m.mu.Unlock()
}

// Lookup returns the share-partition of key if this broker has it loaded.
func (m *Manager) Lookup(key Key) (*Partition, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.parts[key]
	return p, ok
}

// DropTopicPartition forgets every group's share-partition of a topic
// partition, when this broker is no longer its leader. What was persisted
// stays for the next leader.
func (m *Manager) DropTopicPartition(topicID [16]byte, partition int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if k.TopicID == topicID && k.Partition == partition {
			delete(m.parts, k)
		}
	}
}

// ReleaseMember releases the records member of group holds in the given
// topic partitions (its share session's), as Kafka does when a share
// session closes or its connection drops.
func (m *Manager) ReleaseMember(group, member string, parts []TopicPartition, now time.Time) {
	for _, tp := range parts {
		if p, ok := m.Lookup(Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}); ok {
			p.ReleaseMember(member, now)
		}
	}
}

// Len returns how many share-partitions are loaded.
func (m *Manager) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parts)
}
