package groups

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replay reads a __consumer_offsets partition from its log start to its
// high watermark and rebuilds the groups it holds: the last record of each
// key wins, a tombstone deletes. Groups come back Stable with their members
// (who must heartbeat within their session timeout or be removed) or Empty;
// consumer groups come back with their epochs, members, targets and current
// assignments (consumer_load.go).
func (c *Coordinator) replay(ctx context.Context, partition, epoch int32) (map[string]*group, error) {
	metas := make(map[string]*kmsg.GroupMetadataValue)
	metaOffsets := make(map[string]int64) // offset of each classic group's last record
	consumers := make(map[string]*consumerReplay)
	offsets := make(map[string]map[string]map[int32]committedOffset)
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
		last, err := parseBatches(data, func(r parsedRecord) error {
			k, err := decodeKey(r.key)
			if errors.Is(err, errUnknownKey) {
				return nil
			}
			if err != nil {
				return err
			}
			if k.version >= consumerGroupMetadataKeyVersion {
				return replayConsumerRecord(consumers, k, r)
			}
			if k.isGroup {
				if r.value == nil {
					delete(metas, k.group)
					return nil
				}
				v, err := decodeGroupValue(r.value)
				if err != nil {
					return err
				}
				metas[k.group] = v
				metaOffsets[k.group] = r.offset
				return nil
			}
			if r.value == nil {
				if byTopic := offsets[k.group]; byTopic != nil {
					delete(byTopic[k.topic], k.partition)
				}
				return nil
			}
			o, err := decodeOffsetValue(r.value)
			if err != nil {
				return err
			}
			byTopic := offsets[k.group]
			if byTopic == nil {
				byTopic = make(map[string]map[int32]committedOffset)
				offsets[k.group] = byTopic
			}
			if byTopic[k.topic] == nil {
				byTopic[k.topic] = make(map[int32]committedOffset)
			}
			byTopic[k.topic][k.partition] = o
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

	now := c.cfg.Now()
	groups := make(map[string]*group)
	get := func(name string) *group {
		g := groups[name]
		if g == nil {
			g = newGroup(name, partition, epoch, &c.cfg, now)
			groups[name] = g
		}
		return g
	}
	for name, cr := range consumers {
		if !cr.exists {
			continue
		}
		if v := metas[name]; v != nil && metaOffsets[name] > cr.offset {
			continue // converted to a classic group later
		}
		delete(metas, name)
		get(name).restoreConsumer(cr, c.cfg.ConsumerSessionTimeout, now)
	}
	for name, v := range metas {
		get(name).restore(v, now)
	}
	for name, byTopic := range offsets {
		n := 0
		for topic, parts := range byTopic {
			if len(parts) == 0 {
				delete(byTopic, topic)
			}
			n += len(parts)
		}
		if n == 0 && metas[name] == nil && (consumers[name] == nil || !consumers[name].exists) {
			continue
		}
		get(name).offsets = byTopic
	}
	return groups, nil
}
