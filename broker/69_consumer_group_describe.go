package broker

// ConsumerGroupDescribe (api key 69), versions 0–1 (KIP-848).
//
// Each named consumer group's state, group epoch, target assignment epoch
// and assignor, and per member its epoch, subscription (topic names and
// regular expression), current and target assignment; v1 adds the member
// type (always "consumer" here). A classic group or an unknown one is
// GROUP_ID_NOT_FOUND. Authorized operations (KIP-430) are filled when
// IncludeAuthorizedOperations asks for them, for each group answered
// without error, as KafkaApis.handleConsumerGroupDescribe does
// (authorized_ops.go).
//
// A group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED;
// one whose members hold or are to hold a partition of a topic it may not
// DESCRIBE is TOPIC_AUTHORIZATION_FAILED without its members, as
// KafkaApis.handleConsumerGroupDescribe answers (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, g := range req.Groups {
		if !b.consumerGroupsEnabled() {
			// group.version 0: every group UNSUPPORTED_VERSION, as
			// Kafka's getErrorResponse answers (features.go).
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		if !b.authorizedGroup(r, kmsg.ACLOperationDescribe, g) {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		dg := b.groups.ConsumerDescribe(g)
		if holdsUndescribable(&dg, describable) {
			// Its members' topics are not the principal's to see.
			refused := kmsg.NewConsumerGroupDescribeResponseGroup()
			refused.Group, refused.ErrorCode = g, kerr.TopicAuthorizationFailed.Code
			refused.ErrorMessage = kmsg.StringPtr("The group has described topic(s) that the client is not authorized to describe.")
			resp.Groups = append(resp.Groups, refused)
			continue
		}
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = b.groupAuthorizedOps(r, dg.Group)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// holdsUndescribable reports whether a member of dg is assigned, or is to
// be assigned, a partition of a topic the principal may not DESCRIBE.
func holdsUndescribable(dg *kmsg.ConsumerGroupDescribeResponseGroup, describable *topicAuth) bool {
	for i := range dg.Members {
		m := &dg.Members[i]
		for _, a := range [2]*kmsg.Assignment{&m.Assignment, &m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !describable.allowed(tp.Topic) {
					return true
				}
			}
		}
	}
	return false
}
