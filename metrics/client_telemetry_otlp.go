package metrics

// Decoding a PushTelemetry's metrics: an OpenTelemetry (OTLP) protobuf
// ExportMetricsServiceRequest, as KIP-714 specifies it, after the broker
// has decompressed it.

import (
	"fmt"
	"strconv"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"
)

// DecodeOTLPMetrics decodes a serialized ExportMetricsServiceRequest into
// its gauge and sum points. The request and MetricsData share one wire
// form (a repeated ResourceMetrics as field 1), so it is decoded as
// MetricsData, which keeps the collector's gRPC service packages out of
// the build. Resource and scope attributes are not kept: the broker
// labels a client's series with what it knows of the client. Points of
// other kinds (histograms, summaries) are skipped.
func DecodeOTLPMetrics(b []byte) ([]Point, error) {
	var data metricspb.MetricsData
	if err := proto.Unmarshal(b, &data); err != nil {
		return nil, fmt.Errorf("metrics: decoding OTLP metrics: %w", err)
	}
	var points []Point
	for _, rm := range data.GetResourceMetrics() {
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				switch d := m.GetData().(type) {
				case *metricspb.Metric_Gauge:
					for _, dp := range d.Gauge.GetDataPoints() {
						points = append(points, numberPoint(m.GetName(), dp, PointGauge, false))
					}
				case *metricspb.Metric_Sum:
					kind := PointGauge
					if d.Sum.GetIsMonotonic() {
						kind = PointCounter
					}
					delta := d.Sum.GetAggregationTemporality() == metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA
					for _, dp := range d.Sum.GetDataPoints() {
						points = append(points, numberPoint(m.GetName(), dp, kind, delta))
					}
				}
			}
		}
	}
	return points, nil
}

func numberPoint(name string, dp *metricspb.NumberDataPoint, kind PointKind, delta bool) Point {
	p := Point{Name: name, Kind: kind, Delta: delta}
	switch v := dp.GetValue().(type) {
	case *metricspb.NumberDataPoint_AsDouble:
		p.Value = v.AsDouble
	case *metricspb.NumberDataPoint_AsInt:
		p.Value = float64(v.AsInt)
	}
	for _, kv := range dp.GetAttributes() {
		p.Attrs = append(p.Attrs, [2]string{kv.GetKey(), anyValueString(kv.GetValue())})
	}
	return p
}

// anyValueString is an attribute value as a label value.
func anyValueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_BytesValue:
		return string(x.BytesValue)
	}
	return ""
}
