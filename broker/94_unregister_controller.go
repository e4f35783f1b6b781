package broker

// UnregisterController (api key 94), version 0 (KIP-1312, Kafka 4.4):
// Admin.unregisterController, which `kafka-cluster.sh
// unregister-controller` and `kafka-metadata-quorum.sh remove-controller
// --unregister` send to remove a controller's registration. Forwarded to
// the active controller (quorum.go), as a Kafka broker forwards it.
// sluice keeps no controller registrations, so the controller answers with
// Kafka's refusals (controller/unregister_controller.go says which, and
// why): INVALID_REQUEST for the active controller's own id,
// UNSUPPORTED_VERSION below metadata.version 4.4-IV2, otherwise
// CONTROLLER_ID_NOT_REGISTERED. Authorization: ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED, as Kafka's ControllerApis checks it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleUnregisterController(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterControllerRequest)
	answer := func(err error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.UnregisterControllerResponse)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return answer(kerr.ClusterAuthorizationFailed), nil
	}
	resp := b.onQuorumController(ctx, req,
		func(context.Context) kmsg.Response { return answer(b.ctrl.UnregisterController(req.ControllerID)) },
		func(resp kmsg.Response) bool {
			return resp.(*kmsg.UnregisterControllerResponse).ErrorCode == kerr.NotController.Code
		},
		answer,
	)
	return resp, nil
}
