package groups

// Share-partition state initialization of share groups: a partition is
// assignable only once its share state exists (Kafka's
// ShareGroupStatePartitionMetadata record and InitializeShareGroupState to
// the share coordinator). The heartbeat records the partitions of newly
// subscribed topics as initializing (maybeInitializeShareLocked); the
// broker's loader hands them to Config.ShareStateInitializer
// (InitializeShareStates) and the outcome is recorded (finishShareInit);
// the next heartbeat finds initialized partitions the target does not
// cover (initializedAssignmentPending) and moves the group epoch.

import (
	"context"
	"maps"
	"slices"
	"time"
)

// SharePartitions names partitions by topic id: topic id → partitions.
type SharePartitions map[[16]byte][]int32

// ShareStateInitializer initializes the share-partition state of the
// partitions a share group starts consuming, as Kafka's group coordinator
// sends InitializeShareGroupState to the share coordinator (KIP-932). The
// share-partition side of the broker implements it.
//
// InitializeShareState is called without any coordinator lock held, from
// the broker's loader goroutine (Coordinator.InitializeShareStates), once
// per group with every partition that waits: the state of each partition
// of group must exist once it returns nil, with state epoch groupEpoch and
// no start offset (Kafka's -1: the share partition starts where
// share.auto.offset.reset says when first fetched). Initializing a
// partition that already has state must leave that state as it is. An
// error means none may be assumed initialized; the group retries at a
// later heartbeat.
type ShareStateInitializer interface {
	InitializeShareState(ctx context.Context, group string, groupEpoch int32, partitions SharePartitions) error
}

// initializedAssignmentPending is Kafka's check that initialized partitions
// of subscribed topics are not all in the target assignment yet.
func (sg *shareGroup) initializedAssignmentPending(all map[string]TopicInfo) bool {
	if len(sg.members) == 0 || len(sg.state.initialized) == 0 {
		return false
	}
	assigned := make(map[topicID]map[int32]bool)
	for _, t := range sg.target {
		for id, ps := range t {
			if assigned[id] == nil {
				assigned[id] = make(map[int32]bool)
			}
			for _, p := range ps {
				assigned[id][p] = true
			}
		}
	}
	for n := range sg.subscribedNames() {
		t, ok := all[n]
		if !ok {
			continue
		}
		init, ok := sg.state.initialized[t.ID]
		if !ok {
			continue
		}
		for _, p := range init.partitions {
			if p < t.Partitions && !assigned[t.ID][p] {
				return true
			}
		}
	}
	return false
}

// maybeInitializeShareLocked records the partitions of subscribed topics
// whose share state is neither initialized nor being initialized (or whose
// initialization has waited longer than Config.ShareInitializeRetry) as
// initializing, and, without a ShareStateInitializer, as initialized at
// once. Partitions of topics that no longer exist are forgotten.
func (c *Coordinator) maybeInitializeShareLocked(g *group, all map[string]TopicInfo, now time.Time) {
	sg := g.share
	if c.cfg.ShareStateInitializer == nil && len(sg.state.initializing) > 0 {
		// Nothing initializes them but the records: they are ready.
		for id, t := range sg.state.initializing {
			sg.state.initialized[id] = shareInitTopic{name: t.name, partitions: mergeParts(sg.state.initialized[id].partitions, t.partitions)}
			delete(sg.state.initializing, id)
		}
		sg.dirty.state = true
	}
	byID := make(map[topicID]TopicInfo, len(all))
	for _, t := range all {
		byID[t.ID] = t
	}
	for _, set := range []map[topicID]shareInitTopic{sg.state.initializing, sg.state.initialized} {
		for id := range set {
			if _, ok := byID[id]; !ok {
				delete(set, id)
				delete(sg.initSince, id)
				sg.dirty.state = true
			}
		}
	}
	for n := range sg.subscribedNames() {
		t, ok := all[n]
		if !ok || t.Partitions <= 0 {
			continue
		}
		have := make(map[int32]bool)
		for _, p := range sg.state.initialized[t.ID].partitions {
			have[p] = true
		}
		if since, ok := sg.initSince[t.ID]; ok && !sg.initBusy && now.Sub(since) < c.cfg.ShareInitializeRetry {
			for _, p := range sg.state.initializing[t.ID].partitions {
				have[p] = true
			}
		}
		var missing []int32
		for p := int32(0); p < t.Partitions; p++ {
			if !have[p] {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			continue
		}
		sg.dirty.state = true
		if c.cfg.ShareStateInitializer == nil {
			sg.state.initialized[t.ID] = shareInitTopic{name: t.Name, partitions: mergeParts(sg.state.initialized[t.ID].partitions, missing)}
			continue
		}
		sg.state.initializing[t.ID] = shareInitTopic{name: t.Name, partitions: mergeParts(sg.state.initializing[t.ID].partitions, missing)}
		sg.initSince[t.ID] = now
	}
}

// mergeParts is the sorted union of two partition lists.
func mergeParts(a, b []int32) []int32 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// InitializeShareStates hands the partitions that share groups wait to
// have initialized to Config.ShareStateInitializer and records the outcome
// (ShareGroupStatePartitionMetadata): initialized partitions become
// assignable at the group's next heartbeat; partitions that failed are
// forgotten, so the next heartbeat asks again. The broker calls it when
// LoadSignal fires; without an initializer it does nothing.
func (c *Coordinator) InitializeShareStates(ctx context.Context) {
	init := c.cfg.ShareStateInitializer
	if init == nil {
		return
	}
	all, _ := c.loadedGroups()
	for _, g := range all {
		if ctx.Err() != nil {
			return
		}
		g.mu.Lock()
		var todo SharePartitions
		var epoch int32
		if sg := g.share; sg != nil && !g.unloaded && g.state != stateDead && !sg.initBusy && len(sg.state.initializing) > 0 {
			todo = make(SharePartitions, len(sg.state.initializing))
			for id, t := range sg.state.initializing {
				todo[id] = slices.Clone(t.partitions)
			}
			epoch = sg.epoch
			sg.initBusy = true
		}
		g.mu.Unlock()
		if todo == nil {
			continue
		}
		err := init.InitializeShareState(ctx, g.name, epoch, todo)
		if err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("cannot initialize share-partition state", "group", g.name, "err", err)
		}
		c.finishShareInit(ctx, g, todo, err == nil)
	}
}

// finishShareInit records the outcome of an initialization of partitions.
func (c *Coordinator) finishShareInit(ctx context.Context, g *group, done SharePartitions, ok bool) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	sg := g.share
	if sg == nil || g.unloaded || g.state == stateDead {
		g.mu.Unlock()
		return
	}
	sg.initBusy = false
	for _, id := range slices.SortedFunc(maps.Keys(done), func(a, b topicID) int { return slices.Compare(a[:], b[:]) }) {
		t, ok2 := sg.state.initializing[id]
		if !ok2 {
			continue
		}
		var left []int32
		for _, p := range t.partitions {
			if !slices.Contains(done[id], p) {
				left = append(left, p)
			}
		}
		if ok {
			sg.state.initialized[id] = shareInitTopic{name: t.name, partitions: mergeParts(sg.state.initialized[id].partitions, done[id])}
		}
		if len(left) == 0 {
			delete(sg.state.initializing, id)
			delete(sg.initSince, id)
		} else {
			t.partitions = left
			sg.state.initializing[id] = t
		}
		sg.dirty.state = true
	}
	records := g.shareRecordsLocked(c.cfg.Now())
	g.mu.Unlock()
	if len(records) > 0 {
		if err := c.append(ctx, g, records); err != nil {
			c.cfg.Logger.Warn("cannot persist share group", "group", g.name, "err", err)
		}
	}
}
