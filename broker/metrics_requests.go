package broker

// The request-path families of Kafka's RequestMetrics, SocketServer and
// BrokerTopicMetrics that metrics.go's counters do not cover (the metrics
// package's doc gives the naming convention, and says why a latency is
// exposed both as quantile gauges and as _bucket counters):
//
//   - per request name (requestName: Kafka's, with Fetch split into
//     FetchConsumer and FetchFollower): the seven phase times of Kafka's
//     RequestMetrics (TotalTimeMs, RequestQueueTimeMs, LocalTimeMs,
//     RemoteTimeMs, ThrottleTimeMs, ResponseQueueTimeMs,
//     ResponseSendTimeMs), from protocol.Router.Observe's RequestTimes;
//   - per request name and error code: ErrorsPerSec, every error code an
//     answer carries (errorCounts), NONE included, as Kafka counts them;
//   - per listener: open connections and the connections opened and
//     closed, Kafka's socket-server-metrics; the request memory in use
//     (Kafka's MemoryPoolUsed).
//
// The request path costs a few time.Now calls and atomic adds: a request
// name's requestStats are found in a fixed array by api key, built once;
// an observation is a bucket add and a sum add per phase; the
// error codes of an answer are added to an array indexed by code. Nothing
// here runs while metrics.listener is empty (Router.Observe stays nil).

import (
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// The phases of RequestMetrics, in the order of phaseNames.
const (
	phaseTotal = iota
	phaseRequestQueue
	phaseLocal
	phaseRemote
	phaseThrottle
	phaseResponseQueue
	phaseResponseSend
	numPhases
)

// phaseNames are the families' names (Kafka's histogram names, lower
// case as the JMX exporter's rules give them).
var phaseNames = [numPhases]string{
	"kafka_network_requestmetrics_totaltimems",
	"kafka_network_requestmetrics_requestqueuetimems",
	"kafka_network_requestmetrics_localtimems",
	"kafka_network_requestmetrics_remotetimems",
	"kafka_network_requestmetrics_throttletimems",
	"kafka_network_requestmetrics_responsequeuetimems",
	"kafka_network_requestmetrics_responsesendtimems",
}

var phaseHelp = [numPhases]string{
	"Milliseconds from a request's last byte read to its answer's last byte written (Kafka's TotalTimeMs).",
	"Milliseconds from a request's last byte read to its handler's start: the request-memory wait and the decode (Kafka's RequestQueueTimeMs).",
	"Milliseconds the handler worked on the request, its parked time left out (Kafka's LocalTimeMs).",
	"Milliseconds the handler was parked waiting on others: a Fetch's max wait, a Produce's acks=all, the controller (Kafka's RemoteTimeMs).",
	"Milliseconds of throttle time the answer imposed on the client for its quotas (Kafka's ThrottleTimeMs).",
	"Milliseconds from the handler's return to the answer starting out: its encoding (Kafka's ResponseQueueTimeMs).",
	"Milliseconds writing the answer to the socket (Kafka's ResponseSendTimeMs).",
}

// numBounds is how many finite bounds the buckets have.
const numBounds = 17

// latencyBounds are the upper bounds of the _bucket series, in
// milliseconds, and boundNanos the same in nanoseconds; a last bucket
// (+Inf) takes the rest.
var latencyBounds = [numBounds]float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000}

var boundNanos = func() []int64 {
	out := make([]int64, len(latencyBounds))
	for i, b := range latencyBounds {
		out[i] = int64(b * float64(time.Millisecond))
	}
	return out
}()

var boundLabels = func() []string {
	out := make([]string, len(latencyBounds)+1)
	for i, b := range latencyBounds {
		out[i] = strconv.FormatFloat(b, 'g', -1, 64)
	}
	out[len(latencyBounds)] = "+Inf"
	return out
}()

// quantiles are the percentiles Kafka's histograms show (50thPercentile
// ... 999thPercentile) with the label values the JMX exporter gives them.
var quantiles = []struct {
	q     float64
	label string
}{{0.50, "0.50"}, {0.75, "0.75"}, {0.95, "0.95"}, {0.98, "0.98"}, {0.99, "0.99"}, {0.999, "0.999"}}

// quantileWindow is how far back the quantile gauges look: Kafka's
// histograms are biased to about the last five minutes.
const quantileWindow = 5 * time.Minute

// latency is one phase's histogram: per-bucket (not cumulative) counts,
// whose total is the count, and the sum of the observations in
// nanoseconds.
type latency struct {
	buckets [numBounds + 1]atomic.Uint64
	sumNs   atomic.Int64
}

func (l *latency) observe(d time.Duration) {
	ns := max(int64(d), 0)
	i := 0
	for i < len(boundNanos) && ns > boundNanos[i] {
		i++
	}
	l.buckets[i].Add(1)
	l.sumNs.Add(ns)
}

// maxErrorCode bounds the codes counted by their own series; a code
// outside [-1, maxErrorCode) is counted as UNKNOWN_SERVER_ERROR, as Kafka's
// Errors.forCode names a code it does not know.
const maxErrorCode = 160

// requestStats are one request name's figures.
type requestStats struct {
	name   string
	phases [numPhases]latency
	// errs counts error codes, index code+1.
	errs [maxErrorCode + 1]atomic.Uint64

	mu      sync.Mutex // guards windows (scrapes may run together)
	windows []bucketSnapshot
}

// bucketSnapshot is every phase's bucket counts at a scrape.
type bucketSnapshot struct {
	at     time.Time
	counts [numPhases][numBounds + 1]uint64
}

// followerFetchSlot is the slot of FetchFollower in requestMetrics.byKey,
// after every api key.
const followerFetchSlot = 128

// requestMetrics are the RequestMetrics of a node.
type requestMetrics struct {
	byKey [followerFetchSlot + 1]atomic.Pointer[requestStats]
	mu    sync.Mutex // serializes creating a slot's stats
	// ctrl is the controller channel's server once it serves
	// (controlListener), for its connection figures.
	ctrl atomic.Pointer[namedServer]
}

// namedServer is a protocol.Server and its listener's name.
type namedServer struct {
	name string
	srv  *protocol.Server
}

// controlListener measures the controller channel's requests and
// connections as the Kafka listeners' are: its router counts and
// observes them, and its server's connections are scraped under the
// controller listener's name (controller.listener.names), as Kafka's
// controller listener has its own socket-server-metrics.
func (m *brokerMetrics) controlListener(r *protocol.Router, srv *protocol.Server, name string) {
	if m == nil {
		return
	}
	r.Hook = m.countRequest
	r.Observe = m.observe
	m.reqs.ctrl.Store(&namedServer{name: name, srv: srv})
}

// requestName is Kafka's name of a request (ApiKeys' name), which its
// RequestMetrics label request takes: Fetch is FetchConsumer or
// FetchFollower (a fetch with a replica id), and a few names are spelled
// as Kafka spells them where kmsg capitalizes differently.
func requestName(key int16, body kmsg.Request) (string, int) {
	slot := requestSlot(key, body)
	return slotName(slot), slot
}

// requestSlot is the request name's slot in requestMetrics.byKey: the api
// key, or followerFetchSlot. It is what the request path computes; the
// name only when a slot is first used.
func requestSlot(key int16, body kmsg.Request) int {
	if key == 1 && isFollowerFetch(body) {
		return followerFetchSlot
	}
	return int(key)
}

// slotName is the request name of a slot.
func slotName(slot int) string {
	switch slot {
	case 1:
		return "FetchConsumer"
	case followerFetchSlot:
		return "FetchFollower"
	}
	if n, ok := kafkaRequestNames[int16(slot)]; ok {
		return n
	}
	return kmsg.NameForKey(int16(slot))
}

// kafkaRequestNames are Kafka's names where kmsg's differ.
var kafkaRequestNames = map[int16]string{
	4:  "LeaderAndIsr",
	17: "SaslHandshake",
	22: "InitProducerId",
	29: "DescribeAcls",
	30: "CreateAcls",
	31: "DeleteAcls",
	36: "SaslAuthenticate",
	45: "AlterPartitionReassignments",
	50: "DescribeUserScramCredentials",
	51: "AlterUserScramCredentials",
	67: "AllocateProducerIds",
}

// isFollowerFetch reports whether body is a Fetch from a replica.
func isFollowerFetch(body kmsg.Request) bool {
	req, ok := body.(*kmsg.FetchRequest)
	if !ok {
		return false
	}
	if req.Version >= 15 {
		return req.ReplicaState.ID >= 0
	}
	return req.ReplicaID >= 0
}

// stats returns the figures of req's request name, creating them once.
func (rm *requestMetrics) stats(req *protocol.Request) *requestStats {
	key := req.Header.APIKey
	if key < 0 || int(key) >= followerFetchSlot {
		return nil
	}
	slot := requestSlot(key, req.Body)
	if s := rm.byKey[slot].Load(); s != nil {
		return s
	}
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if s := rm.byKey[slot].Load(); s != nil {
		return s
	}
	// The quantiles' window starts empty, at the first request.
	s := &requestStats{name: slotName(slot), windows: []bucketSnapshot{{at: time.Now()}}}
	rm.byKey[slot].Store(s)
	return s
}

// observe is the router's Observe hook: it records a request's phases
// and its answer's error codes.
func (m *brokerMetrics) observe(req *protocol.Request, resp kmsg.Response, t *protocol.RequestTimes) {
	s := m.reqs.stats(req)
	if s == nil {
		return
	}
	handler := t.Done.Sub(t.Start)
	s.phases[phaseTotal].observe(t.SendEnd.Sub(t.Received))
	s.phases[phaseRequestQueue].observe(t.Start.Sub(t.Received))
	s.phases[phaseLocal].observe(handler - t.Remote)
	s.phases[phaseRemote].observe(t.Remote)
	s.phases[phaseThrottle].observe(t.Throttle)
	s.phases[phaseResponseQueue].observe(t.SendStart.Sub(t.Done) - t.Held)
	s.phases[phaseResponseSend].observe(t.SendEnd.Sub(t.SendStart))
	if resp != nil {
		if sr, ok := resp.(*protocol.SplicedResponse); ok {
			resp = sr.Response
		}
		countErrors(resp, &s.errs)
	}
}

// countError adds one answer of code to errs.
func countError(errs *[maxErrorCode + 1]atomic.Uint64, code int16) {
	if code < -1 || code >= maxErrorCode {
		code = -1
	}
	errs[code+1].Add(1)
}

// countErrors adds every error code resp carries, at any depth, to errs
// (Kafka's AbstractResponse.errorCounts, NONE included). The frequent
// ones with many partitions (Produce, Fetch, Metadata, ListOffsets,
// OffsetCommit) are walked by hand; the rest by a walk of their struct
// fields named ErrorCode, planned once per response type.
func countErrors(resp kmsg.Response, errs *[maxErrorCode + 1]atomic.Uint64) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				countError(errs, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.FetchResponse:
		countError(errs, r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				countError(errs, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			countError(errs, r.Topics[i].ErrorCode)
			for j := range r.Topics[i].Partitions {
				countError(errs, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				countError(errs, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				countError(errs, r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	default:
		v := reflect.ValueOf(resp)
		if v.Kind() != reflect.Pointer || v.IsNil() {
			return
		}
		v = v.Elem()
		planFor(v.Type()).walk(v, errs)
	}
}

// errorPlan is where a struct type holds error codes: its own ErrorCode
// field, and the fields (structs, pointers to structs, slices of them)
// that may hold more.
type errorPlan struct {
	code  int // index of an int16 ErrorCode field, or -1
	inner []innerPlan
}

type innerPlan struct {
	field int
	kind  reflect.Kind // Struct, Pointer or Slice
	plan  *errorPlan
}

var errorPlans sync.Map // reflect.Type → *errorPlan

// planFor returns the plan of struct type t.
func planFor(t reflect.Type) *errorPlan {
	if p, ok := errorPlans.Load(t); ok {
		return p.(*errorPlan)
	}
	p := buildPlan(t, map[reflect.Type]*errorPlan{})
	errorPlans.Store(t, p)
	return p
}

// buildPlan plans t; seen breaks cycles of recursive types.
func buildPlan(t reflect.Type, seen map[reflect.Type]*errorPlan) *errorPlan {
	if p, ok := seen[t]; ok {
		return p
	}
	p := &errorPlan{code: -1}
	seen[t] = p
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
			p.code = i
			continue
		}
		elem := f.Type
		kind := elem.Kind()
		switch kind {
		case reflect.Pointer, reflect.Slice:
			elem = elem.Elem()
		case reflect.Struct:
		default:
			continue
		}
		if elem.Kind() != reflect.Struct {
			continue
		}
		sub := buildPlan(elem, seen)
		if sub.code < 0 && len(sub.inner) == 0 && sub != p {
			continue
		}
		p.inner = append(p.inner, innerPlan{field: i, kind: kind, plan: sub})
	}
	return p
}

// walk counts the error codes of v, a struct of the plan's type.
func (p *errorPlan) walk(v reflect.Value, errs *[maxErrorCode + 1]atomic.Uint64) {
	if p.code >= 0 {
		countError(errs, int16(v.Field(p.code).Int()))
	}
	for _, in := range p.inner {
		f := v.Field(in.field)
		switch in.kind {
		case reflect.Struct:
			in.plan.walk(f, errs)
		case reflect.Pointer:
			if !f.IsNil() {
				in.plan.walk(f.Elem(), errs)
			}
		case reflect.Slice:
			for i := range f.Len() {
				in.plan.walk(f.Index(i), errs)
			}
		}
	}
}

// errorName is Kafka's name of an error code (the Errors enum).
func errorName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case kerr.NotLeaderForPartition.Code:
		return "NOT_LEADER_OR_FOLLOWER" // kerr keeps the code's older name, NOT_LEADER_FOR_PARTITION
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && e.Code == code {
		return e.Message
	}
	return "UNKNOWN_SERVER_ERROR"
}

var (
	descErrors = prometheus.NewDesc("kafka_network_requestmetrics_errors_total",
		"Error codes in answers, by request and Kafka's error name, NONE included (Kafka's ErrorsPerSec).", []string{"request", "error"}, nil)
	descConnCount = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_count",
		"Open connections on the listener (Kafka's socket-server-metrics connection-count).", []string{"listener"}, nil)
	descConnCreated = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_creation_total",
		"Connections the listener admitted (Kafka's socket-server-metrics connection-creation-total).", []string{"listener"}, nil)
	descConnClosed = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_close_total",
		"Connections on the listener that have closed (Kafka's socket-server-metrics connection-close-total).", []string{"listener"}, nil)
	descMemoryUsed = prometheus.NewDesc("kafka_network_socketserver_memorypoolused",
		"Bytes of queued.max.request.bytes held by requests being read or served (Kafka's MemoryPoolUsed).", nil, nil)
	descPhase, descPhaseCount, descPhaseSum, descPhaseBucket [numPhases]*prometheus.Desc
)

func init() {
	for i, name := range phaseNames {
		descPhase[i] = prometheus.NewDesc(name, phaseHelp[i]+" Quantiles of the last 5 minutes.", []string{"request", "quantile"}, nil)
		descPhaseCount[i] = prometheus.NewDesc(name+"_count", "Requests observed in "+name+".", []string{"request"}, nil)
		descPhaseSum[i] = prometheus.NewDesc(name+"_sum", "Sum of "+name+" in milliseconds.", []string{"request"}, nil)
		descPhaseBucket[i] = prometheus.NewDesc(name+"_bucket", "Requests of "+name+" at most le milliseconds (a histogram for histogram_quantile).", []string{"request", "le"}, nil)
	}
}

// requestCollector exposes requestMetrics and the listeners' figures.
type requestCollector struct {
	b *Broker
	m *brokerMetrics
}

// Describe sends every family's description.
func (c requestCollector) Describe(ch chan<- *prometheus.Desc) {
	for i := range numPhases {
		ch <- descPhase[i]
		ch <- descPhaseCount[i]
		ch <- descPhaseSum[i]
		ch <- descPhaseBucket[i]
	}
	ch <- descErrors
	ch <- descConnCount
	ch <- descConnCreated
	ch <- descConnClosed
	ch <- descMemoryUsed
}

// Collect sends each request name's families and, once the listeners
// serve, theirs.
func (c requestCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for i := range c.m.reqs.byKey {
		if s := c.m.reqs.byKey[i].Load(); s != nil {
			s.collect(ch, now)
		}
	}
	if !c.m.serving.Load() {
		return // b.listeners is being built
	}
	conns := func(name string, srv *protocol.Server) {
		opened, closed := srv.ConnectionTotals()
		ch <- prometheus.MustNewConstMetric(descConnCount, prometheus.GaugeValue, float64(srv.NumConnections()), name)
		ch <- prometheus.MustNewConstMetric(descConnCreated, prometheus.CounterValue, float64(opened), name)
		ch <- prometheus.MustNewConstMetric(descConnClosed, prometheus.CounterValue, float64(closed), name)
	}
	for _, l := range c.b.listeners {
		if l.server != nil {
			conns(l.cfg.Name, l.server)
		}
	}
	if ns := c.m.reqs.ctrl.Load(); ns != nil {
		conns(ns.name, ns.srv)
	}
	if len(c.b.listeners) > 0 && c.b.listeners[0].server != nil {
		ch <- prometheus.MustNewConstMetric(descMemoryUsed, prometheus.GaugeValue, float64(c.b.listeners[0].server.RequestMemoryInUse()))
	}
}

// collect sends s's series: per phase the quantile gauges of the window,
// the _count, _sum and cumulative _bucket counters; per error code seen,
// its counter.
func (s *requestStats) collect(ch chan<- prometheus.Metric, now time.Time) {
	var cur bucketSnapshot
	cur.at = now
	for p := range numPhases {
		for b := range cur.counts[p] {
			cur.counts[p][b] = s.phases[p].buckets[b].Load()
		}
	}
	base := s.window(cur)
	for p := range numPhases {
		l := &s.phases[p]
		var delta [numBounds + 1]uint64
		var inWindow uint64
		for b := range delta {
			delta[b] = cur.counts[p][b] - base.counts[p][b]
			inWindow += delta[b]
		}
		for _, q := range quantiles {
			// To the microsecond: an interpolation has no more precision.
			v := math.Round(bucketQuantile(q.q, delta[:], inWindow)*1000) / 1000
			ch <- prometheus.MustNewConstMetric(descPhase[p], prometheus.GaugeValue, v, s.name, q.label)
		}
		var cum uint64
		for b, n := range cur.counts[p] {
			cum += n
			ch <- prometheus.MustNewConstMetric(descPhaseBucket[p], prometheus.CounterValue, float64(cum), s.name, boundLabels[b])
		}
		// The count is the buckets' total, so _count and le="+Inf" agree
		// in a scrape that races observations.
		ch <- prometheus.MustNewConstMetric(descPhaseCount[p], prometheus.CounterValue, float64(cum), s.name)
		ch <- prometheus.MustNewConstMetric(descPhaseSum[p], prometheus.CounterValue, float64(l.sumNs.Load())/float64(time.Millisecond), s.name)
	}
	for i := range s.errs {
		if n := s.errs[i].Load(); n > 0 {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), s.name, errorName(int16(i-1)))
		}
	}
}

// window keeps cur among the snapshots (one every minute at most, none
// older than quantileWindow beyond the first one inside it) and returns
// the one the quantiles are measured from: the oldest kept, or zero
// counts when there is none yet (everything since the start).
func (s *requestStats) window(cur bucketSnapshot) bucketSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Drop snapshots while the next one is still old enough to cover
	// the window.
	for len(s.windows) > 1 && cur.at.Sub(s.windows[1].at) >= quantileWindow {
		s.windows = s.windows[1:]
	}
	var base bucketSnapshot
	if len(s.windows) > 0 {
		base = s.windows[0]
	}
	if len(s.windows) == 0 || cur.at.Sub(s.windows[len(s.windows)-1].at) >= time.Minute {
		s.windows = append(s.windows, cur)
	}
	return base
}

// bucketQuantile estimates the q quantile of n observations in buckets
// (non-cumulative, bounded by latencyBounds) by linear interpolation
// inside the bucket it falls in, as PromQL's histogram_quantile does; one
// in the +Inf bucket is the highest finite bound. No observation gives 0.
func bucketQuantile(q float64, buckets []uint64, n uint64) float64 {
	if n == 0 {
		return 0
	}
	rank := q * float64(n)
	var cum float64
	for i, c := range buckets {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= rank {
			if i == len(latencyBounds) {
				return latencyBounds[len(latencyBounds)-1]
			}
			lower := 0.0
			if i > 0 {
				lower = latencyBounds[i-1]
			}
			return lower + (latencyBounds[i]-lower)*(rank-cum)/float64(c)
		}
		cum += float64(c)
	}
	return latencyBounds[len(latencyBounds)-1]
}
