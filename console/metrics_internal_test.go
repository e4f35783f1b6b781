package console

// /api/metrics reads the latency of the JMX exporter's shape (separate
// _count, _sum and _bucket{le} counter families, as the broker exposes
// them) and of a native histogram alike, and sums counters over labels.

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

type jmxShape struct{}

var (
	dCount  = prometheus.NewDesc(latencyFamily+"_count", "c", []string{"request"}, nil)
	dSum    = prometheus.NewDesc(latencyFamily+"_sum", "s", []string{"request"}, nil)
	dBucket = prometheus.NewDesc(latencyFamily+"_bucket", "b", []string{"request", "le"}, nil)
	dQuant  = prometheus.NewDesc(latencyFamily, "q", []string{"request", "quantile"}, nil)
)

func (jmxShape) Describe(ch chan<- *prometheus.Desc) {
	ch <- dCount
	ch <- dSum
	ch <- dBucket
	ch <- dQuant
}

func (jmxShape) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(dCount, prometheus.CounterValue, 10, "Produce")
	ch <- prometheus.MustNewConstMetric(dSum, prometheus.CounterValue, 42.5, "Produce")
	for _, b := range []struct {
		le string
		n  float64
	}{{"1", 3}, {"10", 9}, {"+Inf", 10}, {"0.5", 1}} {
		ch <- prometheus.MustNewConstMetric(dBucket, prometheus.CounterValue, b.n, "Produce", b.le)
	}
	ch <- prometheus.MustNewConstMetric(dQuant, prometheus.GaugeValue, 9.5, "Produce", "0.99")
}

func TestMetricsLatencyShapes(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(jmxShape{})
	bytesIn := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_server_brokertopicmetrics_bytesin_total", Help: "b"}, []string{"topic"})
	bytesIn.WithLabelValues("a").Add(100)
	bytesIn.WithLabelValues("b").Add(23)
	reg.MustRegister(bytesIn)
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kafka_network_requestmetrics_errors_total", Help: "e"}, []string{"request", "error"})
	errs.WithLabelValues("Produce", "NONE").Add(1000)
	errs.WithLabelValues("Produce", "NOT_LEADER_OR_FOLLOWER").Add(2)
	errs.WithLabelValues("Fetch", "OFFSET_OUT_OF_RANGE").Add(1)
	reg.MustRegister(errs)
	c := New(Options{Gatherer: reg})
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest("GET", "/api/metrics", nil))
	var v metricsView
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	if v.Counters["bytesIn"] != 123 {
		t.Errorf("bytesIn = %v, want 123 (summed over topics)", v.Counters["bytesIn"])
	}
	if v.Counters["errors"] != 3 {
		t.Errorf("errors = %v, want 3 (NONE is not an error)", v.Counters["errors"])
	}
	p := v.Latency["Produce"]
	if p == nil || p.Count != 10 || p.Sum != 42.5 || !slices.Equal(p.Bounds, []float64{0.5, 1, 10}) || !slices.Equal(p.Counts, []uint64{1, 3, 9}) {
		t.Fatalf("Produce latency: %+v", p)
	}

	// A native histogram.
	reg2 := prometheus.NewRegistry()
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: latencyFamily, Help: "h", Buckets: []float64{1, 5}}, []string{"request"})
	h.WithLabelValues("Fetch").Observe(0.5)
	h.WithLabelValues("Fetch").Observe(3)
	reg2.MustRegister(h)
	rec = httptest.NewRecorder()
	New(Options{Gatherer: reg2}).ServeHTTP(rec, httptest.NewRequest("GET", "/api/metrics", nil))
	v = metricsView{}
	json.Unmarshal(rec.Body.Bytes(), &v)
	f := v.Latency["Fetch"]
	if f == nil || f.Count != 2 || f.Sum != 3.5 || !slices.Equal(f.Bounds, []float64{1, 5}) || !slices.Equal(f.Counts, []uint64{1, 2}) {
		t.Fatalf("Fetch latency from a histogram: %+v", f)
	}
}
