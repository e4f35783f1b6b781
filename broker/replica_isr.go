package broker

// The leader's ISR goroutine: every replica.lag.time.max.ms/2, and at once
// when a fetch shows an out-of-sync follower caught up, it asks each
// partition this node leads whether its ISR should change
// (partition.proposeISRLocked) and proposes the change to the controller
// with AlterPartition, off the request path. At most one proposal per
// partition is in flight; until it is answered the high watermark is
// computed over the committed ISR plus any member being added.

import (
	"context"
	"errors"
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

// checkISR proposes every ISR change due now.
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
	for _, p := range parts {
		p.mu.Lock()
		next := p.proposeISRLocked(self, img, now, lag)
		if next == nil {
			p.mu.Unlock()
			continue
		}
		p.beginAlterLocked(next)
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
		p.mu.Unlock()
		b.logger.Info("proposing ISR change", "topic", p.tp.Topic, "partition", p.tp.Partition, "isr", next, "leader_epoch", req.LeaderEpoch, "partition_epoch", req.PartitionEpoch)
		rm.wg.Add(1)
		go func() {
			defer rm.wg.Done()
			actx, cancel := context.WithTimeout(ctx, alterPartitionTimeout)
			defer cancel()
			mp, err := b.alterPartition(actx, req)
			if err != nil {
				b.logger.Info("ISR change not committed", "topic", req.Topic, "partition", req.Partition, "err", err)
			}
			p.alterDone(self, req.LeaderEpoch, mp, err)
		}()
	}
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
