package groups

import (
	"context"
	"time"
)

// ExpireOffsets applies offsets.retention.minutes (KIP-211): the offsets of
// a group without members expire once the group has been Empty for the
// retention period, or, for a group that never had members (simple
// consumers committing with generation -1), once each offset is that old.
// An Empty group left without offsets is deleted. Groups with members keep
// their offsets; an offset a transaction has pending does not expire, and
// a group with pending offsets is not deleted. The broker calls it every
// offsets.retention.check.interval.ms.
func (c *Coordinator) ExpireOffsets(ctx context.Context) {
	if c.cfg.OffsetsRetention <= 0 {
		return
	}
	all, _ := c.loadedGroups()
	for _, g := range all {
		if ctx.Err() != nil {
			return
		}
		c.expireGroup(ctx, g, c.cfg.Now())
	}
	c.reapDead()
}

func (c *Coordinator) expireGroup(ctx context.Context, g *group, now time.Time) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if g.unloaded || g.state != stateEmpty || g.share != nil {
		g.mu.Unlock()
		return
	}
	retention := c.cfg.OffsetsRetention
	expired := func(o committedOffset) bool {
		base := g.stateSince
		if g.protocolType == "" {
			base = time.UnixMilli(o.commitTimestamp)
		}
		return !now.Before(base.Add(retention))
	}
	type tp struct {
		topic     string
		partition int32
	}
	var gone []tp
	var records []kv
	left := 0
	for _, topic := range sortedKeys(g.offsets) {
		for _, p := range sortedKeys(g.offsets[topic]) {
			if expired(g.offsets[topic][p]) && !g.hasTxnOffsetLocked(topic, p) {
				gone = append(gone, tp{topic, p})
				records = append(records, kv{key: offsetKey(g.name, topic, p)})
			} else {
				left++
			}
		}
	}
	// A group some transaction has offsets pending in stays (Kafka's
	// rule): its marker may still commit them.
	deleteGroup := left == 0 && len(g.txnOffsets) == 0
	if deleteGroup {
		if g.streams != nil {
			records = append(records, g.streamsTombstonesLocked()...) // streams_records.go
		} else if g.consumer != nil {
			records = append(records, g.consumerTombstonesLocked()...)
		} else {
			records = append(records, kv{key: groupKey(g.name)})
			if g.wasConsumer {
				records = append(records, consumerGroupTombstones(g.name)...)
			}
		}
	}
	g.mu.Unlock()
	if len(records) == 0 {
		return
	}
	if err := c.append(ctx, g, records); err != nil {
		c.cfg.Logger.Warn("cannot expire offsets", "group", g.name, "err", err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, x := range gone {
		delete(g.offsets[x.topic], x.partition)
		if len(g.offsets[x.topic]) == 0 {
			delete(g.offsets, x.topic)
		}
	}
	if deleteGroup && g.state == stateEmpty && len(g.offsets) == 0 && len(g.txnOffsets) == 0 {
		g.setStateLocked(stateDead, now)
	}
}
