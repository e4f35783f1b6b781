package broker

// OffsetDelete (api key 47), version 0 (KIP-496).
//
// Deletes committed offsets of a group: all of them while the group is
// Empty; for a consumer group with members, those of topics no member
// subscribes to (a subscribed topic is GROUP_SUBSCRIBED_TO_TOPIC); any other
// group with members is NON_EMPTY_GROUP. The offsets are tombstoned in
// __consumer_offsets.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleOffsetDelete(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	return b.groups.DeleteOffsets(ctx, r.Body.(*kmsg.OffsetDeleteRequest)), nil
}
