package broker

// StreamsGroupHeartbeat (api key 88), versions 0–1 (KIP-1071).
//
// The streams rebalance protocol: a Kafka Streams member (one per stream
// thread) joins with member epoch 0, its topology, process id and
// endpoint, then heartbeats with its epoch and, when they changed, the
// tasks it owns; the coordinator answers with the member's epoch, its
// active, standby and warm-up tasks when they changed, the statuses that
// concern it (MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS,
// INCORRECTLY_PARTITIONED_TOPICS, STALE_TOPOLOGY, SHUTDOWN_APPLICATION)
// and the group's partitions by endpoint for interactive queries. v1 adds
// AcceptableRecoveryLag (int64) and TopologyDescriptionRequired, which
// sluice never sets (it stores no topology description unless a member
// sends one). The state machine and the task assignor live in
// groups.Coordinator (groups/streams*.go); the internal topics it finds
// missing are created here, after the answer is computed
// (streams.go).
//
// READ on the group is needed (GROUP_AUTHORIZATION_FAILED), and DESCRIBE
// on every source topic a joining member's topology names
// (TOPIC_AUTHORIZATION_FAILED), as KafkaApis.handleStreamsGroupHeartbeat
// checks; unlike Kafka, CREATE on the internal topics the coordinator
// creates is not checked.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleStreamsGroupHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	fail := func(code int16) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	if !b.streamsGroupsEnabled() {
		return fail(kerr.UnsupportedVersion.Code)
	}
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		return fail(kerr.GroupAuthorizationFailed.Code)
	}
	if req.Topology != nil {
		describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
		for _, s := range req.Topology.Subtopologies {
			for _, t := range s.SourceTopics {
				if !describable.allowed(t) {
					return fail(kerr.TopicAuthorizationFailed.Code)
				}
			}
		}
	}
	clientID, host := memberClient(r)
	resp, create := b.groups.StreamsHeartbeat(ctx, req, clientID, host, b.streamsGroupSettings(req.Group))
	b.createStreamsInternalTopics(ctx, req.Group, create)
	return resp, nil
}
