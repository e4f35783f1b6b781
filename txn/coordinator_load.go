package txn

import (
	"context"
	"fmt"
	"log/slog"
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
	skipped := &skippedRecords{logger: c.cfg.Logger, partition: partition}
	defer skipped.done()
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
				skipped.add(r.offset, r.err)
				return nil
			}
			id, ok, err := decodeKey(r.key)
			if err != nil {
				skipped.add(r.offset, err)
				return nil
			}
			if !ok {
				skipped.unknown++
				return nil
			}
			if r.value == nil {
				delete(metas, id)
				return nil
			}
			m, err := decodeValue(r.value)
			if err != nil {
				skipped.add(r.offset, fmt.Errorf("transactional id %q: %w", id, err))
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

// maxSkippedLogs bounds the records of one load logged one by one, so a
// partition full of unreadable records cannot flood the log.
const maxSkippedLogs = 10

// skippedRecords logs the records a load of a __transaction_state
// partition skips: the first maxSkippedLogs each with its offset and
// error, then the counts when the load ends.
type skippedRecords struct {
	logger    *slog.Logger
	partition int32
	bad       int // unreadable records
	unknown   int // keys of a version this coordinator does not know
}

func (s *skippedRecords) add(offset int64, err error) {
	s.bad++
	if s.bad <= maxSkippedLogs {
		s.logger.Error("skipping unreadable record while loading __transaction_state",
			"partition", s.partition, "offset", offset, "err", err)
	}
}

func (s *skippedRecords) done() {
	if s.bad > maxSkippedLogs {
		s.logger.Error("skipped unreadable records while loading __transaction_state",
			"partition", s.partition, "records", s.bad, "logged", maxSkippedLogs)
	}
	if s.unknown > 0 {
		s.logger.Warn("ignored records with keys of unknown versions while loading __transaction_state",
			"partition", s.partition, "records", s.unknown)
	}
}
