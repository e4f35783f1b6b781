package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// scale100kPoll is how often workload 12 asks for the metadata of its
// partitions: an answer about 100,000 partitions is megabytes, and
// asking every 100 ms as workload 8 does would load the nodes it
// measures.
const scale100kPoll = time.Second

// scale100kAttempt bounds one CreateTopics attempt of workload 12.
const scale100kAttempt = 2 * time.Minute

// scale100kCluster runs workload 12 on a three-node cluster of its own,
// started after the shared cluster stopped: the partitions of workload 8
// and the others are not there to add to its figures, and a cluster that
// does not cope leaves nothing behind for the next workload.
func (r *runner) scale100kCluster(ctx context.Context) {
	dir := filepath.Join(r.dir, "scale100k")
	r.logf("starting a %d-node cluster for workload 12", clusterNodes)
	c, err := r.sys.startCluster(ctx, dir, clusterNodes, r.sec)
	if err != nil {
		r.res.fail(r.name(), "scale100k cluster start", err)
		return
	}
	r.c = c
	r.do(ctx, "scale100k", r.scale100k)
	r.logf("stopping workload 12's cluster")
	timeout := stopTimeout
	if ctx.Err() != nil {
		timeout = 5 * time.Second
	}
	if err := c.stop(timeout); err != nil {
		r.logf("stop: %v", err)
	}
	r.c = nil
	if !r.cfg.keep {
		os.RemoveAll(dir)
	}
}

// scale100k is workload 12 (issue 22): workload 8 at
// -scale100k-partitions partitions (100,000 by default) at RF 3, in
// topics of maxPartitionsPerCreate. Creation and the wait until every
// node shows every partition with a full ISR share one budget,
// -scale100k-timeout; the restart's wait for full ISRs has another. When
// a budget runs out the workload records how far it got — the partitions
// with a full ISR on every node, in a row of its own — measures the rest
// on what there is, in the notes rather than in rows labelled with the
// count asked for, and fails with what happened, so a broker that cannot
// cope yet shows as such in the table instead of hanging the run. The
// figures: creation time, the nodes' idle CPU as in workload 8, the
// largest node's RSS after the idle window, and the restart of the last
// node (after a clean stop) to full ISRs, timed from its process start
// (not measured when no partition reached a full ISR).
func (r *runner) scale100k(ctx context.Context) error {
	s := r.cfg.stress
	n := s.scale100kPartitions
	topics, sizes := scaleTopics(n)
	start := time.Now()
	deadline := start.Add(s.scale100kTimeout)
	created, createErr := r.createScaleTopicsBy(ctx, topics, sizes, deadline)
	watched := created
	if refused := (*kerr.Error)(nil); createErr != nil && !(errors.As(createErr, &refused) && !refused.Retriable) {
		watched = min(created+1, len(topics)) // a request that timed out may still create its topic
	}
	want := 0
	for _, size := range sizes[:watched] {
		want += int(size)
	}
	watch := topics[:watched]
	full, waitErr := waitFullOn(ctx, r, r.c.others(-1), watch, want, deadline)
	r.set("scale100k_full", float64(full))
	// With fewer partitions than the rows' label says, the figures go to
	// the notes, not the table.
	complete := createErr == nil && waitErr == nil
	record := func(key, what string, v float64) {
		if complete {
			r.set(key, v)
		} else {
			r.res.note("%s workload 12, with %d partitions instead of %d: %s %s", r.name(), full, n, what, formatValue(v))
		}
	}
	var problems []error
	if complete {
		r.set("scale100k_create_s", time.Since(start).Seconds())
	} else {
		err := errors.Join(createErr, waitErr)
		r.res.note("%s workload 12: %d of %d topics created, %d of %d partitions with a full ISR on every node after %s: %v",
			r.name(), created, len(topics), full, n, time.Since(start).Round(time.Second), err)
		problems = append(problems, fmt.Errorf("creation: %d of %d partitions with a full ISR: %w", full, n, err))
	}
	r.noteOpenFiles("workload 12", full)

	cpu, err := r.idleCPU(ctx)
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	record("scale100k_idle_cpu", "idle CPU (% core, 3 nodes)", cpu)
	rss, largest, err := r.nodeMemory()
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	record("scale100k_rss_mib", "largest node's RSS (MiB)", float64(largest)/(1<<20))
	r.res.note("%s workload 12: RSS per node with %d partitions idle: %s", r.name(), full, mibList(rss))

	if full == 0 {
		// Nothing to come back to: the restart is timed to full ISRs,
		// and waiting out its budgets (a stopped node leaving ISRs, the
		// restart's stall) measures nothing but costs the run up to
		// twenty minutes (Kafka 4.4 at this machine's file limit).
		r.res.note("%s workload 12: restart not measured: no partition reached a full ISR on every node", r.name())
		return errors.Join(append(problems, errors.New("restart: not measured, no partition with a full ISR"))...)
	}
	nd, err := r.stopForRestart(ctx, "workload 12", full, watch)
	if err != nil {
		return errors.Join(append(problems, err)...)
	}
	if err := nd.restart(); err != nil {
		return errors.Join(append(problems, err)...)
	}
	restartBy := time.Now().Add(s.scale100kTimeout)
	if err := r.c.waitFormed(ctx, time.Until(restartBy)); err != nil {
		return errors.Join(append(problems, fmt.Errorf("node %d back: %w", nd.id, err))...)
	}
	// As workload 8: the partitions as another node sees them.
	back, err := waitFullOn(ctx, r, r.c.others(nd.id)[:1], watch, full, restartBy)
	if err != nil {
		r.res.note("%s workload 12: after node %d's restart, %d of %d partitions with a full ISR within %s",
			r.name(), nd.id, back, full, s.scale100kTimeout)
		return errors.Join(append(problems, fmt.Errorf("restart: %d of %d partitions with a full ISR: %w", back, full, err))...)
	}
	record("scale100k_isr_s", "restart to full ISRs (s)", time.Since(nd.proc.started).Seconds())
	return errors.Join(problems...)
}

// createScaleTopicsBy creates topics as createScaleTopics does, each
// request allowed what is left until deadline, and returns how many it
// created. A retriable error (NOT_CONTROLLER while the controller
// changes, a timeout) is retried every second until deadline; a topic
// that already exists, on any attempt, was created by one whose answer
// was lost (ours, or kgo's own retry of a request). No
// attempt may take more than scale100kAttempt, so that one request stuck
// (the client retrying against a controller that keeps changing) does
// not spend the whole budget unseen.
func (r *runner) createScaleTopicsBy(ctx context.Context, topics []string, sizes []int32, deadline time.Time) (int, error) {
	start := time.Now()
	for i := range topics {
		if i > 0 && i%10 == 0 {
			r.logf("workload 12: %d of %d topics created in %s", i, len(topics), time.Since(start).Round(time.Second))
		}
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return i, fmt.Errorf("%d of %d topics created when the budget ran out", i, len(topics))
			}
			err := r.createScaleTopics(ctx, topics[i:i+1], sizes[i:i+1], min(left, scale100kAttempt))
			// A topic that already exists was created by an attempt whose
			// answer was lost: an earlier one of ours, or the client's
			// own retry of this one (the cluster is this workload's, and
			// nothing else creates these names).
			if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
				break
			}
			if ctx.Err() != nil || !kerr.IsRetriable(err) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, kerr.RequestTimedOut) {
				return i, err
			}
			r.logf("workload 12: %v; retrying", err)
			if err := sleep(ctx, time.Second); err != nil {
				return i, err
			}
		}
	}
	return len(topics), nil
}

// waitFullOn waits until every node of nodes shows at least want
// partitions of topics with a leader and a full ISR, asking each every
// scale100kPoll, until deadline or isrStallTimeout without progress. It
// returns the fewest partitions with a full ISR any node showed in its
// last answer (0 for a node that has not answered).
func waitFullOn(ctx context.Context, r *runner, nodes []*node, topics []string, want int, deadline time.Time) (int, error) {
	if len(nodes) == 0 {
		return 0, errors.New("no node runs")
	}
	fullOn := map[int32]int{}
	fewest := func() int {
		least := want
		for _, nd := range nodes {
			least = min(least, fullOn[nd.id])
		}
		return least
	}
	best, bestAt := -1, time.Now()
	for {
		var last error
		for _, nd := range nodes {
			resp, err := metadataFrom(ctx, r.c.opts, nd.addr, topics...)
			if err != nil {
				last = fmt.Errorf("node %d: %w", nd.id, err)
				continue
			}
			parts, full := isrState(resp)
			fullOn[nd.id] = full
			if full < want {
				last = fmt.Errorf("node %d: %d of %d partitions with a full ISR (want %d)", nd.id, full, parts, want)
			}
		}
		got := fewest()
		if last == nil {
			return got, nil
		}
		if got > best {
			best, bestAt = got, time.Now()
		}
		switch {
		case ctx.Err() != nil:
			return got, ctx.Err()
		case time.Now().After(deadline):
			return got, fmt.Errorf("budget ran out (%v)", last)
		case time.Since(bestAt) > isrStallTimeout:
			return got, fmt.Errorf("stalled for %s (%v)", isrStallTimeout, last)
		}
		sleep(ctx, scale100kPoll)
	}
}
