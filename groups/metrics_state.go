package groups

// What the broker's metrics listener reads of the coordinator at scrape
// time (broker/metrics_state.go): the committed offsets of the groups this
// node coordinates, read without stepping a group's timers or writing
// anything, unlike ListGroups and OffsetFetch.

// GroupOffset is one committed offset of a group.
type GroupOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// CommittedOffsets returns the committed offsets of every group on a
// loaded __consumer_offsets partition this node leads. Share groups
// (which commit none), dead and unloaded groups are left out; a shard
// still loading is left out until it has loaded.
func (c *Coordinator) CommittedOffsets() []GroupOffset {
	all, _ := c.loadedGroups()
	var out []GroupOffset
	for _, g := range all {
		g.mu.Lock()
		if !g.unloaded && g.share == nil && g.state != stateDead {
			for topic, parts := range g.offsets {
				for p, o := range parts {
					out = append(out, GroupOffset{Group: g.name, Topic: topic, Partition: p, Offset: o.offset})
				}
			}
		}
		g.mu.Unlock()
	}
	return out
}
