package metrics

// Client telemetry: the receiver of the metrics clients push to a node
// (KIP-714's PushTelemetry), what a Kafka broker hands to its
// ClientTelemetryReceiver plugin. The broker decodes a push
// (DecodeOTLPMetrics, client_telemetry_otlp.go) and records its points
// here; /metrics shows them as families of their own.
//
// # Names and labels
//
// A pushed metric's OpenTelemetry name becomes its family name with every
// character Prometheus does not allow in a name turned into '_':
// org.apache.kafka.producer.record.send.rate is
// org_apache_kafka_producer_record_send_rate. Each series is labelled with
// what the broker knows of the client instance that pushed it
// (client_instance_id, client_id, client_software_name,
// client_software_version) and with the point's own attributes, their
// keys made label names the same way; an attribute named like one of the
// broker's four labels is dropped, since the broker's word wins. A name
// under one of the node's own prefixes (kafka_, sluice_, go_, process_,
// promhttp_) is dropped, so no client can make a node's own family
// inconsistent and its scrape fail.
//
// A gauge is a gauge; a monotonic sum is a counter (a delta adds to the
// series, a cumulative value replaces it); a non-monotonic sum is a gauge
// (a delta adds). A family keeps the kind it was first seen with: a point
// of another kind under the same name is dropped. Histograms, exponential
// histograms and summaries are dropped: the Java client pushes gauges and
// sums only.
//
// # Bounds
//
// At most MaxSeriesPerClient series per client instance and
// MaxClientSeries in all; a point that would make a new series beyond
// either is dropped and counted in
// sluice_client_telemetry_series_dropped_total. A client instance's series
// are removed when it has pushed nothing for its expiry (the broker passes
// it with each push: as long as the broker remembers the instance), when
// the broker forgets the instance, and are checked at every scrape.

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

const (
	// MaxSeriesPerClient bounds the series one client instance makes.
	MaxSeriesPerClient = 2000
	// MaxClientSeries bounds the series of every client instance together.
	MaxClientSeries = 50000
)

// ClientIdentity is what the broker knows of a client instance: the four
// labels of its series.
type ClientIdentity struct {
	InstanceID      string
	ClientID        string
	SoftwareName    string
	SoftwareVersion string
}

// PointKind is how a pushed point is exposed.
type PointKind uint8

const (
	// PointGauge replaces the series' value, or adds to it when Delta.
	PointGauge PointKind = iota
	// PointCounter replaces the series' value, or adds to it when Delta.
	PointCounter
)

// Point is one pushed data point.
type Point struct {
	// Name is the metric's OpenTelemetry name.
	Name string
	// Attrs are the point's attributes as key, value pairs.
	Attrs [][2]string
	Value float64
	Kind  PointKind
	// Delta marks a sum point that holds the change since the client's
	// last push rather than the total.
	Delta bool
}

// ClientTelemetry holds the series clients pushed. It is a
// prometheus.Collector; the zero value is not usable, use
// NewClientTelemetry.
type ClientTelemetry struct {
	now func() time.Time

	mu      sync.Mutex
	clients map[string]*telemetryClient
	kinds   map[string]PointKind // family name → kind it was first seen with
	series  int                  // series of every client
	dropped float64              // points dropped for the bounds

	droppedDesc, seriesDesc *prometheus.Desc
}

// telemetryClient is one client instance's series.
type telemetryClient struct {
	id      ClientIdentity
	expires time.Time
	series  map[string]*telemetrySeries // by family name and attributes
}

type telemetrySeries struct {
	family string
	labels []string // label names: the four of ClientIdentity, then attributes
	values []string
	value  float64
}

// NewClientTelemetry returns an empty receiver; now is time.Now outside
// tests.
func NewClientTelemetry(now func() time.Time) *ClientTelemetry {
	return &ClientTelemetry{
		now:     now,
		clients: map[string]*telemetryClient{},
		kinds:   map[string]PointKind{},
		droppedDesc: prometheus.NewDesc("sluice_client_telemetry_series_dropped_total",
			"Points pushed by clients (KIP-714) dropped because they would have made more than the per-client or total budget of series.", nil, nil),
		seriesDesc: prometheus.NewDesc("sluice_client_telemetry_series",
			"Series of client-pushed metrics (KIP-714) this node exposes.", nil, nil),
	}
}

// reservedPrefixes are the prefixes of the node's own families.
var reservedPrefixes = []string{"kafka_", "sluice_", "go_", "process_", "promhttp_"}

// fixedLabels are the labels every client series has, in order.
var fixedLabels = []string{"client_instance_id", "client_id", "client_software_name", "client_software_version"}

// Record adds a push of client's points; the client's series are dropped
// once expiry passes without another push.
func (c *ClientTelemetry) Record(client ClientIdentity, expiry time.Duration, points []Point) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(now)
	cl := c.clients[client.InstanceID]
	if cl == nil {
		cl = &telemetryClient{id: client, series: map[string]*telemetrySeries{}}
		c.clients[client.InstanceID] = cl
	}
	cl.expires = now.Add(expiry)
	for _, p := range points {
		family := promName(p.Name)
		if family == "" || reserved(family) {
			continue
		}
		if kind, ok := c.kinds[family]; ok && kind != p.Kind {
			continue
		}
		labels, values := seriesLabels(cl.id, p.Attrs)
		key := seriesKey(family, labels, values)
		s := cl.series[key]
		if s == nil {
			if len(cl.series) >= MaxSeriesPerClient || c.series >= MaxClientSeries {
				c.dropped++
				continue
			}
			s = &telemetrySeries{family: family, labels: labels, values: values}
			cl.series[key] = s
			c.series++
			c.kinds[family] = p.Kind
		}
		if p.Delta {
			s.value += p.Value
		} else {
			s.value = p.Value
		}
	}
	if len(cl.series) == 0 {
		delete(c.clients, client.InstanceID)
	}
}

// Forget drops a client instance's series.
func (c *ClientTelemetry) Forget(instanceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(instanceID)
}

func (c *ClientTelemetry) forgetLocked(instanceID string) {
	if cl, ok := c.clients[instanceID]; ok {
		c.series -= len(cl.series)
		delete(c.clients, instanceID)
	}
}

// expireLocked drops the clients whose series have expired, and forgets
// the kind of a family no series has any more. Lock should be held.
func (c *ClientTelemetry) expireLocked(now time.Time) {
	expired := false
	for id, cl := range c.clients {
		if !now.Before(cl.expires) {
			c.forgetLocked(id)
			expired = true
		}
	}
	if !expired {
		return
	}
	live := map[string]bool{}
	for _, cl := range c.clients {
		for _, s := range cl.series {
			live[s.family] = true
		}
	}
	maps.DeleteFunc(c.kinds, func(family string, _ PointKind) bool { return !live[family] })
}

// Describe sends nothing: the families are the clients' and change with
// them, so the collector is unchecked.
func (c *ClientTelemetry) Describe(chan<- *prometheus.Desc) {}

// Collect sends every live series, and the two families of the receiver
// itself.
func (c *ClientTelemetry) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.now())
	ch <- prometheus.MustNewConstMetric(c.droppedDesc, prometheus.CounterValue, c.dropped)
	ch <- prometheus.MustNewConstMetric(c.seriesDesc, prometheus.GaugeValue, float64(c.series))
	descs := map[string]*prometheus.Desc{}
	for _, cl := range c.clients {
		for _, s := range cl.series {
			key := s.family + "\x00" + strings.Join(s.labels, "\x00")
			d := descs[key]
			if d == nil {
				d = prometheus.NewDesc(s.family, "Client metric pushed by clients (KIP-714 PushTelemetry).", s.labels, nil)
				descs[key] = d
			}
			vt := prometheus.GaugeValue
			if c.kinds[s.family] == PointCounter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(d, vt, s.value, s.values...)
			if err != nil {
				continue
			}
			ch <- m
		}
	}
}

// seriesLabels returns the label names and values of a series of client:
// the four fixed labels, then the attributes sorted by label name, an
// attribute whose label name is taken dropped.
func seriesLabels(client ClientIdentity, attrs [][2]string) (labels, values []string) {
	labels = append(make([]string, 0, len(fixedLabels)+len(attrs)), fixedLabels...)
	values = append(make([]string, 0, len(fixedLabels)+len(attrs)),
		valid(client.InstanceID), valid(client.ClientID), valid(client.SoftwareName), valid(client.SoftwareVersion))
	extra := make([][2]string, 0, len(attrs))
	for _, a := range attrs {
		name := promName(a[0])
		if name == "" || strings.HasPrefix(name, "__") || slices.Contains(fixedLabels, name) {
			continue
		}
		if slices.ContainsFunc(extra, func(e [2]string) bool { return e[0] == name }) {
			continue
		}
		extra = append(extra, [2]string{name, valid(a[1])})
	}
	slices.SortFunc(extra, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	for _, e := range extra {
		labels = append(labels, e[0])
		values = append(values, e[1])
	}
	return labels, values
}

func seriesKey(family string, labels, values []string) string {
	var sb strings.Builder
	sb.WriteString(family)
	for i := range labels {
		sb.WriteByte(0)
		sb.WriteString(labels[i])
		sb.WriteByte(0)
		sb.WriteString(values[i])
	}
	return sb.String()
}

// promName makes s a Prometheus metric or label name: every character
// other than an ASCII letter, digit or '_' becomes '_', and a leading
// digit gets a '_' before it. Empty stays empty.
func promName(s string) string {
	if s == "" {
		return ""
	}
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_') {
			b[i] = '_'
		}
	}
	if b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

func reserved(family string) bool {
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(family, p) {
			return true
		}
	}
	return false
}

// valid makes s valid UTF-8, as a label value must be.
func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
