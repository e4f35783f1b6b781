package broker

// UpdateFeatures (api key 57), versions 0–2 (KIP-584; v1 replaces
// AllowDowngrade with UpgradeType and adds ValidateOnly, KIP-778; v2 drops
// the per-feature results, the top-level error standing for the request).
//
// Changes finalized feature levels (controller/features.go). As in Kafka 4
// (KafkaApis forwards the request, its controller's FeatureControlManager
// decides), the active controller validates the updates and writes them as
// one command, all or nothing: the first update that fails fails the whole
// request with INVALID_UPDATE_VERSION and Kafka's message. A non-controller
// broker forwards the request over the controller channel and answers once
// its own image has the change, so the ApiVersions it serves next reports
// the new levels. ValidateOnly validates without writing.
//
// Answers are Kafka 4.4's: a top-level error code and message; at v0 and
// v1 a success also lists every feature of the request with NONE (and, as
// Kafka sets it, the message "NONE"), a failure lists none.
//
// A v0 entry's AllowDowngrade is a SAFE_DOWNGRADE, as Kafka's
// UpdateFeaturesRequest reads it (Kafka 4.4's controller reads the v1
// UpgradeType field instead, which a v0 request cannot carry, so it
// refuses every v0 downgrade; no client of Kafka 3.3 or later sends v0).
// An UpgradeType other than 1, 2 or 3 is Kafka's UNKNOWN type and fails.
//
// ALTER on the cluster is needed, checked on the broker the client is
// connected to before forwarding: without it the answer is a top-level
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleUpdateFeatures(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if clientRequest(ctx) && !b.authorizedCluster(r, kmsg.ACLOperationAlter) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr("Request is not authorized to alter the cluster's feature levels.")
		return resp, nil
	}
	updates := make([]controller.FeatureUpdate, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		typ := controller.UpgradeType(u.UpgradeType)
		if req.Version == 0 {
			typ = controller.UpgradeUpgrade
			if u.AllowDowngrade {
				typ = controller.UpgradeSafeDowngrade
			}
		}
		updates = append(updates, controller.FeatureUpdate{Feature: u.Feature, Level: u.MaxVersionLevel, Type: typ})
	}
	validateOnly := req.Version >= 1 && req.ValidateOnly
	if err := b.updateFeatures(ctx, updates, validateOnly); err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	if req.Version <= 1 {
		seen := map[string]bool{}
		for _, u := range req.FeatureUpdates {
			if seen[u.Feature] {
				continue
			}
			seen[u.Feature] = true
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature, res.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
			resp.Results = append(resp.Results, res)
		}
	}
	return resp, nil
}

// updateFeatures is Controller.UpdateFeatures on the active controller
// (forward.go).
func (b *Broker) updateFeatures(ctx context.Context, updates []controller.FeatureUpdate, validateOnly bool) error {
	var err error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			err = b.ctrl.UpdateFeatures(ctx, updates, validateOnly)
		} else {
			err = b.forwardUpdateFeatures(ctx, id, updates, validateOnly)
		}
		return isNotController(err)
	})
	return err
}

// forwardUpdateFeatures sends the updates to the active controller's
// controller channel; its top-level error is the decision.
func (b *Broker) forwardUpdateFeatures(ctx context.Context, id int32, updates []controller.FeatureUpdate, validateOnly bool) error {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = timeoutMillis(ctx)
	req.ValidateOnly = validateOnly
	for _, u := range updates {
		fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		fu.Feature, fu.MaxVersionLevel, fu.UpgradeType = u.Feature, u.Level, int8(u.Type)
		req.FeatureUpdates = append(req.FeatureUpdates, fu)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return transportError(err)
	}
	resp, ok := kresp.(*kmsg.UpdateFeaturesResponse)
	if !ok {
		return fmt.Errorf("%w: the controller answered %T", kerr.UnknownServerError, kresp)
	}
	return remoteError(resp.ErrorCode, resp.ErrorMessage)
}
