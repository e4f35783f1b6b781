package broker

// JoinGroup (api key 11), versions 0–9.
//
// A classic group member joins or rejoins; the request long-polls until the
// group's join phase completes (every member rejoined, the rebalance timeout
// passed, or the initial rebalance delay of a new group ran out), then the
// leader gets every member's metadata and chooses the assignment. v4+
// (KIP-394): a member without an id gets MEMBER_ID_REQUIRED and a new id to
// come back with. v5+ (KIP-345): group.instance.id makes a static member
// whose restart does not rebalance a settled group; the replaced id is
// FENCED_INSTANCE_ID. v7 adds the protocol type to the answer, v8 a reason,
// v9 SkipAssignment for a static leader rejoining a settled group. The
// state machine lives in groups.Coordinator.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleJoinGroup(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	clientID, host := memberClient(r)
	return b.groups.Join(ctx, req, clientID, host), nil
}
