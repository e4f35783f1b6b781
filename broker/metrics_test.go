package broker_test

// The metrics listener seen as Prometheus sees it: scraped over HTTP from
// real nodes while a kgo client produces and nodes stop and return.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/config"
	"github.com/sluicedev/sluice/sluicetest"
)

// recordBatchOverhead is a v2 record batch's header (Kafka's
// DefaultRecordBatch.RECORD_BATCH_OVERHEAD), which kgo's batch metrics
// leave out.
const recordBatchOverhead = 61

// scrape GETs /metrics from addr and returns every sample by its series as
// exposed (name{labels}).
func scrape(addr string) (map[string]float64, error) {
	return sluicetest.ScrapeMetrics(context.Background(), addr)
}

// status GETs path from addr and returns the status code.
func status(addr, path string) (int, string, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// batchBytes is a kgo hook summing the bytes of the batches it produced.
type batchBytes struct {
	mu             sync.Mutex
	bytes, records int
}

func (h *batchBytes) OnProduceBatchWritten(_ kgo.BrokerMetadata, _ string, _ int32, m kgo.ProduceBatchMetrics) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.bytes += m.CompressedBytes + recordBatchOverhead
	h.records += m.NumRecords
}

// TestMetricsProduceCounters: bytes in and messages in for a topic grow by
// what a client produced, /healthz and /readyz answer 200 on a ready node,
// and produce requests are counted by API and version.
func TestMetricsProduceCounters(t *testing.T) {
	n := sluicetest.Start(t, "metrics.listener=127.0.0.1:0")
	addr := n.Broker.MetricsAddr()
	if addr == "" {
		t.Fatal("metrics.listener is set but the broker has no metrics address")
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		code, body, err := status(addr, path)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: %d %q %v", path, code, body, err)
		}
	}
	createTopic(t, n, "metered", 1, nil)
	before, err := scrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &batchBytes{}
	cl := n.Client(kgo.WithHooks(h), kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(0))
	const records = 50
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Topic: "metered", Value: []byte(strings.Repeat("v", i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := scrape(addr)
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	wantBytes, wantRecords := h.bytes, h.records
	h.mu.Unlock()
	if wantRecords != records {
		t.Fatalf("the client's hook saw %d records, produced %d", wantRecords, records)
	}
	bytesIn := `kafka_server_brokertopicmetrics_bytesin_total{topic="metered"}`
	msgsIn := `kafka_server_brokertopicmetrics_messagesin_total{topic="metered"}`
	if got := after[bytesIn] - before[bytesIn]; got != float64(wantBytes) {
		t.Errorf("%s grew by %v, the client produced %d batch bytes", bytesIn, got, wantBytes)
	}
	if got := after[msgsIn] - before[msgsIn]; got != records {
		t.Errorf("%s grew by %v, the client produced %d records", msgsIn, got, records)
	}
	var produces float64
	for k, v := range after {
		if strings.HasPrefix(k, `kafka_network_requestmetrics_requests_total{request="Produce",`) {
			produces += v
		}
	}
	if produces < 1 {
		t.Errorf("no Produce requests counted")
	}
	for _, k := range []string{"go_goroutines", "kafka_controller_kafkacontroller_activecontrollercount", "kafka_server_replicamanager_underreplicatedpartitions"} {
		if _, ok := after[k]; !ok {
			t.Errorf("no %s in /metrics", k)
		}
	}
	if after["kafka_controller_kafkacontroller_activecontrollercount"] != 1 {
		t.Errorf("a lone node is the active controller, activecontrollercount = %v", after["kafka_controller_kafkacontroller_activecontrollercount"])
	}
	t.Logf("produced %d records in %d batch bytes; /metrics %s = %v", records, wantBytes, bytesIn, after[bytesIn])

	// A deleted topic's series go, as Kafka removes its topic metrics.
	if _, err := n.Admin().DeleteTopics(ctx, "metered"); err != nil {
		t.Fatal(err)
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		m, err := scrape(addr)
		if err != nil {
			return err
		}
		if v, ok := m[bytesIn]; ok {
			return fmt.Errorf("%s = %v after the topic was deleted", bytesIn, v)
		}
		return nil
	})
}

// TestMetricsUnderReplicated: with one of three nodes stopped a survivor
// reports under-replicated and under-min-ISR partitions (the topic's
// min.insync.replicas is 3), and none once it has returned;
// exactly one node counts itself the active controller.
func TestMetricsUnderReplicated(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, "metrics.listener=127.0.0.1:0")
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	minISR := "3"
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": &minISR}, "urp"); err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		c.WaitForISR("urp", p, 3)
	}
	urp := "kafka_server_replicamanager_underreplicatedpartitions"
	underMin := "kafka_server_replicamanager_underminisrpartitioncount"
	sum := func(key string, ids ...int) (float64, error) {
		var total float64
		for _, id := range ids {
			m, err := scrape(c.Node(id).Broker.MetricsAddr())
			if err != nil {
				return 0, err
			}
			v, ok := m[key]
			if !ok {
				return 0, fmt.Errorf("node %d: no %s", id, key)
			}
			total += v
		}
		return total, nil
	}
	wantSum := func(key string, want func(float64) bool, ids ...int) {
		t.Helper()
		sluicetest.WaitFor(t, 15*time.Second, func() error {
			v, err := sum(key, ids...)
			if err != nil {
				return err
			}
			if !want(v) {
				return fmt.Errorf("%s summed over nodes %v is %v", key, ids, v)
			}
			return nil
		})
	}
	wantSum(urp, func(v float64) bool { return v == 0 }, 1, 2, 3)
	wantSum(underMin, func(v float64) bool { return v == 0 }, 1, 2, 3)
	wantSum("kafka_controller_kafkacontroller_activecontrollercount", func(v float64) bool { return v == 1 }, 1, 2, 3)

	c.Stop(3)
	wantSum(urp, func(v float64) bool { return v > 0 }, 1, 2)
	wantSum(underMin, func(v float64) bool { return v > 0 }, 1, 2)
	v, _ := sum(urp, 1, 2)
	w, _ := sum(underMin, 1, 2)
	t.Logf("node 3 stopped: %s on nodes 1 and 2 = %v, %s = %v", urp, v, underMin, w)

	c.Restart(3)
	wantSum(urp, func(v float64) bool { return v == 0 }, 1, 2, 3)
	wantSum(underMin, func(v float64) bool { return v == 0 }, 1, 2, 3)
	for id := 1; id <= 3; id++ {
		code, body, err := status(c.Node(id).Broker.MetricsAddr(), "/readyz")
		if err != nil || code != http.StatusOK {
			t.Errorf("node %d /readyz: %d %q %v", id, code, body, err)
		}
	}
}

// TestMetricsReadyzBeforeJoin: a node whose raft quorum cannot form is
// alive (/healthz 200) but not ready (/readyz 503) while it waits to join.
func TestMetricsReadyzBeforeJoin(t *testing.T) {
	ports := make([]string, 5)
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().String()
		ln.Close()
	}
	metricsAddr := ports[4]
	cfg, err := config.Load("", []string{
		"log.dirs=" + t.TempDir(),
		"node.id=1",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://" + ports[0],
		"controller.quorum.voters=1@" + ports[0] + ",2@" + ports[1] + ",3@" + ports[2],
		"gossip.listener=" + ports[3],
		"metrics.listener=" + metricsAddr,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		b, err := broker.New(ctx, cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			b.Close()
		}
		done <- err
	}()
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		code, _, err := status(metricsAddr, "/healthz")
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("/healthz %d", code)
		}
		return nil
	})
	code, body, err := status(metricsAddr, "/readyz")
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a node waiting for its quorum: %d %q %v, want 503", code, body, err)
	}
	t.Logf("/readyz while waiting to join: %d %q", code, strings.TrimSpace(body))
	cancel()
	if err := <-done; err == nil {
		t.Error("broker.New joined a cluster without a quorum")
	}
	if _, _, err := status(metricsAddr, "/healthz"); err == nil {
		t.Error("the metrics listener still serves after broker.New failed")
	}
}
