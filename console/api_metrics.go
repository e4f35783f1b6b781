package console

// GET /api/metrics: this node's counters for the live charts, read from
// its Prometheus registry in process. The page polls it every second and
// charts the differences between two answers (rates, and latency from
// the histogram's sum, count and buckets over that second).

import (
	"net/http"
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
// TotalTimeMs); a histogram or summary of it is charted per request.
const latencyFamily = "kafka_network_requestmetrics_totaltimems"

type latency struct {
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum"` // in the family's unit (ms, or s if named _seconds)
	// Bounds and Counts are the histogram's cumulative buckets.
	Bounds []float64 `json:"bounds,omitempty"`
	Counts []uint64  `json:"counts,omitempty"`
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
	for _, f := range fams {
		name := f.GetName()
		if key, ok := counterFamilies[name]; ok {
			for _, m := range f.GetMetric() {
				if m.GetCounter() != nil {
					v.Counters[key] += m.GetCounter().GetValue()
				}
			}
			continue
		}
		if !strings.HasPrefix(name, latencyFamily) {
			continue
		}
		if strings.HasSuffix(name, "_seconds") {
			v.Unit = "s"
		}
		for _, m := range f.GetMetric() {
			req := label(m, "request")
			if req == "" {
				req = "all"
			}
			l := v.Latency[req]
			if l == nil {
				l = &latency{}
				v.Latency[req] = l
			}
			switch {
			case m.GetHistogram() != nil:
				h := m.GetHistogram()
				l.Count += h.GetSampleCount()
				l.Sum += h.GetSampleSum()
				// Several series (versions) of one request add up
				// bucket by bucket when they share bounds.
				bs := h.GetBucket()
				if len(l.Bounds) == 0 {
					for _, b := range bs {
						l.Bounds = append(l.Bounds, b.GetUpperBound())
						l.Counts = append(l.Counts, b.GetCumulativeCount())
					}
				} else if len(l.Bounds) == len(bs) {
					for i, b := range bs {
						l.Counts[i] += b.GetCumulativeCount()
					}
				}
			case m.GetSummary() != nil:
				l.Count += m.GetSummary().GetSampleCount()
				l.Sum += m.GetSummary().GetSampleSum()
			}
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
