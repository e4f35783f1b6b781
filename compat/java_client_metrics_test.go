package compat

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicedev/sluice/sluicetest"
)

// The kafka-client-metrics row (issue 20's KIP-714, with issue 21's
// metrics endpoint): Kafka 4.4.0's kafka-client-metrics.sh
// (org.apache.kafka.tools.ClientMetricsCommand, from the jars
// `compat/kafkatools/fetch.sh 4.4.0` keeps) creates, lists and describes a
// client metrics subscription on one sluice node with metrics.listener
// on, and has two bad changes refused with Kafka's messages; then Kafka
// 4.4.0's Java producer (kafka-producer-perf-test.sh, telemetry on by
// default: enable.metrics.push=true), which the subscription matches,
// pushes its metrics every second, and the node's /metrics must show its
// org_apache_kafka_producer_* series labelled with its client id, software
// name and version and client instance id. Last, --delete removes the
// subscription and --list shows none.

const (
	clientMetricsTopic   = "compat-client-metrics"
	clientMetricsClient  = "compat-telemetry-perf"
	clientMetricsRecords = 3000
)

func javaClientMetricsRow() row {
	r := javaRow("kafka-client-metrics", 3*time.Minute, runJavaClientMetrics)
	r.overrides = []string{"metrics.listener=127.0.0.1:0"}
	return r
}

func runJavaClientMetrics(ctx context.Context, env *rowEnv) error {
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	addr := env.broker.addr
	tool := func(args ...string) (string, error) {
		return kafka44Tool(ctx, env, libs, "kafka-client-metrics.sh", append([]string{"--bootstrap-server", addr}, args...)...)
	}
	out, err := tool("--alter", "--name", "producers", "--metrics", "org.apache.kafka.producer.",
		"--interval", "1000", "--match", "client_software_name=apache-kafka-java")
	if err != nil {
		return err
	}
	if want := "Altered client metrics config for producers."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--alter printed %q, want %q", out, want)
	}
	if out, err = tool("--list"); err != nil {
		return err
	}
	if strings.TrimSpace(out) != "producers" {
		return fmt.Errorf("--list printed %q, want producers", out)
	}
	if out, err = tool("--describe", "--name", "producers"); err != nil {
		return err
	}
	for _, want := range []string{"Client metrics configs for producers are:", "  interval.ms=1000", "  match=client_software_name=apache-kafka-java", "  metrics=org.apache.kafka.producer."} {
		if !strings.Contains(out, want+"\n") {
			return fmt.Errorf("--describe printed %q, without the line %q", out, want)
		}
	}
	for _, bad := range []struct{ args, msg string }{
		{"--interval 5", "Invalid value 5 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"--match foo=bar", "Illegal client matching pattern: foo=bar"},
	} {
		_, err := tool(append([]string{"--alter", "--name", "bad"}, strings.Fields(bad.args)...)...)
		if err == nil || !strings.Contains(err.Error(), bad.msg) {
			return fmt.Errorf("--alter %s: %v, want a failure saying %q", bad.args, err, bad.msg)
		}
	}

	if err := createTopic(ctx, addr, clientMetricsTopic, 1); err != nil {
		return err
	}
	// Six seconds of producing at 500 records/s: about five pushes.
	if _, err := kafka44Tool(ctx, env, libs, "kafka-producer-perf-test.sh",
		"--topic", clientMetricsTopic, "--num-records", strconv.Itoa(clientMetricsRecords), "--record-size", "100",
		"--throughput", "500", "--producer-props", "bootstrap.servers="+addr, "client.id="+clientMetricsClient); err != nil {
		return err
	}
	maddr, err := metricsAddr(env.broker)
	if err != nil {
		return err
	}
	samples, err := scrapeSamples(ctx, maddr)
	if err != nil {
		return err
	}
	var series []string
	instance := ""
	for s := range samples {
		if !strings.HasPrefix(s, "org_apache_kafka_producer_") || !strings.Contains(s, `client_id="`+clientMetricsClient+`"`) {
			continue
		}
		if !strings.Contains(s, `client_software_name="apache-kafka-java"`) || !strings.Contains(s, `client_software_version="4.4.0"`) {
			return fmt.Errorf("series %s lacks the producer's software name and version", s)
		}
		i := strings.Index(s, `client_instance_id="`)
		if i < 0 {
			return fmt.Errorf("series %s has no client_instance_id", s)
		}
		id, _, _ := strings.Cut(s[i+len(`client_instance_id="`):], `"`)
		if instance != "" && id != instance {
			return fmt.Errorf("series of one producer carry client instance ids %s and %s", instance, id)
		}
		instance = id
		series = append(series, s)
	}
	sort.Strings(series)
	env.t.Logf("/metrics: %d org_apache_kafka_producer_* series of client %s (instance %s)", len(series), clientMetricsClient, instance)
	for _, s := range series {
		if strings.Contains(s, "record_send_total") || strings.Contains(s, "node_request_total") {
			env.t.Logf("  %s %v", s, samples[s])
		}
	}
	if len(series) < 20 {
		return fmt.Errorf("/metrics shows %d org_apache_kafka_producer_* series of the Java producer, want its producer metrics (20 or more)", len(series))
	}
	sent := ""
	for _, s := range series {
		if strings.HasPrefix(s, "org_apache_kafka_producer_topic_record_send_total{") && strings.Contains(s, `topic="`+clientMetricsTopic+`"`) {
			sent = s
		}
	}
	if sent == "" || samples[sent] <= 0 || samples[sent] > clientMetricsRecords {
		return fmt.Errorf("/metrics: topic_record_send_total of %s is %q = %v, want between 1 and %d", clientMetricsTopic, sent, samples[sent], clientMetricsRecords)
	}

	if out, err = tool("--delete", "--name", "producers"); err != nil {
		return err
	}
	if want := "Deleted client metrics config for producers."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--delete printed %q, want %q", out, want)
	}
	if out, err = tool("--list"); err != nil {
		return err
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("--list after --delete printed %q, want nothing", out)
	}
	return nil
}

// scrapeSamples GETs /metrics from addr: every sample by its series as
// exposed (name{labels}).
func scrapeSamples(ctx context.Context, addr string) (map[string]float64, error) {
	return sluicetest.ScrapeMetrics(ctx, addr)
}
