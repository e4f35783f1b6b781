package broker

// AlterConfigs (api key 33), versions 0–2.
//
// The legacy, non-incremental form: the given entries replace every
// dynamic config of the resource (a topic, this broker, or with an empty
// name the cluster-wide broker default). The controller validates and
// commits the change; validateOnly checks without changing anything.
//
// As in Kafka (ConfigAdminManager), every copy of a resource named more
// than once is refused with INVALID_REQUEST and changes nothing, and a
// resource naming one key twice is INVALID_REQUEST. Error messages stop
// after the first alterMessageBudget bytes of them.

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
	repeated := repeatedResources(len(req.Resources), func(i int) (int8, string) {
		return int8(req.Resources[i].ResourceType), req.Resources[i].ResourceName
	})
	messages := messageBudget(alterMessageBudget)
	for i, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if repeated[i] {
			sr.ErrorCode, sr.ErrorMessage = errorCode(errRepeatedResource), messages.take(errorMessage(errRepeatedResource))
			resp.Resources = append(resp.Resources, sr)
			continue
		}
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
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), messages.take(errorMessage(err))
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
