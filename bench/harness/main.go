// Command harness measures sluice side by side with Apache Kafka on the same
// machine, as issue 8 asks: it builds ./cmd/sluice, starts a three-node
// sluice cluster (processes on loopback, three raft voters, fresh data
// dirs), runs the workloads against it and stops it; then does the same
// with a three-node Apache Kafka cluster in KRaft mode (combined
// broker+controller nodes, Kafka's stock JVM settings, from the jars
// compat/kafkatools/fetch.sh fetches): release 4.4.0, the newest and
// issue 22's baseline, or 4.1.1, issue 8's, with -kafka-version 4.1.1.
// One system runs at a time, and the same franz-go client drives both.
// It prints a Markdown table — workload, Kafka (with the release that
// ran), sluice, sluice / Kafka, sluice / ceiling, the goals — and draws
// the ratios as a PNG chart.
//
// Before the systems run, it measures the machine's ceiling (ceiling.go):
// loopback TCP (from memory, and from the page cache with sendfile, as
// brokers serve fetches), sequential writes to the work directory's disk
// (into the page cache, and with an fsync at the end) and memory copies,
// each for -ceiling-time (the best tenth of it), and again after the
// systems, keeping the better of each rate, and derives the best a
// three-replica cluster on this one box could do. Produce: each byte
// crosses loopback three times (producer → leader from memory, leader →
// two followers with sendfile) and is written three times, on cores all
// of it shares, so the ceiling is 1 / (3/disk + 1/loopback + 2/sendfile)
// MiB/s with disk the page-cache rate (neither broker fsyncs per write). Consume: each byte
// crosses loopback once with sendfile, 1 / (1/sendfile). The figures
// print as a table of their own above the main one, and the throughput
// rows get sluice / ceiling. -ceiling-time 0 skips them.
//
// Every record's value is -record-size bytes of its own, cut from a pool
// of random bytes (values.go), and the producers compress their batches
// with -compression, snappy by default (franz-go's default, so the
// brokers validate compressed batches as they would for most clients);
// since no value repeats, the codec saves nothing and every byte a
// throughput figure counts reaches the brokers' disks. After each
// workload that produces (1, 2 and 3's write) the harness checks this: it
// prints the bytes sent (uncompressed) next to the growth of each node's
// segment files for the topic, and fails the workload when they disagree
// by more than 2% (landed.go). The exit status is 1 when a workload
// failed.
//
//	go run ./bench/harness                     # everything, both systems (workloads 9-13 not yet timed; the rest ~16 min on 2 shared cores)
//	go run ./bench/harness -quick              # a smoke run of everything (1-8 and 14: ~2-5 min, most of it Kafka's JVMs)
//	go run ./bench/harness -kafka-version 4.1.1 # against issue 8's Kafka release
//	go run ./bench/harness -systems sluice -workloads produce -sluice-cpu-profile /tmp/prof
//	go run ./bench/harness -workloads clean    # the log cleaner, both systems (~3 min)
//	go run ./bench/harness -workloads produce,consume -security plaintext,sasl_ssl
//	                                           # what TLS and SCRAM cost (issue 19), both systems
//	go run ./bench/harness -metrics-cost 5     # what metrics.listener costs workload 1 (issue 21),
//	                                           # sluice alone, off vs on, 5 rounds (~6 min)
//
// Kafka runs first: workload 2 loads both systems at half of the producer
// throughput Kafka reached in workload 1 (without Kafka in the run it uses
// -rate, or half of the system's own throughput).
//
// The workloads (-workloads picks some; the rows of the table):
//
//	memory    7: each broker's RSS (VmRSS) once the cluster is idle, and its
//	          peak (VmHWM) after workload 1; the table shows the largest node.
//	produce   1: producer throughput, acks=all, RF 3, min.insync.replicas=2,
//	          12 partitions, 1 KiB incompressible values, for -produce-time after
//	          -warmup of the same load untimed (a JVM compiles its hot
//	          paths first; sluice gets the same).
//	latency   2: produce latency p50 / p99 / p99.9 at a fixed rate, each
//	          record timed from its intended send time, so a stall counts
//	          for every record it delays (no coordinated omission).
//	consume   3: consumer throughput: -consume-mib written (untimed) to a
//	          topic of its own, then read from the beginning.
//	e2e       4: end-to-end latency, one record in flight: produce (acks=all)
//	          and wait until a consumer sees it, then the next.
//	failover  5: kill -9 of partition 0's leader to the next acknowledged
//	          produce, median of -failover-runs; the node is restarted and
//	          every ISR is full again before the next run.
//	conns     9 (issue 22): -conns-idle idle client connections (each has
//	          sent ApiVersions) and -conns-active clients producing one
//	          record a second each: the largest node's RSS and the produce
//	          latency p99 (workload_conns.go).
//	groups   10: -groups consumer groups committing an offset once a
//	          second from a few clients: commit latency p99 and the nodes'
//	          CPU (workload_groups.go).
//	txn      11: transactions of 10 records per second from
//	          -txn-producers producers, then the same producers
//	          idempotent only; the ratio is what exactly-once costs
//	          (workload_txn.go).
//	cpuhog   13: twice as many busy processes as cores beside the
//	          cluster for -hog-time while a producer sends -hog-rate
//	          records/s: false fencings (brokers fenced, ISR shrinks,
//	          leader changes seen in metadata, and sluice's log), produce
//	          latency p99, then workload 5's failover under the hog
//	          (workload_cpuhog.go).
//	clean    14 (issue 17, acceptance 5; numbered 9 before issue 22 took
//	          9 to 13): the log cleaner. -clean-mib MiB of
//	          keyed records (-clean-keys keys, one in ten a tombstone, the
//	          same records in the same order on both systems) into a
//	          compacted topic of one partition at RF 1 with 8 MiB segments,
//	          the cleaner held off by min.compaction.lag.ms until all are
//	          written; then the lag drops to 0 and the cleaner (broker
//	          defaults) cleans below the active segment. Before that, the
//	          same with -clean-warmup-mib in a topic of its own, untimed
//	          (a JVM compiles the cleaner's hot paths; sluice gets the
//	          same). MiB/s cleaned is
//	          what each broker's log says its passes read over their time;
//	          peak RSS is the cleaning node's VmHWM, reset just before. The
//	          partition is then read back and checked record by record
//	          (workload_clean.go).
//	scale     8: -scale-partitions partitions at RF 3 (topics of 1,000): time
//	          to create them (until every node shows every ISR full), the
//	          cluster's CPU while idle over -idle-window, and the time from
//	          a node's restart (after a clean stop) until every ISR is full.
//	scale100k 12: workload 8 with -scale100k-partitions (100,000) on a
//	          cluster of its own, after the shared one stops, and the
//	          largest node's RSS; every wait is bounded by
//	          -scale100k-timeout, and the table shows how many partitions
//	          reached a full ISR when creation did not finish.
//	coldstart 6: one node with an empty data dir: process start to the first
//	          acknowledged produce (topic creation included), median of
//	          -coldstart-runs. Kafka's kafka-storage.sh format runs before
//	          its process starts and is not counted.
//
// -security runs every system once per mode, each on a cluster of its
// own: plaintext (the default) and sasl_ssl, where clients and the
// brokers' replication go over a SASL_SSL listener with SCRAM-SHA-512
// (security.go says how each system is set up). The main table is
// plaintext's; with sasl_ssl a second table puts each figure over both
// protocols side by side, with the cost as a ratio. Cold start (6) runs
// in plaintext only.
//
// Latency percentiles are exact: every sample is kept and sorted (a few
// hundred thousand durations), so no histogram library is needed.
//
// The chart is drawn with gonum.org/v1/plot, a maintained plotting library
// from the Go module proxy; it is a dependency of this command only, not of
// the broker. Drawing labelled axes, a log scale and a legend by hand with
// image/png would be several hundred lines of code that is no part of
// sluice's job.
//
// This is a measuring tool: its smoke test (harness_test.go) asserts only
// that every workload produced a number and that the bytes-on-disk check
// passed, never a time. On a shared machine
// the figures move with whatever else runs; compare ratios from one run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	systems         []string
	workloads       map[string]bool
	quick           bool
	recordSize      int
	warmup          time.Duration
	produceTime     time.Duration
	latencyTime     time.Duration
	rate            float64 // records/s for workload 2; 0: half of Kafka's max
	consumeMiB      int64
	e2eRecords      int
	failoverRuns    int
	coldStartRuns   int
	scalePartitions int
	cleanMiB        int64
	cleanWarmupMiB  int64
	cleanKeys       int
	idleWindow      time.Duration
	settle          time.Duration
	workDir         string
	keep            bool
	chartPath       string
	sluiceBin       string
	cpuProfileDir   string
	// compression is the producers' batch codec: franz-go's default,
	// snappy, unless set. The values are incompressible (values.go), so
	// it changes what the client and the brokers spend on the codec, not
	// the bytes that reach the disks.
	compression string
	// security are the modes each system runs in, one cluster each, in
	// this order: plaintext and/or sasl_ssl (security.go).
	security []string
	// metricsCost, when > 0, replaces the run: that many rounds of
	// workload 1 on sluice with metrics.listener off and on, the nodes
	// scraped every scrapeEvery when on (metricscost.go).
	metricsCost int
	scrapeEvery time.Duration
	// stress are the flags of issue 22's workloads 9 to 13 (stress.go).
	stress stressConfig
	// kafkaVersion is the Apache Kafka release of the baseline
	// (kafkaVersions in kafka.go).
	kafkaVersion string
	// ceilingTime is how long each of the machine's measurements runs
	// (ceiling.go); 0 skips them. ceilingMiB is the size of the files
	// the disk measurement writes.
	ceilingTime time.Duration
	ceilingMiB  int64
}

// quickValues replace the defaults of the flags a -quick run does not set.
var quickValues = map[string]string{
	"warmup":           "1s",
	"produce-time":     "1s",
	"latency-time":     "2s",
	"consume-mib":      "96",
	"e2e-records":      "100",
	"failover-runs":    "1",
	"coldstart-runs":   "1",
	"scale-partitions": "300",
	"clean-mib":        "32",
	"clean-warmup-mib": "0",
	"clean-keys":       "2000",
	"idle-window":      "3s",
	"settle":           "1s",
	"ceiling-time":     "1s",
	"ceiling-mib":      "128",
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("harness", flag.ContinueOnError)
	cfg := &config{}
	systems := fs.String("systems", "kafka,sluice", "systems to run, in this order: kafka, sluice or both")
	securityFlag := fs.String("security", modePlaintext, "security modes to run each system in, in this order: plaintext, sasl_ssl or both (sasl_ssl: clients and brokers over TLS with SCRAM-SHA-512; see the security table)")
	workloads := fs.String("workloads", "all", "workloads to run: all or a comma list of "+strings.Join(workloadNames, ", "))
	fs.BoolVar(&cfg.quick, "quick", false, "smoke mode: short durations and small volumes (every flag below that is not set)")
	fs.IntVar(&cfg.recordSize, "record-size", 1024, "record value size in bytes")
	fs.StringVar(&cfg.compression, "compression", "snappy", "producer batch compression: none, snappy (franz-go's default), lz4, zstd or gzip; the values are incompressible either way")
	fs.DurationVar(&cfg.warmup, "warmup", 5*time.Second, "workload 1: how long to produce, untimed, before timing (a JVM compiles its hot paths)")
	fs.DurationVar(&cfg.produceTime, "produce-time", 20*time.Second, "workload 1: how long to produce")
	fs.DurationVar(&cfg.latencyTime, "latency-time", 20*time.Second, "workload 2: how long to produce at the fixed rate")
	fs.Float64Var(&cfg.rate, "rate", 0, "workload 2: records/s (default: half of Kafka's workload 1 rate in this run)")
	fs.Int64Var(&cfg.consumeMiB, "consume-mib", 2048, "workload 3: MiB of record values to read")
	fs.IntVar(&cfg.e2eRecords, "e2e-records", 2000, "workload 4: records to time")
	fs.IntVar(&cfg.failoverRuns, "failover-runs", 5, "workload 5: kills to time")
	fs.IntVar(&cfg.coldStartRuns, "coldstart-runs", 3, "workload 6: starts to time")
	fs.IntVar(&cfg.scalePartitions, "scale-partitions", 10_000, "workload 8: partitions of the topic")
	fs.Int64Var(&cfg.cleanMiB, "clean-mib", 1024, "workload 14: MiB of keyed records (values and tombstones) to write to the compacted topic and clean")
	fs.Int64Var(&cfg.cleanWarmupMiB, "clean-warmup-mib", 128, "workload 14: MiB of the same kind cleaned first, untimed, in a topic of their own (a JVM compiles its hot paths; 0: none)")
	fs.IntVar(&cfg.cleanKeys, "clean-keys", 100_000, "workload 14: how many distinct keys the records overwrite")
	fs.DurationVar(&cfg.idleWindow, "idle-window", 20*time.Second, "workload 8: how long to measure idle CPU")
	fs.DurationVar(&cfg.settle, "settle", 5*time.Second, "quiet time before idle measurements")
	fs.StringVar(&cfg.workDir, "workdir", "", "directory for data dirs and broker logs (default: a new temporary directory)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the work directory (broker logs) after the run")
	fs.StringVar(&cfg.chartPath, "chart", "bench-results.png", "where to write the PNG chart; empty: none")
	fs.StringVar(&cfg.sluiceBin, "sluice-bin", "", "a sluice binary to use instead of building ./cmd/sluice")
	fs.StringVar(&cfg.cpuProfileDir, "sluice-cpu-profile", "", "directory for a CPU profile of each life of each sluice cluster node (<cluster dir>-node-<id>-start-<n>.prof; a node killed with kill -9 writes none)")
	fs.IntVar(&cfg.metricsCost, "metrics-cost", 0, "instead of the comparison with Kafka: this many rounds of workload 1 on sluice with metrics.listener off and on (each on a fresh cluster, the order alternating), printing both throughputs and their ratio (issue 21's goal: within 3 %)")
	fs.DurationVar(&cfg.scrapeEvery, "scrape-interval", 5*time.Second, "-metrics-cost: how often every node's /metrics is scraped while metrics are on")
	fs.StringVar(&cfg.kafkaVersion, "kafka-version", kafkaVersions[0], "the Apache Kafka release to compare with: "+strings.Join(kafkaVersions, " or "))
	fs.DurationVar(&cfg.ceilingTime, "ceiling-time", 3*time.Second, "how long each measurement of the machine's ceiling runs (loopback TCP, memory copy; 0: no ceiling)")
	fs.Int64Var(&cfg.ceilingMiB, "ceiling-mib", 512, "the ceiling's disk measurement: MiB written to the work directory's disk, in 1 MiB chunks, then fsynced")
	cfg.stress.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range quickValues {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return nil, err
				}
			}
		}
	}
	if !slices.Contains(kafkaVersions, cfg.kafkaVersion) {
		return nil, fmt.Errorf("-kafka-version: %q is not one of %s", cfg.kafkaVersion, strings.Join(kafkaVersions, ", "))
	}
	if _, err := compressionCodec(cfg.compression); err != nil {
		return nil, err
	}
	if err := cfg.stress.check(); err != nil {
		return nil, err
	}
	for _, s := range strings.Split(*systems, ",") {
		if s = strings.TrimSpace(s); s != "kafka" && s != "sluice" {
			return nil, fmt.Errorf("-systems: %q is neither kafka nor sluice", s)
		}
		if !slices.Contains(cfg.systems, s) {
			cfg.systems = append(cfg.systems, s)
		}
	}
	for _, m := range strings.Split(*securityFlag, ",") {
		if m = strings.ToLower(strings.TrimSpace(m)); !slices.Contains(securityModes, m) {
			return nil, fmt.Errorf("-security: unknown mode %q (want %s)", m, strings.Join(securityModes, ", "))
		}
		if !slices.Contains(cfg.security, m) {
			cfg.security = append(cfg.security, m)
		}
	}
	cfg.workloads = map[string]bool{}
	for _, w := range strings.Split(*workloads, ",") {
		switch w = strings.TrimSpace(w); {
		case w == "all":
			for _, n := range workloadNames {
				cfg.workloads[n] = true
			}
		case slices.Contains(workloadNames, w):
			cfg.workloads[w] = true
		default:
			return nil, fmt.Errorf("-workloads: unknown workload %q (want %s)", w, strings.Join(workloadNames, ", "))
		}
	}
	// Workload 2's default rate is half of Kafka's workload 1 rate in this
	// run: with sluice first, sluice would run it at half of its own rate
	// and Kafka at half of Kafka's, two loads the table would compare as one.
	if cfg.rate == 0 && cfg.workloads["latency"] && slices.Index(cfg.systems, "sluice") >= 0 &&
		slices.Index(cfg.systems, "sluice") < slices.Index(cfg.systems, "kafka") {
		return nil, errors.New("-systems sluice,kafka: workload 2 runs at half of Kafka's workload 1 rate, measured first; run kafka first, or give -rate")
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if err == flag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.metricsCost > 0 {
		cost, err := runMetricsCost(ctx, cfg, os.Stderr)
		if cost != nil {
			fmt.Println()
			cost.write(os.Stdout, cfg)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			os.Exit(1)
		}
		if cost.failed() {
			fmt.Fprintln(os.Stderr, "harness: runs failed (see FAILED above)")
			os.Exit(1)
		}
		return
	}
	res, err := run(ctx, cfg, os.Stderr)
	if res != nil {
		fmt.Println()
		res.writeTable(os.Stdout, cfg.workloads, cfg.scalePartitions)
		if cfg.chartPath != "" {
			if cerr := writeChart(cfg.chartPath, res, cfg.workloads, cfg.scalePartitions); cerr != nil {
				fmt.Fprintln(os.Stderr, "harness: chart:", cerr)
			} else {
				fmt.Println("chart:", cfg.chartPath)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		os.Exit(1)
	}
	if res.failed() {
		// A workload that failed, or whose bytes did not land, makes the
		// table incomplete or wrong: say so in the exit status.
		fmt.Fprintln(os.Stderr, "harness: workloads failed (see FAILED above)")
		os.Exit(1)
	}
}

// prepareRun is what a run and a -metrics-cost run start with: a logger
// that stamps each line with the time, the repository root, the work
// directory (-work-dir or a new temporary one) and the function that
// removes it unless -keep, with the file limit raised.
func prepareRun(cfg *config, logw io.Writer) (logf func(string, ...any), root, workDir string, cleanup func(), err error) {
	logf = func(format string, args ...any) {
		fmt.Fprintf(logw, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	if root, err = repoRoot(); err != nil {
		return nil, "", "", nil, err
	}
	workDir = cfg.workDir
	if workDir == "" {
		if workDir, err = os.MkdirTemp("", "sluice-bench-"); err != nil {
			return nil, "", "", nil, err
		}
	} else if err = os.MkdirAll(workDir, 0o755); err != nil {
		return nil, "", "", nil, err
	}
	cleanup = func() {}
	if cfg.keep {
		logf("work directory (kept): %s", workDir)
	} else {
		cleanup = func() { os.RemoveAll(workDir) }
	}
	raiseFileLimit(logf)
	return logf, root, workDir, cleanup, nil
}

// run builds what it needs, then runs the workloads against each system in
// turn, logging progress to logw. A workload that fails is recorded in the
// results and the run goes on; an error means the run could not go on.
func run(ctx context.Context, cfg *config, logw io.Writer) (*results, error) {
	logf, root, workDir, cleanup, err := prepareRun(cfg, logw)
	if err != nil {
		return nil, err
	}
	defer cleanup()

	var systems []system
	for _, name := range cfg.systems {
		switch name {
		case "kafka":
			libs, err := fetchKafka(ctx, root, cfg.kafkaVersion, logf)
			if err != nil {
				return nil, err
			}
			systems = append(systems, &kafkaSystem{root: root, version: cfg.kafkaVersion, libs: libs})
		case "sluice":
			bin := cfg.sluiceBin
			if bin == "" {
				bin = workDir + "/bin/sluice"
				logf("building ./cmd/sluice")
				if err := goBuild(ctx, root, bin); err != nil {
					return nil, err
				}
			}
			if cfg.cpuProfileDir != "" {
				if err := os.MkdirAll(cfg.cpuProfileDir, 0o755); err != nil {
					return nil, err
				}
			}
			systems = append(systems, &sluiceSystem{bin: bin, cpuProfileDir: cfg.cpuProfileDir})
		}
	}

	var modes []*security
	for _, m := range cfg.security {
		sec, err := newSecurity(m, certDir(workDir, m))
		if err != nil {
			return nil, err
		}
		modes = append(modes, sec)
	}

	res := newResults()
	res.modes = cfg.security
	res.kafkaVersion = cfg.kafkaVersion
	if cfg.ceilingTime > 0 && ctx.Err() == nil {
		// Before the systems, with nothing of the run's own going on.
		m, err := measureMachine(ctx, workDir, cfg.ceilingTime, cfg.ceilingMiB, logf)
		if err != nil {
			return nil, fmt.Errorf("the machine's ceiling: %w", err)
		}
		res.machine = m
	}
	// Both systems are sent the same values in the same order.
	values := newValuePool(cfg.recordSize)
	for _, sys := range systems {
		for _, sec := range modes {
			if ctx.Err() != nil {
				break
			}
			values.next.Store(0)
			r := &runner{cfg: cfg, sys: sys, sec: sec, res: res, values: values}
			r.dir = workDir + "/" + strings.ReplaceAll(r.name(), " ", "-")
			r.logf = func(format string, args ...any) {
				logf("[%s] %s", r.name(), fmt.Sprintf(format, args...))
			}
			start := time.Now()
			r.runAll(ctx)
			r.logf("done in %s", time.Since(start).Round(time.Second))
			if !cfg.keep {
				// The next system starts on an empty disk.
				os.RemoveAll(r.dir)
			}
		}
	}
	if res.machine != nil && len(systems) > 0 && ctx.Err() == nil {
		// Again after the systems: the machine is shared, and the
		// ceiling keeps the better of each rate (ceiling.go).
		m, err := measureMachine(ctx, workDir, cfg.ceilingTime, cfg.ceilingMiB, logf)
		if err != nil {
			return res, fmt.Errorf("the machine's ceiling, after the systems: %w", err)
		}
		res.machine = res.machine.best(m)
	}
	return res, ctx.Err()
}
