package broker

// The leader's ISR goroutine: every replica.lag.time.max.ms/2, and at once
// when a fetch shows an out-of-sync follower caught up, it asks each
// partition this node leads whether its ISR should change
// (partition.proposeISRLocked) and queues the proposal for runAlter, which
// sends every queued proposal in one AlterPartition request, off the
// request path (Kafka's AlterPartitionManager). At most one proposal per
// partition is in flight; until its outcome is known the high watermark is
// computed over the committed ISR plus any member being added, even when
// the controller cannot be reached for a long time.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
)

// alterPartitionTimeout bounds one AlterPartition call, so a controller
// that is changing hands does not hold a partition's proposal for long.
const alterPartitionTimeout = 5 * time.Second

func (rm *replicaManager) lagTimeMax() time.Duration {
	lag := time.Duration(rm.b.cfg.ReplicaLagTimeMaxMs) * time.Millisecond
	if lag <= 0 {
		lag = 30 * time.Second
	}
	return lag
}

func (rm *replicaManager) runISR(ctx context.Context) {
	tick := max(rm.lagTimeMax()/2, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-rm.isrKick:
		}
		rm.checkISR(ctx)
	}
}

// checkISR proposes every ISR change due now: it marks each proposal in
// flight and queues it for runAlter.
func (rm *replicaManager) checkISR(ctx context.Context) {
	b := rm.b
	img := b.metadata()
	if img == nil {
		return
	}
	self := b.cfg.NodeID
	brokerEpoch := int64(-1)
	if br := img.Brokers[self]; br != nil {
		brokerEpoch = br.Epoch
	}
	now := b.now()
	lag := rm.lagTimeMax()
	b.mu.RLock()
	parts := make([]*partition, 0, len(b.partitions))
	for _, p := range b.partitions {
		parts = append(parts, p)
	}
	b.mu.RUnlock()
	var proposals []alterProposal
	for _, p := range parts {
		p.mu.Lock()
		next := p.proposeISRLocked(self, img, now, lag)
		if next == nil {
			p.mu.Unlock()
			continue
		}
		seq := p.beginAlterLocked(next)
		req := controller.AlterPartitionRequest{
			BrokerID:       self,
			BrokerEpoch:    brokerEpoch,
			Topic:          p.tp.Topic,
			TopicID:        p.topicID,
			Partition:      p.tp.Partition,
			LeaderEpoch:    p.leaderEpoch,
			PartitionEpoch: p.partitionEpoch,
			NewISR:         next,
		}
		from := slices.Clone(p.isr)
		p.mu.Unlock()
		b.logger.Debug("proposing ISR change", "topic", p.tp.Topic, "partition", p.tp.Partition, "isr", next, "leader_epoch", req.LeaderEpoch, "partition_epoch", req.PartitionEpoch)
		proposals = append(proposals, alterProposal{p: p, seq: seq, req: req, from: from})
	}
	if len(proposals) == 0 {
		return
	}
	rm.alterMu.Lock()
	rm.alterPending = append(rm.alterPending, proposals...)
	rm.alterMu.Unlock()
	select {
	case rm.alterReady <- struct{}{}:
	default:
	}
}

// alterBatchMax bounds the proposals sent in one AlterPartition request,
// which the controller commits as one metadata command; a restarted
// follower of 10,000 partitions rejoins their ISRs in a handful of them.
const alterBatchMax = 2000

// alterProposal is one queued ISR proposal of a partition this node leads;
// seq is the partition's number for it (partition.beginAlterLocked).
type alterProposal struct {
	p   *partition
	seq uint64
	req controller.AlterPartitionRequest
	// from is the ISR the proposal changes (for the shrink and expand
	// counters, metrics_state_isr.go).
	from []int32
	// resent counts how often the proposal was sent again after an
	// unknown outcome; it only thins out the log.
	resent int
}

// runAlter sends the queued ISR proposals to the controller, batched, one
// request at a time: Kafka's AlterPartitionManager. While a request is out,
// new proposals queue up and go in the next one. A proposal whose outcome is
// unknown (no answer, NOT_CONTROLLER, a timeout) is sent again as it was,
// after a short backoff, until an answer or the metadata settles it: it
// stays pending meanwhile, so the high watermark keeps counting the
// replicas it would add (partition.alterDone).
func (rm *replicaManager) runAlter(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-rm.alterReady:
		}
		for ctx.Err() == nil {
			rm.alterMu.Lock()
			n := min(len(rm.alterPending), alterBatchMax)
			batch := slices.Clone(rm.alterPending[:n])
			rm.alterPending = rm.alterPending[n:]
			if len(rm.alterPending) == 0 {
				rm.alterPending = nil
			}
			rm.alterMu.Unlock()
			if n == 0 {
				break
			}
			retry := rm.sendAlter(ctx, batch)
			if len(retry) == 0 {
				continue
			}
			t := time.NewTimer(replicaFetchBackoff)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			rm.requeueAlter(retry)
		}
	}
}

// requeueAlter puts proposals whose outcome is unknown back at the head of
// the queue, with this node's current broker epoch (a re-registered
// process proposes under its new one, as Kafka's manager reads the epoch
// when it sends).
func (rm *replicaManager) requeueAlter(retry []alterProposal) {
	epoch := int64(-1)
	if img := rm.b.metadata(); img != nil {
		if br := img.Brokers[rm.b.cfg.NodeID]; br != nil {
			epoch = br.Epoch
		}
	}
	for i := range retry {
		retry[i].req.BrokerEpoch = epoch
		retry[i].resent++
	}
	rm.alterMu.Lock()
	rm.alterPending = append(retry, rm.alterPending...)
	rm.alterMu.Unlock()
}

// sendAlter proposes batch in one request and hands each partition its
// answer. It returns the proposals to send again: those whose outcome is
// unknown and that the metadata has not settled meanwhile.
func (rm *replicaManager) sendAlter(ctx context.Context, batch []alterProposal) (retry []alterProposal) {
	b := rm.b
	self := b.cfg.NodeID
	reqs := make([]controller.AlterPartitionRequest, len(batch))
	for i, pr := range batch {
		reqs[i] = pr.req
	}
	actx, cancel := context.WithTimeout(ctx, alterPartitionTimeout)
	results, err := b.alterPartitions(actx, reqs)
	cancel()
	var (
		unsettled int
		firstErr  error
		// quiet: every proposal is a re-send whose unknown outcome
		// was logged already; say so again only now and then.
		quiet = true
	)
	for i, pr := range batch {
		var mp controller.Partition
		perr := err
		if err == nil {
			mp, perr = results[i].Partition, results[i].Err
		}
		if perr != nil && firstErr == nil {
			firstErr = perr
		}
		if perr == nil {
			b.metrics.isrChanged(pr.from, pr.req.NewISR)
		}
		switch pr.p.alterDone(self, pr.seq, pr.req.LeaderEpoch, mp, perr) {
		case alterRetry:
			unsettled++
			retry = append(retry, pr)
			quiet = quiet && pr.resent%100 != 0
		case alterWaitMetadata:
			unsettled++
		}
	}
	switch {
	case len(retry) > 0 && quiet:
	case unsettled > 0 && outcomeUnknown(firstErr):
		b.logger.Warn("ISR changes of unknown outcome: keeping the proposed ISR pending", "partitions", unsettled,
			"proposed", len(batch), "first_topic", batch[0].req.Topic, "first_partition", batch[0].req.Partition, "err", firstErr)
	case firstErr != nil:
		b.logger.Info("ISR changes not committed", "pending", unsettled, "proposed", len(batch),
			"first_topic", batch[0].req.Topic, "first_partition", batch[0].req.Partition, "err", firstErr)
	default:
		b.logger.Info("ISR changes committed", "partitions", len(batch))
	}
	if ctx.Err() != nil {
		return nil
	}
	return retry
}

// kerrIs reports whether err is any of the Kafka errors codes.
func kerrIs(err error, codes ...*kerr.Error) bool {
	for _, c := range codes {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}
