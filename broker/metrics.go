package broker

// The node's Prometheus families (metrics.listener; the metrics package
// serves them and its doc gives the naming convention): counters bumped on
// the request path, gauges computed from the metadata image at scrape
// time. Nothing here exists while metrics.listener is empty.
//
// Counters cost an atomic add each: a per-topic handle is found in a
// copy-on-write map read without a lock (a new topic takes a mutex once),
// and the produce path bumps it once per partition of a request, never per
// record.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/console"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/metrics"
	"github.com/sluicedev/sluice/protocol"
)

// brokerMetrics is one node's families.
type brokerMetrics struct {
	reg     *prometheus.Registry
	srv     *metrics.Server
	console *console.Console // console.go; nil when console.enable is false
	// ctrl is the node's controller once New has opened it (the listener
	// serves from the start of New, so /healthz answers during a long log
	// recovery); serving is set once the Kafka listeners serve.
	ctrl    atomic.Pointer[controller.Controller]
	serving atomic.Bool

	bytesIn       *prometheus.CounterVec // BrokerTopicMetrics BytesInPerSec, per topic
	messagesIn    *prometheus.CounterVec // BrokerTopicMetrics MessagesInPerSec, per topic
	requests      *prometheus.CounterVec // RequestMetrics RequestsPerSec, per request and version
	topicFamilies                        // bytes out, fetch/produce counts (metrics_requests_topics.go)
	reqs          requestMetrics         // latencies and errors per request (metrics_requests.go)
	state         *stateMetrics          // the state families (metrics_state.go)

	mu       sync.Mutex // serializes adding to topics and reqs
	topics   atomic.Pointer[map[string]*topicCounters]
	requestC atomic.Pointer[map[int32]prometheus.Counter] // key<<16 | version
}

// topicCounters are one topic's handles.
type topicCounters struct {
	bytesIn, messagesIn prometheus.Counter
	topicFetchCounters
}

// newMetrics binds metrics.listener, builds the registry and serves it at
// once: /healthz answers from here on, /readyz once the node is ready; nil,
// nil when the key is empty.
func (b *Broker) newMetrics() (*brokerMetrics, error) {
	if b.cfg.MetricsListener == "" {
		return nil, nil
	}
	ln, err := metrics.Listen(b.cfg.MetricsListener)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	m := &brokerMetrics{
		reg: metrics.NewRegistry(),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_bytesin_total",
			Help: "Bytes of record batches appended to the topic's partitions this node leads (Kafka's BytesInPerSec).",
		}, []string{"topic"}),
		messagesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_server_brokertopicmetrics_messagesin_total",
			Help: "Records appended to the topic's partitions this node leads (Kafka's MessagesInPerSec).",
		}, []string{"topic"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_network_requestmetrics_requests_total",
			Help: "Well-formed requests at a supported version received, by API and version (Kafka's RequestsPerSec).",
		}, []string{"request", "version"}),
		topicFamilies: newTopicFamilies(),
	}
	empty := map[string]*topicCounters{}
	m.topics.Store(&empty)
	noReqs := map[int32]prometheus.Counter{}
	m.requestC.Store(&noReqs)
	m.reg.MustRegister(m.bytesIn, m.messagesIn, m.requests, imageCollector{b, m}, requestCollector{b, m}, quotaCollector{b, m})
	m.reg.MustRegister(m.topicFamilies.collectors()...)
	m.state = newStateMetrics(b, m)
	m.console = b.newConsole(m)
	m.srv = metrics.Serve(ln, m.reg, func() error { return b.ready(m) }, b.logger.With("component", "metrics"), consoleHandler(m.console))
	b.logger.Info("metrics listener serving", "addr", m.srv.Addr())
	return m, nil
}

// opened hands the scrape-time gauges and /readyz the controller.
func (m *brokerMetrics) opened(ctrl *controller.Controller) {
	if m != nil {
		m.ctrl.Store(ctrl)
	}
}

// start marks the Kafka listeners serving; New calls it once they do.
func (m *brokerMetrics) start() {
	if m != nil {
		m.serving.Store(true)
	}
}

// close stops the listener, waiting (within ctx) for scrapes in flight.
func (m *brokerMetrics) close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	err := m.srv.Close(ctx)
	if m.console != nil {
		m.console.Close()
	}
	return err
}

// MetricsAddr is the address the metrics listener is bound to, "" when
// metrics.listener is empty.
func (b *Broker) MetricsAddr() string {
	if b.metrics == nil {
		return ""
	}
	return b.metrics.srv.Addr()
}

// produced counts an append of bytes record-batch bytes holding records
// records to a partition of topic that this node leads.
func (m *brokerMetrics) produced(topic string, bytes int, records int64) {
	if m == nil {
		return
	}
	t := m.topic(topic)
	t.bytesIn.Add(float64(bytes))
	t.messagesIn.Add(float64(records))
}

// topic returns topic's handles, creating them on first use.
func (m *brokerMetrics) topic(name string) *topicCounters {
	if t, ok := (*m.topics.Load())[name]; ok {
		return t
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.topics.Load()
	if t, ok := old[name]; ok {
		return t
	}
	t := &topicCounters{bytesIn: m.bytesIn.WithLabelValues(name), messagesIn: m.messagesIn.WithLabelValues(name),
		topicFetchCounters: m.topicFamilies.handles(name)}
	next := make(map[string]*topicCounters, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[name] = t
	m.topics.Store(&next)
	return t
}

// forgetDeleted drops the series of topics img no longer has, as Kafka
// removes a deleted topic's BrokerTopicMetrics; a topic created again
// under the name starts from 0. An append racing the deletion may bump a
// dropped handle: those bytes are lost with the topic.
func (m *brokerMetrics) forgetDeleted(img *controller.Image) {
	cur := *m.topics.Load()
	stale := false
	for name := range cur {
		if _, ok := img.Topics[name]; !ok {
			stale = true
			break
		}
	}
	if !stale {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.topics.Load()
	next := make(map[string]*topicCounters, len(old))
	for name, t := range old {
		if _, ok := img.Topics[name]; ok {
			next[name] = t
			continue
		}
		m.bytesIn.DeleteLabelValues(name)
		m.messagesIn.DeleteLabelValues(name)
		m.topicFamilies.forget(name)
	}
	m.topics.Store(&next)
}

// countRequest is the router hook counting requests; it never handles one.
// The request label is Kafka's name (requestSlot, slotName): a Fetch is
// FetchConsumer or FetchFollower.
func (m *brokerMetrics) countRequest(req *protocol.Request) (kmsg.Response, error, bool) {
	slot := requestSlot(req.Header.APIKey, req.Body)
	k := int32(slot)<<16 | int32(uint16(req.Header.APIVersion))
	c, ok := (*m.requestC.Load())[k]
	if !ok {
		m.mu.Lock()
		old := *m.requestC.Load()
		if c, ok = old[k]; !ok {
			c = m.requests.WithLabelValues(slotName(slot), strconv.Itoa(int(req.Header.APIVersion)))
			next := make(map[int32]prometheus.Counter, len(old)+1)
			for kk, v := range old {
				next[kk] = v
			}
			next[k] = c
			m.requestC.Store(&next)
		}
		m.mu.Unlock()
	}
	c.Inc()
	return nil, nil, false
}

// ready is /readyz: the node has joined the cluster — it holds a metadata
// image of an initialized cluster that registers it unfenced, knows the
// active controller, and its Kafka listeners serve (they do from before
// the metrics listener starts until shutdown begins).
func (b *Broker) ready(m *brokerMetrics) error {
	if b.closed.Load() {
		return errors.New("shutting down")
	}
	ctrl := m.ctrl.Load()
	if ctrl == nil || !m.serving.Load() {
		return errors.New("starting: the Kafka listeners are not serving yet")
	}
	img := b.metadata()
	if img == nil || img.ClusterID == "" {
		return errors.New("no metadata image of the cluster yet")
	}
	me, ok := img.Brokers[b.cfg.NodeID]
	if !ok {
		return fmt.Errorf("node %d is not registered in the metadata yet", b.cfg.NodeID)
	}
	if me.Fenced {
		return fmt.Errorf("node %d is fenced", b.cfg.NodeID)
	}
	if ctrl.ActiveControllerID() < 0 {
		return errors.New("no active controller known")
	}
	return nil
}
