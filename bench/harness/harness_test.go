package main

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs the harness in -quick mode and checks that every workload
// produced a number on every system that ran, and that the bytes each
// produce workload sent landed in every node's segments; it asserts no
// time. It is
// skipped unless SLUICE_BENCH_SMOKE=1 (scripts/test-all.sh sets it), since
// it starts real clusters. SLUICE_BENCH_SYSTEMS picks the systems (default
// kafka,sluice: about a minute and a half on 2 cores, most of it Kafka's
// JVMs starting, which keeps the Kafka half of the harness from rotting).
// SLUICE_BENCH_SECURITY picks the -security modes (default plaintext;
// plaintext,sasl_ssl runs each system twice, secured the second time, and
// checks the secured runs' figures too). SLUICE_BENCH_WORKLOADS picks the
// -workloads (default: all but issue 22's stress workloads 9 to 13, which
// would add minutes on Kafka — its CPU hog failover alone takes two — and
// have their own run: -quick -workloads conns,groups,txn,cpuhog,scale100k).
func TestSmoke(t *testing.T) {
	if os.Getenv("SLUICE_BENCH_SMOKE") != "1" {
		t.Skip("set SLUICE_BENCH_SMOKE=1 to run the harness's quick mode against real brokers")
	}
	systems := os.Getenv("SLUICE_BENCH_SYSTEMS")
	if systems == "" {
		systems = "kafka,sluice"
	}
	modes := os.Getenv("SLUICE_BENCH_SECURITY")
	if modes == "" {
		modes = modePlaintext
	}
	workloads := os.Getenv("SLUICE_BENCH_WORKLOADS")
	if workloads == "" {
		workloads = strings.Join(slices.DeleteFunc(slices.Clone(workloadNames), func(w string) bool {
			return slices.Contains([]string{"conns", "groups", "txn", "cpuhog", "scale100k"}, w)
		}), ",")
	}
	chart := filepath.Join(t.TempDir(), "chart.png")
	cfg, err := parseFlags([]string{"-quick", "-systems", systems, "-security", modes, "-workloads", workloads, "-chart", chart})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	var log bytes.Buffer
	res, err := run(ctx, cfg, &log)
	t.Logf("harness log:\n%s", log.String())
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	res.writeTable(&table, cfg.workloads, cfg.scalePartitions)
	t.Logf("table:\n%s", table.String())
	for _, e := range res.errs {
		t.Errorf("failed: %s", e)
	}
	var columns []string
	for _, sys := range cfg.systems {
		for _, mode := range cfg.security {
			sec := &security{mode: mode}
			columns = append(columns, columnName(sys, sec))
			for _, m := range metrics {
				if !cfg.workloads[m.workload] || m.workload == "coldstart" && sec.secured() {
					continue // not asked for, or plaintext only
				}
				if _, ok := res.get(m.key, columnName(sys, sec)); !ok {
					t.Errorf("%s: no figure for %q", columnName(sys, sec), m.key)
				}
			}
		}
	}
	// The bytes-on-disk check (landed.go) ran after every workload that
	// produces, and agreed; a disagreement is also in res.errs.
	for _, sys := range columns {
		for w, workload := range map[string]string{landedProduce: "produce", landedLatency: "latency", landedConsume: "consume"} {
			if !cfg.workloads[workload] {
				continue
			}
			n := 0
			for _, row := range res.bytes {
				if row.system == sys && row.workload == w {
					n++
					if row.err != nil {
						t.Errorf("%s %s: %v", sys, w, row.err)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s %s: %d bytes-on-disk checks, want 1", sys, w, n)
			}
		}
	}
	// The machine's ceiling was measured before the systems (ceiling.go).
	if res.machine == nil || produceCeiling.rate(res.machine) <= 0 || consumeCeiling.rate(res.machine) <= 0 {
		t.Errorf("the machine's ceiling is missing: %+v", res.machine)
	}
	if len(cfg.systems) == 2 {
		if err := writeChart(chart, res, cfg.workloads, cfg.scalePartitions); err != nil {
			t.Errorf("chart: %v", err)
		}
	}
}

// TestChart draws a chart from made-up figures, with a missing one and
// ratios on both sides of 1, and checks that the file is a PNG.
// SLUICE_BENCH_CHART=file.png keeps it there, to look at.
func TestChart(t *testing.T) {
	res := newResults()
	ran := map[string]bool{}
	for i, m := range metrics {
		ran[m.workload] = true
		if m.key == "scale_isr_s" {
			continue // drawn as "no data"
		}
		res.set(m.key, "kafka", 100)
		res.set(m.key, "sluice", 100*float64(i+1)/5)
	}
	path := os.Getenv("SLUICE_BENCH_CHART")
	if path == "" {
		path = filepath.Join(t.TempDir(), "chart.png")
	}
	if err := writeChart(path, res, ran, 10_000); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("chart is %v, want a readable size", b)
	}
	var table strings.Builder
	res.writeTable(&table, ran, 10_000)
	if !strings.Contains(table.String(), "| 1 producer throughput") || !strings.Contains(table.String(), "—") {
		t.Errorf("table:\n%s", table.String())
	}
}

// TestPercentile checks nearest-rank percentiles on a small sample.
func TestPercentile(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 1000; i++ {
		s = append(s, time.Duration(i))
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500}, {0.99, 990}, {0.999, 999}, {1, 1000}} {
		if got := percentile(s, tc.q); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := median([]time.Duration{3, 1, 2, 10}); got != 2 {
		t.Errorf("median = %v, want 2", got)
	}
}

// TestSystemsOrderForLatency: sluice before Kafka would run workload 2 at
// two different rates (a full run at 299cee9 did: sluice at half of its
// own rate, p99 781 ms, Kafka at half of Kafka's).
func TestSystemsOrderForLatency(t *testing.T) {
	if _, err := parseFlags([]string{"-systems", "sluice,kafka"}); err == nil {
		t.Error("-systems sluice,kafka with workload 2 and no -rate: accepted")
	}
	for _, args := range [][]string{
		{"-systems", "kafka,sluice"},
		{"-systems", "sluice,kafka", "-rate", "1000"},
		{"-systems", "sluice,kafka", "-workloads", "produce,consume"},
		{"-systems", "sluice"},
	} {
		if _, err := parseFlags(args); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

// TestSecurityFlag checks -security's parsing and what sasl_ssl gives both
// systems: one SASL_SSL listener for clients and replication, TLS from
// the certificates it wrote, SCRAM-SHA-512 with the brokers' login, and
// Kafka's users added at format time.
func TestSecurityFlag(t *testing.T) {
	cfg, err := parseFlags([]string{"-security", "plaintext, SASL_SSL,plaintext"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.security, ","); got != "plaintext,sasl_ssl" {
		t.Errorf("-security: got %s", got)
	}
	if cfg, _ := parseFlags(nil); strings.Join(cfg.security, ",") != "plaintext" {
		t.Errorf("default -security: got %v", cfg.security)
	}
	if _, err := parseFlags([]string{"-security", "ssl"}); err == nil {
		t.Error("-security ssl accepted")
	}

	sec, err := newSecurity(modeSASLSSL, filepath.Join(t.TempDir(), "certs"))
	if err != nil {
		t.Fatal(err)
	}
	props := kafkaNode{id: 1, client: 9092, ctrlPort: 9093}.properties("1@127.0.0.1:9093", "/data", sec)
	for _, want := range []string{
		"listeners=SASL_SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n",
		"advertised.listeners=SASL_SSL://127.0.0.1:9092\n",
		"listener.security.protocol.map=CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL\n",
		"inter.broker.listener.name=SASL_SSL\n",
		"sasl.enabled.mechanisms=SCRAM-SHA-512\n",
		"sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n",
		`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";` + "\n",
		"ssl.keystore.location=" + sec.certs.Server.P12File + "\n",
		"ssl.truststore.location=" + sec.certs.TruststoreP12 + "\n",
	} {
		if !strings.Contains(props, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, props)
		}
	}
	if got := strings.Join(sec.kafkaScramArgs(), " "); got != "--add-scram SCRAM-SHA-512=[name=broker,iterations=4096,password=broker-secret] --add-scram SCRAM-SHA-512=[name=bench,iterations=4096,password=bench-secret]" {
		t.Errorf("format arguments: %s", got)
	}
	if len(sec.clientOpts()) != 2 {
		t.Errorf("client options: %d, want TLS and SASL", len(sec.clientOpts()))
	}
	plain := kafkaNode{id: 1, client: 9092, ctrlPort: 9093}.properties("1@127.0.0.1:9093", "/data", nil)
	if !strings.Contains(plain, "listeners=PLAINTEXT://127.0.0.1:9092,") || strings.Contains(plain, "sasl") || strings.Contains(plain, "ssl.") {
		t.Errorf("plaintext server.properties:\n%s", plain)
	}
}

// TestMetricsCostSummary checks -metrics-cost's parsing and summary on
// made-up runs: medians, per-round ratios (a failed run leaves its round
// out), and the verdict against the 3 % goal.
func TestMetricsCostSummary(t *testing.T) {
	cfg, err := parseFlags([]string{"-metrics-cost", "3", "-scrape-interval", "2s"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.metricsCost != 3 || cfg.scrapeEvery != 2*time.Second {
		t.Fatalf("-metrics-cost 3 -scrape-interval 2s: got %d, %s", cfg.metricsCost, cfg.scrapeEvery)
	}
	c := &costResults{runs: []costRun{
		{round: 1, on: false, mibs: 100, cpu: 10 * time.Second, sent: 2 << 30}, {round: 1, on: true, mibs: 99, scrapes: 12, cpu: 11 * time.Second, sent: 2 << 30},
		{round: 2, on: true, mibs: 90, scrapes: 12}, {round: 2, on: false, mibs: 96},
		{round: 3, on: false, mibs: 104}, {round: 3, on: true, mibs: 0},
	}, errs: []string{"round 3 sluice+metrics produce: boom"}}
	if got := medianOf(c.figures(false)); got != 100 {
		t.Errorf("median off = %v, want 100", got)
	}
	if got := medianOf(c.figures(true)); got != 94.5 {
		t.Errorf("median on = %v, want 94.5", got)
	}
	if got := c.roundRatios(); len(got) != 2 {
		t.Errorf("round ratios = %v, want rounds 1 and 2 only", got)
	}
	var out strings.Builder
	c.write(&out, cfg)
	for _, want := range []string{
		"| 1 | off, on | 100 | 99.0 | 0.990 | 12 (0) | 5.00 | 5.50 |",
		"| 2 | on, off | 96.0 | 90.0 | 0.938 | 12 (0) | — | — |",
		"| 3 | off, on | 104 | failed | — | 0 (0) | — | — |",
		"off 5.00 s, on 5.50 s  on / off 1.100",
		"on / off of the medians: 0.945 (goal ≥ 0.97, within 3 %: NOT met)",
		"FAILED round 3 sluice+metrics produce: boom",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}
