package broker

// Enforcement of request_percentage (issue 18, KIP-124), Kafka's way
// (ClientRequestQuotaManager): a client's share of the broker's request
// handling time. The quota is a percentage of one thread's time over the
// quota window (quota.window.num samples of quota.window.size.seconds):
// request_percentage=200 is two threads' worth. What each request is
// charged is the time it spent being worked on, recorded in Kafka's unit,
// percent-seconds (nanoseconds × 100 / 1e9), against the sensor of the
// clients sharing the quota (quotas.Resolve's User and ClientID); the
// measured rate is then a percentage, and the throttle is Kafka's
// QuotaUtils throttle time, bounded, as ClientRequestQuotaManager bounds
// it, by one quota window.
//
// Time worked on, not wall time: a request parked waiting is not using a
// thread. Kafka charges the request handler's (API local) time and not the
// time in purgatory — a Fetch long poll, a Produce with acks=all waiting
// for the ISR, a JoinGroup waiting for the rebalance — nor the time a
// forwarded request spends on the controller. Here the handler's time is
// measured from its call to its return, and every wait inside it is
// bracketed by requestWait (the returned func ends it) and subtracted:
// the Fetch long poll (01_fetch.go), the acks=all and high-watermark waits
// (00_produce.go, which the group and transaction coordinators' own
// writes use too), everything on the controller (forward.go's
// onController and sendToController: a forwarded or locally decided
// change, its raft commit and the wait for its image), and the group
// rebalance waits of JoinGroup and SyncGroup. Waits that overlap (a
// handler's goroutines) count once: the clock stops while any wait is
// open.
//
// The throttle is set on the response as throttle_time_ms, the larger of
// it and a byte-rate or mutation throttle already set, as Kafka sends the
// larger; protocol/throttle.go then mutes the connection (KIP-219) or holds
// back the response of an older version. A Produce with acks=0 has no
// response: Request.ThrottleMillis mutes the connection. A consumer's
// Fetch over either quota, request_percentage or consumer_byte_rate, is
// answered empty with the larger throttle and its bytes are not charged,
// as Kafka's handleFetchRequest answers it (answerFetch): its time is
// recorded just before the answer is chosen, so the answer's own encoding
// is left to the network time.
//
// Exempt, as Kafka's clusterActions are: a follower's Fetch (replica id
// >= 0) and WriteTxnMarkers, sent by transaction coordinators. Their time
// is recorded on the exempt sensor (Kafka's exempt-request-time) and never
// throttled. The inter-broker APIs and forwarded changes arrive on the
// controller listener, whose handlers are not wrapped at all. ApiVersions,
// answered by the router itself, is not measured (Kafka throttles it).
// Kafka also records its network threads' time on a request (receiving
// it and sending the answer) without throttling for it: it counts towards
// the next request's throttle. Here that is the router's time on the
// request besides the handler, decoding it and encoding the answer
// (protocol.Request.NetworkTime); the socket reads and writes are not
// measured.

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
)

// exemptRequestTime is the sensor key of exempt requests' time, Kafka's
// exempt-request-time.
const exemptRequestTime = "exempt-request-time"

// requestClock measures one request's handler time without its waits.
type requestClock struct {
	mu        sync.Mutex
	open      int // waits in progress
	waitStart time.Time
	waited    time.Duration

	// recorded: the handler recorded the request's time itself
	// (answerFetch), throttleMs is what that gave; the wrapper records
	// nothing more.
	recorded   bool
	throttleMs int32
	start      time.Time // when the handler was called
}

func (c *requestClock) beginWait() {
	c.mu.Lock()
	if c.open == 0 {
		c.waitStart = time.Now()
	}
	c.open++
	c.mu.Unlock()
}

func (c *requestClock) endWait() {
	c.mu.Lock()
	if c.open--; c.open == 0 {
		c.waited += time.Since(c.waitStart)
	}
	c.mu.Unlock()
}

// waitedSoFar is the time spent in waits, those still open included.
func (c *requestClock) waitedSoFar() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open > 0 {
		return c.waited + time.Since(c.waitStart)
	}
	return c.waited
}

// busy is the time since start less the waits, those still open
// included.
func (c *requestClock) busy(start time.Time) time.Duration {
	now := time.Now()
	c.mu.Lock()
	waited := c.waited
	if c.open > 0 {
		waited += now.Sub(c.waitStart)
	}
	c.mu.Unlock()
	return max(0, now.Sub(start)-waited)
}

type requestClockKey struct{}

// requestWait marks the start of a wait in ctx's request: the time until
// the returned func is called is not the request's handler time.
// Outside a measured request it does nothing.
func requestWait(ctx context.Context) (end func()) {
	c, _ := ctx.Value(requestClockKey{}).(*requestClock)
	if c == nil {
		return func() {}
	}
	c.beginWait()
	return c.endWait
}

// quotaRouter registers handlers on the client listener's router with
// their request time measured and the request_percentage quota applied.
type quotaRouter struct {
	b *Broker
	r *protocol.Router
}

func (q quotaRouter) Register(key, minVersion, maxVersion int16, h protocol.Handler) {
	q.r.Register(key, minVersion, maxVersion, q.b.requestQuota(h))
}

func (q quotaRouter) RegisterAdvertisedFrom(key, advertisedMin, minVersion, maxVersion int16, h protocol.Handler) {
	q.r.RegisterAdvertisedFrom(key, advertisedMin, minVersion, maxVersion, q.b.requestQuota(h))
}

// requestExempt reports whether r is an inter-broker request, never
// throttled for request time.
func requestExempt(r *protocol.Request) bool {
	switch req := r.Body.(type) {
	case *kmsg.FetchRequest:
		id := req.ReplicaID
		if req.Version >= 15 {
			id = req.ReplicaState.ID
		}
		return id >= 0
	case *kmsg.WriteTxnMarkersRequest:
		return true
	}
	return false
}

// requestQuota wraps h: it measures the handler's time less its waits,
// records it, and puts the throttle time into the answer.
func (b *Broker) requestQuota(h protocol.Handler) protocol.Handler {
	return func(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
		start := time.Now()
		clock := &requestClock{start: start}
		r.NetworkTime = func(d time.Duration) { b.recordNetworkTime(r, d) }
		resp, err := h(context.WithValue(ctx, requestClockKey{}, clock), r)
		r.RemoteTime = clock.waitedSoFar() // Kafka's RemoteTime (metrics_requests.go)
		if err != nil {
			return resp, err
		}
		var ms int32
		if clock.recorded {
			ms = clock.throttleMs
		} else {
			ms = b.recordRequestTime(r, clock.busy(start))
		}
		if ms <= 0 {
			return resp, nil
		}
		if resp == nil {
			r.ThrottleMillis = max(r.ThrottleMillis, ms)
			return resp, nil
		}
		inner := resp
		if sr, ok := inner.(*protocol.SplicedResponse); ok {
			inner = sr.Response
		}
		if tr, ok := inner.(interface {
			kmsg.ThrottleResponse
			kmsg.SetThrottleResponse
		}); ok {
			if cur, _ := tr.Throttle(); ms > cur {
				tr.SetThrottle(ms)
			}
		}
		return resp, nil
	}
}

// recordNetworkTime records the time the router spent decoding r and
// encoding its answer against r's client, throttling nothing: it counts
// towards the throttle of the client's next request, as Kafka records its
// network threads' time after the response is sent.
func (b *Broker) recordNetworkTime(r *protocol.Request, d time.Duration) {
	pct := float64(d.Nanoseconds()) * 100 / float64(time.Second)
	sensors := b.clientSensors()
	if requestExempt(r) {
		sensors.Record(exemptRequestTime, quotas.Resolved{Limit: math.Inf(1)}, pct, b.now())
		return
	}
	if q, ok := b.clientQuotas().Resolve(requestUser(r), requestClientID(r), quotas.RequestPercentage); ok {
		sensors.Record(quotas.RequestPercentage, q, pct, b.now())
	}
}

// recordRequestTime records busy as r's request time and returns the
// throttle in milliseconds: 0 when exempt, without a quota, or within it.
func (b *Broker) recordRequestTime(r *protocol.Request, busy time.Duration) int32 {
	pct := float64(busy.Nanoseconds()) * 100 / float64(time.Second)
	sensors := b.clientSensors()
	if requestExempt(r) {
		sensors.Record(exemptRequestTime, quotas.Resolved{Limit: math.Inf(1)}, pct, b.now())
		return 0
	}
	q, ok := b.clientQuotas().Resolve(requestUser(r), requestClientID(r), quotas.RequestPercentage)
	if !ok {
		return 0
	}
	d := sensors.Record(quotas.RequestPercentage, q, pct, b.now())
	// ClientRequestQuotaManager bounds the throttle by one window.
	return throttleMillis(min(d, sensors.Window().Window))
}

// answerFetch is a consumer's Fetch answered as Kafka answers it under
// both its quotas: the request time so far is recorded (and not again
// when the handler returns) and, if it or consumer_byte_rate puts the
// client over its quota, the answer is empty, with the larger throttle
// time, and its bytes are not charged; else fetchQuota.answer decides.
func (b *Broker) answerFetch(ctx context.Context, r *protocol.Request, f fetchQuota, req *kmsg.FetchRequest, resp *protocol.SplicedResponse, records int) kmsg.Response {
	c, _ := ctx.Value(requestClockKey{}).(*requestClock)
	if c == nil || requestExempt(r) {
		return f.answer(req, resp, records)
	}
	ms := b.recordRequestTime(r, c.busy(c.start))
	c.recorded, c.throttleMs = true, ms
	if ms <= 0 {
		return f.answer(req, resp, records)
	}
	if f.limited {
		size := float64(fetchResponseSize(resp.Response.(*kmsg.FetchResponse), records))
		now := b.now()
		sensors := b.clientSensors()
		ms = max(ms, throttleMillis(sensors.Record(quotas.ConsumerByteRate, f.q, size, now)))
		sensors.Unrecord(quotas.ConsumerByteRate, f.q, size, now)
	}
	throttled := req.ResponseKind().(*kmsg.FetchResponse)
	throttled.ThrottleMillis = ms
	return throttled
}
