package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The quota-perf row (issue 18, acceptance 1, 2 and the perf-tool half of
// 6): client byte-rate quotas set with kafka-configs.sh and measured with
// Kafka's perf tools on a three-node cluster.
//
//   - producer_byte_rate=1048576 on client id perf: kafka-producer-perf-test.sh
//     with client.id=perf and no throughput cap is held to at most 1 MiB/s
//     + 15 % (and not below half of it) and its produce-throttle-time-avg
//     (--print-metrics) is > 0, while a second producer, client.id=other,
//     running at the same time against the same leader, is not throttled
//     (throttle average 0) and goes faster than the quota allows
//     (withinRate says why the bounds are loose where speed is not the
//     point);
//   - the same with consumer_byte_rate and kafka-consumer-perf-test.sh
//     (fetch.MB.sec, fetch-throttle-time-avg).
//
// Quotas are per broker, as in Kafka: a client is held to its rate on
// each broker it talks to. The measured topic has one partition, so one
// leader carries the whole rate.
//
// The CI form runs each tool for about 20 s with quota.window.num=3: a
// rate is measured over the last two to three seconds, so 20 s spans many
// windows. With Kafka's default of 11 one-second samples the first 10 s
// of quota go out as a burst and the measure swings with an 11 s period,
// which only averages out over a minute. SLUICE_QUOTA_PERF_LONG=1 runs
// the long form instead: 60 s runs with Kafka's default windows, a run
// on a topic led by all three nodes (3 MiB/s in all: 1 MiB/s on each
// broker), and the table of entity → measured rate for <default> and
// more specific entities (acceptance 2), printed to the test log:
//
//	SLUICE_COMPAT=1 SLUICE_QUOTA_PERF_LONG=1 go test ./compat -run 'TestCompat$/quota-perf' -v -timeout 30m

const (
	quotaPerfTopic = "compat-quota-perf"
	quotaRate      = 1 << 20 // bytes per second
	quotaRecord    = 1024    // record size, bytes
)

// quotaPerfLong reports whether the long form was asked for.
func quotaPerfLong() bool { return os.Getenv("SLUICE_QUOTA_PERF_LONG") != "" }

func javaQuotaPerfRow() row {
	timeout := 6 * time.Minute
	var overrides []string
	if quotaPerfLong() {
		timeout = 25 * time.Minute
	} else {
		overrides = []string{"quota.window.num=3"}
	}
	r := javaClusterRow("quota-perf", timeout, runQuotaPerf)
	r.overrides = overrides
	return r
}

// quotaPerfSeconds is how long one measured run lasts.
func quotaPerfSeconds() int {
	if quotaPerfLong() {
		return 60
	}
	return 20
}

func runQuotaPerf(ctx context.Context, env *rowEnv) error {
	if err := createTopicRF(ctx, env, quotaPerfTopic, 1, 3); err != nil {
		return err
	}
	if err := quotaConfigs(ctx, env, "--add-config", fmt.Sprintf("producer_byte_rate=%d,consumer_byte_rate=%d", quotaRate, quotaRate),
		"--entity-type", "clients", "--entity-name", "perf"); err != nil {
		return err
	}
	if err := waitQuotaApplied(ctx, env, "perf", quotaRate); err != nil {
		return err
	}
	secs := quotaPerfSeconds()
	records := secs * quotaRate / quotaRecord

	// Producers: perf against its quota, other at the same time.
	var perf, other perfResult
	var perfErr, otherErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); perf, perfErr = producerPerf(ctx, env, "perf", records) }()
	go func() { defer wg.Done(); other, otherErr = producerPerf(ctx, env, "other", records) }()
	wg.Wait()
	if perfErr != nil {
		return perfErr
	}
	if otherErr != nil {
		return otherErr
	}
	env.t.Logf("quota-perf: producer client.id=perf (producer_byte_rate=%d): %.3f MiB/s over %.1f s, produce-throttle-time-avg %.1f ms", quotaRate, perf.mibPerSec, perf.seconds, perf.throttleAvg)
	env.t.Logf("quota-perf: producer client.id=other (no quota), same leader, same time: %.3f MiB/s, produce-throttle-time-avg %.1f ms", other.mibPerSec, other.throttleAvg)
	if err := withinRate("producer client.id=perf", perf.mibPerSec, 1); err != nil {
		return err
	}
	if !(perf.throttleAvg > 0) {
		return fmt.Errorf("producer client.id=perf: produce-throttle-time-avg %v, want > 0", perf.throttleAvg)
	}
	if other.throttleAvg != 0 || other.mibPerSec <= 1.15 {
		return fmt.Errorf("producer client.id=other (no quota) held to the quota: %.3f MiB/s, produce-throttle-time-avg %v; want above the quota's 1 MiB/s + 15 %% and 0", other.mibPerSec, other.throttleAvg)
	}

	// Consumers: the topic now holds perf's and other's records, two
	// runs' worth; perf reads one run's worth against its quota while
	// other reads both.
	perfC, otherC, err := concurrentConsumerPerf(ctx, env, records)
	if err != nil {
		return err
	}
	env.t.Logf("quota-perf: consumer client.id=perf (consumer_byte_rate=%d): %.3f MiB/s of record data over %.1f s, fetch-throttle-time-avg %.1f ms", quotaRate, perfC.mibPerSec, perfC.seconds, perfC.throttleAvg)
	env.t.Logf("quota-perf: consumer client.id=other (no quota), same time: %.3f MiB/s, fetch-throttle-time-avg %.1f ms", otherC.mibPerSec, otherC.throttleAvg)
	// The quota counts whole responses; the tool counts record values
	// and keys, some 2 % less.
	if err := withinRate("consumer client.id=perf", perfC.mibPerSec, 1); err != nil {
		return err
	}
	if !(perfC.throttleAvg > 0) {
		return fmt.Errorf("consumer client.id=perf: fetch-throttle-time-avg %v, want > 0", perfC.throttleAvg)
	}
	if otherC.throttleAvg != 0 || otherC.mibPerSec <= 1.15 {
		return fmt.Errorf("consumer client.id=other (no quota) held to the quota: %.3f MiB/s, fetch-throttle-time-avg %v; want above the quota's 1 MiB/s + 15 %% and 0", otherC.mibPerSec, otherC.throttleAvg)
	}
	if quotaPerfLong() {
		if err := quotaPerBroker(ctx, env); err != nil {
			return err
		}
		return quotaTable(ctx, env)
	}
	return nil
}

// quotaPerBroker measures perf's producer on a topic with a leader on
// each of the three nodes: quotas are per broker, as in Kafka, so it is
// held to 1 MiB/s on each, 3 MiB/s in all.
func quotaPerBroker(ctx context.Context, env *rowEnv) error {
	const topic = "compat-quota-spread"
	if err := createTopicRF(ctx, env, topic, 3, 3); err != nil {
		return err
	}
	res, err := producerPerfTo(ctx, env, topic, "perf", 3*quotaPerfSeconds()*quotaRate/quotaRecord)
	if err != nil {
		return err
	}
	env.t.Logf("quota-perf: producer client.id=perf on 3 partitions led by nodes 1, 2, 3: %.3f MiB/s over %.1f s (1 MiB/s on each broker), produce-throttle-time-avg %.1f ms", res.mibPerSec, res.seconds, res.throttleAvg)
	return withinRate("producer client.id=perf on three leaders", res.mibPerSec, 3)
}

// withinRate checks a measured rate against a quota of want MiB/s: at
// most 15 % over it (the quota is enforced), and at least half of it (the
// client is not held far below its quota). The lower bound is loose on
// purpose: on a loaded machine a client may fall short of its quota for
// reasons that are not the broker's, and this row checks enforcement, not
// speed; CI once saw an unthrottled producer reach only 2 MiB/s while
// other work ran.
func withinRate(what string, mibPerSec, want float64) error {
	if mibPerSec < 0.5*want || mibPerSec > 1.15*want {
		return fmt.Errorf("%s: %.3f MiB/s, want at most %.2f + 15 %% and at least half of it", what, mibPerSec, want)
	}
	return nil
}

// quotaTable measures producer rates under <default> and more specific
// entities, Kafka's KIP-55 precedence, and logs the table (acceptance 2).
// Every connection is user ANONYMOUS until sluice authenticates.
func quotaTable(ctx context.Context, env *rowEnv) error {
	const mib = 1 << 20
	steps := []struct {
		alter    []string // kafka-configs.sh arguments after --alter
		entities string   // what is set, for the table
		client   string   // the producer measured
		want     float64  // MiB/s
	}{
		{[]string{"--add-config", fmt.Sprintf("producer_byte_rate=%d", 2*mib), "--entity-type", "clients", "--entity-default"}, "clients=<default> 2 MiB/s; clients=perf 1 MiB/s", "anyone", 2},
		{nil, "(same)", "perf", 1},
		{[]string{"--add-config", fmt.Sprintf("producer_byte_rate=%d", mib/2), "--entity-type", "users", "--entity-default"}, "+ users=<default> 0.5 MiB/s", "perf", 0.5},
		{[]string{"--add-config", fmt.Sprintf("producer_byte_rate=%d", 3*mib/2), "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "perf"}, "+ users=<default>, clients=perf 1.5 MiB/s", "perf", 1.5},
		{nil, "(same)", "anyone", 0.5},
	}
	type line struct {
		entities, client string
		want, got        float64
	}
	var table []line
	entities := 1 // clients=perf, set by runQuotaPerf
	for _, s := range steps {
		if s.alter != nil {
			if err := quotaConfigs(ctx, env, s.alter...); err != nil {
				return err
			}
			entities++
			if err := waitAllNodesSeeQuota(ctx, env, entities); err != nil {
				return err
			}
		}
		secs := quotaPerfSeconds()
		res, err := producerPerf(ctx, env, s.client, int(s.want*float64(secs*mib))/quotaRecord)
		if err != nil {
			return err
		}
		table = append(table, line{s.entities, s.client, s.want, res.mibPerSec})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "quota-perf: entity → measured producer rate (user ANONYMOUS, one leader, %d s runs)\n", quotaPerfSeconds())
	fmt.Fprintf(&b, "| quotas set | client.id | quota in force | measured |\n|---|---|---|---|\n")
	var bad []string
	for _, l := range table {
		fmt.Fprintf(&b, "| %s | %s | %.2f MiB/s | %.3f MiB/s |\n", l.entities, l.client, l.want, l.got)
		if err := withinRate(l.client, l.got, l.want); err != nil {
			bad = append(bad, err.Error())
		}
	}
	env.t.Log(b.String())
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return nil
}

// quotaConfigs runs kafka-configs.sh --alter with args against node 1.
func quotaConfigs(ctx context.Context, env *rowEnv, args ...string) error {
	_, err := kafkaTool(ctx, env, nil, "kafka-configs.sh", append([]string{"--bootstrap-server", env.broker.addr, "--alter"}, args...)...)
	return err
}

// waitQuotaApplied waits until every node's DescribeClientQuotas shows
// producer_byte_rate=rate on client id clientID.
func waitQuotaApplied(ctx context.Context, env *rowEnv, clientID string, rate float64) error {
	return forEachNode(ctx, env, func(ctx context.Context, send requestFunc) error {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "client-id", 0, &clientID
		req.Components = append(req.Components, c)
		r, err := send(ctx, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.DescribeClientQuotasResponse)
		for _, e := range resp.Entries {
			for _, v := range e.Values {
				if v.Key == "producer_byte_rate" && v.Value == rate {
					return nil
				}
			}
		}
		return fmt.Errorf("producer_byte_rate=%v on client-id %s not described yet", rate, clientID)
	})
}

// waitAllNodesSeeQuota waits until every node describes at least n
// quota entities.
func waitAllNodesSeeQuota(ctx context.Context, env *rowEnv, n int) error {
	return forEachNode(ctx, env, func(ctx context.Context, send requestFunc) error {
		r, err := send(ctx, kmsg.NewPtrDescribeClientQuotasRequest())
		if err != nil {
			return err
		}
		resp := r.(*kmsg.DescribeClientQuotasResponse)
		if len(resp.Entries) < n {
			return fmt.Errorf("%d quota entities described, want %d", len(resp.Entries), n)
		}
		return nil
	})
}

// forEachNode polls check against each node in turn, its requests sent
// to that node alone, until it passes, for at most 20 s a node.
func forEachNode(ctx context.Context, env *rowEnv, check func(context.Context, requestFunc) error) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, n := range env.nodes {
		send := func(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
			return cl.Broker(int(n.id)).Request(ctx, req)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = check(rctx, send)
			cancel()
			if err == nil || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
	}
	return nil
}

// requestFunc sends a request to one broker.
type requestFunc func(context.Context, kmsg.Request) (kmsg.Response, error)

// perfResult is what a perf tool reported.
type perfResult struct {
	mibPerSec   float64
	seconds     float64
	throttleAvg float64 // ms; NaN if not printed
}

var (
	producerSummary = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\)`)
	produceThrottle = regexp.MustCompile(`produce-throttle-time-avg:\{client-id=([^}]*)\}\s*:\s*(\S+)`)
	fetchThrottle   = regexp.MustCompile(`fetch-throttle-time-avg:\{client-id=([^}]*)\}\s*:\s*(\S+)`)
)

// producerPerf runs kafka-producer-perf-test.sh with client.id=clientID,
// records of quotaRecord bytes and no throughput cap.
func producerPerf(ctx context.Context, env *rowEnv, clientID string, records int) (perfResult, error) {
	return producerPerfTo(ctx, env, quotaPerfTopic, clientID, records)
}

// producerPerfTo is producerPerf to topic.
func producerPerfTo(ctx context.Context, env *rowEnv, topic, clientID string, records int) (perfResult, error) {
	out, _, err := quotaTool(ctx, env, "kafka-producer-perf-test.sh",
		"--topic", topic, "--num-records", strconv.Itoa(records), "--record-size", strconv.Itoa(quotaRecord),
		"--throughput", "-1", "--print-metrics",
		"--producer-props", "bootstrap.servers="+strings.Join(env.bootstrap, ","), "client.id="+clientID)
	if err != nil {
		return perfResult{}, err
	}
	m := producerSummary.FindAllStringSubmatch(out, -1)
	if m == nil {
		return perfResult{}, fmt.Errorf("producer %s: no summary line in %q", clientID, firstLine(out))
	}
	last := m[len(m)-1]
	sent, _ := strconv.ParseFloat(last[1], 64)
	perSec, _ := strconv.ParseFloat(last[2], 64)
	mib, _ := strconv.ParseFloat(last[3], 64)
	res := perfResult{mibPerSec: mib, seconds: sent / perSec, throttleAvg: metric(produceThrottle, out, clientID)}
	return res, nil
}

// metric is the value re prints for clientID, NaN if none.
func metric(re *regexp.Regexp, out, clientID string) float64 {
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		if m[1] == clientID {
			v, err := strconv.ParseFloat(m[2], 64)
			if err == nil {
				return v
			}
		}
	}
	v, _ := strconv.ParseFloat("NaN", 64)
	return v
}

// concurrentConsumerPerf runs kafka-consumer-perf-test.sh as client.id
// perf (records messages) and, at the same time, as client.id other
// (twice as many), each in a group of its own, from the start of the
// topic.
func concurrentConsumerPerf(ctx context.Context, env *rowEnv, records int) (perf, other perfResult, err error) {
	var perfErr, otherErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); perf, perfErr = consumerPerf(ctx, env, "perf", records) }()
	go func() { defer wg.Done(); other, otherErr = consumerPerf(ctx, env, "other", 2*records) }()
	wg.Wait()
	if perfErr != nil {
		return perf, other, perfErr
	}
	return perf, other, otherErr
}

func consumerPerf(ctx context.Context, env *rowEnv, clientID string, records int) (perfResult, error) {
	props := filepath.Join(env.dir, "consumer-"+clientID+".properties")
	if err := os.WriteFile(props, []byte("client.id="+clientID+"\nauto.offset.reset=earliest\n"), 0o644); err != nil {
		return perfResult{}, err
	}
	args := []string{"--bootstrap-server", strings.Join(env.bootstrap, ","),
		"--topic", quotaPerfTopic, "--messages", strconv.Itoa(records), "--timeout", "120000",
		"--group", "compat-quota-" + clientID, "--consumer.config", props, "--print-metrics"}
	if !quotaPerfLong() {
		// A fetch over quota is answered empty and taken back, so a
		// consumer gets a whole fetch only once the window has room
		// for it: with the short form's 2–3 s window, the tool's
		// 1 MiB fetches (--fetch-size, its max.partition.fetch.bytes)
		// would leave a third of the quota unused. Kafka's default
		// 11 s window absorbs them.
		args = append(args, "--fetch-size", "131072")
	}
	out, _, err := quotaTool(ctx, env, "kafka-consumer-perf-test.sh", args...)
	if err != nil {
		return perfResult{}, err
	}
	var header, data []string
	for _, line := range strings.Split(out, "\n") {
		cols := strings.Split(line, ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		switch {
		case len(cols) > 1 && cols[0] == "start.time":
			header = cols
		case header != nil && data == nil && len(cols) == len(header):
			data = cols
		}
	}
	if header == nil || data == nil {
		return perfResult{}, fmt.Errorf("consumer %s: no header and data line in the output; it starts %q", clientID, firstLine(out))
	}
	col := map[string]float64{}
	for i, name := range header {
		col[name], _ = strconv.ParseFloat(data[i], 64)
	}
	// The tool stops after the poll that reaches --messages.
	if int(col["data.consumed.in.nMsg"]) < records {
		return perfResult{}, fmt.Errorf("consumer %s consumed %v messages, want %d", clientID, col["data.consumed.in.nMsg"], records)
	}
	return perfResult{
		mibPerSec:   col["fetch.MB.sec"],
		seconds:     col["fetch.time.ms"] / 1000,
		throttleAvg: metric(fetchThrottle, out, clientID),
	}, nil
}

// quotaTool runs a perf tool as kafkaToolOutput does (output kept in the
// row's directory), but bounded by the row's own timeout rather than
// javaToolTimeout: a long-form run lasts 60 s before the JVM's start.
func quotaTool(ctx context.Context, env *rowEnv, tool string, args ...string) (string, string, error) {
	if !quotaPerfLong() {
		return kafkaToolOutput(ctx, env, nil, tool, args...)
	}
	path := filepath.Join(env.root, "compat", "bin", tool)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	n := toolRun.Add(1)
	logPath := filepath.Join(env.dir, fmt.Sprintf("tool-%02d-%s.log", n, strings.TrimSuffix(tool, ".sh")))
	_ = os.WriteFile(logPath, []byte(fmt.Sprintf("$ %s %s\n# exit: %v, %.1fs\n--- stdout\n%s\n--- stderr\n%s", tool, strings.Join(args, " "), err, time.Since(start).Seconds(), stdout.String(), stderr.String())), 0o644)
	env.t.Logf("%s %s: %.1fs (%s)", tool, strings.Join(args, " "), time.Since(start).Seconds(), logPath)
	if err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("%s %s: %v: %s", tool, firstArg(args), err, toolProblem(stderr.String()+"\n"+stdout.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// createTopicRF creates topic with partitions and replication factor rf
// through node 1.
func createTopicRF(ctx context.Context, env *rowEnv, topic string, partitions int32, rf int16) error {
	cl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("franz-go CreateTopic %s: %w", topic, err)
	}
	return nil
}
