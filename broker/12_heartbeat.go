package broker

// Heartbeat (api key 12), versions 0–4.
//
// Keeps a classic group member's session alive. REBALANCE_IN_PROGRESS tells
// the member to rejoin; ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID and
// FENCED_INSTANCE_ID (v3+, KIP-345) that it is no longer part of the group
// as it believes. While the group's __consumer_offsets partition loads the
// answer carries no error, as Kafka's GroupCoordinatorService answers.
// READ on the group is needed (GROUP_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	return b.groups.Heartbeat(req), nil
}
