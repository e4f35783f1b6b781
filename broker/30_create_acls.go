package broker

// CreateAcls (api key 30), versions 1–3 (v0 was removed in Kafka 4.0; v1
// adds the pattern type, v2 is flexible, v3 adds the USER resource type).
//
// Creates ACLs in the metadata log, where every broker's authorizer reads
// them. As in Kafka 4 (KafkaApis forwards the request, the controller's
// AclApis and AclControlManager decide), the active controller validates
// each binding and writes the new ones in one command (controller
// CreateACLs); a non-controller broker forwards the request over the
// controller channel and answers once its own image has the change. The
// answer has one result per creation, in order:
//
//   - every result is CLUSTER_AUTHORIZATION_FAILED when the principal
//     lacks ALTER on the cluster (checked on the broker the client is
//     connected to, with the client's principal, before forwarding);
//   - without an authorizer, every result is SECURITY_DISABLED "No
//     Authorizer is configured.";
//   - a binding that fails validation gets INVALID_REQUEST with Kafka's
//     message (acl.ValidateCreate); one that already exists succeeds.
//
// A creation of what no ACL can be (resource type ANY, pattern type MATCH
// or ANY, operation or permission ANY) fails the whole request: Kafka's
// ACL classes refuse to be built with them, so every result is
// UNKNOWN_SERVER_ERROR without a message (measured on Kafka 4.4). A
// creation with an UNKNOWN (0) resource type, pattern type, operation
// or permission closes the connection, as Kafka's request parsing
// refuses it.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
)

// errNoAuthorizer answers the ACL writes when no authorizer is configured.
var errNoAuthorizer = fmt.Errorf("%w: No Authorizer is configured.", kerr.SecurityDisabled)

func (b *Broker) handleCreateACLs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	bindings := make([]acl.Binding, 0, len(req.Creations))
	for _, c := range req.Creations {
		if acl.HasUnknown(c.ResourceType, c.ResourcePatternType, c.Operation, c.PermissionType) {
			return nil, errACLUnknownElements
		}
		bindings = append(bindings, acl.Binding{
			ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType,
		})
	}
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	errs := make([]error, len(bindings))
	// In Kafka's order: the principal, the authorizer, then the bindings.
	switch {
	case !fromPeer(ctx) && !b.authorized(r, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName):
		for i := range errs {
			errs[i] = kerr.ClusterAuthorizationFailed
		}
	case b.authorizer() == nil:
		for i := range errs {
			errs[i] = errNoAuthorizer
		}
	case slices.ContainsFunc(bindings, acl.Unconstructible):
		for i := range errs {
			errs[i] = kerr.UnknownServerError
		}
	case len(bindings) > 0:
		errs = b.createACLs(ctx, bindings)
	}
	for _, err := range errs {
		rr := kmsg.NewCreateACLsResponseResult()
		rr.ErrorCode = errorCode(err)
		switch err {
		case nil:
			// Kafka's AclCreationResult answers a success with an
			// empty message, not null.
			rr.ErrorMessage = kmsg.StringPtr("")
		case kerr.ClusterAuthorizationFailed, kerr.UnknownServerError:
		default:
			rr.ErrorMessage = errorMessage(err)
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp, nil
}

// createACLs is Controller.CreateACLs on the active controller
// (forward.go).
func (b *Broker) createACLs(ctx context.Context, bindings []acl.Binding) []error {
	var errs []error
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			errs = b.ctrl.CreateACLs(ctx, bindings)
		} else {
			errs = b.forwardCreateACLs(ctx, id, bindings)
		}
		for _, err := range errs {
			if isNotController(err) {
				return true
			}
		}
		return false
	})
	return errs
}

func (b *Broker) forwardCreateACLs(ctx context.Context, id int32, bindings []acl.Binding) []error {
	fail := func(err error) []error {
		errs := make([]error, len(bindings))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, bd := range bindings {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
		c.Principal, c.Host, c.Operation, c.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		req.Creations = append(req.Creations, c)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return fail(transportError(err))
	}
	resp, ok := kresp.(*kmsg.CreateACLsResponse)
	if !ok || len(resp.Results) != len(bindings) {
		return fail(fmt.Errorf("%w: the controller answered %T, not one result per creation", kerr.UnknownServerError, kresp))
	}
	errs := make([]error, len(bindings))
	for i, rr := range resp.Results {
		errs[i] = remoteError(rr.ErrorCode, rr.ErrorMessage)
	}
	return errs
}
