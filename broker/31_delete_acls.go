package broker

// DeleteAcls (api key 31), versions 1–3 (v0 was removed in Kafka 4.0; v1
// adds the pattern type, v2 is flexible, v3 adds the USER resource type).
//
// Removes the ACLs each filter selects (acl.Filter, as DescribeAcls), in
// one metadata command on the active controller (controller DeleteACLs;
// forwarded as CreateAcls is). The answer has one result per filter, in
// order, with the ACLs it removed (each with no error, as Kafka's
// AclControlManager answers); an ACL two filters select is listed by both
// and removed once:
//
//   - every result is CLUSTER_AUTHORIZATION_FAILED when the principal
//     lacks ALTER on the cluster;
//   - without an authorizer, every result is SECURITY_DISABLED "No
//     Authorizer is configured.";
//   - a filter whose codes Kafka does not know is INVALID_REQUEST
//     ("Unknown patternFilter." / "Unknown entryFilter."); more than 10000
//     removals fail every filter with INVALID_REQUEST.
//
// A filter with an UNKNOWN (0) resource type, pattern type, operation or
// permission closes the connection, as Kafka's request parsing refuses it.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteACLs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	filters := make([]acl.Filter, 0, len(req.Filters))
	for _, f := range req.Filters {
		if acl.HasUnknown(f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType) {
			return nil, errACLUnknownElements
		}
		filters = append(filters, acl.Filter{
			ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
		})
	}
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	var results []controller.ACLDeleteResult
	switch {
	case !fromPeer(ctx) && !b.authorized(r, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, acl.ClusterName):
		results = controller.ACLDeleteFailure(len(filters), kerr.ClusterAuthorizationFailed)
	case b.authorizer() == nil:
		results = controller.ACLDeleteFailure(len(filters), errNoAuthorizer)
	case len(filters) > 0:
		results = b.deleteACLs(ctx, filters)
	}
	for _, res := range results {
		fr := kmsg.NewDeleteACLsResponseResult()
		fr.ErrorCode = errorCode(res.Err)
		if res.Err != nil && res.Err != kerr.ClusterAuthorizationFailed {
			fr.ErrorMessage = errorMessage(res.Err)
		}
		for _, bd := range res.Deleted {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			fr.MatchingACLs = append(fr.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, fr)
	}
	return resp, nil
}

// deleteACLs is Controller.DeleteACLs on the active controller
// (forward.go).
func (b *Broker) deleteACLs(ctx context.Context, filters []acl.Filter) []controller.ACLDeleteResult {
	var results []controller.ACLDeleteResult
	b.onController(ctx, func(ctx context.Context, id int32) bool {
		if id == b.cfg.NodeID {
			results = b.ctrl.DeleteACLs(ctx, filters)
		} else {
			results = b.forwardDeleteACLs(ctx, id, filters)
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

func (b *Broker) forwardDeleteACLs(ctx context.Context, id int32, filters []acl.Filter) []controller.ACLDeleteResult {
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, f := range filters {
		rf := kmsg.NewDeleteACLsRequestFilter()
		rf.ResourceType, rf.ResourceName, rf.ResourcePatternType = f.ResourceType, f.ResourceName, f.PatternType
		rf.Principal, rf.Host, rf.Operation, rf.PermissionType = f.Principal, f.Host, f.Operation, f.Permission
		req.Filters = append(req.Filters, rf)
	}
	kresp, err := b.sendToController(ctx, id, req)
	if err != nil {
		return controller.ACLDeleteFailure(len(filters), transportError(err))
	}
	resp, ok := kresp.(*kmsg.DeleteACLsResponse)
	if !ok || len(resp.Results) != len(filters) {
		return controller.ACLDeleteFailure(len(filters), fmt.Errorf("%w: the controller answered %T", kerr.UnknownServerError, kresp))
	}
	results := make([]controller.ACLDeleteResult, len(filters))
	for i, fr := range resp.Results {
		results[i].Err = remoteError(fr.ErrorCode, fr.ErrorMessage)
		for _, m := range fr.MatchingACLs {
			results[i].Deleted = append(results[i].Deleted, acl.Binding{
				ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
				Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType,
			})
		}
	}
	return results
}
