package broker

// AlterConfigs (api key 33), versions 0–2.
//
// The legacy, non-incremental form: the given entries replace every
// dynamic config of the resource (a topic, this broker, with an empty name
// the cluster-wide broker default, or a group: Kafka 4.4 accepts group
// resources here too, replacing the group's whole config set). The
// controller validates and commits the change; validateOnly checks without
// changing anything.
//
// As in Kafka (ConfigAdminManager), every copy of a resource named more
// than once is refused with INVALID_REQUEST and changes nothing, and a
// resource naming one key twice is INVALID_REQUEST. Error messages stop
// after the first alterMessageBudget bytes of them.
//
// A resource needs ALTER_CONFIGS on the topic, on the group, or on the
// cluster for broker resources (TOPIC_, GROUP_ or
// CLUSTER_AUTHORIZATION_FAILED), checked on the broker the client is
// connected to before anything is forwarded, as Kafka's
// ControllerApis.authorizeAlterResource checks it (authorize_requests.go).

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
		if denied := b.alterConfigDenied(ctx, r, int8(rr.ResourceType), rr.ResourceName); denied != nil {
			sr.ErrorCode, sr.ErrorMessage = denied.Code, messages.take(&denied.Description)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		ops := make([]controller.ConfigOp, 0, len(rr.Configs))
		for _, c := range rr.Configs {
			ops = append(ops, controller.ConfigOp{Key: c.Name, Value: c.Value, Op: 0})
		}
		err := b.alterResourceConfigs(ctx, img, int8(rr.ResourceType), rr.ResourceName, ops, false, req.ValidateOnly)
		sr.ErrorCode, sr.ErrorMessage = errorCode(err), messages.take(errorMessage(err))
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}
