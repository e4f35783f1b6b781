package broker

// LeaveGroup (api key 13), versions 0–5.
//
// Members leave and the group rebalances without waiting for their session
// to expire. v3+ (KIP-345) removes several members at once, each with its
// own error, and may name a static member by group.instance.id alone; v5
// carries a reason per member (KIP-800), which is only logged by Kafka.
// READ on the group is needed (GROUP_AUTHORIZATION_FAILED, top-level).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleLeaveGroup(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.Leave(ctx, req), nil
}
