package broker

// AlterConfigs (api key 33), versions 0–2.
//
// The legacy, non-incremental form: the given entries replace every
// dynamic config of the resource (a topic, this broker, or with an empty
// name the cluster-wide broker default). The controller validates and
// commits the change; validateOnly checks without changing anything.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterConfigs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	img := b.metadata()
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		res, err := b.configResourceFor(ctx, img, int8(rr.ResourceType), rr.ResourceName)
		ops := make([]controller.ConfigOp, 0, len(rr.Configs))
		if err == nil {
			for _, c := range rr.Configs {
				ops = append(ops, controller.ConfigOp{Key: c.Name, Value: c.Value, Op: 0})
			}
			err = checkClusterDefault(res, ops)
		}
		if err == nil {
			err = b.alterConfigs(ctx, res, ops, false, req.ValidateOnly)
		}
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), errorMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
