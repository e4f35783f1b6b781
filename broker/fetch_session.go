package broker

// Incremental fetch sessions (KIP-227): the session cache a Fetch
// (01_fetch.go) opens, finds and closes sessions in.
//
// A session remembers, per partition a client fetches, the request's
// parameters (fetch offset, epochs, max bytes) and what the client was last
// told (high watermark, last stable offset, log start offset), so that an
// incremental request names only the partitions whose parameters changed and
// its answer carries only the partitions with something new: records, a
// moved high watermark, last stable or log start offset, an error, or a
// diverging epoch. A follower with thousands of idle partitions then sends
// and receives nearly empty Fetches.
//
// Sessions are keyed by id alone, as in Kafka: one is not tied to the
// connection that opened it (a client reconnecting keeps its session), and
// ends when the client closes it (a full fetch naming it), when an
// incremental request forgets its last partition, or by eviction.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. When it is full, a new session may take the place of one
// existing session, chosen as Kafka's FetchSessionCache chooses:
//   - the least recently used session, if it has been idle longer than
//     fetchSessionEvictAfter (Kafka's 120 s);
//   - otherwise the least valuable evictable session, valued by
//     (privileged, partitions, id) — a follower's session is privileged —
//     if it is worth less than the new one: a follower's session may evict
//     any client session, and any session may evict one with fewer
//     partitions that was created more than fetchSessionEvictAfter ago (a
//     follower's session only then). Kafka re-files a session among the
//     evictable ones when it is used; sluice looks at creation times when it
//     evicts, which is the same rule without the delay until the next use.
//
// If nothing may be evicted, the full fetch is answered without a session
// (SessionID 0) and the client keeps sending full fetches.
//
// Lock order: fetchSession.mu, then fetchSessionCache.mu. A request holds
// its session's mu from the epoch check until its answer is settled (so two
// requests of one session never interleave; the second then finds the
// epoch moved on); the cache's mu is held only for map and bookkeeping
// work and never while waiting for a session.

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSessionEvictAfter is how long a session must be idle to be evicted
// by any new one, and how old it must be to be evicted by a larger one
// (Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS).
const fetchSessionEvictAfter = 120 * time.Second

// Session epochs of the Fetch request (KIP-227): 0 opens a session with a
// full fetch; -1 is a full fetch without one (closing the session named, if
// any).
const (
	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

// nextSessionEpoch is the epoch after e, wrapping past the largest int32
// to 1 (0 only ever opens a session).
func nextSessionEpoch(e int32) int32 {
	if e < 0 {
		return sessionEpochFinal
	}
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// fetchSessionCache is the broker's session cache; its zero value is empty
// and takes its size from max.incremental.fetch.session.cache.slots on
// first use.
type fetchSessionCache struct {
	mu         sync.Mutex
	slots      int
	sessions   map[int32]*fetchSession
	partitions int   // partitions cached over all sessions, as of their last use
	evictions  int64 // sessions evicted since start
}

// fetchSession is one incremental fetch session.
type fetchSession struct {
	id         int32
	privileged bool // a follower's
	topicIDs   bool // opened at v13+: partitions are named by topic id
	created    time.Time

	// Guarded by the cache's mu.
	lastUsed time.Time
	size     int   // partitions as of the last use, counted in the cache
	epoch    int32 // the epoch the next request must carry

	// mu is held by the request using the session; it guards the rest.
	mu    sync.Mutex
	parts map[sessionKey]*sessionPartition
	// order is the order partitions are fetched in: those that last
	// returned records move to the end, as in Kafka, so a response the
	// budget fills starts with the others next time.
	order []*sessionPartition
	// plan is order as fetchOnce reads it, nil when order changed.
	plan []fetchTopic
	// waiter, for a follower's session, is registered with the
	// partitions it last read idle and stays registered for the
	// session's life (marked done when it ends): one wake-up for the
	// whole session, where a fetch would otherwise register with every
	// partition each round (fetch_wait.go).
	waiter *fetchWaiter
}

// sessionKey names a partition in a session: by topic id in a session
// opened at v13+, by name before.
type sessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// sessionPartition is one partition of a session.
type sessionPartition struct {
	key   sessionKey
	topic *kmsg.FetchRequestTopic // name and id only; shared by the topic's partitions
	req   kmsg.FetchRequestTopicPartition
	// What the client was last told; highWatermark is -1 after an error,
	// so the partition is sent again once the error clears.
	highWatermark, lastStable, logStart int64
	gone                                bool // forgotten; dropped from order on the next plan
	fetched                             bool // returned records in the answer being settled
	// idle is what a follower's session knows of a partition whose last
	// read found nothing new (the follower at the log end offset, no
	// error): nil otherwise. While the partition's gen is the one read
	// then and the follower was told what that read answered, the next
	// fetches skip it (01_fetch.go).
	idle *idleRead
	// waitingOn is the partition the session's waiter is registered
	// with for this partition, nil if none.
	waitingOn *partition
}

// idleRead is one read of a partition that found nothing new for a
// follower.
type idleRead struct {
	p                                   *partition
	gen                                 uint64
	follower                            *followerState
	highWatermark, lastStable, logStart int64
}

func (c *fetchSessionCache) initLocked(slots int) {
	if c.sessions == nil {
		c.sessions = make(map[int32]*fetchSession)
		c.slots = slots
	}
}

// get returns the session with id, or nil.
func (c *fetchSessionCache) get(slots int, id int32) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked(slots)
	return c.sessions[id]
}

// remove drops the session with id, if any.
func (c *fetchSessionCache) remove(slots int, id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked(slots)
	if s := c.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

func (c *fetchSessionCache) removeLocked(s *fetchSession) {
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
		c.partitions -= s.size
		if s.waiter != nil {
			s.waiter.done.Store(true)
		}
	}
}

// use checks that s is still cached, expects epoch and names topics as the
// request does (by id or not); it returns the request's error code, 0 if
// it may go on. The caller holds s.mu.
func (c *fetchSessionCache) use(s *fetchSession, epoch int32, topicIDs bool) int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.sessions[s.id] != s:
		return kerr.FetchSessionIDNotFound.Code
	case s.epoch != epoch:
		return kerr.InvalidFetchSessionEpoch.Code
	case s.topicIDs != topicIDs:
		return kerr.FetchSessionTopicIDError.Code
	}
	return 0
}

// touch records a use of s at now and moves its epoch on. The caller
// holds s.mu.
func (c *fetchSessionCache) touch(s *fetchSession, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.id] != s {
		return
	}
	s.lastUsed = now
	c.partitions += len(s.parts) - s.size
	s.size = len(s.parts)
	s.epoch = nextSessionEpoch(s.epoch)
}

// create adds s (its partitions filled in) to the cache if there is a free
// slot or a session it may evict, and returns its id, or 0.
func (c *fetchSessionCache) create(slots int, s *fetchSession, now time.Time) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked(slots)
	if len(c.sessions) >= c.slots && !c.evictLocked(s.privileged, len(s.parts), now) {
		return 0
	}
	for s.id == 0 || c.sessions[s.id] != nil {
		s.id = rand.Int32N(math.MaxInt32-1) + 1
	}
	s.created, s.lastUsed = now, now
	s.size = len(s.parts)
	s.epoch = 1
	c.sessions[s.id] = s
	c.partitions += s.size
	return s.id
}

// evictLocked removes one session to make room for a new one, by the rules
// in the file comment, and reports whether it did.
func (c *fetchSessionCache) evictLocked(privileged bool, size int, now time.Time) bool {
	var lru, cheapest *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		old := now.Sub(s.created) > fetchSessionEvictAfter
		evictable := old || (privileged && !s.privileged)
		if evictable && (cheapest == nil || lessValuable(s, cheapest)) {
			cheapest = s
		}
	}
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed) > fetchSessionEvictAfter {
		c.removeLocked(lru)
		c.evictions++
		return true
	}
	if cheapest == nil {
		return false
	}
	// The new session is valued (privileged, size, 0): it wins a tie on
	// privilege only with more partitions, as ids are positive.
	if privileged == cheapest.privileged && size <= cheapest.size || !privileged && cheapest.privileged {
		return false
	}
	c.removeLocked(cheapest)
	c.evictions++
	return true
}

// lessValuable orders sessions by (privileged, size, id), least first.
func lessValuable(a, b *fetchSession) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size != b.size {
		return a.size < b.size
	}
	return a.id < b.id
}

// stats returns the sessions cached and the partitions they hold.
func (c *fetchSessionCache) stats() (sessions, partitions int, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions), c.partitions, c.evictions
}

// keyOf names rp of topic rt in a session that does or does not use topic
// ids.
func keyOf(topicIDs bool, topic string, id [16]byte, partition int32) sessionKey {
	if topicIDs {
		return sessionKey{topicID: id, partition: partition}
	}
	return sessionKey{topic: topic, partition: partition}
}

// update applies an incremental request to the session: partitions named
// are added (at the end) or get the request's parameters, forgotten ones are
// removed. The caller holds s.mu.
func (s *fetchSession) update(req *kmsg.FetchRequest) {
	topics := map[sessionKey]*kmsg.FetchRequestTopic{}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := keyOf(s.topicIDs, rt.Topic, rt.TopicID, rp.Partition)
			if sp := s.parts[k]; sp != nil {
				sp.req = *rp
				sp.idle = nil
				continue
			}
			tk := k
			tk.partition = 0
			t := topics[tk]
			if t == nil {
				t = &kmsg.FetchRequestTopic{Topic: rt.Topic, TopicID: rt.TopicID}
				topics[tk] = t
			}
			sp := &sessionPartition{key: k, topic: t, req: *rp, highWatermark: -1, lastStable: -1, logStart: -1}
			s.parts[k] = sp
			s.order = append(s.order, sp)
			s.plan = nil
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			k := keyOf(s.topicIDs, ft.Topic, ft.TopicID, p)
			if sp := s.parts[k]; sp != nil {
				sp.gone = true
				delete(s.parts, k)
				s.plan = nil
			}
		}
	}
}

// fetchPlan returns the session's partitions as fetchOnce reads them:
// consecutive partitions of one topic under one topic entry. The caller
// holds s.mu.
func (s *fetchSession) fetchPlan() []fetchTopic {
	if s.plan != nil {
		return s.plan
	}
	kept := s.order[:0]
	for _, sp := range s.order {
		if !sp.gone {
			kept = append(kept, sp)
		}
	}
	clear(s.order[len(kept):])
	s.order = kept
	parts := make([]*kmsg.FetchRequestTopicPartition, len(kept))
	cached := make([]*sessionPartition, len(kept))
	var plan []fetchTopic
	start := 0
	for i, sp := range kept {
		parts[i], cached[i] = &sp.req, sp
		if i+1 == len(kept) || kept[i+1].topic != sp.topic {
			plan = append(plan, fetchTopic{topic: sp.topic, partitions: parts[start : i+1 : i+1], cached: cached[start : i+1 : i+1]})
			start = i + 1
		}
	}
	s.plan = plan
	return plan
}

// mustRespond reports whether an incremental answer carries a partition
// answered sp, with records bytes: it does when anything differs from what
// the client was last told.
func (c *sessionPartition) mustRespond(sp *kmsg.FetchResponseTopicPartition, records int) bool {
	return records > 0 || sp.ErrorCode != 0 ||
		sp.HighWatermark != c.highWatermark || sp.LastStableOffset != c.lastStable || sp.LogStartOffset != c.logStart ||
		sp.DivergingEpoch.Epoch != -1 || sp.DivergingEpoch.EndOffset != -1
}

// told records what a delivered answer told the client of the partition.
func (c *sessionPartition) told(sent *sentPartition) {
	c.highWatermark, c.lastStable, c.logStart = sent.highWatermark, sent.lastStable, sent.logStart
	if sent.failed {
		c.highWatermark = -1
	}
}

// FetchSessions reports the incremental fetch sessions this broker holds:
// how many, how many are followers', and the partitions they cache. Tests
// check through it that followers use sessions.
func (b *Broker) FetchSessions() (sessions, followers, partitions int) {
	c := &b.fetchSessions
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sessions {
		if s.privileged {
			followers++
		}
	}
	return len(c.sessions), followers, c.partitions
}
