package broker

// AllocateProducerIds (api key 67), version 0 (KIP-730).
//
// A broker whose block of producer ids is used up asks the active
// controller for the next one (forward.go, Broker.allocateProducerIDs),
// on the controller listener: as in Kafka it is not served on the client
// listener (control_listener.go), where it closes the connection.
// The block, producerIDBlockSize ids, is committed to the metadata log, so
// no id is handed out twice across brokers and restarts. A broker epoch
// other than -1 that is not the broker's current registration is
// STALE_BROKER_EPOCH; a non-controller answers NOT_CONTROLLER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAllocateProducerIDs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if req.BrokerEpoch != -1 {
		if br := b.ctrl.Image().Brokers[req.BrokerID]; br == nil || br.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
	}
	first, err := b.ctrl.AllocateProducerIDs(ctx, req.BrokerID, producerIDBlockSize)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, producerIDBlockSize
	return resp, nil
}
