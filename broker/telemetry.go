package broker

// Client telemetry (KIP-714): the state behind GetTelemetrySubscriptions
// (71_get_telemetry_subscriptions.go) and PushTelemetry
// (72_push_telemetry.go), modelled on Kafka's ClientMetricsManager.
//
// Each client instance (a 16-byte id the broker hands out on the client's
// first GetTelemetrySubscriptions) has a subscription: the metrics the
// broker wants, how often it wants them (push interval), and a
// subscription id. Kafka matches a client against its client-metrics
// subscriptions (CLIENT_METRICS config resources, kafka-client-metrics.sh);
// sluice has none yet, so every client gets what a Kafka 4.4 broker with a
// telemetry receiver but no subscription answers: no requested metrics,
// Kafka's default push interval of five minutes, the compression types
// zstd, lz4, gzip and snappy, telemetry.max.bytes, delta temporality. The
// subscription id is Kafka's function of the subscription and the client
// instance id (CRC32C of the metric set and interval, XOR the id's Java
// hash code), so a client that pushes to another node, or after this node
// forgot it, is recognised as Kafka recognises it.
//
// A client asked for no metrics pushes none: franz-go and the Java client
// ask again after the push interval. A PushTelemetry that arrives anyway
// is validated as Kafka validates it (INVALID_REQUEST for a reserved client
// instance id or after a terminating push, THROTTLING_QUOTA_EXCEEDED before
// the push interval, UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE,
// TELEMETRY_TOO_LARGE above telemetry.max.bytes) and its metrics are
// dropped: sluice has no metrics endpoint to hand them to yet (issue 21),
// the receiver a Kafka broker would pass them to.
//
// Where sluice differs from Kafka: Kafka lists GetTelemetrySubscriptions
// and PushTelemetry in ApiVersions only when a telemetry receiver or
// exporter is configured (a metrics reporter implementing ClientTelemetry
// or ClientTelemetryExporterProvider), so a default Kafka broker does not
// list them and clients skip telemetry. sluice always lists them: its
// receiver is built in (the metrics endpoint, once it exists), and a
// client gets its client instance id (KafkaProducer.clientInstanceId and
// the like) as from a Kafka broker with a receiver.
// compat/api_versions_known_diff.txt records the difference.
//
// The state is per node and in memory, as in Kafka: at most
// telemetryMaxInstances client instances, each forgotten when it has sent
// nothing for max(60 s, three push intervals), the least recently seen
// first when the table is full. Kafka also forgets an instance when its
// connection closes; sluice lets it expire. One mutex guards the table;
// telemetry requests come once per push interval per client, and the
// mutex is held only to look up and update one entry.

import (
	"container/list"
	"crypto/rand"
	"hash/crc32"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// registerTelemetryHandlers registers KIP-714's client telemetry APIs,
// GetTelemetrySubscriptions (71) and PushTelemetry (72), each at v0, the
// only version Kafka 4.4 has.
func (b *Broker) registerTelemetryHandlers(r quotaRouter) {
	t := newClientTelemetry(b.cfg.TelemetryMaxBytes, time.Now)
	r.Register(71, 0, 0, t.handleGetTelemetrySubscriptions)
	r.Register(72, 0, 0, t.handlePushTelemetry)
}

const (
	// telemetryPushIntervalMs is Kafka's default push interval
	// (ClientMetricsConfigs.DEFAULT_INTERVAL_MS), the interval of a client
	// no subscription matches.
	telemetryPushIntervalMs = 5 * 60 * 1000
	// telemetryMaxInstances bounds the client instances a node remembers,
	// Kafka's cache size (16k active client connections per broker).
	telemetryMaxInstances = 16384
	// telemetryMinExpiry is the shortest time an idle client instance is
	// remembered, Kafka's DEFAULT_CACHE_EXPIRY_MS.
	telemetryMinExpiry = time.Minute
)

// telemetryCompressionTypes are the compression types a client may use for
// its pushes, in Kafka's order of preference: zstd, lz4, gzip, snappy.
var telemetryCompressionTypes = []int8{4, 3, 1, 2}

// clientTelemetry is one node's KIP-714 state: the client instances it has
// handed subscriptions to.
type clientTelemetry struct {
	maxBytes int32            // telemetry.max.bytes
	now      func() time.Time // injected for tests

	mu sync.Mutex
	// instances maps a client instance id to its element in lru, whose
	// Value is a *telemetryInstance; lru's front is the least recently
	// seen.
	instances map[[16]byte]*list.Element
	lru       *list.List
}

// telemetryInstance is what a node remembers of one client instance.
type telemetryInstance struct {
	id             [16]byte
	subscriptionID int32
	pushIntervalMs int32
	// lastGet and lastPush are when the last accepted request of each
	// kind arrived; zero before the first.
	lastGet, lastPush time.Time
	// terminating is set by a push with Terminating: the client is
	// closing, and any later push is INVALID_REQUEST.
	terminating bool
	// lastError is the outcome of the instance's last push (nil after a
	// GetTelemetrySubscriptions answered with a subscription).
	lastError *kerr.Error
	lastSeen  time.Time
}

func newClientTelemetry(maxBytes int32, now func() time.Time) *clientTelemetry {
	return &clientTelemetry{
		maxBytes:  maxBytes,
		now:       now,
		instances: make(map[[16]byte]*list.Element),
		lru:       list.New(),
	}
}

// instanceLocked returns the client instance id's state, made (with the
// subscription every client gets) if the node does not know it, and marks
// it seen at now. It first forgets the instances that have expired and,
// when the table is full and id is new, the least recently seen one. Lock
// should be held.
func (t *clientTelemetry) instanceLocked(id [16]byte, now time.Time) *telemetryInstance {
	for e := t.lru.Front(); e != nil; e = t.lru.Front() {
		in := e.Value.(*telemetryInstance)
		if now.Sub(in.lastSeen) < in.expiry() {
			break
		}
		t.forgetLocked(e)
	}
	if e, ok := t.instances[id]; ok {
		in := e.Value.(*telemetryInstance)
		in.lastSeen = now
		t.lru.MoveToBack(e)
		return in
	}
	if t.lru.Len() >= telemetryMaxInstances {
		t.forgetLocked(t.lru.Front())
	}
	in := &telemetryInstance{
		id:             id,
		pushIntervalMs: telemetryPushIntervalMs,
		subscriptionID: telemetrySubscriptionID(nil, telemetryPushIntervalMs, id),
		lastSeen:       now,
	}
	t.instances[id] = t.lru.PushBack(in)
	return in
}

// forgetLocked removes e's instance. Lock should be held.
func (t *clientTelemetry) forgetLocked(e *list.Element) {
	t.lru.Remove(e)
	delete(t.instances, e.Value.(*telemetryInstance).id)
}

// expiry is how long the instance is remembered after its last request:
// three push intervals, at least a minute, as in Kafka.
func (in *telemetryInstance) expiry() time.Duration {
	return max(telemetryMinExpiry, 3*time.Duration(in.pushIntervalMs)*time.Millisecond)
}

// pushInterval is the instance's push interval.
func (in *telemetryInstance) pushInterval() time.Duration {
	return time.Duration(in.pushIntervalMs) * time.Millisecond
}

// newClientInstanceID returns a random client instance id that is not
// reserved, not known to t, and whose base64 form does not start with '-',
// as Kafka's Uuid.randomUuid. Lock should be held.
func (t *clientTelemetry) newClientInstanceIDLocked() [16]byte {
	for {
		var id [16]byte
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if _, known := t.instances[id]; !known && !reservedUUID(id) && id[0]>>2 != 62 {
			return id
		}
	}
}

// reservedUUID reports whether id is one of Kafka's reserved ids
// (Uuid.RESERVED): all zeros, or the metadata topic's id (one).
func reservedUUID(id [16]byte) bool {
	for _, c := range id[:15] {
		if c != 0 {
			return false
		}
	}
	return id[15] <= 1
}

// telemetrySubscriptionID is Kafka's subscription id of a client instance:
// the CRC32C of the metric set as Java prints it ("[a, b]") followed by
// the push interval, XOR the Java hash code of the client instance id
// (ClientMetricsManager.computeSubscriptionId). Being a function of its
// inputs, it is the same on every node.
func telemetrySubscriptionID(metrics []string, pushIntervalMs int32, id [16]byte) int32 {
	s := "["
	for i, m := range metrics {
		if i > 0 {
			s += ", "
		}
		s += m
	}
	s += "]" + strconv.Itoa(int(pushIntervalMs))
	crc := crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli))
	return int32(crc) ^ javaUUIDHash(id)
}

// javaUUIDHash is org.apache.kafka.common.Uuid's hashCode: the two 64-bit
// halves XORed, then the high and low 32 bits of that XORed.
func javaUUIDHash(id [16]byte) int32 {
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(id[i])
		lo = lo<<8 | uint64(id[8+i])
	}
	h := hi ^ lo
	return int32(h>>32) ^ int32(h)
}

// subscribe answers a GetTelemetrySubscriptions for the client instance id
// asked (zero: a new client, which gets a new id): the instance and its
// subscription, or THROTTLING_QUOTA_EXCEEDED when the instance asked or
// pushed less than a push interval ago, unless its last push was refused
// for its subscription id or compression type, which the client mends by
// asking again (Kafka 4.4's validateGetRequest; such an early answer does
// not count as a request for the throttle, as in Kafka).
func (t *clientTelemetry) subscribe(asked [16]byte) (telemetryInstance, *kerr.Error) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	id := asked
	if id == ([16]byte{}) {
		id = t.newClientInstanceIDLocked()
	}
	in := t.instanceLocked(id, now)
	last := in.lastGet
	if in.lastPush.After(last) {
		last = in.lastPush
	}
	switch {
	case last.IsZero() || now.Sub(last) >= in.pushInterval():
		in.lastGet = now
	case in.lastError != kerr.UnknownSubscriptionID && in.lastError != kerr.UnsupportedCompressionType:
		return telemetryInstance{}, kerr.ThrottlingQuotaExceeded
	}
	in.lastError = nil
	return *in, nil
}

// push validates a PushTelemetry as Kafka's validatePushRequest does, in
// its order, and records its outcome and its Terminating flag whatever the
// outcome. The caller drops the metrics.
func (t *clientTelemetry) push(id [16]byte, subscriptionID int32, terminating bool, compression int8, metricsLen int) *kerr.Error {
	if reservedUUID(id) {
		return kerr.InvalidRequest
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	in := t.instanceLocked(id, now)
	err := in.validatePush(now, subscriptionID, terminating, compression, metricsLen, t.maxBytes)
	in.terminating, in.lastError = terminating, err
	return err
}

// validatePush is push's checks, in Kafka's order. Lock should be held.
func (in *telemetryInstance) validatePush(now time.Time, subscriptionID int32, terminating bool, compression int8, metricsLen int, maxBytes int32) *kerr.Error {
	if in.terminating {
		return kerr.InvalidRequest
	}
	// A push right after a GetTelemetrySubscriptions is accepted whenever
	// it comes: the client jitters its first push around the interval.
	accept := in.lastGet.After(in.lastPush) || in.lastPush.IsZero() || now.Sub(in.lastPush) >= in.pushInterval()
	if !accept && !terminating {
		return kerr.ThrottlingQuotaExceeded
	}
	if accept {
		in.lastPush = now
	}
	switch {
	case subscriptionID != in.subscriptionID:
		return kerr.UnknownSubscriptionID
	case compression < 0 || compression > 4:
		return kerr.UnsupportedCompressionType
	case metricsLen > int(maxBytes):
		return kerr.TelemetryTooLarge
	}
	return nil
}
