package broker

// Client telemetry (KIP-714): the state behind GetTelemetrySubscriptions
// (71_get_telemetry_subscriptions.go) and PushTelemetry
// (72_push_telemetry.go), modelled on Kafka's ClientMetricsManager.
//
// Each client instance (a 16-byte id the broker hands out on the client's
// first GetTelemetrySubscriptions) has a subscription: the metrics the
// broker wants, how often it wants them (push interval), and a
// subscription id. As in Kafka, the instance is matched against the
// client metrics subscriptions (CLIENT_METRICS config resources set with
// kafka-client-metrics.sh, telemetry_subscriptions.go) on the client id,
// software name and version, source address and port of the request that
// made the node create it: it gets the union of the matching
// subscriptions' metrics and the shortest of their intervals, or no
// metrics and Kafka's default push interval of five minutes when none
// matches. Every client also gets the compression types zstd, lz4, gzip
// and snappy, telemetry.max.bytes and delta temporality. The subscription
// id is Kafka's function of the subscription and the client instance id
// (CRC32C of the metric set and interval, XOR the id's Java hash code), so
// a client that pushes to another node, or after this node forgot it, is
// recognised as Kafka recognises it. When the subscriptions change, an
// instance is made anew at its next request, as Kafka remakes it: a push
// with the old subscription id is UNKNOWN_SUBSCRIPTION_ID and the client
// asks for its new subscription.
//
// A client asked for no metrics pushes none: franz-go and the Java client
// ask again after the push interval. A PushTelemetry is validated as Kafka
// validates it (INVALID_REQUEST for a reserved client instance id or after
// a terminating push, THROTTLING_QUOTA_EXCEEDED before the push interval,
// UNKNOWN_SUBSCRIPTION_ID, UNSUPPORTED_COMPRESSION_TYPE, TELEMETRY_TOO_LARGE
// above telemetry.max.bytes); its metrics are then decompressed and decoded
// (OTLP, telemetry_receive.go) and handed to the node's metrics endpoint
// (metrics.ClientTelemetry), the receiver a Kafka broker would pass them
// to; a payload that does not decompress or decode is INVALID_RECORD, as
// Kafka answers a receiver's failure. Without metrics.listener, accepted
// metrics are dropped.
//
// Where sluice differs from Kafka: Kafka lists GetTelemetrySubscriptions
// and PushTelemetry in ApiVersions only when a telemetry receiver or
// exporter is configured (a metrics reporter implementing ClientTelemetry
// or ClientTelemetryExporterProvider), so a default Kafka broker does not
// list them and clients skip telemetry. sluice always lists them: its
// receiver is built in (the metrics endpoint when metrics.listener is set;
// without it pushed metrics are accepted and dropped), and a client gets
// its client instance id (KafkaProducer.clientInstanceId and the like) as
// from a Kafka broker with a receiver.
// compat/api_versions_known_diff.txt records the difference.
//
// The state is per node and in memory, as in Kafka: at most
// telemetryMaxInstances client instances, each forgotten when it has sent
// nothing for max(60 s, three push intervals), the least recently seen
// first when the table is full. Kafka also forgets an instance when its
// connection closes; sluice lets it expire. A forgotten instance's series
// leave the metrics endpoint with it (and at the latest when its expiry
// has passed since its last push). One mutex guards the table;
// telemetry requests come once per push interval per client, and the
// mutex is held only to look up and update one entry.

import (
	"container/list"
	"crypto/rand"
	"hash/crc32"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/metrics"
	"github.com/sluicedev/sluice/protocol"
)

// registerTelemetryHandlers registers KIP-714's client telemetry APIs,
// GetTelemetrySubscriptions (71) and PushTelemetry (72), each at v0, the
// only version Kafka 4.4 has.
func (b *Broker) registerTelemetryHandlers(r quotaRouter) {
	t := newClientTelemetry(b.cfg.TelemetryMaxBytes, time.Now)
	t.subscriptions = func() map[string]map[string]string {
		if img := b.metadata(); img != nil {
			return img.ClientMetricsConfigs
		}
		return nil
	}
	if b.metrics != nil {
		t.receiver = metrics.NewClientTelemetry(time.Now)
		b.metrics.reg.MustRegister(t.receiver)
	}
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
	// subscriptions returns the client metrics subscriptions of the
	// node's metadata image; nil for none.
	subscriptions func() map[string]map[string]string
	// receiver is the metrics endpoint's store of pushed metrics; nil
	// without metrics.listener.
	receiver *metrics.ClientTelemetry

	mu sync.Mutex
	// instances maps a client instance id to its element in lru, whose
	// Value is a *telemetryInstance; lru's front is the least recently
	// seen.
	instances map[[16]byte]*list.Element
	lru       *list.List
	// subsSeen is the subscriptions' configs as last read, subs their
	// parsed form, subsVersion counts their changes.
	subsSeen    map[string]map[string]string
	subs        []telemetrySubscription
	subsVersion uint64
}

// telemetryInstance is what a node remembers of one client instance.
type telemetryInstance struct {
	id             [16]byte
	meta           telemetryClientMeta
	subsVersion    uint64
	metrics        []string // the requested metrics
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

// refreshSubscriptionsLocked rereads the subscriptions, and counts a
// change when they differ from the last read. Lock should be held.
func (t *clientTelemetry) refreshSubscriptionsLocked() {
	var cur map[string]map[string]string
	if t.subscriptions != nil {
		cur = t.subscriptions()
	}
	if maps.EqualFunc(cur, t.subsSeen, maps.Equal) {
		return
	}
	t.subsSeen, t.subs = cur, parseSubscriptions(cur)
	t.subsVersion++
}

// instanceLocked returns the client instance id's state, made from meta
// (with the subscriptions it matches) if the node does not know it or the
// subscriptions changed since it was made, and marks it seen at now. It
// first forgets the instances that have expired and, when the table is
// full and id is new, the least recently seen one. Lock should be held.
func (t *clientTelemetry) instanceLocked(id [16]byte, now time.Time, meta telemetryClientMeta) *telemetryInstance {
	t.refreshSubscriptionsLocked()
	for e := t.lru.Front(); e != nil; e = t.lru.Front() {
		in := e.Value.(*telemetryInstance)
		if now.Sub(in.lastSeen) < in.expiry() {
			break
		}
		t.forgetLocked(e)
	}
	if e, ok := t.instances[id]; ok {
		in := e.Value.(*telemetryInstance)
		if in.subsVersion != t.subsVersion {
			// Kafka remakes the instance from its first request's
			// metadata: the old one's times and error go with it.
			*in = t.newInstanceLocked(id, in.meta)
		}
		in.lastSeen = now
		t.lru.MoveToBack(e)
		return in
	}
	if t.lru.Len() >= telemetryMaxInstances {
		t.forgetLocked(t.lru.Front())
	}
	in := t.newInstanceLocked(id, meta)
	in.lastSeen = now
	t.instances[id] = t.lru.PushBack(&in)
	return &in
}

// newInstanceLocked is a new instance of id with meta and the
// subscription the current subscriptions give it. Lock should be held.
func (t *clientTelemetry) newInstanceLocked(id [16]byte, meta telemetryClientMeta) telemetryInstance {
	requested, interval := subscriptionFor(t.subs, &meta, id)
	return telemetryInstance{
		id:             id,
		meta:           meta,
		subsVersion:    t.subsVersion,
		metrics:        requested,
		pushIntervalMs: interval,
		subscriptionID: telemetrySubscriptionID(requested, interval, id),
	}
}

// telemetryMeta is what a request says of its client for matching:
// Kafka's ClientMetricsInstanceMetadata of the request's context.
func telemetryMeta(r *protocol.Request) telemetryClientMeta {
	var m telemetryClientMeta
	if r == nil {
		return m
	}
	if r.Header.ClientID != nil {
		m.clientID = *r.Header.ClientID
	}
	if r.Conn != nil {
		m.softwareName, m.softwareVersion = r.Conn.ClientSoftware()
	}
	if m.softwareName == "" {
		// Kafka's ClientInformation of a connection without an
		// ApiVersions v3+.
		m.softwareName, m.softwareVersion = "unknown", "unknown"
	}
	if r.Conn != nil {
		if a, ok := r.Conn.Remote.(*net.TCPAddr); ok {
			m.sourceAddress, m.sourcePort = a.IP.String(), strconv.Itoa(a.Port)
		} else if r.Conn.Remote != nil {
			if host, port, err := net.SplitHostPort(r.Conn.Remote.String()); err == nil {
				m.sourceAddress, m.sourcePort = host, port
			}
		}
	}
	return m
}

// forgetLocked removes e's instance. Lock should be held.
func (t *clientTelemetry) forgetLocked(e *list.Element) {
	t.lru.Remove(e)
	id := e.Value.(*telemetryInstance).id
	delete(t.instances, id)
	if t.receiver != nil {
		t.receiver.Forget(uuidString(id))
	}
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
// inputs, it is the same on every node. sluice prints the metrics sorted
// (subscriptionFor); Kafka prints its HashSet in hash order, so for two
// or more metrics the number differs from a Kafka broker's, which no
// client can tell: it only compares the id with what it was handed.
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
func (t *clientTelemetry) subscribe(asked [16]byte, meta telemetryClientMeta) (telemetryInstance, *kerr.Error) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	id := asked
	if id == ([16]byte{}) {
		id = t.newClientInstanceIDLocked()
	}
	in := t.instanceLocked(id, now, meta)
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
// outcome. It returns the instance as it is after the push; the caller
// hands the metrics of an accepted push to the receiver.
func (t *clientTelemetry) push(id [16]byte, meta telemetryClientMeta, subscriptionID int32, terminating bool, compression int8, metricsLen int) (telemetryInstance, *kerr.Error) {
	if reservedUUID(id) {
		return telemetryInstance{}, kerr.InvalidRequest
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	in := t.instanceLocked(id, now, meta)
	err := in.validatePush(now, subscriptionID, terminating, compression, metricsLen, t.maxBytes)
	in.terminating, in.lastError = terminating, err
	return *in, err
}

// failedExport records that an accepted push's metrics could not be
// decoded: the instance's last error is INVALID_RECORD, as in Kafka.
func (t *clientTelemetry) failedExport(id [16]byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.instances[id]; ok {
		e.Value.(*telemetryInstance).lastError = kerr.InvalidRecord
	}
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
