package broker

// ShareGroupHeartbeat (api key 76), version 1 (KIP-932, Kafka 4.4).
//
// The share group protocol: a member joins with member epoch 0, the member
// id it chose (KIP-1082) and the topic names it subscribes to, then
// heartbeats with its epoch every group.share.heartbeat.interval.ms; the
// coordinator answers with the member's epoch and, when it changed (or on
// a join or a request naming its subscription), its assignment by topic
// id. The simple assignor may give one partition to several members.
// Epoch -1 leaves. A member silent for group.share.session.timeout.ms is
// removed. The state machine lives in groups.Coordinator (share.go).
//
// Checks in the order of KafkaApis.handleShareGroupHeartbeat: share.version
// below 1 is UNSUPPORTED_VERSION (share.go); READ on the group is needed
// (GROUP_AUTHORIZATION_FAILED); a member id that is empty or longer than
// 36 characters is INVALID_REQUEST; DESCRIBE on every subscribed topic
// (TOPIC_AUTHORIZATION_FAILED). Then the coordinator's own checks
// (INVALID_REQUEST with Kafka's messages, GROUP_ID_NOT_FOUND,
// UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, GROUP_MAX_SIZE_REACHED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// maxShareMemberIDLength is the longest member id Kafka accepts
// (KafkaApis.isMemberIdValid): a UUID's string form.
const maxShareMemberIDLength = 36

func (b *Broker) handleShareGroupHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return resp, nil
	}
	switch {
	case !b.shareGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code, "")
	case !b.authorizedGroup(r, kmsg.ACLOperationRead, req.GroupID):
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	case req.MemberID == "" || len(req.MemberID) > maxShareMemberIDLength:
		return fail(kerr.InvalidRequest.Code, "Invalid member id in the request.")
	}
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, t := range req.SubscribedTopicNames {
		if !describable.allowed(t) {
			return fail(kerr.TopicAuthorizationFailed.Code, "")
		}
	}
	clientID, host := memberClient(r)
	resp := b.groups.ShareHeartbeat(ctx, req, clientID, host, b.shareGroupSettings(req.GroupID))
	resp.Version = req.Version
	return resp, nil
}
