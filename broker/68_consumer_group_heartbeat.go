package broker

// ConsumerGroupHeartbeat (api key 68), versions 0–1 (KIP-848).
//
// The consumer group protocol: a member joins with member epoch 0, then
// heartbeats with its epoch and the partitions it owns every
// group.consumer.heartbeat.interval.ms; the coordinator answers with the
// member's epoch and, when it changed, its assignment by topic id. The
// server-side assignor (group.consumer.assignors, range by default; the
// client may ask for one with ServerAssignor) computes a target assignment
// whenever the group epoch moves, and a partition reaches its new owner only
// after the previous owner stopped reporting it. Epoch -1 leaves, -2 leaves
// a static member's place open for its return. v1 (KIP-1082): the client
// chooses its member id and may subscribe with a regular expression, which
// the broker resolves against every topic, internal ones included. Served
// only while group.coordinator.rebalance.protocols includes "consumer". The
// state machine lives in groups.Coordinator.
//
// A group's own consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms (its group configs, KIP-848's dynamic
// group configuration, group_configs.go) are read from the metadata image
// on every heartbeat, so a change applies from each member's next
// heartbeat without a restart, as in Kafka.
//
// READ on the group is needed (GROUP_AUTHORIZATION_FAILED), and DESCRIBE
// on every topic the member subscribes to by name
// (TOPIC_AUTHORIZATION_FAILED), as KafkaApis.handleConsumerGroupHeartbeat
// checks them (authorize_requests.go). Unlike Kafka 4.1+, a regular
// expression is resolved against every topic, not only those the member
// may describe.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !b.consumerGroupsEnabled() {
		// group.version 0: Kafka's isConsumerGroupProtocolEnabled (features.go).
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if code := b.consumerHeartbeatDenied(r, req); code != 0 {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	clientID, host := memberClient(r)
	return b.groups.ConsumerHeartbeat(ctx, req, clientID, host, b.consumerGroupSettings(req.Group)), nil
}

// consumerHeartbeatDenied is the error of a heartbeat the principal may not
// send: GROUP_AUTHORIZATION_FAILED without READ on the group,
// TOPIC_AUTHORIZATION_FAILED when it subscribes by name to a topic it may
// not DESCRIBE; 0 when allowed.
func (b *Broker) consumerHeartbeatDenied(r *protocol.Request, req *kmsg.ConsumerGroupHeartbeatRequest) int16 {
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, req.Group) {
		return kerr.GroupAuthorizationFailed.Code
	}
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, t := range req.SubscribedTopicNames {
		if !describable.allowed(t) {
			return kerr.TopicAuthorizationFailed.Code
		}
	}
	return 0
}
