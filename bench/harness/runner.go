package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Topics of the cluster workloads. Workloads 1 and 2 write to
// produceTopic; workload 3 writes consumeTopic and reads it back.
const (
	produceTopic    = "bench-produce"
	consumeTopic    = "bench-consume"
	e2eTopic        = "bench-e2e"
	failoverTopic   = "bench-failover"
	scaleTopic      = "bench-scale" // bench-scale-0, -1, …: see scaleTopics
	benchPartitions = 12
	benchRF         = 3
	clusterNodes    = 3
)

// stopTimeout bounds a node's controlled shutdown before the harness kills
// it; Kafka moving thousands of leaderships takes a while.
const stopTimeout = 3 * time.Minute

// runner runs the workloads against one system.
type runner struct {
	cfg    *config
	sys    system
	sec    *security // the security mode of this run of sys
	res    *results
	dir    string // this system's part of the work directory
	logf   func(string, ...any)
	c      *cluster   // the running three-node cluster
	values *valuePool // the record values every workload sends
	// ledgers count the bytes each topic was sent, for the
	// bytes-on-disk check (landed.go); every client carries them as a
	// hook.
	ledgers ledgers
}

// name is the system's column in the results: its name, with the
// security mode after it unless that is plaintext ("sluice",
// "kafka sasl_ssl").
func (r *runner) name() string { return columnName(r.sys.name(), r.sec) }

// columnName is the results column of system in mode sec.
func columnName(system string, sec *security) string {
	if !sec.secured() {
		return system
	}
	return system + " " + sec.mode
}

// set records a figure of this system.
func (r *runner) set(key string, v float64) {
	r.res.set(key, r.name(), v)
	r.logf("%s = %s", key, formatValue(v))
}

// runAll starts the cluster, runs the cluster workloads that were asked
// for, stops it, then runs workload 12 on a cluster of its own and the
// single-node cold start.
func (r *runner) runAll(ctx context.Context) {
	w := r.cfg.workloads

	if slices.ContainsFunc(workloadNames, func(n string) bool { return n != "coldstart" && n != "scale100k" && w[n] }) {
		r.logf("starting a %d-node cluster", clusterNodes)
		start := time.Now()
		c, err := r.sys.startCluster(ctx, filepath.Join(r.dir, "cluster"), clusterNodes, r.sec)
		if err != nil {
			r.res.fail(r.name(), "cluster start", err)
		} else {
			r.logf("cluster formed in %s", time.Since(start).Round(time.Millisecond))
			r.c = c
			r.clusterWorkloads(ctx)
			r.logf("stopping the cluster")
			timeout := stopTimeout
			if ctx.Err() != nil {
				timeout = 5 * time.Second // interrupted: no patience
			}
			if err := c.stop(timeout); err != nil {
				r.logf("stop: %v", err)
			}
			r.c = nil
		}
		if !r.cfg.keep {
			os.RemoveAll(filepath.Join(r.dir, "cluster"))
		}
	}
	if w["scale100k"] && ctx.Err() == nil {
		r.scale100kCluster(ctx)
	}
	if w["coldstart"] && ctx.Err() == nil {
		if r.sec.secured() {
			// A single node would need the SCRAM users bootstrapped too;
			// start-up time is not what -security measures.
			r.res.note("%s: workload 6 (cold start) runs in plaintext only", r.name())
		} else {
			r.do(ctx, "coldstart", r.coldStart)
		}
	}
}

// clusterWorkloads runs the workloads that need the three-node cluster, in
// the order of workloadNames.
func (r *runner) clusterWorkloads(ctx context.Context) {
	w := r.cfg.workloads
	needProduce := w["memory"] || w["produce"] || w["latency"] && r.cfg.rate == 0 && r.kafkaRate() == 0
	if needProduce || w["latency"] {
		if !r.do(ctx, "create topic", func(ctx context.Context) error {
			return createTopic(ctx, r.c, produceTopic, benchPartitions, benchRF, 2*time.Minute)
		}) {
			return
		}
	}
	if w["memory"] {
		r.do(ctx, "memory", r.idleMemory)
	}
	if needProduce {
		r.do(ctx, "produce", r.produceThroughput)
	}
	if w["memory"] {
		r.do(ctx, "memory", r.peakMemory)
	}
	for _, wl := range []struct {
		name string
		f    func(context.Context) error
	}{
		{"latency", r.produceLatency},
		{"consume", r.consumeThroughput},
		{"e2e", r.endToEnd},
		{"failover", r.failover},
		{"conns", r.conns},
		{"groups", r.groupsCommits},
		{"txn", r.transactions},
		{"cpuhog", r.cpuHog},
		{"clean", r.cleanThroughput},
		{"scale", r.scale},
	} {
		if w[wl.name] {
			r.do(ctx, wl.name, wl.f)
		}
	}
}

// do runs one workload, records its failure, and reports whether it
// succeeded.
func (r *runner) do(ctx context.Context, name string, f func(context.Context) error) bool {
	if ctx.Err() != nil {
		return false
	}
	if r.c != nil {
		// A node that crashed in an earlier workload would fail this one
		// for a reason that is not its own.
		if err := r.c.crashed(); err != nil {
			r.res.fail(r.name(), name, fmt.Errorf("not run: %w", err))
			return false
		}
	}
	r.logf("workload %s", name)
	start := time.Now()
	err := f(ctx)
	if err == nil && r.c != nil {
		err = r.c.crashed()
	}
	if err != nil {
		r.logf("workload %s failed after %s: %v", name, time.Since(start).Round(time.Millisecond), err)
		r.res.fail(r.name(), name, err)
		return false
	}
	r.logf("workload %s took %s", name, time.Since(start).Round(time.Millisecond))
	return true
}

// kafkaRate is Kafka's workload 1 rate in records/s from this run in the
// same security mode, or 0.
func (r *runner) kafkaRate() float64 {
	mibs, ok := r.res.get("produce_mibs", columnName("kafka", r.sec))
	if !ok {
		return 0
	}
	return mibs * (1 << 20) / float64(r.cfg.recordSize)
}

// client returns a franz-go client of the cluster's running nodes with
// opts. Every workload uses the same client library with the same
// settings on both systems. Metadata may be refreshed every 100ms (the
// default, 5s, would time the client's back-off after a failover
// rather than the broker's).
func (r *runner) client(opts ...kgo.Opt) (*kgo.Client, error) {
	codec, err := compressionCodec(r.cfg.compression)
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(append([]kgo.Opt{
		kgo.SeedBrokers(r.c.addrs()...),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.ProducerBatchCompression(codec),
		kgo.WithHooks(&r.ledgers),
	}, r.c.opts...), opts...)...)
}

// compressionCodec is the franz-go codec named by -compression.
func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "snappy", "":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("-compression: unknown codec %q (want none, snappy, lz4, zstd or gzip)", name)
}

// mib converts records of the configured size to MiB.
func (r *runner) mib(records int64) float64 {
	return float64(records) * float64(r.cfg.recordSize) / (1 << 20)
}

// errCount collects the failures of asynchronous produces.
type errCount struct {
	mu    sync.Mutex
	n     int64
	first error
}

// add counts err, if any.
func (e *errCount) add(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		e.first = err
	}
	e.n++
}

// err summarises the failures, or is nil.
func (e *errCount) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		return nil
	}
	return fmt.Errorf("%d records failed, first: %w", e.n, e.first)
}
