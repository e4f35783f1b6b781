package broker

// controller_mutation_rate (KIP-599, issue 18): CreateTopics,
// CreatePartitions and DeleteTopics are charged the partitions they create
// or delete, against the quota resolved for the client's user and client id
// (quotas.MutationRates holds the buckets and the strict and permissive
// rules).
//
// Where it is counted. As in KRaft, where brokers forward these requests to
// the active controller and ControllerApis charges them there, the buckets
// that count are the active controller's: a client sending to any broker
// is counted once, in one place. The handler on the client's broker builds
// the request's account (mutationQuota: user, client id, strict or
// permissive by version) and hands it down in the context; the decision
// (decideCreateTopics, decideDeleteTopics, decideCreatePartitions) charges
// it on the node that decides. A forwarded request carries the account in a
// tagged field of the request (mutationQuotaTag) and the controller broker
// answers the throttle time in a tagged field of the response
// (mutationThrottleTag), not in throttle_time_ms: the channel between
// brokers is never throttled, and franz-go would delay every later
// forwarded request behind a throttle time it saw there. The client's
// broker puts the throttle time into the client's response; the protocol
// server then mutes the client's connection for it (KIP-219).
//
// What is charged. Each topic is charged when the controller would accept
// it: a validate-only pass runs the controller's checks first, so a topic
// refused for any other reason (it exists, a bad replication factor, an
// unknown topic) gets that error and costs nothing, as in Kafka, where the
// quota is applied after a topic's validation. CreateTopics is charged its
// partition count, CreatePartitions the partitions it adds, DeleteTopics
// the partitions of the topic deleted. validateOnly requests are charged
// and refused as the real ones are: KRaft's controller applies the quota
// in the same code path whether or not the records are then written.
//
// Strict versions (CreateTopics v6+, CreatePartitions v3+, DeleteTopics
// v5+) answer THROTTLING_QUOTA_EXCEEDED for the topics that arrive while
// the client's bucket is in debt — the rest of a request, once a topic took
// it below zero — with the time the debt takes to repay as the response's
// throttle_time_ms; a request that fits has throttle time 0 even when its
// last topic went into debt. Older versions are permissive: everything is
// done, and the throttle time is that of the debt left.
//
// Topics created by the broker itself (auto-creation on Metadata and
// Produce, the internal topics) carry no account and are never charged.

import (
	"context"
	"encoding/binary"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
)

const (
	// mutationQuotaTag is the top-level tagged field of a CreateTopics,
	// CreatePartitions or DeleteTopics request forwarded to the
	// controller broker that carries the client's account: one byte (1:
	// strict), the user's length as a uvarint, the user, then the client
	// id. Numbered like appliedIndexTag, far above Kafka's own tags.
	mutationQuotaTag = 0x51CF
	// mutationThrottleTag is the top-level tagged field of the answer
	// that carries the throttle time, 4 big-endian bytes of milliseconds.
	mutationThrottleTag = 0x51D0

	// The first strict versions of the mutating APIs (KIP-599).
	createTopicsStrictVersion     = 6
	createPartitionsStrictVersion = 3
	deleteTopicsStrictVersion     = 5
)

// mutationBuckets are the broker's controller_mutation_rate buckets, their
// burst controller.quota.window.num × controller.quota.window.size.seconds
// of the quota.
func (b *Broker) mutationBuckets() *quotas.MutationRates { return b.mutationRates }

// mutationQuota is one request's account with controller_mutation_rate.
type mutationQuota struct {
	user, clientID string
	strict         bool

	mu   sync.Mutex
	wait time.Duration // the throttle time to answer with
}

func (q *mutationQuota) noteWait(d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.wait = max(q.wait, d)
}

func (q *mutationQuota) throttleMillis() int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int32(min(q.wait.Milliseconds(), 1<<31-1))
}

type mutationQuotaKey struct{}

func withMutationQuota(ctx context.Context, q *mutationQuota) context.Context {
	if q == nil {
		return ctx
	}
	return context.WithValue(ctx, mutationQuotaKey{}, q)
}

func mutationQuotaOf(ctx context.Context) *mutationQuota {
	q, _ := ctx.Value(mutationQuotaKey{}).(*mutationQuota)
	return q
}

// requestUser is the quota user of the connection r came on: its
// principal's name, as Kafka's quota managers take it
// (KafkaPrincipal.getName): the SASL user, the name a client certificate
// maps to, or ANONYMOUS for a connection that did not authenticate.
func requestUser(r *protocol.Request) string {
	if r == nil || r.Conn == nil {
		return protocol.Anonymous.Name
	}
	return r.Conn.Principal().Name
}

// startMutationQuota opens r's account and returns the context that
// carries it: from the client's connection, or for a request forwarded by
// a peer from its tagged field (none there: the peer's own topics, not
// charged).
func startMutationQuota(ctx context.Context, r *protocol.Request, tags *kmsg.Tags, strictSince int16) (context.Context, *mutationQuota) {
	var q *mutationQuota
	if fromPeer(ctx) {
		q = decodeMutationQuota(tags)
	} else {
		q = &mutationQuota{user: requestUser(r), strict: r.Header.APIVersion >= strictSince}
		if r.Header.ClientID != nil {
			q.clientID = *r.Header.ClientID
		}
	}
	return withMutationQuota(ctx, q), q
}

// finishMutationQuota puts q's throttle time into resp: throttle_time_ms
// for a client, the tagged field for a peer.
func finishMutationQuota(ctx context.Context, q *mutationQuota, resp interface {
	kmsg.Response
	SetThrottle(int32)
}) {
	if q == nil {
		return
	}
	ms := q.throttleMillis()
	if ms <= 0 {
		return
	}
	if !fromPeer(ctx) {
		resp.SetThrottle(ms)
		return
	}
	if tags := unknownTags(resp); tags != nil && resp.IsFlexible() {
		tags.Set(mutationThrottleTag, binary.BigEndian.AppendUint32(nil, uint32(ms)))
	}
}

func encodeMutationQuota(q *mutationQuota) []byte {
	strict := byte(0)
	if q.strict {
		strict = 1
	}
	v := []byte{strict}
	v = binary.AppendUvarint(v, uint64(len(q.user)))
	v = append(v, q.user...)
	return append(v, q.clientID...)
}

func decodeMutationQuota(tags *kmsg.Tags) *mutationQuota {
	var q *mutationQuota
	tags.Each(func(key uint32, val []byte) {
		if key != mutationQuotaTag || len(val) < 1 || val[0] > 1 {
			return
		}
		n, k := binary.Uvarint(val[1:])
		if k <= 0 || n > uint64(len(val)-1-k) {
			return
		}
		rest := val[1+k:]
		q = &mutationQuota{strict: val[0] == 1, user: string(rest[:n]), clientID: string(rest[n:])}
	})
	return q
}

// forwardMutationQuota adds the account of ctx, if any, to a request
// forwarded to the controller broker.
func forwardMutationQuota(ctx context.Context, tags *kmsg.Tags) {
	if q := mutationQuotaOf(ctx); q != nil {
		tags.Set(mutationQuotaTag, encodeMutationQuota(q))
	}
}

// forwardedMutationThrottle takes the throttle time the controller broker
// answered into the account of ctx.
func forwardedMutationThrottle(ctx context.Context, resp kmsg.Response) {
	q := mutationQuotaOf(ctx)
	tags := unknownTags(resp)
	if q == nil || tags == nil {
		return
	}
	tags.Each(func(key uint32, val []byte) {
		if key == mutationThrottleTag && len(val) == 4 {
			q.noteWait(time.Duration(binary.BigEndian.Uint32(val)) * time.Millisecond)
		}
	})
}

// mutationCharge is what a decision charges: the account and the quota it
// is held to. ok is false when ctx carries no account or no quota applies.
type mutationCharge struct {
	b     *Broker
	q     *mutationQuota
	limit quotas.Resolved
}

func (b *Broker) mutationChargeOf(ctx context.Context) (mutationCharge, bool) {
	q := mutationQuotaOf(ctx)
	if q == nil {
		return mutationCharge{}, false
	}
	limit, ok := b.clientQuotas().Resolve(q.user, q.clientID, quotas.ControllerMutationRate)
	if !ok {
		return mutationCharge{}, false
	}
	return mutationCharge{b: b, q: q, limit: limit}, true
}

// take charges partitions; false means the topic is refused with
// THROTTLING_QUOTA_EXCEEDED.
func (c mutationCharge) take(partitions int) bool {
	now := c.b.now()
	if !c.q.strict {
		c.q.noteWait(c.b.mutationBuckets().TakePermissive(c.limit, partitions, now))
		return true
	}
	wait, ok := c.b.mutationBuckets().TakeStrict(c.limit, partitions, now)
	if !ok {
		c.q.noteWait(wait)
	}
	return ok
}

// decideCreateTopics is the local controller's CreateTopics, charged to
// the account of ctx.
func (b *Broker) decideCreateTopics(ctx context.Context, topics []controller.CreateTopic, validateOnly bool) []controller.CreateTopicResult {
	charge, ok := b.mutationChargeOf(ctx)
	if !ok {
		return b.ctrl.CreateTopics(ctx, topics, validateOnly)
	}
	results := b.ctrl.CreateTopics(ctx, topics, true)
	var admitted []controller.CreateTopic
	var at []int // indexes of admitted in results
	for i, res := range results {
		if res.Err != nil {
			continue
		}
		if !charge.take(int(res.NumPartitions)) {
			results[i] = controller.CreateTopicResult{Name: res.Name, NumPartitions: -1, ReplicationFactor: -1, Err: kerr.ThrottlingQuotaExceeded}
			continue
		}
		admitted = append(admitted, topics[i])
		at = append(at, i)
	}
	if validateOnly || len(admitted) == 0 {
		return results
	}
	for k, res := range b.ctrl.CreateTopics(ctx, admitted, false) {
		results[at[k]] = res
	}
	return results
}

// decideCreatePartitions is the local controller's CreatePartitions,
// charged to the account of ctx with the partitions each topic gains.
func (b *Broker) decideCreatePartitions(ctx context.Context, reqs []controller.CreatePartitions, validateOnly bool) []controller.CreatePartitionsResult {
	charge, ok := b.mutationChargeOf(ctx)
	if !ok {
		return b.ctrl.CreatePartitions(ctx, reqs, validateOnly)
	}
	results := b.ctrl.CreatePartitions(ctx, reqs, true)
	img := b.ctrl.Image()
	var admitted []controller.CreatePartitions
	var at []int
	for i, res := range results {
		if res.Err != nil {
			continue
		}
		added := int(reqs[i].Count)
		if t := img.Topics[reqs[i].Topic]; t != nil {
			added -= len(t.Partitions)
		}
		if !charge.take(max(added, 0)) {
			results[i].Err = kerr.ThrottlingQuotaExceeded
			continue
		}
		admitted = append(admitted, reqs[i])
		at = append(at, i)
	}
	if validateOnly || len(admitted) == 0 {
		return results
	}
	for k, res := range b.ctrl.CreatePartitions(ctx, admitted, false) {
		results[at[k]] = res
	}
	return results
}

// decideDeleteTopics is the local controller's DeleteTopics, charged to
// the account of ctx with the partitions of each topic deleted. Results
// come names first, then ids, in request order, as the controller's.
func (b *Broker) decideDeleteTopics(ctx context.Context, names []string, ids [][16]byte) []controller.DeleteTopicResult {
	charge, ok := b.mutationChargeOf(ctx)
	// DeleteTopics has no validate-only form to learn NOT_CONTROLLER
	// from before charging: a node that is not the active controller
	// charges nothing and lets its controller answer.
	if !ok || b.ctrl.ActiveControllerID() != b.cfg.NodeID {
		return b.ctrl.DeleteTopics(ctx, names, ids)
	}
	// A topic the image does not hold goes to the controller uncharged,
	// for its error.
	img := b.ctrl.Image()
	results := make([]controller.DeleteTopicResult, 0, len(names)+len(ids))
	var admittedNames []string
	var admittedIDs [][16]byte
	var at []int
	for _, n := range names {
		t := img.Topics[n]
		if t != nil && !charge.take(len(t.Partitions)) {
			results = append(results, controller.DeleteTopicResult{Name: n, TopicID: t.ID, Err: kerr.ThrottlingQuotaExceeded})
			continue
		}
		at = append(at, len(results))
		results = append(results, controller.DeleteTopicResult{Name: n})
		admittedNames = append(admittedNames, n)
	}
	for _, id := range ids {
		t := img.TopicsByID[id]
		if t != nil && !charge.take(len(t.Partitions)) {
			results = append(results, controller.DeleteTopicResult{Name: t.Name, TopicID: id, Err: kerr.ThrottlingQuotaExceeded})
			continue
		}
		at = append(at, len(results))
		results = append(results, controller.DeleteTopicResult{TopicID: id})
		admittedIDs = append(admittedIDs, id)
	}
	if len(at) == 0 {
		return results
	}
	for k, res := range b.ctrl.DeleteTopics(ctx, admittedNames, admittedIDs) {
		results[at[k]] = res
	}
	return results
}
