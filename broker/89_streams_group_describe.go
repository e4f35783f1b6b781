package broker

// StreamsGroupDescribe (api key 89), versions 0–1 (KIP-1071).
//
// Each named group's state (Empty, NotReady, Assigning, Reconciling,
// Stable), group and assignment epochs, topology (its subtopologies only
// once the topology is configured against the topics) and members with
// their process, endpoint, client tags, task offsets, current and target
// assignment. v1 adds the assignor's name ("sticky") and, when asked, the
// topology description a member handed in with
// StreamsGroupTopologyDescriptionUpdate (NOT_STORED otherwise). A group
// that does not exist or is not a streams group is GROUP_ID_NOT_FOUND;
// DESCRIBE on the group is needed (GROUP_AUTHORIZATION_FAILED). Below
// streams.version 1 every group is UNSUPPORTED_VERSION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleStreamsGroupDescribe(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, g := range req.Groups {
		var dg kmsg.StreamsGroupDescribeResponseGroup
		switch {
		case !b.streamsGroupsEnabled():
			dg = kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.UnsupportedVersion.Code
		case !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g):
			dg = kmsg.NewStreamsGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		default:
			dg = b.groups.StreamsDescribe(g, req.Version, req.IncludeTopologyDescription)
			if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
				dg.AuthorizedOperations = b.groupAuthorizedOps(r, g)
			}
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}
