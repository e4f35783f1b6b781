package txn

import (
	"context"
	"fmt"

	"github.com/sluicedev/sluice/internal/skiplog"
)

// replay reads a __transaction_state partition from its log start to its
// high watermark and returns the last state of every transactional id in
// it; a tombstone removes the id.
//
// A record the coordinator cannot parse — a key or value that does not
// decode, a value of a version or a transaction status it does not know, a
// record whose framing in its batch is broken — is logged with its
// partition and offset and skipped, as Kafka's coordinator loaders do: the
// transactional id keeps what earlier records said and the rest of the
// partition loads. Keys of a version this coordinator does not know are
// ignored and counted. Only a batch header that cannot be read fails the
// load, since no later batch can be found past it.
func (c *Coordinator) replay(ctx context.Context, partition int32) (map[string]metadata, error) {
	skipped := &skiplog.Records{Logger: c.cfg.Logger, Topic: "__transaction_state", Partition: partition, UnknownKind: "records with keys of unknown versions"}
	defer skipped.Done()
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
		last, err := scanBatches(data, func(r logRecord) error {
			if r.err != nil {
				skipped.Unreadable(r.offset, r.err)
				return nil
			}
			id, ok, err := decodeKey(r.key)
			if err != nil {
				skipped.Unreadable(r.offset, err)
				return nil
			}
			if !ok {
				skipped.Unknown()
				return nil
			}
			if r.value == nil {
				delete(metas, id)
				return nil
			}
			m, err := decodeValue(r.value)
			if err != nil {
				skipped.Unreadable(r.offset, fmt.Errorf("transactional id %q: %w", id, err))
				return nil
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
