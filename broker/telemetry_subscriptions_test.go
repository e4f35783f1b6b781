package broker_test

// Client metrics subscriptions (KIP-714's CLIENT_METRICS config resources)
// and pushed metrics on real nodes: changes checked with Kafka's codes and
// messages, a subscription set through one node handed out by another,
// pushed OTLP metrics on that node's /metrics, and the subscription
// deleted (telemetry_subscriptions.go, telemetry_receive.go).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluicedev/sluice/sluicetest"
)

// alterClientMetrics sends one IncrementalAlterConfigs of a client-metrics
// resource and returns its answer's error code and message.
func alterClientMetrics(ctx context.Context, t *testing.T, cl kmsg.Requestor, name string, configs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.Configs = kmsg.ConfigResourceTypeClientMetrics, name, configs
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs: %v", err)
	}
	if len(resp.Resources) != 1 {
		t.Fatalf("IncrementalAlterConfigs answered %d resources", len(resp.Resources))
	}
	msg := ""
	if m := resp.Resources[0].ErrorMessage; m != nil {
		msg = *m
	}
	return resp.Resources[0].ErrorCode, msg
}

func cmSet(name, value string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value, c.Op = name, kmsg.StringPtr(value), kmsg.IncrementalAlterConfigOpSet
	return c
}

func cmOp(name, value string, op kmsg.IncrementalAlterConfigOp) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := cmSet(name, value)
	c.Op = op
	return c
}

// Each change Kafka's ClientMetricsConfigs.validate refuses is refused with
// its code and message, and changes nothing.
func TestClientMetricsConfigsRefusedAsKafka(t *testing.T) {
	n := sluicetest.Start(t)
	cl := n.Client(kgo.DisableClientMetrics())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name    string
		configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code    *kerr.Error
		msg     string
	}{
		{"", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("interval.ms", "1000")}, kerr.InvalidRequest, "Subscription name can't be empty"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("push.interval", "1000")}, kerr.InvalidRequest, "Unknown client metrics configuration: push.interval"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("interval.ms", "99")}, kerr.InvalidRequest, "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("interval.ms", "3600001")}, kerr.InvalidRequest, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("interval.ms", "soon")}, kerr.InvalidConfig, "Invalid value soon for configuration interval.ms: Not a number of type INT"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("match", "client_id=a,client_rack=b")}, kerr.InvalidConfig, "Illegal client matching pattern: client_rack=b"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("match", "client_id=")}, kerr.InvalidConfig, "Illegal client matching pattern: client_id="},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("match", "client_id=a=b")}, kerr.InvalidConfig, "Illegal client matching pattern: client_id=a=b"},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("match", "client_id=(")}, kerr.InvalidConfig, "Illegal client matching pattern: client_id=("},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmOp("interval.ms", "1000", kmsg.IncrementalAlterConfigOpAppend)}, kerr.InvalidConfig, "Can't APPEND to key interval.ms because its type is not LIST."},
		{"s", []kmsg.IncrementalAlterConfigsRequestResourceConfig{cmSet("metrics", "a"), cmSet("metrics", "b")}, kerr.InvalidRequest, "Error due to duplicate config keys: metrics"},
	} {
		code, msg := alterClientMetrics(ctx, t, cl, tt.name, tt.configs...)
		if code != tt.code.Code || msg != tt.msg {
			t.Errorf("%q %v: answered %v %q, want %v %q", tt.name, tt.configs, kerr.ErrorForCode(code), msg, tt.code, tt.msg)
		}
	}
	list := kmsg.NewPtrListConfigResourcesRequest()
	list.ResourceTypes = []int8{16}
	resp, err := list.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || len(resp.ConfigResources) != 0 {
		t.Fatalf("ListConfigResources after refused changes: %+v, %v; want no client-metrics resource", resp, err)
	}
}

// A subscription set through one node of three is described and listed by
// another and handed out by a third to a client it matches (not to one it
// does not match); the metrics that client pushes (OTLP, zstd) appear on
// the third node's /metrics labelled with the client instance; a change of
// the subscription makes the old subscription id unknown; deleting every
// key deletes the subscription.
func TestClientMetricsSubscriptionsReachClients(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "metrics.listener=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := c.Node(1).Client(kgo.DisableClientMetrics())
	if code, msg := alterClientMetrics(ctx, t, admin, "producers",
		cmSet("metrics", "org.apache.kafka.producer., org.apache.kafka.client.connection.creations"),
		cmSet("interval.ms", "1000"),
		cmSet("match", "client_software_name=telemetry-.*, client_id=prod-[0-9]+")); code != 0 {
		t.Fatalf("setting the subscription: %v %s", kerr.ErrorForCode(code), msg)
	}

	other := c.Node(2).Client(kgo.DisableClientMetrics())
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, "producers"
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, other)
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, e := range resp.Resources[0].Configs {
			if e.Source != kmsg.ConfigSourceClientMetricsConfig {
				return fmt.Errorf("%s described with source %v", e.Name, e.Source)
			}
			got[e.Name] = *e.Value
		}
		if got["interval.ms"] != "1000" || len(got) != 3 {
			return fmt.Errorf("node 2 describes %v", got)
		}
		list := kmsg.NewPtrListConfigResourcesRequest()
		list.ResourceTypes = []int8{16}
		lresp, err := list.RequestWith(ctx, other)
		if err != nil {
			return err
		}
		if len(lresp.ConfigResources) != 1 || lresp.ConfigResources[0].Name != "producers" {
			return fmt.Errorf("node 2 lists %+v", lresp.ConfigResources)
		}
		return nil
	})

	third := c.Node(3)
	subscribeAs := func(clientID string) *kmsg.GetTelemetrySubscriptionsResponse {
		t.Helper()
		cl := third.Client(kgo.DisableClientMetrics(), kgo.ClientID(clientID), kgo.SoftwareNameAndVersion("telemetry-test", "1.0"))
		defer cl.Close()
		req := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("GetTelemetrySubscriptions as %s: %v %v", clientID, err, resp)
		}
		return resp
	}
	var sub *kmsg.GetTelemetrySubscriptionsResponse
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		sub = subscribeAs("prod-7")
		if sub.PushIntervalMillis != 1000 {
			return fmt.Errorf("node 3 hands out %+v", sub)
		}
		return nil
	})
	if want := []string{"org.apache.kafka.client.connection.creations", "org.apache.kafka.producer."}; !slices.Equal(sub.RequestedMetrics, want) {
		t.Fatalf("requested metrics %q, want %q", sub.RequestedMetrics, want)
	}
	if none := subscribeAs("consumer-1"); len(none.RequestedMetrics) != 0 || none.PushIntervalMillis != 300000 {
		t.Fatalf("a client the subscription does not match got %q every %d ms", none.RequestedMetrics, none.PushIntervalMillis)
	}

	// Push as the matched instance, over a connection of the same client.
	cl := third.Client(kgo.DisableClientMetrics(), kgo.ClientID("prod-7"), kgo.SoftwareNameAndVersion("telemetry-test", "1.0"))
	defer cl.Close()
	push := kmsg.NewPtrPushTelemetryRequest()
	push.ClientInstanceID, push.SubscriptionID, push.CompressionType = sub.ClientInstanceID, sub.SubscriptionID, 4
	push.Metrics = otlpPayload(t, 41)
	presp, err := push.RequestWith(ctx, cl)
	if err != nil || presp.ErrorCode != 0 {
		t.Fatalf("PushTelemetry: %v %v", err, kerr.ErrorForCode(presp.ErrorCode))
	}
	instance := uuidBase64(sub.ClientInstanceID)
	samples, err := scrape(third.Broker.MetricsAddr())
	if err != nil {
		t.Fatal(err)
	}
	wantSeries := map[string]float64{
		`org_apache_kafka_producer_record_send_total{client_id="prod-7",client_instance_id="` + instance + `",client_software_name="telemetry-test",client_software_version="1.0",topic="t1"}`: 41,
		`org_apache_kafka_producer_buffer_available_bytes{client_id="prod-7",client_instance_id="` + instance + `",client_software_name="telemetry-test",client_software_version="1.0"}`:       3.3554432e+07,
	}
	for series, want := range wantSeries {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("node 3 /metrics: %s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for series := range samples {
		if strings.Contains(series, "client_instance_id") && !strings.HasPrefix(series, "org_apache_kafka_producer_") {
			t.Errorf("node 3 /metrics exposes %s", series)
		}
	}
	if t.Failed() {
		for s := range samples {
			if strings.HasPrefix(s, "org_") {
				t.Logf("exposed: %s", s)
			}
		}
	}

	// A changed subscription makes the instance new: its old id is unknown.
	if code, msg := alterClientMetrics(ctx, t, admin, "producers", cmSet("interval.ms", "2000")); code != 0 {
		t.Fatalf("changing the subscription: %v %s", kerr.ErrorForCode(code), msg)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		presp, err := push.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if presp.ErrorCode != kerr.UnknownSubscriptionID.Code {
			return fmt.Errorf("push with the old subscription id answered %v", kerr.ErrorForCode(presp.ErrorCode))
		}
		return nil
	})

	// kafka-client-metrics.sh --delete deletes every key.
	if code, msg := alterClientMetrics(ctx, t, admin, "producers",
		cmOp("metrics", "", kmsg.IncrementalAlterConfigOpDelete),
		cmOp("interval.ms", "", kmsg.IncrementalAlterConfigOpDelete),
		cmOp("match", "", kmsg.IncrementalAlterConfigOpDelete)); code != 0 {
		t.Fatalf("deleting the subscription: %v %s", kerr.ErrorForCode(code), msg)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		list := kmsg.NewPtrListConfigResourcesRequest()
		list.ResourceTypes = []int8{16}
		resp, err := list.RequestWith(ctx, other)
		if err != nil {
			return err
		}
		if len(resp.ConfigResources) != 0 {
			return fmt.Errorf("node 2 still lists %+v", resp.ConfigResources)
		}
		return nil
	})
}

// otlpPayload is a zstd-compressed OTLP ExportMetricsServiceRequest as the
// Java producer pushes one: a delta monotonic sum with a topic attribute
// and a gauge.
func otlpPayload(t *testing.T, sends int64) []byte {
	t.Helper()
	data := &metricspb.MetricsData{ResourceMetrics: []*metricspb.ResourceMetrics{{
		ScopeMetrics: []*metricspb.ScopeMetrics{{Metrics: []*metricspb.Metric{
			{Name: "org.apache.kafka.producer.record.send.total", Data: &metricspb.Metric_Sum{Sum: &metricspb.Sum{
				IsMonotonic:            true,
				AggregationTemporality: metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA,
				DataPoints: []*metricspb.NumberDataPoint{{
					Attributes: []*commonpb.KeyValue{{Key: "topic", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "t1"}}}},
					Value:      &metricspb.NumberDataPoint_AsDouble{AsDouble: float64(sends)},
				}},
			}}},
			{Name: "org.apache.kafka.producer.buffer.available.bytes", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 32 << 20}}},
			}}},
			// A name under the node's own prefixes is not exposed.
			{Name: "kafka.server.replicamanager.underreplicatedpartitions", Data: &metricspb.Metric_Gauge{Gauge: &metricspb.Gauge{
				DataPoints: []*metricspb.NumberDataPoint{{Value: &metricspb.NumberDataPoint_AsInt{AsInt: 99}}},
			}}},
		}}},
	}}}
	raw, err := proto.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(raw, nil)
}

// uuidBase64 is a Kafka Uuid's string form.
func uuidBase64(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Pushed metrics that do not decompress, or do not decode as OTLP, are
// INVALID_RECORD, as Kafka answers when its receiver fails.
func TestPushTelemetryUndecodableIsInvalidRecord(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0")
	cl := n.Client(kgo.DisableClientMetrics())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name        string
		compression int8
		metrics     []byte
	}{
		{"not zstd", 4, []byte("not a zstd frame")},
		{"not OTLP", 0, []byte{0xff, 0xff, 0xff}},
	} {
		sub := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
		sresp, err := sub.RequestWith(ctx, cl)
		if err != nil || sresp.ErrorCode != 0 {
			t.Fatalf("GetTelemetrySubscriptions: %v %v", err, sresp)
		}
		push := kmsg.NewPtrPushTelemetryRequest()
		push.ClientInstanceID, push.SubscriptionID = sresp.ClientInstanceID, sresp.SubscriptionID
		push.CompressionType, push.Metrics = tt.compression, tt.metrics
		presp, err := push.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: PushTelemetry: %v", tt.name, err)
		}
		if presp.ErrorCode != kerr.InvalidRecord.Code {
			t.Errorf("%s: PushTelemetry answered %v, want INVALID_RECORD", tt.name, kerr.ErrorForCode(presp.ErrorCode))
		}
	}
}

// franz-go pushes its metrics (KIP-714) when a subscription asks for
// them: with one matching it every 100 ms, its producer series reach the
// node's /metrics, labelled with its client id and software name.
func TestClientMetricsFranzGoPushes(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	admin := n.Client(kgo.DisableClientMetrics())
	if code, msg := alterClientMetrics(ctx, t, admin, "kgo-producers",
		cmSet("metrics", "org.apache.kafka.producer."), cmSet("interval.ms", "100"), cmSet("match", "client_software_name=kgo")); code != 0 {
		t.Fatalf("setting the subscription: %v %s", kerr.ErrorForCode(code), msg)
	}
	createTopic(t, n, "telemetry-kgo", 1, nil)
	cl := n.Client(kgo.ClientID("kgo-pusher"), kgo.DefaultProduceTopic("telemetry-kgo"))
	defer cl.Close()
	if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		samples, err := scrape(n.Broker.MetricsAddr())
		if err != nil {
			return err
		}
		for s, v := range samples {
			if strings.HasPrefix(s, "org_apache_kafka_producer_connection_creation_total{") &&
				strings.Contains(s, `client_id="kgo-pusher"`) && strings.Contains(s, `client_software_name="kgo"`) && v >= 1 {
				return nil
			}
		}
		return errors.New("no org_apache_kafka_producer_connection_creation_total series of kgo-pusher on /metrics yet")
	})
}
