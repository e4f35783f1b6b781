package quotas

import (
	"math"
	"sync"
	"time"
)

// This file holds controller_mutation_rate (KIP-599): the partitions a
// client may create or delete per second through CreateTopics,
// CreatePartitions and DeleteTopics.
//
// As in Kafka's ControllerMutationQuotaManager each client has a token
// bucket: it refills at the quota (partitions per second) and holds at most
// a burst of quota × controller.quota.window.num ×
// controller.quota.window.size.seconds tokens, full when first used.
// Mutations are charged as they are accepted and may take the bucket below
// zero; the debt, divided by the quota, is the throttle time. Two checks
// exist, chosen by the request's version:
//
//   - strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+):
//     a topic is accepted while the bucket is not in debt, and charged in
//     full even if that takes it below zero; a topic that arrives while it
//     is in debt is refused (THROTTLING_QUOTA_EXCEEDED) and not charged;
//   - permissive (older versions, whose clients know no such error): every
//     topic is accepted and charged, and the response carries the throttle
//     time of the debt it leaves.
//
// MutationRates takes the time as an argument, so tests step it.

// Kafka's defaults of controller.quota.window.num and
// controller.quota.window.size.seconds.
const (
	DefaultControllerQuotaWindowNum  = 11
	DefaultControllerQuotaWindowSize = time.Second
)

// MutationRates holds the controller_mutation_rate token buckets of one
// node, one per set of clients sharing a quota (a Resolved's User and
// ClientID). The zero value is not usable; see NewMutationRates. It is safe
// for concurrent use.
type MutationRates struct {
	mu      sync.Mutex
	window  time.Duration // the burst is window × the quota
	buckets map[mutationKey]*mutationBucket
	// pruneAt is the bucket count at which full buckets are next dropped.
	pruneAt int
}

type mutationKey struct{ user, clientID string }

type mutationBucket struct {
	tokens float64
	last   time.Time
	limit  float64 // the quota at last, which refills it while idle
}

// NewMutationRates returns buckets whose burst is windowNum × windowSize
// of the quota; windowNum < 1 or windowSize <= 0 take Kafka's defaults.
func NewMutationRates(windowNum int, windowSize time.Duration) *MutationRates {
	if windowNum < 1 {
		windowNum = DefaultControllerQuotaWindowNum
	}
	if windowSize <= 0 {
		windowSize = DefaultControllerQuotaWindowSize
	}
	return &MutationRates{
		window:  time.Duration(windowNum) * windowSize,
		buckets: make(map[mutationKey]*mutationBucket),
		pruneAt: 64,
	}
}

// bucketLocked returns q's bucket refilled to now, creating it full. Lock
// should be held.
func (m *MutationRates) bucketLocked(q Resolved, now time.Time) *mutationBucket {
	burst := q.Limit * m.window.Seconds()
	k := mutationKey{q.User, q.ClientID}
	bk := m.buckets[k]
	if bk == nil {
		m.pruneLocked(now)
		bk = &mutationBucket{tokens: burst, last: now, limit: q.Limit}
		m.buckets[k] = bk
		return bk
	}
	bk.limit = q.Limit
	if elapsed := now.Sub(bk.last); elapsed > 0 {
		bk.tokens += elapsed.Seconds() * q.Limit
		bk.last = now
	}
	// A lowered quota caps what was saved under the old one.
	bk.tokens = min(bk.tokens, burst)
	return bk
}

// pruneLocked drops the buckets that have refilled to their burst while
// idle — a new bucket would start just as full — once the map has grown
// to pruneAt, so the cost is amortised over the buckets added. Lock should
// be held.
func (m *MutationRates) pruneLocked(now time.Time) {
	if len(m.buckets) < m.pruneAt {
		return
	}
	for k, bk := range m.buckets {
		idle := now.Sub(bk.last).Seconds()
		if bk.limit > 0 && bk.tokens+idle*bk.limit >= bk.limit*m.window.Seconds() {
			delete(m.buckets, k)
		}
	}
	m.pruneAt = max(64, 2*len(m.buckets))
}

// throttle is the time a debt of tokens takes to repay at limit, rounded
// to the millisecond as Kafka rounds it.
func throttle(tokens, limit float64) time.Duration {
	if tokens >= 0 || limit <= 0 {
		return 0
	}
	return time.Duration(math.Round(-tokens/limit*1000)) * time.Millisecond
}

// TakeStrict charges partitions to q's bucket at now, unless the bucket is
// in debt: then nothing is charged, ok is false and wait is the time until
// the debt is repaid, at least a millisecond (a debt repaid in under half
// a millisecond would round to a refusal without a throttle time, which
// tells the client nothing). A quota of zero (or less) never refills: it
// admits no partition, and the wait it reports is one second, so that a
// client retrying on its own does not spin.
func (m *MutationRates) TakeStrict(q Resolved, partitions int, now time.Time) (wait time.Duration, ok bool) {
	if q.Limit <= 0 {
		if partitions == 0 {
			return 0, true
		}
		return time.Second, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	bk := m.bucketLocked(q, now)
	if bk.tokens < 0 {
		return max(throttle(bk.tokens, q.Limit), time.Millisecond), false
	}
	bk.tokens -= float64(partitions)
	return 0, true
}

// TakePermissive charges partitions to q's bucket at now and returns the
// time until the debt it leaves is repaid, zero when there is none; under
// a quota of zero (or less) the wait is one second.
func (m *MutationRates) TakePermissive(q Resolved, partitions int, now time.Time) (wait time.Duration) {
	if q.Limit <= 0 {
		if partitions == 0 {
			return 0
		}
		return time.Second
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	bk := m.bucketLocked(q, now)
	bk.tokens -= float64(partitions)
	return throttle(bk.tokens, q.Limit)
}

// Tokens reports q's bucket at now: the partitions it may still mutate
// before going into debt, negative while in debt.
func (m *MutationRates) Tokens(q Resolved, now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bucketLocked(q, now).tokens
}
