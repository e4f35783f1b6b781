package broker

// The group coordinator's side of share-partition state: the
// groups.ShareStateInitializer that initializes, at the share coordinator,
// the state of the partitions a share group starts consuming, as Kafka's
// group coordinator sends InitializeShareGroupState (start offset -1, the
// group epoch as state epoch) before it assigns them.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/share"
)

// shareInitTimeout bounds one InitializeShareState call.
const shareInitTimeout = 5 * time.Second

// shareStateInitializer is groups.ShareStateInitializer through the
// broker's persister.
type shareStateInitializer struct{ b *Broker }

// InitializeShareState initializes each partition that has no state yet;
// one that has state (initialized before, or in use) is left as it is,
// as the interface requires: its summary is read first, and a
// FENCED_STATE_EPOCH answer (state of this or a newer epoch exists) counts
// as initialized.
func (i shareStateInitializer) InitializeShareState(ctx context.Context, group string, groupEpoch int32, partitions groups.SharePartitions) error {
	// The group coordinator's loader waits for this: a share coordinator
	// that does not answer must not hold back the loads of
	// __consumer_offsets partitions; the group asks again later.
	ctx, cancel := context.WithTimeout(ctx, shareInitTimeout)
	defer cancel()
	p := i.b.shareState().mgr.Persister()
	for _, id := range slices.SortedFunc(maps.Keys(partitions), func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }) {
		for _, part := range partitions[id] {
			key := share.Key{Group: group, TopicID: id, Partition: part}
			_, err := p.ReadSummary(ctx, key)
			if err == nil {
				continue
			}
			if !errors.Is(err, share.ErrStateNotFound) {
				return err
			}
			if err := p.InitializeState(ctx, key, groupEpoch, -1); err != nil && !errors.Is(err, share.ErrFencedStateEpoch) {
				return err
			}
		}
	}
	return nil
}
