package broker

// DescribeAcls (api key 29), versions 1–3 (v0 was removed in Kafka 4.0;
// v1 adds the pattern type, v2 is flexible, v3 adds the USER resource
// type).
//
// Lists the ACLs a filter selects (acl.Filter: ANY fields match
// everything, the MATCH pattern type the ACLs that apply to a named
// resource), from this broker's metadata image, grouped by resource
// pattern in the order the ACLs were created, as KafkaApis answers it
// with AclApis.handleDescribeAcls:
//
//   - the principal needs DESCRIBE on the cluster, else the answer is
//     CLUSTER_AUTHORIZATION_FAILED (checked first, so without an
//     authorizer it always passes);
//   - without an authorizer (authorizer.class.name empty) the answer is
//     SECURITY_DISABLED, "No Authorizer is configured on the broker";
//   - a filter with an UNKNOWN (0) resource type, pattern type, operation
//     or permission is refused while Kafka parses the request, which
//     closes the connection; so does sluice.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
	"github.com/sluicedev/sluice/protocol"
)

// errACLUnknownElements closes the connection of an ACL request with an
// UNKNOWN element, as Kafka's request parsing refuses it.
var errACLUnknownElements = errors.New("broker: ACL request contains UNKNOWN elements")

func (b *Broker) handleDescribeACLs(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	if acl.HasUnknown(req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType) {
		return nil, errACLUnknownElements
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	z := b.authorizerFor(r)
	if !z.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeCluster, acl.ClusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if !z.enabled() {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		msg := "No Authorizer is configured on the broker"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	resp.ErrorMessage = kmsg.StringPtr("") // Kafka's answer to a success
	f := acl.Filter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	type pattern struct {
		rt   kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	index := map[pattern]int{}
	for _, e := range z.set.Match(f) {
		p := pattern{e.ResourceType, e.ResourceName, e.PatternType}
		i, ok := index[p]
		if !ok {
			i = len(resp.Resources)
			index[p] = i
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = p.rt, p.name, p.pt
			resp.Resources = append(resp.Resources, res)
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = e.Principal, e.Host, e.Operation, e.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return resp, nil
}
