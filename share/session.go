package share

// Share sessions (KIP-932's share session cache, Kafka's ShareSessionCache):
// a member's ShareFetch / ShareAcknowledge requests to one broker form a
// session keyed by (group, member id). ShareSessionEpoch 0 opens one (a
// full request: the partitions it names are the session's), -1 closes it
// (acknowledgements only), anything else must equal the session's epoch,
// which the broker bumps after every request (wrapping from MaxInt32 to 1);
// the partitions of an incremental ShareFetch are added to the session and
// ForgottenTopicsData removed from it.
//
// The cache holds at most group.share.max.share.sessions sessions (Kafka's
// default 2000); opening one more is SHARE_SESSION_LIMIT_REACHED. A session
// belongs to the connection that opened it: when that connection closes,
// the session goes and the member's acquired records are released, as
// Kafka's connection-disconnect listener does.

import (
	"errors"
	"math"
	"sync"
)

// Session errors, mapped to Kafka's codes by the broker.
var (
	ErrSessionNotFound     = errors.New("share: share session not found")     // SHARE_SESSION_NOT_FOUND
	ErrInvalidSessionEpoch = errors.New("share: invalid share session epoch") // INVALID_SHARE_SESSION_EPOCH
	ErrSessionLimit        = errors.New("share: share session limit reached") // SHARE_SESSION_LIMIT_REACHED
)

// DefaultMaxSessions is Kafka's group.share.max.share.sessions default.
const DefaultMaxSessions = 2000

// SessionKey names a share session.
type SessionKey struct{ Group, Member string }

// TopicPartition is a topic partition by topic id.
type TopicPartition struct {
	TopicID   [16]byte
	Partition int32
}

// Session is one share session. Its fields are read under the cache's
// lock; callers get copies (SessionView).
type Session struct {
	key        SessionKey
	epoch      int32 // the epoch the next request must carry
	partitions []TopicPartition
	index      map[TopicPartition]struct{}
	connID     uint64
	detach     func() bool // stops the connection-close callback
}

// SessionView is a copy of a session's state after a request.
type SessionView struct {
	Key SessionKey
	// Epoch is the epoch the session's next request must carry.
	Epoch int32
	// Partitions are the session's partitions, in the order they joined.
	Partitions []TopicPartition
	ConnID     uint64
}

func (s *Session) view() SessionView {
	return SessionView{Key: s.key, Epoch: s.epoch, Partitions: append([]TopicPartition(nil), s.partitions...), ConnID: s.connID}
}

func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// SessionCache holds the share sessions of one broker.
type SessionCache struct {
	mu       sync.Mutex
	max      int
	sessions map[SessionKey]*Session
}

// NewSessionCache returns a cache of at most max sessions.
func NewSessionCache(max int) *SessionCache {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &SessionCache{max: max, sessions: make(map[SessionKey]*Session)}
}

// Open starts a session (epoch 0) on connection connID with partitions,
// replacing the member's session if it had one, which it returns (its
// records are the caller's to release). attach, called with the new
// session's key under no lock, arranges for Drop(key, connID) when the
// connection closes and returns the function that cancels that.
func (c *SessionCache) Open(key SessionKey, partitions []TopicPartition, connID uint64, attach func() (detach func() bool)) (SessionView, *SessionView, error) {
	c.mu.Lock()
	old, had := c.sessions[key]
	if !had && len(c.sessions) >= c.max {
		c.mu.Unlock()
		return SessionView{}, nil, ErrSessionLimit
	}
	s := &Session{key: key, epoch: 1, connID: connID, index: make(map[TopicPartition]struct{}, len(partitions))}
	s.add(partitions)
	c.sessions[key] = s
	v := s.view()
	c.mu.Unlock()
	var replaced *SessionView
	if had {
		if old.detach != nil {
			old.detach()
		}
		ov := old.view()
		replaced = &ov
	}
	if attach != nil {
		d := attach()
		c.mu.Lock()
		if c.sessions[key] == s {
			s.detach = d
			d = nil
		}
		c.mu.Unlock()
		if d != nil {
			d()
		}
	}
	return v, replaced, nil
}

// Update checks epoch against the member's session, adds partitions,
// removes forgotten, bumps the epoch and returns the session.
func (c *SessionCache) Update(key SessionKey, epoch int32, partitions, forgotten []TopicPartition) (SessionView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[key]
	if !ok {
		return SessionView{}, ErrSessionNotFound
	}
	if s.epoch != epoch {
		return SessionView{}, ErrInvalidSessionEpoch
	}
	s.add(partitions)
	s.remove(forgotten)
	s.epoch = nextEpoch(s.epoch)
	return s.view(), nil
}

// Get returns the member's session.
func (c *SessionCache) Get(key SessionKey) (SessionView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[key]
	if !ok {
		return SessionView{}, false
	}
	return s.view(), true
}

// Close ends the member's session (epoch -1) and returns it.
func (c *SessionCache) Close(key SessionKey) (SessionView, error) {
	c.mu.Lock()
	s, ok := c.sessions[key]
	if ok {
		delete(c.sessions, key)
	}
	c.mu.Unlock()
	if !ok {
		return SessionView{}, ErrSessionNotFound
	}
	if s.detach != nil {
		s.detach()
	}
	return s.view(), nil
}

// Drop removes the member's session if it still belongs to connection
// connID (its connection closed) and returns it.
func (c *SessionCache) Drop(key SessionKey, connID uint64) (SessionView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[key]
	if !ok || s.connID != connID {
		return SessionView{}, false
	}
	delete(c.sessions, key)
	return s.view(), true
}

// Len returns how many sessions the cache holds.
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

func (s *Session) add(parts []TopicPartition) {
	for _, tp := range parts {
		if _, ok := s.index[tp]; !ok {
			s.index[tp] = struct{}{}
			s.partitions = append(s.partitions, tp)
		}
	}
}

func (s *Session) remove(parts []TopicPartition) {
	if len(parts) == 0 {
		return
	}
	gone := false
	for _, tp := range parts {
		if _, ok := s.index[tp]; ok {
			delete(s.index, tp)
			gone = true
		}
	}
	if !gone {
		return
	}
	kept := s.partitions[:0]
	for _, tp := range s.partitions {
		if _, ok := s.index[tp]; ok {
			kept = append(kept, tp)
		}
	}
	clear(s.partitions[len(kept):])
	s.partitions = kept
}
