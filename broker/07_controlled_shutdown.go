package broker

// ControlledShutdown (api key 7), versions 1–3.
//
// A broker about to stop asks the active controller to move its
// leaderships to other in-sync replicas first (Kafka's controlled
// shutdown; KRaft does this through BrokerHeartbeat's WantShutDown,
// KIP-631, which sluice has no need for). The controller fences the broker
// and, in the same metadata command, removes it from every ISR it can
// leave and elects new leaders; partitions whose only in-sync replica is
// the stopping broker go offline rather than lose data. Stopping brokers
// send it through forward.go to the controller listener, the only place
// it is served (control_listener.go): a client that sends it to the
// client listener has its connection closed, as Kafka closes it for an
// API not enabled on a listener. A non-controller answers NOT_CONTROLLER. A
// v2+ broker epoch that is not the broker's current registration is
// STALE_BROKER_EPOCH. PartitionsRemaining is always empty: the hand-over
// is one command, done when the answer comes. v0, whose request header
// has no client id, is not served.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleControlledShutdown(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ControlledShutdownRequest)
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	if req.Version >= 2 && req.BrokerEpoch != -1 {
		if br := b.ctrl.Image().Brokers[req.BrokerID]; br == nil || br.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
	}
	err := b.ctrl.ControlledShutdown(ctx, req.BrokerID)
	if err != nil {
		b.logger.Info("controlled shutdown refused", "broker", req.BrokerID, "err", fmt.Sprint(err))
	}
	resp.ErrorCode = errorCode(err)
	return resp, nil
}
