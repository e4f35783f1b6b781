package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// gather scrapes c through a registry, as /metrics does, and returns the
// families by name.
func gather(t *testing.T, c *ClientTelemetry) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// A client's series are bounded per client and in all, named and
// labelled as client_telemetry.go says, and gone once the client's expiry
// passes without a push.
func TestClientTelemetrySeriesBoundedAndExpired(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	c := NewClientTelemetry(clock.now)
	id := ClientIdentity{InstanceID: "i1", ClientID: "p", SoftwareName: "apache-kafka-java", SoftwareVersion: "4.4.0"}
	var points []Point
	for i := range MaxSeriesPerClient + 500 {
		points = append(points, Point{Name: "org.apache.kafka.producer.node.request.total", Kind: PointCounter, Delta: true, Value: 1,
			Attrs: [][2]string{{"node_id", fmt.Sprint(i)}, {"client_id", "spoofed"}}})
	}
	points = append(points,
		Point{Name: "kafka.server.replicamanager.underreplicatedpartitions", Value: 9},
		Point{Name: "org.apache.kafka.producer.node.request.total", Kind: PointGauge, Value: 5, Attrs: [][2]string{{"node_id", "0"}}})
	c.Record(id, time.Minute, points)
	c.Record(id, time.Minute, points[:1]) // a second delta adds

	fams := gather(t, c)
	fam := fams["org_apache_kafka_producer_node_request_total"]
	if fam == nil || fam.GetType() != dto.MetricType_COUNTER || len(fam.Metric) != MaxSeriesPerClient {
		t.Fatalf("family %v, want a counter of %d series", fam, MaxSeriesPerClient)
	}
	if _, ok := fams["kafka_server_replicamanager_underreplicatedpartitions"]; ok {
		t.Error("a client metric under the node's kafka_ prefix is exposed")
	}
	if got := fams["sluice_client_telemetry_series_dropped_total"].Metric[0].GetCounter().GetValue(); got != 500 {
		t.Errorf("dropped %v points, want 500 (those beyond the per-client budget)", got)
	}
	for _, m := range fam.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["client_id"] != "p" || labels["client_instance_id"] != "i1" || labels["client_software_name"] != "apache-kafka-java" || labels["client_software_version"] != "4.4.0" {
			t.Fatalf("series labels %v, want the broker's identity of the client", labels)
		}
		want := 1.0
		if labels["node_id"] == "0" {
			want = 2
		}
		if got := m.GetCounter().GetValue(); got != want {
			t.Fatalf("node_id %s = %v, want %v", labels["node_id"], got, want)
		}
	}

	// A second client fits under the total budget; both expire.
	c.Record(ClientIdentity{InstanceID: "i2"}, 3*time.Minute, []Point{{Name: "org.apache.kafka.consumer.fetch.total", Value: 7}})
	clock.t = clock.t.Add(time.Minute)
	fams = gather(t, c)
	if _, ok := fams["org_apache_kafka_producer_node_request_total"]; ok {
		t.Error("client i1's series outlived its expiry")
	}
	if fam := fams["org_apache_kafka_consumer_fetch_total"]; fam == nil || fam.GetType() != dto.MetricType_GAUGE {
		t.Errorf("client i2's gauge: %v", fam)
	}
	c.Forget("i2")
	fams = gather(t, c)
	if n := fams["sluice_client_telemetry_series"].Metric[0].GetGauge().GetValue(); n != 0 {
		t.Errorf("%v series left after every client is gone", n)
	}
	for name := range fams {
		if strings.HasPrefix(name, "org_") {
			t.Errorf("family %s left after every client is gone", name)
		}
	}
}
