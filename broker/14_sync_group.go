package broker

// SyncGroup (api key 14), versions 0–5.
//
// After a join phase every member asks for its assignment; the leader's
// request carries all of them. Followers wait until the leader's assignment
// is persisted in __consumer_offsets. A member of another generation gets
// ILLEGAL_GENERATION, an unknown one UNKNOWN_MEMBER_ID, a request during a
// new join phase REBALANCE_IN_PROGRESS. v3+ carries group.instance.id
// (KIP-345); v5 names the protocol type and protocol, and a mismatch is
// INCONSISTENT_GROUP_PROTOCOL (KIP-559). READ on the group is needed
// (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleSyncGroup(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.MemberAssignment = []byte{}
		return resp, nil
	}
	defer requestWait(ctx)() // the rebalance wait is not request time (request_quota.go)
	return b.groups.Sync(ctx, req), nil
}
