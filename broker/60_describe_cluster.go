package broker

// DescribeCluster (api key 60), versions 0–2 (KIP-700).
//
// The cluster id, the active controller and the brokers of the metadata
// image; fenced brokers are included only when asked (v2,
// IncludeFencedBrokers, KIP-1073). EndpointType (v1) 1 asks for brokers.
// As Kafka's broker answers (AuthHelper.computeDescribeClusterResponse), 2
// (controllers, KIP-919) is MISMATCHED_ENDPOINT_TYPE, since this is a broker
// endpoint (sluice's controllers are reached through the brokers), and any
// other type UNSUPPORTED_ENDPOINT_TYPE, each with Kafka's message.
//
// The cluster's authorized operations (KIP-430) are filled when
// IncludeClusterAuthorizedOperations asks for them (authorized_ops.go),
// and keep the "not requested" value otherwise.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

// DescribeCluster's endpoint types (KIP-919).
const (
	endpointBroker     = 1
	endpointController = 2
)

func (b *Broker) handleDescribeCluster(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.Version >= 1 && req.EndpointType != endpointBroker {
		var msg string
		if req.EndpointType == endpointController {
			resp.ErrorCode = kerr.MismatchedEndpointType.Code
			msg = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		} else {
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			msg = fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType)
		}
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.EndpointType = endpointBroker
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOps(r)
	}
	img := b.metadata()
	resp.ClusterID = img.ClusterID
	resp.ControllerID = b.ctrl.ActiveControllerID()
	brokers := make([]*controller.Broker, 0, len(img.Brokers))
	for _, br := range img.Brokers {
		if !br.Fenced || req.IncludeFencedBrokers {
			brokers = append(brokers, br)
		}
	}
	slices.SortFunc(brokers, func(x, y *controller.Broker) int { return int(x.ID - y.ID) })
	for _, br := range brokers {
		resp.Brokers = append(resp.Brokers, kmsg.DescribeClusterResponseBroker{
			NodeID: br.ID, Host: br.Host, Port: br.Port, Rack: rackPtr(br.Rack), IsFenced: br.Fenced,
		})
	}
	return resp, nil
}
