package txn

import (
	"context"
	"fmt"
)

// replay reads a __transaction_state partition from its log start to its
// high watermark and returns the last state of every transactional id in
// it; a tombstone removes the id.
func (c *Coordinator) replay(ctx context.Context, partition int32) (map[string]metadata, error) {
	metas := make(map[string]metadata)
	var next int64
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, hw, err := c.log.Read(ctx, partition, next)
		if err != nil {
			return nil, err
		}
		if next >= hw || len(data) == 0 {
			break
		}
		last, err := parseBatches(data, func(key, value []byte) error {
			id, ok, err := decodeKey(key)
			if err != nil || !ok {
				return err
			}
			if value == nil {
				delete(metas, id)
				return nil
			}
			m, err := decodeValue(value)
			if err != nil {
				return fmt.Errorf("transactional id %q: %w", id, err)
			}
			metas[id] = m
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", partition, err)
		}
		if last <= next {
			break
		}
		next = last
		if next >= hw {
			break
		}
	}
	for id, m := range metas {
		if m.state == StateDead {
			delete(metas, id)
		}
	}
	return metas, nil
}
