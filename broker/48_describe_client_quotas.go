package broker

// DescribeClientQuotas (api key 48), versions 0–1 (KIP-546; v1 is
// flexible).
//
// Lists the quota entities of this broker's metadata image that match a
// filter, with their values, as Kafka 4's brokers answer from their
// metadata image (ClientQuotasImage.describe). Each filter component names
// an entity type (user, client-id, ip) and a match type:
//
//   - EXACT (0): the entity has the type with exactly this name;
//   - DEFAULT (1): the entity has the type's <default> component;
//   - SPECIFIED (2, "any"): the entity has the type, named or default.
//
// An entity matches when every component does; with strict it must also
// have no other component. No component matches every entity (none when
// strict). A bad filter fails the whole request with a top-level error and
// no entries, with Kafka's messages: an empty or repeated entity type, a
// match string with DEFAULT or SPECIFIED or none with EXACT, an unknown
// match type, or ip combined with user or client-id is INVALID_REQUEST; an
// entity type other than user, client-id or ip is UNSUPPORTED_VERSION.
//
// Entries come in quotas.ClientConfig.Entities order, values sorted by
// key.
//
// DESCRIBE_CONFIGS on the cluster is needed (CLUSTER_AUTHORIZATION_FAILED,
// authorize_requests.go).

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/quotas"
)

// Match types of a DescribeClientQuotas filter component.
const (
	quotaMatchExact     = 0
	quotaMatchDefault   = 1
	quotaMatchSpecified = 2
)

func (b *Broker) handleDescribeClientQuotas(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !b.authorizedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f, err := parseQuotaFilter(req)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
		return resp, nil
	}
	// Entries is nullable: null is the error answer, and Kafka's Java
	// client reads a null list in a success answer as a
	// NullPointerException, so no match is an empty list.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	qs := b.clientQuotas()
	for _, e := range qs.Entities() {
		if !f.matches(e) {
			continue
		}
		se := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range entityParts(e) {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type = c.typ
			if !c.part.Default {
				ec.Name = kmsg.StringPtr(c.part.Name)
			}
			se.Entity = append(se.Entity, ec)
		}
		values := qs.Values(e)
		keys := make([]string, 0, len(values))
		for k := range values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, values[k]
			se.Values = append(se.Values, v)
		}
		resp.Entries = append(resp.Entries, se)
	}
	return resp, nil
}

// quotaFilter is a parsed DescribeClientQuotas filter: the types matched
// by name (nil name: the <default> component), the types matched by
// presence, and strictness.
type quotaFilter struct {
	exact  map[string]*string
	typed  map[string]bool
	strict bool
}

func parseQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (*quotaFilter, error) {
	f := &quotaFilter{exact: map[string]*string{}, typed: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		typ := c.EntityType
		if typ == "" {
			return nil, fmt.Errorf("%w: Invalid empty entity type.", kerr.InvalidRequest)
		}
		if _, ok := f.exact[typ]; ok || f.typed[typ] {
			return nil, fmt.Errorf("%w: Entity type %s cannot appear more than once in the filter.", kerr.InvalidRequest, typ)
		}
		switch typ {
		case quotas.EntityUser, quotas.EntityClientID, quotas.EntityIP:
		default:
			return nil, fmt.Errorf("%w: Unsupported entity type %s", kerr.UnsupportedVersion, typ)
		}
		switch c.MatchType {
		case quotaMatchExact:
			if c.Match == nil {
				return nil, fmt.Errorf("%w: Request specified MATCH_TYPE_EXACT, but set match string to null.", kerr.InvalidRequest)
			}
			f.exact[typ] = c.Match
		case quotaMatchDefault:
			if c.Match != nil {
				return nil, fmt.Errorf("%w: Request specified MATCH_TYPE_DEFAULT, but also specified a match string.", kerr.InvalidRequest)
			}
			f.exact[typ] = nil
		case quotaMatchSpecified:
			if c.Match != nil {
				return nil, fmt.Errorf("%w: Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.", kerr.InvalidRequest)
			}
			f.typed[typ] = true
		default:
			return nil, fmt.Errorf("%w: Unknown match type %d", kerr.InvalidRequest, c.MatchType)
		}
	}
	has := func(typ string) bool { _, ok := f.exact[typ]; return ok || f.typed[typ] }
	if has(quotas.EntityIP) && (has(quotas.EntityUser) || has(quotas.EntityClientID)) {
		return nil, fmt.Errorf("%w: Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.", kerr.InvalidRequest)
	}
	return f, nil
}

// entityPart is one set component of an entity.
type entityPart struct {
	typ  string
	part quotas.Part
}

func entityParts(e quotas.Entity) []entityPart {
	var out []entityPart
	for _, p := range []entityPart{{quotas.EntityUser, e.User}, {quotas.EntityClientID, e.ClientID}, {quotas.EntityIP, e.IP}} {
		if p.part.Set {
			out = append(out, p)
		}
	}
	return out
}

func (f *quotaFilter) matches(e quotas.Entity) bool {
	parts := entityParts(e)
	if f.strict && len(parts) != len(f.exact)+len(f.typed) {
		return false
	}
	byType := map[string]quotas.Part{}
	for _, p := range parts {
		byType[p.typ] = p.part
	}
	for typ, name := range f.exact {
		p, ok := byType[typ]
		if !ok {
			return false
		}
		if name == nil {
			if !p.Default {
				return false
			}
		} else if p.Default || p.Name != *name {
			return false
		}
	}
	for typ := range f.typed {
		if _, ok := byType[typ]; !ok {
			return false
		}
	}
	return true
}
