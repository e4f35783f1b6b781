package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsTopic is the topic workload 10's groups commit offsets of.
const groupsTopic = "bench-groups"

// groupsClients is how many franz-go clients send workload 10's commits.
const groupsClients = 4

// groupsCommits is workload 10 (issue 22): -groups consumer groups, each
// committing an offset once a second, as a consumer with auto-commit
// would, sent by a few clients (groupsClients) rather than one client per
// group. A commit is one OffsetCommit request of one partition (group i
// commits partition i mod benchPartitions of groupsTopic, the offset one
// more each second) with generation -1 and no member, as an admin client
// commits for a group with no members (kadm.CommitOffsets, kafka-consumer-
// groups.sh --reset-offsets): the group exists once its first offset is
// committed, on both systems, with no rebalance traffic in the figure.
// The first round (every group once) is untimed: it creates the groups
// and finds their coordinators. Then each group commits on a schedule of
// its own spread over the second for -groups-time; each commit is timed
// from its intended time to its answer, so a coordinator that falls
// behind counts in every commit it delays. The CPU figure is the three
// nodes' CPU time over that time, in percent of one core.
func (r *runner) groupsCommits(ctx context.Context) error {
	s := r.cfg.stress
	if err := createTopic(ctx, r.c, groupsTopic, benchPartitions, benchRF, 2*time.Minute); err != nil {
		return err
	}
	md, err := metadataFrom(ctx, r.c.opts, r.c.addrs()[0], groupsTopic)
	if err != nil {
		return err
	}
	if len(md.Topics) != 1 {
		return fmt.Errorf("metadata of %s: %d topics", groupsTopic, len(md.Topics))
	}
	topicID := md.Topics[0].TopicID
	cls := make([]*kgo.Client, groupsClients)
	for i := range cls {
		if cls[i], err = r.client(); err != nil {
			return err
		}
		defer cls[i].Close()
	}
	commit := func(ctx context.Context, g int, offset int64) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group = fmt.Sprintf("bench-group-%d", g)
		req.Generation = -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = groupsTopic
		rt.TopicID = topicID // v10+ names the topic by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = int32(g % benchPartitions)
		rp.Offset = offset
		rp.LeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cls[g%groupsClients])
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("%s: %w", req.Group, err)
				}
			}
		}
		return nil
	}

	// The untimed first round, a few hundred commits at a time.
	warm := time.Now()
	var failed errCount
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for g := range s.groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			failed.add(commit(ctx, g, 0))
		})
	}
	wg.Wait()
	if err := failed.err(); err != nil {
		return fmt.Errorf("first commits: %w", err)
	}
	r.logf("%d groups committed once in %s", s.groups, time.Since(warm).Round(time.Millisecond))

	cpuBefore, err := r.clusterCPU()
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var samples []time.Duration
	start := time.Now()
	seconds := max(int(s.groupsTime/time.Second), 1)
	for g := range s.groups {
		offset := time.Duration(g) * time.Second / time.Duration(s.groups)
		wg.Go(func() {
			for k := range seconds {
				intended := start.Add(offset + time.Duration(k)*time.Second)
				if sleep(ctx, time.Until(intended)) != nil {
					return
				}
				if err := commit(ctx, g, int64(k+1)); err != nil {
					failed.add(err)
					continue
				}
				took := time.Since(intended)
				mu.Lock()
				samples = append(samples, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter, err := r.clusterCPU()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := failed.err(); err != nil {
		return err
	}
	if len(samples) == 0 {
		return errors.New("no commit answered")
	}
	slices.Sort(samples)
	r.set("groups_commit_p99", ms(percentile(samples, 0.99)))
	r.set("groups_cpu", 100*(cpuAfter-cpuBefore).Seconds()/elapsed.Seconds())
	r.res.note("%s workload 10: %d commits in %s (%.0f/s), p50 %.1f ms, p99.9 %.1f ms",
		r.name(), len(samples), elapsed.Round(time.Millisecond), float64(len(samples))/elapsed.Seconds(),
		ms(percentile(samples, 0.5)), ms(percentile(samples, 0.999)))
	return nil
}

// clusterCPU returns the CPU time the running nodes have used, user plus
// system, summed.
func (r *runner) clusterCPU() (time.Duration, error) {
	var sum time.Duration
	for _, nd := range r.c.nodes {
		if nd.proc == nil || !nd.proc.alive() {
			continue
		}
		t, err := nd.proc.cpuTime()
		if err != nil {
			return 0, fmt.Errorf("node %d: %w", nd.id, err)
		}
		sum += t
	}
	return sum, nil
}
