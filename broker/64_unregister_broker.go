package broker

// UnregisterBroker (api key 64), version 0 (KIP-631): `kafka-cluster.sh
// unregister --id N` removes a broker's registration from the metadata
// image (controller/unregister.go says how, and that a live broker
// registers again at its next heartbeat, as in Kafka). An id the image
// does not hold is BROKER_ID_NOT_REGISTERED. Forwarded to the active
// controller (quorum.go). Authorization: ALTER on the cluster, else
// CLUSTER_AUTHORIZATION_FAILED, as Kafka's ControllerApis checks it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleUnregisterBroker(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	answer := func(err error) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp
	}
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return answer(kerr.ClusterAuthorizationFailed), nil
	}
	resp := b.onQuorumController(ctx, req,
		func(ctx context.Context) kmsg.Response { return answer(b.ctrl.UnregisterBroker(ctx, req.BrokerID)) },
		func(resp kmsg.Response) bool {
			return resp.(*kmsg.UnregisterBrokerResponse).ErrorCode == kerr.NotController.Code
		},
		answer,
	)
	return resp, nil
}
