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
// state machine lives in groups.Coordinator. READ on the group is needed
// (GROUP_AUTHORIZATION_FAILED), as for SyncGroup, Heartbeat and LeaveGroup
// (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleJoinGroup(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	clientID, host := memberClient(r)
	defer requestWait(ctx)() // the rebalance wait is not request time (request_quota.go)
	return b.groups.Join(ctx, req, clientID, host), nil
}
