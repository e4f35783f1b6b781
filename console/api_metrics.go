package console

// GET /api/metrics: this node's counters for the live charts, read from
// its Prometheus registry in process. The page polls it every second and
// charts the differences between two answers (rates, and latency from
// the histogram's sum, count and buckets over that second).

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// counterFamilies are the counters summed over their labels, by the name
// the page knows them under.
var counterFamilies = map[string]string{
	"kafka_server_brokertopicmetrics_bytesin_total":            "bytesIn",
	"kafka_server_brokertopicmetrics_bytesout_total":           "bytesOut",
	"kafka_server_brokertopicmetrics_messagesin_total":         "messagesIn",
	"kafka_network_requestmetrics_requests_total":              "requests",
	"kafka_network_requestmetrics_errors_total":                "errors",
	"kafka_server_brokertopicmetrics_totalfetchrequests_total": "fetchRequests",
}

// latencyFamily names the request latency family (Kafka's RequestMetrics
// TotalTimeMs), charted per request from its count, sum and buckets:
// a native histogram or summary, or _count, _sum and _bucket{le}
// counter families of their own.
const latencyFamily = "kafka_network_requestmetrics_totaltimems"

type latency struct {
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum"` // in the family's unit (ms, or s if named _seconds)
	// Bounds and Counts are the histogram's cumulative buckets.
	Bounds []float64 `json:"bounds,omitempty"`
	Counts []uint64  `json:"counts,omitempty"`

	buckets map[float64]uint64 // the cumulative counts by bound, summed over series
}

type metricsView struct {
	Time     int64               `json:"time"` // ms
	NodeID   int32               `json:"nodeId"`
	Counters map[string]float64  `json:"counters"`
	Latency  map[string]*latency `json:"latency"`
	Unit     string              `json:"latencyUnit"`
	Error    string              `json:"error,omitempty"`
}

func (c *Console) handleMetrics(w http.ResponseWriter, _ *http.Request) {
	v := metricsView{Time: time.Now().UnixMilli(), NodeID: c.opts.NodeID, Counters: map[string]float64{}, Latency: map[string]*latency{}, Unit: "ms"}
	for _, name := range counterFamilies {
		v.Counters[name] = 0
	}
	if c.opts.Gatherer == nil {
		v.Error = "no metrics registry"
		writeJSON(w, http.StatusOK, v)
		return
	}
	fams, err := c.opts.Gatherer.Gather()
	if err != nil {
		v.Error = err.Error() // Gather answers what it could alongside
	}
	// lat is the figures of m's request, made on first use.
	lat := func(m *dto.Metric) *latency {
		req := label(m, "request")
		if req == "" {
			req = "all"
		}
		l := v.Latency[req]
		if l == nil {
			l = &latency{buckets: map[float64]uint64{}}
			v.Latency[req] = l
		}
		return l
	}
	for _, f := range fams {
		name := f.GetName()
		if key, ok := counterFamilies[name]; ok {
			for _, m := range f.GetMetric() {
				// ErrorsPerSec counts every error code answered,
				// NONE included; the chart shows the errors.
				if m.GetCounter() != nil && (key != "errors" || label(m, "error") != "NONE") {
					v.Counters[key] += m.GetCounter().GetValue()
				}
			}
			continue
		}
		if !strings.HasPrefix(name, latencyFamily) {
			continue
		}
		suffix := strings.TrimPrefix(name, latencyFamily)
		if suffix == "_seconds" {
			v.Unit = "s"
		}
		for _, m := range f.GetMetric() {
			l := lat(m)
			switch {
			case m.GetHistogram() != nil: // a native histogram
				h := m.GetHistogram()
				l.Count += h.GetSampleCount()
				l.Sum += h.GetSampleSum()
				for _, b := range h.GetBucket() {
					l.buckets[b.GetUpperBound()] += b.GetCumulativeCount()
				}
			case m.GetSummary() != nil:
				l.Count += m.GetSummary().GetSampleCount()
				l.Sum += m.GetSummary().GetSampleSum()
			// The JMX exporter's shape, which sluice's broker exposes as
			// families of their own: _count, _sum and cumulative
			// _bucket{le} counters beside the quantile gauges.
			case suffix == "_count" && m.GetCounter() != nil:
				l.Count += uint64(m.GetCounter().GetValue())
			case suffix == "_sum" && m.GetCounter() != nil:
				l.Sum += m.GetCounter().GetValue()
			case suffix == "_bucket" && m.GetCounter() != nil:
				le, err := strconv.ParseFloat(label(m, "le"), 64)
				if err == nil && !math.IsInf(le, 1) {
					l.buckets[le] += uint64(m.GetCounter().GetValue())
				}
			}
		}
	}
	for _, l := range v.Latency {
		bounds := slices.Sorted(maps.Keys(l.buckets))
		for _, b := range bounds {
			l.Bounds = append(l.Bounds, b)
			l.Counts = append(l.Counts, l.buckets[b])
		}
	}
	writeJSON(w, http.StatusOK, v)
}

func label(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
