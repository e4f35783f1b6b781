package broker

import (
	"slices"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// reconcile makes the node's replicas match a metadata image: it is the
// controller's OnApply callback, so it runs in log order, once per applied
// command, before the command's caller is answered. A partition assigned to
// this node gets a log (created or reopened), a partition no longer in the
// image (its topic was deleted) loses its log, and topic config changes reach
// the open logs.
//
// Leadership changes take effect here too (partition.update): a node that
// becomes leader keeps its high watermark and resets its follower tracking
// (ISR members assumed at the high watermark); a node that becomes follower
// stops serving clients at once, and the replica manager, woken at the end,
// hands the partition to a fetcher for its new leader, which truncates it by
// leader epoch before appending anything.
func (b *Broker) reconcile(img *controller.Image) {
	if img == nil {
		return
	}
	self := b.cfg.NodeID
	want := make(map[logstore.TopicPartition]struct{})
	for _, t := range img.Topics {
		logCfg, err := b.logConfig(img, t)
		minInsync := b.minInsyncReplicas(img, t)
		if err != nil {
			b.logger.Error("topic config unusable, using broker defaults", "topic", t.Name, "err", err)
		}
		for _, mp := range t.Partitions {
			if !slices.Contains(mp.Replicas, self) {
				continue
			}
			tp := logstore.TopicPartition{Topic: t.Name, Partition: mp.Partition}
			want[tp] = struct{}{}
			p := b.partition(tp)
			if p != nil && p.topicID != t.ID {
				// The topic was deleted and recreated under the same
				// name: the old replica's data must not leak into it.
				b.dropPartition(tp)
				p = nil
			}
			if p == nil {
				log, err := b.dir.Open(tp, t.ID, logCfg)
				if err != nil {
					b.logger.Error("cannot open partition log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
					continue
				}
				p = newPartition(tp, t.ID, log)
				p.producers.cfg = producerConfig{logger: b.logger, now: b.now, expirationMs: int64(b.cfg.ProducerIDExpirationMs)}
				if err := p.rebuildProducerState(); err != nil {
					b.logger.Error("cannot rebuild producer state", "topic", tp.Topic, "partition", tp.Partition, "err", err)
				}
				hw, ok := b.dir.CheckpointedHighWatermark(tp)
				if !ok || hw > log.LogEndOffset() {
					hw = 0
				}
				if hw < log.LogStartOffset() {
					hw = log.LogStartOffset()
				}
				p.hw.Store(hw)
				b.mu.Lock()
				b.partitions[tp] = p
				b.mu.Unlock()
			} else if p.log.Config() != logCfg {
				p.log.SetConfig(logCfg)
			}
			p.update(self, mp, minInsync, b.now())
		}
	}
	b.mu.RLock()
	var gone []logstore.TopicPartition
	for tp := range b.partitions {
		if _, ok := want[tp]; !ok {
			gone = append(gone, tp)
		}
	}
	b.mu.RUnlock()
	for _, tp := range gone {
		b.dropPartition(tp)
	}
	b.updateThrottles(img)
	prev := b.image.Swap(img)
	b.reconcileGroups(prev, img)
	b.reconcileTxn(img)
	b.kickReplication()
}

// dropPartition forgets a replica and removes its log from disk: its topic
// was deleted, or a reassignment moved it off this node.
func (b *Broker) dropPartition(tp logstore.TopicPartition) {
	b.mu.Lock()
	p := b.partitions[tp]
	delete(b.partitions, tp)
	b.mu.Unlock()
	if p != nil {
		p.stopReplica()
	}
	if err := b.dir.Remove(tp); err != nil {
		b.logger.Warn("cannot remove partition log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
}

// removeOrphans deletes logs found on disk for partitions the metadata no
// longer assigns to this node (their topic was deleted while it was down).
func (b *Broker) removeOrphans() {
	for _, tp := range b.dir.Partitions() {
		if b.partition(tp) == nil {
			b.logger.Info("removing log of a partition no longer assigned here", "topic", tp.Topic, "partition", tp.Partition)
			if err := b.dir.Remove(tp); err != nil {
				b.logger.Warn("cannot remove orphan log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
		}
	}
}

// metadata is the newest reconciled metadata image.
func (b *Broker) metadata() *controller.Image {
	return b.image.Load()
}
