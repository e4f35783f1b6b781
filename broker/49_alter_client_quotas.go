package broker

// AlterClientQuotas (api key 49), versions 0–1 (KIP-546; v1 is flexible).
//
// Sets or removes quota values (producer_byte_rate, consumer_byte_rate,
// request_percentage, controller_mutation_rate on user / client-id /
// (user, client-id) entities, connection_creation_rate on ip entities) in
// the metadata log, where every broker's enforcement reads them
// (client_quotas.go). As in Kafka 4 (KafkaApis forwards the request, its
// controller's ClientQuotaControlManager decides), the active controller
// validates the batch and writes the changes of every valid entity in one
// command; a non-controller broker forwards the request over the
// controller channel and answers once its own image has the change.
// ValidateOnly validates without writing. Validation and its messages are
// controller.AlterClientQuotas'.
//
// The answer has one entry per distinct entity (the components a request
// gave collapsed to one per type, as Kafka keys its result map), with the
// entity's error code and message.
//
// ALTER_CONFIGS on the cluster is needed, checked on the broker the client
// is connected to before forwarding: without it every entry is
// CLUSTER_AUTHORIZATION_FAILED (authorize_requests.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleAlterClientQuotas(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlterConfigs) {
		return clientQuotasRefused(req, kerr.ClusterAuthorizationFailed.Code), nil
	}
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]controller.ClientQuotaAlteration, 0, len(req.Entries))
	for _, e := range req.Entries {
		var a controller.ClientQuotaAlteration
		for _, c := range e.Entity {
			a.Entity = append(a.Entity, controller.QuotaComponent{Type: c.Type, Name: c.Name})
		}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, controller.ClientQuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts = append(alts, a)
	}
	for _, res := range b.alterClientQuotas(ctx, alts, req.ValidateOnly) {
		se := kmsg.NewAlterClientQuotasResponseEntry()
		se.ErrorCode, se.ErrorMessage = errorCode(res.Err), errorMessage(res.Err)
		for _, c := range res.Entity {
			ec := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			se.Entity = append(se.Entity, ec)
		}
		resp.Entries = append(resp.Entries, se)
	}
	return resp, nil
}

// alterClientQuotas is Controller.AlterClientQuotas on the active
// controller (forward.go).
func (b *Broker) alterClientQuotas(ctx context.Context, alts []controller.ClientQuotaAlteration, validateOnly bool) []controller.ClientQuotaResult {
	var results []controller.ClientQuotaResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.ctrl.AlterClientQuotas(ctx, alts, validateOnly)
		} else {
			results = b.forwardAlterClientQuotas(ctx, id, alts, validateOnly)
		}
		for _, r := range results {
			if isNotController(r.Err) {
				return true
			}
		}
		return false
	})
	return results
}

func (b *Broker) forwardAlterClientQuotas(ctx context.Context, id int32, alts []controller.ClientQuotaAlteration, validateOnly bool) []controller.ClientQuotaResult {
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.ValidateOnly = validateOnly
	for _, a := range alts {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for _, c := range a.Entity {
			ec := kmsg.NewAlterClientQuotasRequestEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			e.Entity = append(e.Entity, ec)
		}
		for _, op := range a.Ops {
			eo := kmsg.NewAlterClientQuotasRequestEntryOp()
			eo.Key, eo.Value, eo.Remove = op.Key, op.Value, op.Remove
			e.Ops = append(e.Ops, eo)
		}
		req.Entries = append(req.Entries, e)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return controller.ClientQuotaFailure(alts, transportError(err))
	}
	resp, ok := kresp.(*kmsg.AlterClientQuotasResponse)
	if !ok {
		return controller.ClientQuotaFailure(alts, fmt.Errorf("%w: the controller answered %T", kerr.UnknownServerError, kresp))
	}
	// The controller broker answers for the same distinct entities, each
	// named as controller.AlterClientQuotas names it.
	results := make([]controller.ClientQuotaResult, 0, len(resp.Entries))
	for _, se := range resp.Entries {
		var res controller.ClientQuotaResult
		for _, c := range se.Entity {
			res.Entity = append(res.Entity, controller.QuotaComponent{Type: c.Type, Name: c.Name})
		}
		res.Err = remoteError(se.ErrorCode, se.ErrorMessage)
		results = append(results, res)
	}
	return results
}
