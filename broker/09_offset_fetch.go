package broker

// OffsetFetch (api key 9), versions 0–10.
//
// Returns a group's committed offsets: offset, leader epoch (v5+) and
// metadata, or offset -1 for partitions (and groups) without a commit. A
// null topic list (v2+) asks for every committed offset. Group-level errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) are top-level from v2 and
// per partition before. With v7's RequireStable (KIP-447) a partition for
// which a running transaction holds a pending offset (TxnOffsetCommit) is
// UNSTABLE_OFFSET_COMMIT, and the client retries until the transaction
// ends; without it the last committed offset is returned. v8+ asks for
// several groups at once (KIP-709); v9's member id and epoch concern
// KIP-848 groups and are ignored for classic groups; v10 names topics by
// id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetFetch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	return b.groups.FetchOffsets(r.Body.(*kmsg.OffsetFetchRequest)), nil
}
