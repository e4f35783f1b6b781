package broker

// StreamsGroupHeartbeat (api key 88), versions 0–1 (KIP-1071).
//
// The streams rebalance protocol: a Kafka Streams member (one per stream
// thread) joins with member epoch 0, its topology, process id and
// endpoint, then heartbeats with its epoch and, when they changed, the
// tasks it owns; the coordinator answers with the member's epoch, its
// active, standby and warm-up tasks when they changed, the statuses that
// concern it (MISSING_SOURCE_TOPICS, MISSING_INTERNAL_TOPICS,
// INCORRECTLY_PARTITIONED_TOPICS, STALE_TOPOLOGY, SHUTDOWN_APPLICATION,
// ASSIGNMENT_DELAYED while group.streams.initial.rebalance.delay.ms or
// group.streams.assignment.interval.ms holds the assignment back, and from
// v1 MISSING_CLIENT_TAGS for a member without the client tags
// group.streams.rack.aware.assignment.tags names)
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
// checks. The internal topics are created only with CREATE on the cluster
// or on the topic; the others stay missing and the member is told so in
// its MISSING_INTERNAL_TOPICS status ("Unauthorized to CREATE on topics
// ..."), as in Kafka.

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/groups"
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
	if len(create) > 0 {
		may := b.metadataCreateAuth(r) // 03_metadata.go: CREATE on the cluster or the topic
		var allowed []groups.StreamsTopicToCreate
		var refused []string
		for _, t := range create {
			if may(t.Name) {
				allowed = append(allowed, t)
			} else {
				refused = append(refused, t.Name)
			}
		}
		if len(refused) > 0 {
			s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
			s.StatusCode = 3 // MISSING_INTERNAL_TOPICS
			s.StatusDetail = fmt.Sprintf("Unauthorized to CREATE on topics %s.", strings.Join(refused, ", "))
			resp.Status = append(resp.Status, s)
		}
		b.createStreamsInternalTopics(ctx, req.Group, allowed)
	}
	return resp, nil
}
