package broker

// The client quota gauges (issue 21): Kafka's quota sensors' MBeans
// kafka.server:type=Produce|Fetch|Request,user=U,client-id=C, named as
// the JMX exporter's common Kafka rules name them (metrics/doc.go, its
// state families), computed at scrape time from the client quota sensors
// (quotas.Sensors.Snapshot), one series per sensor held: the clients
// recorded against a quota within the last hour (quotas.SensorExpiry).
// Nothing is read on the request path.

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicedev/sluice/quotas"
)

var quotaLabels = []string{"resource", "user", "clientId"}

var (
	quotaByteRate = prometheus.NewDesc("kafka_server_quota_byte_rate",
		"Bytes per second the clients sharing a producer_byte_rate (resource Produce) or consumer_byte_rate (Fetch) quota were measured at over the quota window (Kafka's byte-rate).",
		quotaLabels, nil)
	quotaRequestTime = prometheus.NewDesc("kafka_server_quota_request_time",
		"Percentage of a request thread the clients sharing a request_percentage quota used over the quota window (Kafka's request-time; resource Request).",
		quotaLabels, nil)
	quotaThrottleTime = prometheus.NewDesc("kafka_server_quota_throttle_time",
		"Throttle time in milliseconds the clients' last request over the quota called for; 0 once a quota window has passed without one (Kafka's throttle-time).",
		quotaLabels, nil)
)

// quotaResources are the quota keys with gauges and the MBean type each
// is measured under.
var quotaResources = map[string]string{
	quotas.ProducerByteRate:  "Produce",
	quotas.ConsumerByteRate:  "Fetch",
	quotas.RequestPercentage: "Request",
}

// quotaCollector computes the quota gauges.
type quotaCollector struct {
	b *Broker
	m *brokerMetrics
}

// Describe sends the gauges' descriptions.
func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaByteRate
	ch <- quotaRequestTime
	ch <- quotaThrottleTime
}

// Collect reads the sensors once.
func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	sensors := c.b.clientSensors()
	window := sensors.Window().Window.Milliseconds()
	for _, s := range sensors.Snapshot(c.b.now()) {
		resource, ok := quotaResources[s.Key]
		if !ok {
			continue // the exempt requests' time (request_quota.go)
		}
		rate, throttle := quotaByteRate, s.ThrottleMs
		if s.Key == quotas.RequestPercentage {
			// recordRequestTime bounds the throttle by one window, as
			// Kafka's ClientRequestQuotaManager does.
			rate, throttle = quotaRequestTime, min(throttle, window)
		}
		ch <- prometheus.MustNewConstMetric(rate, prometheus.GaugeValue, s.Rate, resource, s.User, s.ClientID)
		ch <- prometheus.MustNewConstMetric(quotaThrottleTime, prometheus.GaugeValue, float64(throttle), resource, s.User, s.ClientID)
	}
}
