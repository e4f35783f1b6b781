package broker

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// reconcile makes the node's replicas match a metadata image: it is the
// controller's OnApply callback, so it runs in log order, once per applied
// command, before the command's caller is answered. A partition assigned to
// this node gets a log (created or reopened by the log opener, off this
// goroutine: reconcile_open.go), a partition no longer in the image (its
// topic was deleted) loses its log, and topic config changes reach the open
// logs.
//
// Leadership changes take effect here too (partition.update): a node that
// becomes leader keeps its high watermark and resets its follower tracking
// (ISR members assumed at the high watermark); a node that becomes follower
// stops serving clients at once, and the replica manager, woken at the end,
// hands the partition to a fetcher for its new leader, which truncates it by
// leader epoch before appending anything.
//
// The work is proportional to what the command changed, not to the number
// of partitions: images are copy-on-write (controller.Image), so a topic
// whose *Topic is the one the previous image held is unchanged, and so is a
// partition whose *Partition is; and when img is the image one command
// built from prev, only the topics that command touched are looked at
// (Image.TopicsChangedSince), so not even the topic maps are walked. Only
// when the dynamic broker configs changed (they feed every topic's
// effective config), or the previous pass could not open a log, is every
// topic looked at again. With 10,000
// partitions and one ISR change per command, a full pass per command was
// most of a broker's CPU.
func (b *Broker) reconcile(img *controller.Image) {
	if img == nil {
		return
	}
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	prev := b.metadata()
	if prev != nil && img.Index < prev.Index {
		return // New's first reconcile, overtaken by an applied command
	}
	full := prev == nil || b.reconcileAll || !sameBrokerConfigs(prev, img) ||
		prev.Features[elrFeature] != img.Features[elrFeature] // strict min ISR follows it
	b.reconcileAll = false
	self := b.cfg.NodeID
	// The replica manager re-matches its fetchers to the partitions
	// when a leadership, the set of replicas held or a broker changed.
	kickFetchers := full || !maps.EqualFunc(prev.Brokers, img.Brokers, func(x, y *controller.Broker) bool { return x == y })
	var gone []logstore.TopicPartition
	// The topics to look at: every one, or only those the command that
	// built img from prev touched.
	topics := maps.Values(img.Topics)
	changed, delta := img.TopicsChangedSince(prev)
	if !full && delta {
		topics = func(yield func(*controller.Topic) bool) {
			for _, name := range changed {
				if t := img.Topics[name]; t != nil && !yield(t) {
					return
				}
			}
		}
	}
	for t := range topics {
		var old *controller.Topic
		if !full {
			old = prev.Topics[t.Name]
			if old == t {
				continue
			}
			if old != nil && (old.ID != t.ID || !maps.Equal(old.Configs, t.Configs)) {
				old = nil // recreated, or new configs: every partition
			}
		}
		logCfg, err := b.logConfig(img, t)
		minInsync, hwMinISR := b.minInsyncOf(img, t)
		if err != nil {
			b.logger.Error("topic config unusable, using broker defaults", "topic", t.Name, "err", err)
		}
		for _, mp := range t.Partitions {
			if old != nil && int(mp.Partition) < len(old.Partitions) && old.Partitions[mp.Partition] == mp {
				continue
			}
			tp := logstore.TopicPartition{Topic: t.Name, Partition: mp.Partition}
			if !slices.Contains(mp.Replicas, self) {
				if !full && (b.partition(tp) != nil || b.opener.has(tp)) {
					gone = append(gone, tp) // reassigned away
				}
				continue
			}
			p := b.partition(tp)
			if p != nil && p.topicID != t.ID {
				// The topic was deleted and recreated under the same
				// name: the old replica's data must not leak into it.
				b.dropPartition(tp)
				p = nil
			}
			if p == nil {
				// Opened off the apply path, and served once open
				// (reconcile_open.go).
				b.opener.queue(tp, openRequest{topicID: t.ID, cfg: logCfg, isNew: newReplica(prev, t, mp.Partition, self)})
				continue
			} else if p.log.Config() != logCfg {
				p.log.SetConfig(logCfg)
			}
			if p.update(self, mp, minInsync, b.now()) {
				kickFetchers = true
			}
			p.setHighWatermarkMinISR(self, min(hwMinISR, len(mp.Replicas)))
		}
	}
	if full {
		want := func(tp logstore.TopicPartition) bool {
			t := img.Topics[tp.Topic]
			return t != nil && int(tp.Partition) < len(t.Partitions) && slices.Contains(t.Partitions[tp.Partition].Replicas, self)
		}
		b.mu.RLock()
		for tp := range b.partitions {
			if !want(tp) {
				gone = append(gone, tp)
			}
		}
		b.mu.RUnlock()
		for _, tp := range b.opener.queued() {
			if !want(tp) {
				gone = append(gone, tp)
			}
		}
	} else {
		// Partitions of deleted topics, and those a recreated topic no
		// longer has; the loop above looked at every other partition
		// of a changed topic.
		prevTopics := maps.All(prev.Topics)
		if delta {
			prevTopics = func(yield func(string, *controller.Topic) bool) {
				for _, name := range changed {
					if old := prev.Topics[name]; old != nil && !yield(name, old) {
						return
					}
				}
			}
		}
		for name, old := range prevTopics {
			t := img.Topics[name]
			if t == old {
				continue
			}
			first := 0
			if t != nil {
				first = len(t.Partitions)
			}
			for i := first; i < len(old.Partitions); i++ {
				tp := logstore.TopicPartition{Topic: name, Partition: int32(i)}
				if b.partition(tp) != nil || b.opener.has(tp) {
					gone = append(gone, tp)
				}
			}
		}
	}
	for _, tp := range gone {
		b.dropPartition(tp)
		kickFetchers = true
	}
	b.updateThrottles(img)
	b.image.Store(img)
	b.reconcileGroups(prev, img)
	b.reconcileTxn(img)
	b.reconcileShareCoordinator(img) // share_coordinator.go
	if kickFetchers {
		b.kickReplication()
	}
}

// sameBrokerConfigs reports whether two images hold the same dynamic broker
// configs, which every topic's effective config depends on.
func sameBrokerConfigs(a, b *controller.Image) bool {
	return maps.EqualFunc(a.BrokerConfigs, b.BrokerConfigs, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// dropPartition forgets a replica and removes its log from disk: its topic
// was deleted, or a reassignment moved it off this node.
func (b *Broker) dropPartition(tp logstore.TopicPartition) {
	b.opener.cancel(tp) // one being opened is removed when it is installed
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

// removeOrphans deletes the logs on disk that the metadata does not assign
// to this node: their topic was deleted (or deleted and recreated, so the
// directory holds another topic id), or the partition moved away, while
// the node was down. New calls it once, after controller.Open returned,
// which is when this node's image has caught up with the controller's log;
// an image still replaying the log could miss a topic the log creates
// later.
//
// Only a log that opens cleanly is deleted: it is opened (recovered if
// need be) before anything is decided, and one that fails to open is
// offline and kept as it is (Kafka never deletes data it could not read).
// A partition this node hosts, or whose log is offline, is not an orphan.
// It runs under reconcileMu, so no reconcile opens a log while it decides.
func (b *Broker) removeOrphans() {
	// The logs the first reconcile queued open first: one that fails
	// (an older topic id under an assigned name) is decided here.
	_ = b.opener.wait(context.Background(), func(logstore.TopicPartition) bool { return true })
	b.reconcileMu.Lock()
	img, self := b.metadata(), b.cfg.NodeID
	if img == nil {
		b.reconcileMu.Unlock()
		return
	}
	readopt := false
	for _, tp := range b.dir.Partitions() {
		if b.partition(tp) != nil || b.dir.Offline(tp) != nil {
			continue
		}
		log, err := b.dir.Open(tp, [16]byte{}, logstore.DefaultConfig(), false)
		if err != nil {
			if !errors.Is(err, logstore.ErrLogOffline) {
				b.logger.Warn("keeping a log that is not assigned here but does not open", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
			continue
		}
		t := img.Topics[tp.Topic]
		mp := topicPartition(t, tp.Partition)
		assigned := mp != nil && slices.Contains(mp.Replicas, self)
		var zero [16]byte
		if assigned && (log.TopicID() == zero || log.TopicID() == t.ID) {
			// Assigned here after all: the reconcile below adopts it.
			if cfg, err := b.logConfig(img, t); err == nil {
				log.SetConfig(cfg)
			}
			readopt = true
			continue
		}
		b.logger.Info("removing log of a partition no longer assigned here", "topic", tp.Topic, "partition", tp.Partition)
		if err := b.dir.Remove(tp); err != nil {
			b.logger.Warn("cannot remove orphan log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
		// A topic deleted and recreated under the same name while this
		// node was down: the reconcile below gives the new topic's
		// replica its (empty) log now, not at the next metadata change.
		readopt = readopt || assigned
	}
	if readopt {
		b.reconcileAll = true
	}
	b.reconcileMu.Unlock()
	if readopt {
		b.reconcile(b.ctrl.Image())
	}
}

// metadata is the newest reconciled metadata image.
func (b *Broker) metadata() *controller.Image {
	return b.image.Load()
}
