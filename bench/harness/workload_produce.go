package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// idleMemory records workload 7's idle figure: each node's VmRSS after
// -settle with the cluster formed and the produce topic created.
func (r *runner) idleMemory(ctx context.Context) error {
	if err := sleep(ctx, r.cfg.settle); err != nil {
		return err
	}
	return r.memory("rss_idle_mib", "idle RSS", func(rss, _ int64) int64 { return rss })
}

// peakMemory records workload 7's peak figure: each node's VmHWM, read
// right after workload 1.
func (r *runner) peakMemory(context.Context) error {
	if _, ok := r.res.get("produce_mibs", r.name()); !ok {
		return errors.New("workload 1 did not run to completion")
	}
	return r.memory("rss_peak_mib", "peak RSS", func(_, peak int64) int64 { return peak })
}

// memory records the largest node's figure as key and every node's in a
// note.
func (r *runner) memory(key, what string, pick func(rss, peak int64) int64) error {
	var largest int64
	var each []string
	for _, n := range r.c.nodes {
		rss, peak, err := n.proc.memory()
		if err != nil {
			return fmt.Errorf("node %d: %w", n.id, err)
		}
		v := pick(rss, peak)
		largest = max(largest, v)
		each = append(each, fmt.Sprintf("%.0f", float64(v)/(1<<20)))
	}
	r.set(key, float64(largest)/(1<<20))
	r.res.note("%s %s per node: %s MiB", r.name(), what, strings.Join(each, " / "))
	return nil
}

// produceThroughput is workload 1: as many 1 KiB records as the client can
// send for -produce-time, acks=all, after -warmup of the same untimed.
func (r *runner) produceThroughput(ctx context.Context) error {
	var warm int64
	if r.cfg.warmup > 0 {
		var err error
		if warm, _, err = r.produceMax(ctx, produceTopic, r.cfg.warmup, 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	n, elapsed, err := r.produceMax(ctx, produceTopic, r.cfg.produceTime, 0)
	if err != nil {
		return err
	}
	if err := r.checkLanded(ctx, landedProduce, produceTopic, warm+n); err != nil {
		return err
	}
	r.set("produce_mibs", r.mib(n)/elapsed.Seconds())
	return nil
}

// produceMax produces to topic as fast as the client can, for d or, when
// d is 0, until count records are acknowledged. It returns the records
// acknowledged and the time from the first send to the last
// acknowledgement.
func (r *runner) produceMax(ctx context.Context, topic string, d time.Duration, count int64) (int64, time.Duration, error) {
	cl, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.MaxBufferedRecords(32_768),
	)
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	var acked atomic.Int64
	var failed errCount
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.add(err)
			return
		}
		acked.Add(1)
	}
	start := time.Now()
	deadline := start.Add(d)
	for i := int64(0); ctx.Err() == nil; i++ {
		if d > 0 && i%256 == 0 && time.Now().After(deadline) || d == 0 && i >= count {
			break
		}
		// Produce blocks while the client's buffer is full.
		cl.Produce(ctx, &kgo.Record{Value: r.values.value()}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(start)
	if err := failed.err(); err != nil {
		return 0, 0, err
	}
	return acked.Load(), elapsed, nil
}

// produceLatency is workload 2: records sent at a fixed rate for
// -latency-time, each timed from the moment the schedule meant it to be
// sent to its acknowledgement. When the client falls behind (its buffer
// full, a slow broker) the records it sends late still count from their
// intended time, so a stall shows in every record it delays.
func (r *runner) produceLatency(ctx context.Context) error {
	rate := r.cfg.rate
	switch {
	case rate > 0:
	case r.kafkaRate() > 0:
		rate = r.kafkaRate() / 2
	default:
		mibs, ok := r.res.get("produce_mibs", r.name())
		if !ok {
			return errors.New("no rate: give -rate, or run workload 1 (on Kafka) first")
		}
		rate = mibs * (1 << 20) / float64(r.cfg.recordSize) / 2
		r.res.note("%s workload 2 ran at half of its own workload 1 rate (Kafka's was not measured)", r.name())
	}
	r.res.note("%s workload 2 rate: %.0f records/s (%.1f MiB/s)", r.name(), rate, r.mib(int64(rate)))
	total := int(rate * r.cfg.latencyTime.Seconds())
	if total < 1 {
		return fmt.Errorf("rate %.1f records/s for %s is no record", rate, r.cfg.latencyTime)
	}

	cl, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(produceTopic),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(max(total, 1)),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	samples, err := pacedProduce(ctx, cl, r.values, total, rate)
	if err != nil {
		return err
	}
	if err := r.checkLanded(ctx, landedLatency, produceTopic, int64(len(samples))); err != nil {
		return err
	}
	slices.Sort(samples)
	r.set("latency_p50", ms(percentile(samples, 0.50)))
	r.set("latency_p99", ms(percentile(samples, 0.99)))
	r.set("latency_p999", ms(percentile(samples, 0.999)))
	return nil
}

// percentile returns the q-quantile (0 < q ≤ 1) of sorted by nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// pacedProduce produces total records of values through cl at rate records
// a second, each timed from its intended send time (start + i/rate), so a
// stall counts for every record it delays (no coordinated omission). It
// returns the latencies of the acknowledged records, or the first error.
func pacedProduce(ctx context.Context, cl *kgo.Client, values *valuePool, total int, rate float64) ([]time.Duration, error) {
	var mu sync.Mutex
	samples := make([]time.Duration, 0, total)
	var failed errCount
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	for i := 0; i < total && ctx.Err() == nil; {
		// Send every record whose intended time has come, then sleep
		// until the next one is due.
		due := min(total, int(time.Since(start)/interval)+1)
		for ; i < due; i++ {
			intended := start.Add(time.Duration(i) * interval)
			cl.Produce(ctx, &kgo.Record{Value: values.value()}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.add(err)
					return
				}
				d := time.Since(intended)
				mu.Lock()
				samples = append(samples, d)
				mu.Unlock()
			})
		}
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	if err := failed.err(); err != nil {
		return nil, err
	}
	return samples, nil
}
