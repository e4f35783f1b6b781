package compat

// The prometheus row (issue 21, acceptance 1): a real Prometheus server
// (Debian's prometheus package) scrapes the metrics listener of every node
// of a three-node cluster every second while kgo produces, and the row
// asks Prometheus' HTTP API the PromQL a Kafka dashboard asks: bytes in per
// topic, p99 produce latency, under-replicated partitions (0, then > 0
// while a node is stopped, then 0 once it is back) and a consumer group's
// lag. Every figure the queries return is logged.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func prometheusRow() row {
	return row{
		name:    "prometheus",
		tools:   []string{"prometheus"},
		timeout: 5 * time.Minute,
		nodes:   3,
		// Port 0: each node logs the address it bound; the row pins it
		// before restarting a node, so Prometheus' targets stay put.
		overrides: []string{"metrics.listener=127.0.0.1:0"},
		run:       runPrometheus,
	}
}

var metricsAddrRE = regexp.MustCompile(`msg="metrics listener serving".* addr=(\S+)`)

// metricsAddr is the address b's metrics listener logged last.
func metricsAddr(b *broker) (string, error) {
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		return "", err
	}
	m := metricsAddrRE.FindAllSubmatch(data, -1)
	if len(m) == 0 {
		return "", fmt.Errorf("node %d logged no metrics listener address", b.id)
	}
	return string(m[len(m)-1][1]), nil
}

// promServer is a running Prometheus.
type promServer struct {
	cmd    *exec.Cmd
	addr   string
	log    string
	exited chan struct{}
}

// startPrometheus runs prometheus scraping targets (node id → address)
// every second, with its config, TSDB and log under dir, its web API on a
// free loopback port.
func startPrometheus(ctx context.Context, dir string, targets map[int32]string) (*promServer, error) {
	var cfg strings.Builder
	cfg.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: sluice\n    static_configs:\n")
	ids := slices.Sorted(func(yield func(int32) bool) {
		for id := range targets {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		fmt.Fprintf(&cfg, "      - targets: [%q]\n        labels: {node: %q}\n", targets[id], strconv.Itoa(int(id)))
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := &promServer{addr: fmt.Sprintf("127.0.0.1:%d", port), log: filepath.Join(dir, "prometheus.log"), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command("prometheus", "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+p.addr, "--log.level=warn")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	err = pollUntil(ctx, 60*time.Second, func() error {
		select {
		case <-p.exited:
			return fmt.Errorf("prometheus exited: %s", tail(p.log, 5))
		default:
		}
		resp, err := http.Get("http://" + p.addr + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: %s", resp.Status)
		}
		return nil
	})
	if err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *promServer) stop() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// promSample is one series of an instant vector.
type promSample struct {
	labels map[string]string
	value  float64
}

// query runs an instant PromQL query through /api/v1/query.
func (p *promServer) query(ctx context.Context, q string) ([]promSample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.addr+"/api/v1/query?query="+url.QueryEscape(q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s: %v: %q", q, err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s %s", q, r.Status, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("%s: result type %s, want vector", q, r.Data.ResultType)
	}
	var out []promSample
	for _, s := range r.Data.Result {
		str, _ := s.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v: %v", q, s.Value[1], err)
		}
		out = append(out, promSample{labels: s.Metric, value: v})
	}
	return out, nil
}

// scalar runs q, which must return one series, and returns its value.
func (p *promServer) scalar(ctx context.Context, q string) (float64, error) {
	s, err := p.query(ctx, q)
	if err != nil {
		return 0, err
	}
	if len(s) != 1 {
		return 0, fmt.Errorf("%s returned %d series, want 1", q, len(s))
	}
	return s[0].value, nil
}

// waitScalar polls q until ok holds for its value and returns the value.
func (p *promServer) waitScalar(ctx context.Context, limit time.Duration, q, want string, ok func(float64) bool) (float64, error) {
	var v float64
	err := pollUntil(ctx, limit, func() error {
		var err error
		if v, err = p.scalar(ctx, q); err != nil {
			return err
		}
		if !ok(v) {
			return fmt.Errorf("%s = %v, want %s", q, v, want)
		}
		return nil
	})
	return v, err
}

func runPrometheus(ctx context.Context, env *rowEnv) error {
	targets := map[int32]string{}
	for _, b := range env.nodes {
		addr, err := metricsAddr(b)
		if err != nil {
			return err
		}
		targets[b.id] = addr
	}
	prom, err := startPrometheus(ctx, env.dir, targets)
	if err != nil {
		return fmt.Errorf("starting prometheus: %w", err)
	}
	defer prom.stop()
	env.t.Logf("prometheus on %s scraping %v every 1s, log %s", prom.addr, targets, prom.log)
	if _, err := prom.waitScalar(ctx, 60*time.Second, `sum(up{job="sluice"})`, "3", func(v float64) bool { return v == 3 }); err != nil {
		return fmt.Errorf("every target up: %w\n%s", err, tail(prom.log, 10))
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"prom-load", "prom-lag"} {
		if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
			return fmt.Errorf("create %s: %w", topic, err)
		}
	}

	// Load: produce to prom-load in the background until bytes in and
	// the produce latency have been seen.
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan int)
	go func() {
		n := 0
		value := []byte(strings.Repeat("v", 200))
		for loadCtx.Err() == nil {
			results := cl.ProduceSync(loadCtx, &kgo.Record{Topic: "prom-load", Value: value}, &kgo.Record{Topic: "prom-load", Value: value})
			if results.FirstErr() == nil {
				n += len(results)
			}
		}
		loadDone <- n
	}()

	// Bytes in per topic.
	bytesIn := `sum by (topic) (rate(kafka_server_brokertopicmetrics_bytesin_total[10s]))`
	var rate float64
	err = pollUntil(ctx, 60*time.Second, func() error {
		s, err := prom.query(ctx, bytesIn)
		if err != nil {
			return err
		}
		for _, x := range s {
			if x.labels["topic"] == "prom-load" && x.value > 0 {
				rate = x.value
				return nil
			}
		}
		return fmt.Errorf("%s: no series of prom-load above 0 in %v", bytesIn, s)
	})
	if err != nil {
		return err
	}
	env.t.Logf("PromQL %s → topic prom-load %.0f bytes/s", bytesIn, rate)

	// p99 produce latency: the cluster's, from the request histograms'
	// buckets, and each node's quantile gauge as the JMX-exporter
	// dashboards query it.
	p99 := `histogram_quantile(0.99, sum by (le) (rate(kafka_network_requestmetrics_totaltimems_bucket{request="Produce"}[15s])))`
	v, err := prom.waitScalar(ctx, 30*time.Second, p99, "a latency above 0", func(v float64) bool { return v > 0 })
	if err != nil {
		return err
	}
	env.t.Logf("PromQL %s → %.2f ms", p99, v)
	dash := `max(kafka_network_requestmetrics_totaltimems{request="Produce",quantile="0.99"})`
	v, err = prom.waitScalar(ctx, 30*time.Second, dash, "a latency above 0", func(v float64) bool { return v > 0 })
	if err != nil {
		return err
	}
	env.t.Logf("PromQL %s → %.2f ms", dash, v)
	stopLoad()
	produced := <-loadDone
	env.t.Logf("load: %d records produced to prom-load", produced)

	// Under-replicated partitions: 0, > 0 with node 3 stopped, 0 again.
	urp := `sum(kafka_server_replicamanager_underreplicatedpartitions)`
	v, err = prom.waitScalar(ctx, 30*time.Second, urp, "0", func(v float64) bool { return v == 0 })
	if err != nil {
		return err
	}
	env.t.Logf("PromQL %s → %v with every node up", urp, v)
	stopped := env.nodes[2]
	if err := stopped.stop(); err != nil {
		return fmt.Errorf("stop node %d: %w", stopped.id, err)
	}
	v, err = prom.waitScalar(ctx, 60*time.Second, urp, "> 0", func(v float64) bool { return v > 0 })
	if err != nil {
		return fmt.Errorf("node %d stopped: %w", stopped.id, err)
	}
	env.t.Logf("PromQL %s → %v with node %d stopped", urp, v, stopped.id)
	// The node comes back on the metrics port Prometheus scrapes.
	for i, p := range stopped.props {
		if strings.HasPrefix(p, "metrics.listener=") {
			stopped.props[i] = "metrics.listener=" + targets[stopped.id]
		}
	}
	if err := env.restartNode(ctx, stopped.id); err != nil {
		return err
	}
	if _, err := prom.waitScalar(ctx, 60*time.Second, `sum(up{job="sluice"})`, "3", func(v float64) bool { return v == 3 }); err != nil {
		return fmt.Errorf("node %d back: %w", stopped.id, err)
	}
	v, err = prom.waitScalar(ctx, 90*time.Second, urp, "0", func(v float64) bool { return v == 0 })
	if err != nil {
		return fmt.Errorf("node %d back: %w", stopped.id, err)
	}
	env.t.Logf("PromQL %s → %v with node %d back", urp, v, stopped.id)

	// A group's lag: 300 records produced, 120 read and committed.
	const total, read = 300, 120
	for i := range total {
		cl.Produce(ctx, &kgo.Record{Topic: "prom-lag", Partition: int32(i % 3), Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.ConsumerGroup("prom-group"), kgo.ConsumeTopics("prom-lag"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	if err != nil {
		return err
	}
	var recs []*kgo.Record
	for len(recs) < read && ctx.Err() == nil {
		fs := cons.PollRecords(ctx, read-len(recs))
		recs = append(recs, fs.Records()...)
	}
	if err := cons.CommitRecords(ctx, recs...); err != nil {
		cons.Close()
		return fmt.Errorf("commit: %w", err)
	}
	cons.Close()
	lag := `sum by (consumergroup) (kafka_consumergroup_lag{consumergroup="prom-group",topic="prom-lag"})`
	v, err = prom.waitScalar(ctx, 60*time.Second, lag, strconv.Itoa(total-read), func(v float64) bool { return v == total-read })
	if err != nil {
		return err
	}
	env.t.Logf("PromQL %s → %v (%d produced, %d consumed and committed)", lag, v, total, len(recs))
	return nil
}
