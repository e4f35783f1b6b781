package broker

// DescribeGroups (api key 15), versions 0–6.
//
// State, protocol type, and members (client id, host, instance id from v4)
// of each group; the chosen protocol and each member's metadata and
// assignment only while the group is Stable, as Kafka answers. An unknown
// group is reported Dead without error before v6 and GROUP_ID_NOT_FOUND
// from v6 (KIP-1043). Authorized operations (v3+, KIP-430) are filled when
// IncludeAuthorizedOperations asks for them, for each group answered
// without error (so for an unknown group before v6, answered Dead), as
// KafkaApis.handleDescribeGroupsRequest does (authorized_ops.go). A KIP-848
// consumer group shows as Kafka shows it: protocol type "consumer", its
// assignor as the protocol, and members' subscriptions and assignments in
// the classic consumer protocol encoding.
//
// A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED
// (authorize_requests.go).
//
// A group named more than once is answered once, where it first appears.
// Kafka answers every copy, but a group's answer carries each member's
// metadata and assignment, kilobytes for a request entry of a few bytes;
// clients match answers to groups by name.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeGroups(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for g := range uniqueStrings(req.Groups) {
		if !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g) {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := b.groups.Describe(req.Version, g)
		if req.Version >= 3 && req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = b.groupAuthorizedOps(r, dg.Group)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
