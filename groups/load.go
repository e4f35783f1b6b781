package groups

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/internal/skiplog"
)

// replay reads a __consumer_offsets partition from its log start to its
// high watermark and rebuilds the groups it holds: the last record of each
// key wins, a tombstone deletes. Groups come back Stable with their members
// (who must heartbeat within their session timeout or be removed) or Empty;
// consumer groups come back with their epochs, members, targets and current
// assignments (consumer_load.go); share groups with their epochs, members,
// targets, assignments and share-partition state (share_load.go); streams
// groups with their topology, epochs, members, targets and current
// assignments (streams_load.go).
// Transactional offset commits are replayed
// with their producers' markers (offsetReplay, txn_offsets.go). It also
// returns the offset where the replay stopped.
//
// A record the coordinator cannot parse — a key or value that does not
// decode, a value of a version it does not know, a record whose framing
// in its batch is broken — is logged with its partition and offset and
// skipped, as Kafka's coordinator loaders do: the key keeps what earlier
// records said and the rest of the partition loads. Records of key types
// this coordinator does not know (e.g. a newer Kafka's) are
// ignored and counted. Only a batch header that cannot be read
// fails the load, since no later batch can be found past it.
func (c *Coordinator) replay(ctx context.Context, partition, epoch int32) (map[string]*group, int64, error) {
	skipped := &skiplog.Records{Logger: c.cfg.Logger, Topic: "__consumer_offsets", Partition: partition, UnknownKind: "records of unknown types"}
	defer skipped.Done()
	metas := make(map[string]*kmsg.GroupMetadataValue)
	metaOffsets := make(map[string]int64) // offset of each classic group's last record, tombstones included
	consumers := make(map[string]*consumerReplay)
	shares := make(map[string]*shareReplay)
	streamsGroups := make(map[string]*streamsReplay)
	offsets := newOffsetReplay()
	var next int64
	for {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		data, hw, err := c.log.Read(ctx, partition, next)
		if err != nil {
			return nil, 0, err
		}
		if next >= hw || len(data) == 0 {
			next = max(next, hw)
			break
		}
		last, err := parseBatches(data, func(r parsedRecord) error {
			if r.err != nil {
				skipped.Unreadable(r.offset, r.err)
				return nil
			}
			if r.control {
				offsets.marker(r.producerID, r.commit)
				return nil
			}
			k, err := decodeKey(r.key)
			if errors.Is(err, errUnknownKey) {
				skipped.Unknown()
				return nil
			}
			if err != nil {
				skipped.Unreadable(r.offset, err)
				return nil
			}
			if isStreamsKeyVersion(k.version) {
				if err := replayStreamsRecord(streamsGroups, k, r); err != nil {
					skipped.Unreadable(r.offset, fmt.Errorf("group %q: %w", k.group, err))
				}
				return nil
			}
			if isShareKeyVersion(k.version) {
				if err := replayShareRecord(shares, k, r); err != nil {
					skipped.Unreadable(r.offset, fmt.Errorf("group %q: %w", k.group, err))
				}
				return nil
			}
			if k.version >= consumerGroupMetadataKeyVersion {
				if err := replayConsumerRecord(consumers, k, r); err != nil {
					skipped.Unreadable(r.offset, fmt.Errorf("group %q: %w", k.group, err))
				}
				return nil
			}
			if k.isGroup {
				if r.value == nil {
					delete(metas, k.group)
					metaOffsets[k.group] = r.offset
					return nil
				}
				v, err := decodeGroupValue(r.value)
				if err != nil {
					skipped.Unreadable(r.offset, fmt.Errorf("group %q: %w", k.group, err))
					return nil
				}
				metas[k.group] = v
				metaOffsets[k.group] = r.offset
				return nil
			}
			if r.value == nil {
				offsets.tombstone(k.group, k.topic, k.partition)
				return nil
			}
			o, err := decodeOffsetValue(r.value)
			if err != nil {
				skipped.Unreadable(r.offset, fmt.Errorf("group %q, %s-%d: %w", k.group, k.topic, k.partition, err))
				return nil
			}
			o.recordOffset = r.offset
			offsets.commit(r.producerID, k.group, k.topic, k.partition, o)
			return nil
		})
		if err != nil {
			return nil, 0, fmt.Errorf("partition %d: %w", partition, err)
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
	var converted []string
	for name, cr := range consumers {
		if !cr.exists {
			continue
		}
		if o, ok := metaOffsets[name]; ok && o > cr.offset {
			// Converted to a classic group later (and maybe deleted
			// since); a log written before conversions tombstoned the
			// consumer group's records has only this order to say so.
			// A classic group that is still there tombstones them
			// with its next record.
			if metas[name] != nil {
				converted = append(converted, name)
			}
			continue
		}
		delete(metas, name)
		get(name).restoreConsumer(cr, c.restoredSettings(name).SessionTimeout, now)
	}
	for name, sr := range shares {
		if !sr.exists {
			continue
		}
		if o, ok := metaOffsets[name]; ok && o > sr.offset {
			continue // a classic group record came later
		}
		delete(metas, name)
		get(name).restoreShare(sr, c.restoredShareSettings(name).SessionTimeout, now)
	}
	for name, sr := range streamsGroups {
		if !sr.exists {
			continue
		}
		if o, ok := metaOffsets[name]; ok && o > sr.offset {
			continue // a classic group record came later
		}
		if cr := consumers[name]; cr != nil && cr.exists && cr.offset > sr.offset {
			continue // it became a consumer group later
		}
		if g := groups[name]; g != nil && g.consumer != nil {
			g.consumer = nil // it became a streams group later
		}
		delete(metas, name)
		get(name).restoreStreams(sr, now)
	}
	for name, v := range metas {
		get(name).restore(v, now)
	}
	for _, name := range converted {
		groups[name].wasConsumer = true
	}
	names := make(map[string]bool, len(offsets.committed))
	for name := range offsets.committed {
		names[name] = true
	}
	for _, byGroup := range offsets.pending {
		for name := range byGroup {
			names[name] = true
		}
	}
	for name := range names {
		committed := offsets.committed[name]
		pending := offsets.pendingOf(name)
		if len(committed) == 0 && len(pending) == 0 && groups[name] == nil {
			continue
		}
		g := get(name)
		if committed != nil {
			g.offsets = committed
		}
		if pending != nil {
			g.txnOffsets = pending
		}
	}
	return groups, next, nil
}
