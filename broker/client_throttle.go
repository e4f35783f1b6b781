package broker

// Enforcement of the client byte-rate quotas (issue 18), Kafka's way
// (KIP-13, KIP-219): producer_byte_rate and consumer_byte_rate, resolved
// for the request's user principal and client id (quotas.ClientConfig.Resolve,
// KIP-55) and measured by one sensor per set of clients sharing the quota
// (quotas.Sensors, over quota.window.num samples of
// quota.window.size.seconds).
//
//   - Produce: the request's size (its frame, as Kafka's
//     RequestChannel.Request.sizeInBytes) is recorded whatever happens to
//     the records; they are appended anyway, and the response carries the
//     throttle time. With acks=0 there is no response: the connection is
//     muted all the same (protocol.Request.ThrottleMillis).
//   - Fetch from a consumer (replica id < 0): the answer's size is
//     recorded; a consumer over its quota gets, instead of the data, an
//     empty response (no partitions, error NONE, session 0) with the
//     throttle time, and the size is taken back, since nothing was sent.
//     A consumer's fetch is capped beforehand at what the quota window can
//     absorb (quotas.WindowConfig.MaxValueInWindow, Kafka's
//     getMaxValueInQuotaWindow), so its answers converge on the rate rather
//     than alternating floods and throttles. A follower's fetch (replica id
//     >= 0) is replication and is never client-throttled.
//
// The protocol server does the throttling itself (protocol/throttle.go):
// it mutes the connection for the throttle time after a response at a
// KIP-219 version (Produce v6+, Fetch v8+) and holds back the response of
// an older version.
//
// The user of a quota entity is the connection's principal name
// (requestUser, mutation_quota.go): the SASL user or the name a client
// certificate maps to, and "ANONYMOUS" for a connection that did not
// authenticate, Kafka's KafkaPrincipal.ANONYMOUS.

import (
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
)

// clientThrottle is the broker's client quota sensors. The zero value is
// ready: the sensors are made on first use from the broker's config.
type clientThrottle struct {
	once    sync.Once
	sensors *quotas.Sensors
}

func (b *Broker) clientSensors() *quotas.Sensors {
	t := &b.clientThrottle
	t.once.Do(func() {
		t.sensors = quotas.NewSensors(quotas.WindowConfig{
			Samples: int(b.cfg.QuotaWindowNum),
			Window:  time.Duration(b.cfg.QuotaWindowSizeSecs) * time.Second,
		})
	})
	return t.sensors
}

// requestClientID is the client id quotas see: a null one is "".
func requestClientID(r *protocol.Request) string {
	if r.Header.ClientID == nil {
		return ""
	}
	return *r.Header.ClientID
}

// throttleMillis is d as a throttle_time_ms.
func throttleMillis(d time.Duration) int32 {
	return int32(min(d.Milliseconds(), math.MaxInt32))
}

// produceThrottle records r's size against the producer_byte_rate of its
// client and returns the throttle time in milliseconds (0: within quota,
// or no quota).
func (b *Broker) produceThrottle(r *protocol.Request) int32 {
	q, ok := b.clientQuotas().Resolve(requestUser(r), requestClientID(r), quotas.ProducerByteRate)
	if !ok {
		return 0
	}
	return throttleMillis(b.clientSensors().Record(quotas.ProducerByteRate, q, float64(r.Size), b.now()))
}

// fetchQuota is the consumer_byte_rate a fetch is held to; limited is
// false for a follower's fetch and for a consumer with no quota.
type fetchQuota struct {
	b       *Broker
	q       quotas.Resolved
	limited bool
}

// consumerFetchQuota resolves the consumer_byte_rate of r's client, or
// none for a follower's fetch (replication is never client-throttled).
func (b *Broker) consumerFetchQuota(r *protocol.Request, replicaID int32) fetchQuota {
	if replicaID >= 0 {
		return fetchQuota{}
	}
	q, ok := b.clientQuotas().Resolve(requestUser(r), requestClientID(r), quotas.ConsumerByteRate)
	return fetchQuota{b: b, q: q, limited: ok}
}

// capBudget lowers a fetch's byte budget to what the quota window can
// absorb.
func (f fetchQuota) capBudget(budget int) int {
	if !f.limited {
		return budget
	}
	return max(0, min(budget, int(min(f.b.clientSensors().Window().MaxValueInWindow(f.q.Limit), math.MaxInt32))))
}

// answer records the size of resp, which carries records bytes of
// records, and returns it, or, if that put the client over its quota, an
// empty response with the throttle time instead.
func (f fetchQuota) answer(req *kmsg.FetchRequest, resp *protocol.SplicedResponse, records int) kmsg.Response {
	if !f.limited {
		return resp
	}
	size := float64(fetchResponseSize(resp.Response.(*kmsg.FetchResponse), records))
	now := f.b.now()
	sensors := f.b.clientSensors()
	d := sensors.Record(quotas.ConsumerByteRate, f.q, size, now)
	if d <= 0 {
		return resp
	}
	sensors.Unrecord(quotas.ConsumerByteRate, f.q, size, now)
	throttled := req.ResponseKind().(*kmsg.FetchResponse)
	throttled.ThrottleMillis = throttleMillis(d)
	return throttled
}

// fetchResponseSize is about the encoded size of a fetch response
// holding records bytes of records: its fixed fields per topic and
// partition, as Kafka's FetchResponse.sizeOf counts them, plus the
// records.
func fetchResponseSize(resp *kmsg.FetchResponse, records int) int {
	n := 4 + 4 + 2 + 4 + 4 // correlation id, throttle, error, session, topic count
	for i := range resp.Topics {
		t := &resp.Topics[i]
		n += 2 + len(t.Topic) + 16 + 4
		for j := range t.Partitions {
			n += 4 + 2 + 8 + 8 + 8 + 4 + 16*len(t.Partitions[j].AbortedTransactions) + 4 + 4
		}
	}
	return n + records
}
