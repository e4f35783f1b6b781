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

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	clientID, host := memberClient(r)
	return b.groups.ConsumerHeartbeat(ctx, req, clientID, host), nil
}
