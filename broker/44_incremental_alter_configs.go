package broker

// IncrementalAlterConfigs (api key 44), versions 0–1 (KIP-339).
//
// Each entry is SET, DELETE (back to the default), APPEND or SUBTRACT (for
// list-valued configs such as cleanup.policy) on a topic, this broker, the
// cluster-wide broker default (empty name), or a group (type 32, KIP-848's
// group configs such as consumer.session.timeout.ms; group_configs.go). The
// controller validates the whole resource's change and commits it, or
// rejects it with INVALID_CONFIG / INVALID_REQUEST and changes nothing.
//
// As in Kafka (ConfigAdminManager), every copy of a resource named more
// than once is refused with INVALID_REQUEST and changes nothing, and a
// resource naming one key twice is INVALID_REQUEST. Error messages stop
// after the first alterMessageBudget bytes of them.
//
// A resource needs ALTER_CONFIGS on the topic, on the group, or on the
// cluster for broker and broker-logger resources (TOPIC_, GROUP_ or
// CLUSTER_AUTHORIZATION_FAILED), checked on the broker the client is
// connected to before anything is forwarded, as Kafka's ControllerApis
// and ConfigAdminManager check it (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	img := b.metadata()
	repeated := repeatedResources(len(req.Resources), func(i int) (int8, string) {
		return int8(req.Resources[i].ResourceType), req.Resources[i].ResourceName
	})
	messages := messageBudget(alterMessageBudget)
	for i, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if repeated[i] {
			sr.ErrorCode, sr.ErrorMessage = errorCode(errRepeatedResource), messages.take(errorMessage(errRepeatedResource))
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		if denied := b.alterConfigDenied(ctx, r, int8(rr.ResourceType), rr.ResourceName); denied != nil {
			sr.ErrorCode, sr.ErrorMessage = denied.Code, messages.take(&denied.Description)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		ops := make([]controller.ConfigOp, 0, len(rr.Configs))
		for _, c := range rr.Configs {
			ops = append(ops, controller.ConfigOp{Key: c.Name, Value: c.Value, Op: int8(c.Op)})
		}
		err := b.alterResourceConfigs(ctx, img, int8(rr.ResourceType), rr.ResourceName, ops, true, req.ValidateOnly)
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), messages.take(errorMessage(err))
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
