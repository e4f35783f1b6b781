package broker_test

// The request-path families (metrics_requests*.go) as Prometheus scrapes
// them while real kgo clients produce and consume: request latencies per
// API (quantile gauges and _bucket counters), error codes per API, bytes
// out and the fetch/produce counts per topic, replication bytes,
// connections per listener. Values are checked for plausibility, never
// for speed.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// phases are the RequestMetrics time families.
var phases = []string{"totaltimems", "requestqueuetimems", "localtimems", "remotetimems",
	"throttletimems", "responsequeuetimems", "responsesendtimems"}

func TestMetricsRequestFamilies(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0")
	addr := n.Broker.MetricsAddr()
	createTopic(t, n, "reqm", 1, nil)

	h := &batchBytes{}
	cl := n.Client(kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const records = 40
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Topic: "reqm", Value: []byte(strings.Repeat("x", 100+i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	produced := h.bytes
	h.mu.Unlock()

	// A consumer with a short max wait: its long polls park and are
	// answered while the test runs.
	cons := n.Client(kgo.ConsumeTopics("reqm"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	got := 0
	for got < records {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", got, records, err)
		}
		got += fs.NumRecords()
	}
	// An answer carrying an error: Metadata for a topic that does not
	// exist, without auto-creation.
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("no-such-topic")
	md.Topics = append(md.Topics, mt)
	if _, err := md.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	}

	var m map[string]float64
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		var err error
		if m, err = scrape(addr); err != nil {
			return err
		}
		// A parked long poll has been answered and measured.
		if v := m[`kafka_network_requestmetrics_remotetimems_sum{request="FetchConsumer"}`]; v <= 0 {
			return fmt.Errorf("remotetimems_sum of FetchConsumer is %v", v)
		}
		if v := m[`kafka_server_brokertopicmetrics_bytesout_total{topic="reqm"}`]; v < float64(produced) {
			return fmt.Errorf("bytesout of reqm is %v, the consumer read %d batch bytes", v, produced)
		}
		return nil
	})

	for _, req := range []string{"Produce", "FetchConsumer", "Metadata", "ApiVersions"} {
		for _, ph := range phases {
			name := "kafka_network_requestmetrics_" + ph
			count, ok := m[fmt.Sprintf(`%s_count{request=%q}`, name, req)]
			if !ok || count < 1 {
				t.Errorf("%s_count{request=%q} = %v (present %v)", name, req, count, ok)
				continue
			}
			if inf := m[fmt.Sprintf(`%s_bucket{le="+Inf",request=%q}`, name, req)]; inf != count {
				t.Errorf("%s_bucket{le=\"+Inf\",request=%q} = %v, _count %v", name, req, inf, count)
			}
			for _, q := range []string{"0.50", "0.99", "0.999"} {
				if v, ok := m[fmt.Sprintf(`%s{quantile=%q,request=%q}`, name, q, req)]; !ok || v < 0 {
					t.Errorf("%s{request=%q,quantile=%q} = %v (present %v)", name, req, q, v, ok)
				}
			}
		}
	}
	// The buckets are cumulative.
	prev := -1.0
	for _, le := range []string{"0.1", "1", "10", "100", "1000", "30000", "+Inf"} {
		v := m[`kafka_network_requestmetrics_totaltimems_bucket{le="`+le+`",request="Produce"}`]
		if v < prev {
			t.Errorf("totaltimems_bucket{request=Produce} le=%s is %v, below le before it (%v)", le, v, prev)
		}
		prev = v
	}

	for _, want := range []string{
		`kafka_network_requestmetrics_errors_total{error="NONE",request="Produce"}`,
		`kafka_network_requestmetrics_errors_total{error="NONE",request="FetchConsumer"}`,
		`kafka_network_requestmetrics_errors_total{error="UNKNOWN_TOPIC_OR_PARTITION",request="Metadata"}`,
		`kafka_server_brokertopicmetrics_totalproducerequests_total{topic="reqm"}`,
		`kafka_server_brokertopicmetrics_totalfetchrequests_total{topic="reqm"}`,
		`kafka_server_socket_server_metrics_connection_creation_total{listener="PLAINTEXT"}`,
		`kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT"}`,
	} {
		if v := m[want]; v < 1 {
			t.Errorf("%s = %v, want at least 1", want, v)
		}
	}
	for _, zero := range []string{
		`kafka_server_brokertopicmetrics_failedproducerequests_total{topic="reqm"}`,
		`kafka_server_brokertopicmetrics_failedfetchrequests_total{topic="reqm"}`,
	} {
		if v, ok := m[zero]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", zero, v, ok)
		}
	}
	if _, ok := m["kafka_network_socketserver_memorypoolused"]; !ok {
		t.Error("no kafka_network_socketserver_memorypoolused")
	}
	for k := range m {
		if strings.Contains(k, `request="Fetch"`) {
			t.Errorf("%s: a Fetch is FetchConsumer or FetchFollower, as Kafka labels it", k)
		}
		if strings.Contains(k, "no-such-topic") {
			t.Errorf("%s: a topic that does not exist has a series", k)
		}
	}
	t.Logf("Produce p99 %vms FetchConsumer p99 %vms, bytesout %v (produced %d), connections %v",
		m[`kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Produce"}`],
		m[`kafka_network_requestmetrics_totaltimems{quantile="0.99",request="FetchConsumer"}`],
		m[`kafka_server_brokertopicmetrics_bytesout_total{topic="reqm"}`], produced,
		m[`kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT"}`])

	// Closed clients are counted as closed connections.
	cons.Close()
	cl.Close()
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		m, err := scrape(addr)
		if err != nil {
			return err
		}
		if v := m[`kafka_server_socket_server_metrics_connection_close_total{listener="PLAINTEXT"}`]; v < 1 {
			return fmt.Errorf("connection_close_total is %v", v)
		}
		return nil
	})
}

// TestMetricsReplicationBytes: on a topic replicated to two nodes, the
// leader counts the bytes its follower fetched as replication bytes out
// (not bytes out), and the follower the bytes it appended as replication
// bytes in; followers' fetches are FetchFollower requests; the controller
// channel's requests (BrokerHeartbeat) and connections are counted.
func TestMetricsReplicationBytes(t *testing.T) {
	c := sluicetest.StartCluster(t, 2, "metrics.listener=127.0.0.1:0")
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "repl"); err != nil {
		t.Fatal(err)
	}
	c.WaitForISR("repl", 0, 2)
	h := &batchBytes{}
	cl := c.Client(kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()))
	for i := range 20 {
		cl.Produce(ctx, &kgo.Record{Topic: "repl", Value: []byte(strings.Repeat("r", 50+i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	produced := float64(h.bytes)
	h.mu.Unlock()
	sluicetest.WaitFor(t, 15*time.Second, func() error {
		var out, in, followerFetches, heartbeats, ctrlConns float64
		for id := 1; id <= 2; id++ {
			m, err := scrape(c.Node(id).Broker.MetricsAddr())
			if err != nil {
				return err
			}
			out += m["kafka_server_brokertopicmetrics_replicationbytesout_total"]
			in += m["kafka_server_brokertopicmetrics_replicationbytesin_total"]
			followerFetches += m[`kafka_network_requestmetrics_totaltimems_count{request="FetchFollower"}`]
			heartbeats += m[`kafka_network_requestmetrics_totaltimems_count{request="BrokerHeartbeat"}`]
			ctrlConns += m[`kafka_server_socket_server_metrics_connection_creation_total{listener="CONTROLLER"}`]
			if v := m[`kafka_server_brokertopicmetrics_bytesout_total{topic="repl"}`]; v != 0 {
				return fmt.Errorf("node %d: bytesout of repl is %v with no consumer", id, v)
			}
		}
		if out < produced || in < produced || followerFetches < 1 {
			return fmt.Errorf("replication bytes out %v, in %v, FetchFollower requests %v; produced %v batch bytes", out, in, followerFetches, produced)
		}
		// The controller channel's requests and connections count too.
		if heartbeats < 1 || ctrlConns < 1 {
			return fmt.Errorf("BrokerHeartbeat requests %v, CONTROLLER connections opened %v", heartbeats, ctrlConns)
		}
		return nil
	})
}

// TestMetricsThrottleTime: a producer over its producer_byte_rate is
// told throttle times, and ThrottleTimeMs of Produce records them.
func TestMetricsThrottleTime(t *testing.T) {
	node, greedy, hook, ctx := throttledProducer(t, "greedy", "metered-quota")
	for range 6 {
		if err := greedy.ProduceSync(ctx, &kgo.Record{Value: incompressible(3000)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if after, held := hook.count(); after+held == 0 {
		t.Fatal("the producer was never throttled")
	}
	// A request's times are observed once its answer is written, which
	// the client may see before the broker records the last one: poll.
	var m map[string]float64
	var sum, count float64
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		var err error
		if m, err = scrape(node.Broker.MetricsAddr()); err != nil {
			return err
		}
		sum = m[`kafka_network_requestmetrics_throttletimems_sum{request="Produce"}`]
		count = m[`kafka_network_requestmetrics_throttletimems_count{request="Produce"}`]
		if sum <= 0 || count < 6 {
			return fmt.Errorf("throttletimems of Produce: sum %v over %v requests, want > 0 over at least 6", sum, count)
		}
		return nil
	})
	t.Logf("throttletimems{request=Produce}: sum %vms over %v requests, p99 %v", sum, count,
		m[`kafka_network_requestmetrics_throttletimems{quantile="0.99",request="Produce"}`])
}
