package groups

import "context"

// TopicsDeleted tells the coordinator that topics were deleted: their
// committed offsets are tombstoned by the next PurgeDeletedTopics, as Kafka
// does when a topic goes away, so a topic recreated under the same name does
// not inherit them. It does no I/O, so the broker may call it from its
// metadata callback.
func (c *Coordinator) TopicsDeleted(names []string) {
	if len(names) == 0 {
		return
	}
	c.mu.Lock()
	c.deletedTopics = append(c.deletedTopics, names...)
	c.mu.Unlock()
	select {
	case c.loadSignal <- struct{}{}:
	default:
	}
}

// PurgeDeletedTopics removes the committed offsets of the topics reported
// by TopicsDeleted, and not existing now, from every loaded group.
func (c *Coordinator) PurgeDeletedTopics(ctx context.Context) {
	c.mu.Lock()
	names := c.deletedTopics
	c.deletedTopics = nil
	c.mu.Unlock()
	if len(names) == 0 {
		return
	}
	deleted := make(map[string]bool, len(names))
	for _, n := range names {
		// A topic that exists again (recreated, or a deletion replayed
		// from the metadata log at start-up) keeps its offsets.
		if _, exists := c.cfg.LookupTopic(n, [16]byte{}); !exists {
			deleted[n] = true
		}
	}
	all, _ := c.loadedGroups()
	for _, g := range all {
		c.purgeGroup(ctx, g, deleted)
	}
}

func (c *Coordinator) purgeGroup(ctx context.Context, g *group, deleted map[string]bool) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if g.unloaded {
		g.mu.Unlock()
		return
	}
	// Offsets a transaction has pending go too, as in Kafka: each
	// partition's tombstone drops them when replayed.
	parts := make(offsetTable)
	for _, topic := range sortedKeys(g.offsets) {
		if deleted[topic] {
			for p, o := range g.offsets[topic] {
				parts.set(topic, p, o)
			}
		}
	}
	for _, pending := range g.txnOffsets {
		for topic, ps := range pending {
			if deleted[topic] {
				for p, o := range ps {
					parts.set(topic, p, o)
				}
			}
		}
	}
	var records []kv
	for _, topic := range sortedKeys(parts) {
		for _, p := range sortedKeys(parts[topic]) {
			records = append(records, kv{key: offsetKey(g.name, topic, p)})
		}
	}
	g.mu.Unlock()
	if len(records) == 0 {
		return
	}
	if err := c.append(ctx, g, records); err != nil {
		c.cfg.Logger.Warn("cannot remove offsets of deleted topics", "group", g.name, "err", err)
		return
	}
	g.mu.Lock()
	for topic, ps := range parts {
		for p := range ps {
			offsetTable(g.offsets).remove(topic, p)
			g.dropTxnOffsetsLocked(topic, p)
		}
	}
	g.mu.Unlock()
}
