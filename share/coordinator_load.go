package share

// Loading a state partition: the share coordinator of a newly led
// __share_group_state partition replays its records, from the log start
// to the high watermark, before it answers for the partition's keys
// (Kafka's CoordinatorLoader).

import (
	"context"
	"errors"
)

// LoadPending loads every led partition not loaded yet. A load that fails
// (the new leader not caught up, a read error) leaves the partition
// loading; the caller tries again while Loading reports true.
func (c *Coordinator) LoadPending(ctx context.Context) {
	c.mu.Lock()
	var todo []*statePartition
	for _, sp := range c.parts {
		if !sp.loaded {
			todo = append(todo, sp)
		}
	}
	c.mu.Unlock()
	for _, sp := range todo {
		if ctx.Err() != nil {
			return
		}
		sp.wmu.Lock()
		keys, end, err := c.replay(ctx, sp.index)
		if err != nil {
			sp.wmu.Unlock()
			if ctx.Err() == nil {
				c.cfg.Logger.Info("cannot load "+StateTopic+" partition yet", "partition", sp.index, "err", err)
			}
			continue
		}
		c.mu.Lock()
		if c.parts[sp.index] == sp {
			sp.keys = keys
			sp.end = end
			sp.loaded = true
		}
		c.mu.Unlock()
		sp.wmu.Unlock()
		c.cfg.Logger.Debug("loaded "+StateTopic+" partition", "partition", sp.index, "keys", len(keys))
	}
}

// replay reads a state partition's records up to its high watermark, and
// returns the share-partitions' states and the offset it stopped at.
func (c *Coordinator) replay(ctx context.Context, partition int32) (map[Key]*keyState, int64, error) {
	keys := make(map[Key]*keyState)
	now := c.cfg.Now().UnixMilli()
	offset := int64(0)
	for {
		data, hw, err := c.log.Read(ctx, partition, offset)
		if err != nil {
			return nil, 0, err
		}
		if offset >= hw || len(data) == 0 {
			return keys, max(offset, hw), nil
		}
		next, err := readStateBatches(data, func(at int64, key, value []byte) error {
			r, ok, err := decodeStateRecord(key, value)
			if err != nil {
				// Kafka fails the load on a record it cannot read;
				// one bad record must not lose every other key.
				c.cfg.Logger.Warn("skipping unreadable "+StateTopic+" record", "partition", partition, "err", err)
				return nil
			}
			if ok {
				applyRecord(keys, &r, at, now)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		if next <= offset {
			return nil, 0, errors.New("share: " + StateTopic + " read made no progress")
		}
		offset = next
	}
}
