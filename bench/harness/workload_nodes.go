package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// recoverTimeout bounds how long a restarted node may take until every
// ISR is full again.
const recoverTimeout = 10 * time.Minute

// failover is workload 5: with a one-partition topic at RF 3 in sync, kill
// -9 the partition's leader and time until the next produce (acks=all,
// min.insync.replicas=2) is acknowledged. The client was connected to the
// old leader and retries every 10ms, refreshing metadata at most every
// 100ms. The killed node is started again and every ISR is full before the
// next run; the figure is the median of -failover-runs.
func (r *runner) failover(ctx context.Context) error {
	if err := createTopic(ctx, r.c, failoverTopic, 1, benchRF, 2*time.Minute); err != nil {
		return err
	}
	var samples []time.Duration
	for run := range r.cfg.failoverRuns {
		d, err := r.failoverOnce(ctx, failoverTopic)
		if err != nil {
			return fmt.Errorf("run %d: %w", run+1, err)
		}
		r.logf("failover run %d: %s", run+1, d.Round(time.Millisecond))
		samples = append(samples, d)
	}
	r.set("failover_ms", ms(median(samples)))
	return nil
}

// failoverOnce times one kill -9 of the leader of topic's partition 0 (a
// topic of one partition at RF 3) and waits, after restarting the node,
// until every ISR is full again.
func (r *runner) failoverOnce(ctx context.Context, topic string) (time.Duration, error) {
	prod, err := r.client(
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
	)
	if err != nil {
		return 0, err
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: r.values.value()}).FirstErr(); err != nil {
		return 0, fmt.Errorf("produce before the kill: %w", err)
	}
	leader, err := leaderOf(ctx, r.c.opts, r.c.addrs()[0], topic)
	if err != nil {
		return 0, err
	}
	victim := r.c.node(leader)
	if victim == nil {
		return 0, fmt.Errorf("leader %d is no node of the cluster", leader)
	}
	killed := time.Now()
	victim.proc.kill()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		err := prod.ProduceSync(pctx, &kgo.Record{Value: r.values.value()}).FirstErr()
		if err == nil {
			break
		}
		if pctx.Err() != nil {
			return 0, fmt.Errorf("no produce acknowledged within 2m of killing node %d: %w", leader, err)
		}
	}
	took := time.Since(killed)

	if err := victim.restart(); err != nil {
		return 0, err
	}
	if err := r.waitRecovered(ctx, victim, -1); err != nil {
		return 0, err
	}
	return took, nil
}

// waitRecovered waits, after nd's restart, until every node lists every
// node and a running node other than nd shows every partition (want of
// them, when want >= 0) with a full ISR.
func (r *runner) waitRecovered(ctx context.Context, nd *node, want int, topics ...string) error {
	if err := r.c.waitFormed(ctx, 3*time.Minute); err != nil {
		return fmt.Errorf("node %d back: %w", nd.id, err)
	}
	others := r.c.others(nd.id)
	if len(others) == 0 {
		return errors.New("no other node runs")
	}
	if err := waitISRFull(ctx, r.c.opts, others[0].addr, want, recoverTimeout, topics...); err != nil {
		return fmt.Errorf("ISRs after node %d restarted: %w", nd.id, err)
	}
	return nil
}

// scale is workload 8: -scale-partitions partitions at RF 3, in topics of
// 1,000 partitions created one after the other (see
// maxPartitionsPerCreate). Creation is timed until every node's Metadata shows every partition with
// a leader and a full ISR. Idle CPU is the three nodes' CPU time over
// -idle-window after -settle, in percent of one core. Then the last node
// stops cleanly; once the others show it in no ISR it starts again, and
// the time from its process start until every ISR is full is the recovery
// figure.
func (r *runner) scale(ctx context.Context) error {
	n := r.cfg.scalePartitions
	topics, sizes := scaleTopics(n)
	start := time.Now()
	if err := r.createScaleTopics(ctx, topics, sizes, recoverTimeout); err != nil {
		return err
	}
	for _, nd := range r.c.nodes {
		if err := waitISRFull(ctx, r.c.opts, nd.addr, n, recoverTimeout, topics...); err != nil {
			return fmt.Errorf("node %d after creating %d partitions: %w", nd.id, n, err)
		}
	}
	r.set("scale_create_s", time.Since(start).Seconds())
	r.noteOpenFiles("workload 8", n)

	cpu, err := r.idleCPU(ctx)
	if err != nil {
		return err
	}
	r.set("scale_idle_cpu", cpu)

	nd, err := r.stopForRestart(ctx, "workload 8", n, topics)
	if err != nil {
		return err
	}
	if err := nd.restart(); err != nil {
		return err
	}
	if err := r.waitRecovered(ctx, nd, n, topics...); err != nil {
		return err
	}
	r.set("scale_isr_s", time.Since(nd.proc.started).Seconds())
	return nil
}

// createScaleTopics creates topics, of sizes partitions each, at RF 3 and
// min.insync.replicas 2, one CreateTopics request each, each request
// allowed perRequest.
func (r *runner) createScaleTopics(ctx context.Context, topics []string, sizes []int32, perRequest time.Duration) error {
	cl, err := r.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(perRequest / time.Millisecond))
	minISR := "2"
	for i, topic := range topics {
		cctx, cancel := context.WithTimeout(ctx, perRequest)
		resp, err := adm.CreateTopic(cctx, sizes[i], benchRF, map[string]*string{"min.insync.replicas": &minISR}, topic)
		cancel()
		if err == nil && resp.Err != nil {
			err = resp.Err
			if resp.ErrMessage != "" {
				err = fmt.Errorf("%w (%s)", resp.Err, resp.ErrMessage)
			}
		}
		if err != nil {
			return fmt.Errorf("create %s (%d partitions): %w", topic, sizes[i], err)
		}
	}
	return nil
}

// noteOpenFiles notes how many files each node holds open with n
// partitions, and its limit.
func (r *runner) noteOpenFiles(workload string, n int) {
	for _, nd := range r.c.nodes {
		if open, limit, err := nd.proc.openFiles(); err == nil {
			r.res.note("%s %s: node %d holds %d open files with %d partitions (limit %d)", r.name(), workload, nd.id, open, n, limit)
		}
	}
}

// idleCPU waits -settle and returns the three nodes' CPU time over
// -idle-window, in percent of one core.
func (r *runner) idleCPU(ctx context.Context) (float64, error) {
	if err := sleep(ctx, r.cfg.settle); err != nil {
		return 0, err
	}
	before, err := r.clusterCPU()
	if err != nil {
		return 0, err
	}
	windowStart := time.Now()
	if err := sleep(ctx, r.cfg.idleWindow); err != nil {
		return 0, err
	}
	after, err := r.clusterCPU()
	if err != nil {
		return 0, err
	}
	return 100 * (after - before).Seconds() / time.Since(windowStart).Seconds(), nil
}

// stopForRestart stops the last node cleanly and waits until the others
// show it in no ISR of topics (noting it when they still do after two
// minutes), and returns it, stopped.
func (r *runner) stopForRestart(ctx context.Context, workload string, n int, topics []string) (*node, error) {
	nd := r.c.nodes[len(r.c.nodes)-1]
	stopStart := time.Now()
	if err := nd.proc.stop(stopTimeout); err != nil {
		return nil, err
	}
	r.res.note("%s %s: node %d's controlled shutdown with %d partitions took %s",
		r.name(), workload, nd.id, n, time.Since(stopStart).Round(time.Millisecond))
	others := r.c.others(nd.id)
	if err := waitOutOfISR(ctx, r.c.opts, others[0].addr, nd.id, topics...); err != nil {
		r.res.note("%s %s: the stopped node stayed in some ISRs (%v); restarted anyway", r.name(), workload, err)
	}
	return nd, nil
}

// maxPartitionsPerCreate is how many partitions the scale workload creates
// per CreateTopics request. Kafka's controller refuses a request that
// would write more than 10,000 metadata records (POLICY_VIOLATION), and a
// topic of 10,000 partitions is 10,001 of them.
const maxPartitionsPerCreate = 1000

// scaleTopics splits n partitions into topics of at most
// maxPartitionsPerCreate partitions, created one request each.
func scaleTopics(n int) ([]string, []int32) {
	var topics []string
	var sizes []int32
	for i := 0; n > 0; i++ {
		size := min(n, maxPartitionsPerCreate)
		topics = append(topics, fmt.Sprintf("%s-%d", scaleTopic, i))
		sizes = append(sizes, int32(size))
		n -= size
	}
	return topics, sizes
}

// waitOutOfISR waits up to two minutes until the node at addr shows broker
// id in no ISR of topics.
func waitOutOfISR(ctx context.Context, opts []kgo.Opt, addr string, id int32, topics ...string) error {
	return poll(ctx, 2*time.Minute, 200*time.Millisecond, func() error {
		resp, err := metadataFrom(ctx, opts, addr, topics...)
		if err != nil {
			return err
		}
		in := 0
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if slices.Contains(p.ISR, id) {
					in++
				}
			}
		}
		if in > 0 {
			return fmt.Errorf("node %d still in %d ISRs", id, in)
		}
		return nil
	})
}

// coldStart is workload 6: a one-node cluster with an empty data
// directory, from its process start to the first acknowledged produce to
// a topic created for it; the median of -coldstart-runs.
func (r *runner) coldStart(ctx context.Context) error {
	var samples []time.Duration
	for run := range r.cfg.coldStartRuns {
		dir := filepath.Join(r.dir, fmt.Sprintf("coldstart-%d", run+1))
		nd, err := r.sys.startSingle(ctx, dir)
		if err != nil {
			return err
		}
		d, err := firstAck(ctx, nd, r.values.value())
		if serr := nd.proc.stop(time.Minute); err == nil {
			err = serr
		}
		if !r.cfg.keep {
			os.RemoveAll(dir)
		}
		if err != nil {
			return fmt.Errorf("run %d: %w", run+1, err)
		}
		r.logf("cold start run %d: %s", run+1, d.Round(time.Millisecond))
		samples = append(samples, d)
	}
	r.set("coldstart_ms", ms(median(samples)))
	return nil
}

// firstAck creates a topic on the single node nd and produces one record,
// retrying both every 10ms from nd's process start, and returns the time
// from the process start to the acknowledgement.
func firstAck(ctx context.Context, nd *node, value []byte) (time.Duration, error) {
	created := false
	err := poll(ctx, 3*time.Minute, 10*time.Millisecond, func() error {
		if err := nd.proc.exitErr(); err != nil {
			return err
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(nd.addr),
			kgo.DefaultProduceTopic("cold"),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.MetadataMinAge(10*time.Millisecond),
			kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
			kgo.DialTimeout(time.Second),
		)
		if err != nil {
			return err
		}
		defer cl.Close()
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if !created {
			resp, err := kadm.NewClient(cl).CreateTopic(actx, 1, 1, nil, "cold")
			if err == nil {
				err = resp.Err
			}
			if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				return fmt.Errorf("create topic: %w", err)
			}
			created = true
		}
		return cl.ProduceSync(actx, &kgo.Record{Value: value}).FirstErr()
	})
	if err != nil {
		return 0, err
	}
	return time.Since(nd.proc.started), nil
}

// median returns the middle of samples (the mean of the two middle ones
// for an even count).
func median(samples []time.Duration) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(samples))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
