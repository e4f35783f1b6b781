package broker

// What one Fetch request does with the session cache (fetch_session.go),
// as Kafka's FetchManager and FetchContext decide it (KIP-227), by the
// request's SessionID and SessionEpoch (v7+; older requests have no
// sessions):
//
//   - epoch 0: a full fetch; the session named, if any, is closed, and a new
//     one is opened with the partitions answered, if the cache has or can
//     make room; the answer carries its id (0 if none).
//   - epoch -1: a full fetch without a session; the session named, if any,
//     is closed.
//   - any other epoch: an incremental fetch of the session named, which must
//     be cached (else FETCH_SESSION_ID_NOT_FOUND), expect this epoch (else
//     INVALID_FETCH_SESSION_EPOCH) and name topics as the request's version
//     does, by id from v13 (else FETCH_SESSION_TOPIC_ID_ERROR); these
//     errors are top-level with no partitions and SessionID 0. The request's
//     partitions are added to the session or update its parameters, its
//     ForgottenTopics leave it, and the session's partitions are read; the
//     answer carries the session id and only the partitions with something
//     new (sessionPartition.mustRespond). A session left with no partitions
//     is closed and the request answered as a full fetch without one.
//
// The session's epoch moves on when the request is accepted. What the
// client was told is recorded only when the answer is delivered: an answer
// a client quota replaced with an empty throttled one (request_quota.go)
// opens no session and, for an incremental fetch, leaves the session's
// partitions as they were, so their changes are sent next time.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// sessionFetch is a Fetch's use of a session; nil for a fetch without one.
type sessionFetch struct {
	cache *fetchSessionCache
	slots int
	// s is the session an incremental fetch reads, its mu held until
	// release; nil for a full fetch.
	s *fetchSession
	// open is set for a full fetch at epoch 0, which opens a session.
	open                 bool
	privileged, topicIDs bool
	// sent is what the current round's answer carries.
	sent []sentPartition
	// skipped counts the idle partitions the current round skipped
	// (fetch_session_idle.go).
	skipped int
}

// sentPartition is one partition of an answer, what it told the client.
type sentPartition struct {
	topic                               *kmsg.FetchRequestTopic
	req                                 *kmsg.FetchRequestTopicPartition
	cached                              *sessionPartition // nil opening a session
	records                             int
	highWatermark, lastStable, logStart int64
	failed                              bool
}

// openFetchSession applies the request's session fields. It returns the
// session fetch (nil for a fetch without a session) or, for an incremental
// request the cache cannot serve, the top-level error code.
func (b *Broker) openFetchSession(req *kmsg.FetchRequest, replicaID int32) (*sessionFetch, int16) {
	if req.Version < 7 {
		return nil, 0
	}
	c, slots := &b.fetchSessions, int(b.cfg.MaxIncrementalFetchSessionCacheSlots)
	sf := &sessionFetch{cache: c, slots: slots, privileged: replicaID >= 0, topicIDs: req.Version >= 13}
	switch req.SessionEpoch {
	case sessionEpochInitial, sessionEpochFinal:
		if req.SessionID != 0 {
			c.remove(slots, req.SessionID)
		}
		if req.SessionEpoch == sessionEpochFinal {
			return nil, 0
		}
		sf.open = true
		return sf, 0
	}
	s := c.get(slots, req.SessionID)
	if s == nil {
		return nil, kerr.FetchSessionIDNotFound.Code
	}
	s.mu.Lock()
	if code := c.use(s, req.SessionEpoch, sf.topicIDs); code != 0 {
		s.mu.Unlock()
		return nil, code
	}
	s.update(req)
	if len(s.parts) == 0 {
		c.remove(slots, s.id)
		s.mu.Unlock()
		return nil, 0
	}
	c.touch(s, b.now())
	sf.s = s
	return sf, 0
}

// plan returns the partitions to read: the session's for an incremental
// fetch, the request's otherwise.
func (sf *sessionFetch) plan(req *kmsg.FetchRequest) []fetchTopic {
	if sf != nil && sf.s != nil {
		return sf.s.fetchPlan()
	}
	return planFetch(req)
}

// startRound forgets what an earlier round of the long poll would have
// sent.
func (sf *sessionFetch) startRound() {
	if sf != nil {
		sf.sent = sf.sent[:0]
		sf.skipped = 0
		sf.drainWait()
	}
}

// keep reports whether the answer carries partition rp of topic rt,
// answered sp with records bytes, and notes it as sent if so: every
// partition of a full fetch, those with something new of an incremental
// one (cached is the session's partition).
func (sf *sessionFetch) keep(rt *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition, cached *sessionPartition, sp *kmsg.FetchResponseTopicPartition, records int) bool {
	if sf == nil {
		return true
	}
	if cached != nil && !cached.mustRespond(sp, records) {
		return false
	}
	sf.sent = append(sf.sent, sentPartition{
		topic: rt, req: rp, cached: cached, records: records,
		highWatermark: sp.HighWatermark, lastStable: sp.LastStableOffset, logStart: sp.LogStartOffset,
		failed: sp.ErrorCode != 0,
	})
	return true
}

// incremental reports whether the answer carries only partitions with
// something new.
func (sf *sessionFetch) incremental() bool { return sf != nil && sf.s != nil }

// settle records the answer: resp, which the client gets if delivered,
// else out (a throttled empty answer). An incremental fetch's session
// learns what its client was told; a full fetch at epoch 0 opens its
// session. Either answer carries the session's id.
func (sf *sessionFetch) settle(resp *protocol.SplicedResponse, delivered bool, out kmsg.Response, now func() time.Time) {
	if sf == nil {
		return
	}
	kresp := resp.Response.(*kmsg.FetchResponse)
	if sf.s != nil {
		if !delivered {
			if t, ok := out.(*kmsg.FetchResponse); ok {
				t.SessionID = sf.s.id
			}
			return
		}
		kresp.SessionID = sf.s.id
		moved := false
		for i := range sf.sent {
			sent := &sf.sent[i]
			sent.cached.told(sent)
			if sent.records > 0 {
				sent.cached.fetched, moved = true, true
			}
		}
		if moved {
			sf.s.moveFetchedLast()
		}
		return
	}
	if !sf.open || !delivered {
		return
	}
	s := &fetchSession{privileged: sf.privileged, topicIDs: sf.topicIDs, parts: make(map[sessionKey]*sessionPartition, len(sf.sent))}
	if s.privileged {
		s.waiter = &fetchWaiter{ch: make(chan struct{}, 1)}
	}
	s.order = make([]*sessionPartition, 0, len(sf.sent))
	topics := map[*kmsg.FetchRequestTopic]*kmsg.FetchRequestTopic{}
	for i := range sf.sent {
		sent := &sf.sent[i]
		t := topics[sent.topic]
		if t == nil {
			t = &kmsg.FetchRequestTopic{Topic: sent.topic.Topic, TopicID: sent.topic.TopicID}
			topics[sent.topic] = t
		}
		k := keyOf(s.topicIDs, t.Topic, t.TopicID, sent.req.Partition)
		if s.parts[k] != nil {
			continue
		}
		sp := &sessionPartition{key: k, topic: t, req: *sent.req}
		sp.told(sent)
		s.parts[k] = sp
		s.order = append(s.order, sp)
	}
	kresp.SessionID = sf.cache.create(sf.slots, s, now())
}

// release lets the next request of the session in.
func (sf *sessionFetch) release() {
	if sf != nil && sf.s != nil {
		sf.s.mu.Unlock()
	}
}

// moveFetchedLast moves the partitions marked fetched (they returned
// records) to the end of the fetch order, keeping the order within each
// group, and clears the marks. The caller holds s.mu.
func (s *fetchSession) moveFetchedLast() {
	order := make([]*sessionPartition, 0, len(s.order))
	for _, sp := range s.order {
		if !sp.fetched && !sp.gone {
			order = append(order, sp)
		}
	}
	for _, sp := range s.order {
		if sp.fetched && !sp.gone {
			sp.fetched = false
			order = append(order, sp)
		}
	}
	s.order, s.plan = order, nil
}
