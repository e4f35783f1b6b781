package broker

// Heartbeat (api key 12), versions 0–4.
//
// Keeps a classic group member's session alive. REBALANCE_IN_PROGRESS tells
// the member to rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and
// FENCED_INSTANCE_ID (v3+, KIP-345) that it is no longer part of the group
// as it believes. While the group's __consumer_offsets partition loads the
// answer carries no error, as Kafka's GroupCoordinatorService answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	return b.groups.Heartbeat(r.Body.(*kmsg.HeartbeatRequest)), nil
}
