package broker

// ShareGroupDescribe (api key 77), version 1 (KIP-932, Kafka 4.4).
//
// Each named share group's state (Empty or Stable), group epoch, target
// assignment epoch and assignor ("simple"), and per member its rack,
// epoch, client id and host, subscribed topic names and assignment. A
// group that does not exist, or is not a share group, is
// GROUP_ID_NOT_FOUND. share.version below 1 is UNSUPPORTED_VERSION for the
// whole request (share.go).
//
// A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED;
// one whose members hold a partition of a topic it may not DESCRIBE is
// TOPIC_AUTHORIZATION_FAILED without its members, as for
// ConsumerGroupDescribe. Authorized operations (KIP-430) are filled when
// IncludeAuthorizedOperations asks for them, for each group answered
// without error (authorized_ops.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleShareGroupDescribe(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	if !b.shareGroupsEnabled() {
		for _, g := range req.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, dg)
		}
		return resp, nil
	}
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, g := range req.GroupIDs {
		if !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g) {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := b.groups.ShareDescribe(g)
		if shareHoldsUndescribable(&dg, describable) {
			refused := kmsg.NewShareGroupDescribeResponseGroup()
			refused.GroupID, refused.ErrorCode = g, kerr.TopicAuthorizationFailed.Code
			refused.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			resp.Groups = append(resp.Groups, refused)
			continue
		}
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = b.groupAuthorizedOps(r, dg.GroupID)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// shareHoldsUndescribable reports whether a member of dg is assigned a
// partition of a topic the principal may not DESCRIBE.
func shareHoldsUndescribable(dg *kmsg.ShareGroupDescribeResponseGroup, describable *topicAuth) bool {
	for i := range dg.Members {
		for _, tp := range dg.Members[i].Assignment.TopicPartitions {
			if !describable.allowed(tp.Topic) {
				return true
			}
		}
	}
	return false
}
