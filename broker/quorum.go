package broker

// The quorum and cluster tools' APIs (Kafka 4.4, issue 20): DescribeQuorum
// (55), UnregisterBroker (64), AddRaftVoter (80), RemoveRaftVoter (81) and
// UnregisterController (94), which kafka-metadata-quorum.sh and
// kafka-cluster.sh send.
//
// A Kafka 4.4 broker lists all five on its client listener (their
// listeners are BROKER and CONTROLLER) and forwards each to the active
// controller (KafkaApis.forwardToControllerOrFail); UpdateRaftVoter is a
// controller-listener API that brokers do not list. sluice does the same:
// on the active controller's node the handler asks the local controller,
// anywhere else it forwards the request unchanged over the controller
// channel (control_listener.go, where the five are registered too) and
// answers with the controller's response, retrying NOT_CONTROLLER
// against the then active controller (onController, forward.go). The
// controller checks authorization as Kafka's ControllerApis does: DESCRIBE
// on the cluster for DescribeQuorum, ALTER on the cluster for the others;
// sluice checks it on the broker the client is connected to, before
// forwarding, with the client's principal (authorize_requests.go).
//
// Kafka's --bootstrap-controller (requests sent straight to a controller
// listener) has no sluice equivalent: the controller listener carries raft
// and the brokers' controller channel only; the tools reach the quorum
// through --bootstrap-server.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

// registerQuorumHandlers registers the quorum and cluster tools' APIs on
// the client listener, with Kafka 4.4's version ranges.
func (b *Broker) registerQuorumHandlers(r quotaRouter) {
	r.Register(55, 0, 2, b.handleDescribeQuorum)
	r.Register(64, 0, 0, b.handleUnregisterBroker)
	r.Register(80, 0, 1, b.handleAddRaftVoter)
	r.Register(81, 0, 0, b.handleRemoveRaftVoter)
	r.Register(94, 0, 0, b.handleUnregisterController)
}

// registerQuorumControllerHandlers registers the same APIs on the
// controller channel, where brokers forward them.
func (b *Broker) registerQuorumControllerHandlers(r *protocol.Router) {
	r.Register(55, 0, 2, b.peerAPI(b.handleDescribeQuorum))
	r.Register(64, 0, 0, b.peerAPI(b.handleUnregisterBroker))
	r.Register(80, 0, 1, b.peerAPI(b.handleAddRaftVoter))
	r.Register(81, 0, 0, b.peerAPI(b.handleRemoveRaftVoter))
	r.Register(94, 0, 0, b.peerAPI(b.handleUnregisterController))
}

// onQuorumController answers req at the active controller: local(ctx) on
// this node when it is the active controller (or none is known, or the
// request is a peer's), otherwise the active controller's answer to req
// forwarded over the controller channel. notController tells an answer
// to retry elsewhere; refused builds the answer for an error (a lost
// forward is NOT_CONTROLLER, as Kafka's forwarding answers a disconnect).
func (b *Broker) onQuorumController(ctx context.Context, req kmsg.Request,
	local func(ctx context.Context) kmsg.Response,
	notController func(kmsg.Response) bool,
	refused func(err error) kmsg.Response,
) kmsg.Response {
	var resp kmsg.Response
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			resp = local(ctx)
			return notController(resp)
		}
		fwd, err := b.sendToController(ctx, id, req)
		if err != nil {
			resp = refused(transportError(err))
			return true
		}
		if fwd.Key() != req.Key() {
			resp = refused(fmt.Errorf("%w: the controller answered api key %d", kerr.UnknownServerError, fwd.Key()))
			return false
		}
		if tags := unknownTags(fwd); tags != nil {
			*tags = kmsg.Tags{} // the controller's applied index is for brokers
		}
		resp = fwd
		return notController(resp)
	})
	return resp
}
