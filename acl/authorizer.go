package acl

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides actions from a Set of ACLs, with the settings of
// Kafka's StandardAuthorizer. It is immutable and safe for concurrent use.
type Authorizer struct {
	superUsers   map[string]bool
	allowIfNoACL bool
}

// ParseSuperUsers reads super.users: principals separated by semicolons,
// each TYPE:NAME, blanks around them ignored (StandardAuthorizer's
// getConfiguredSuperUsers). A principal without a colon is an error.
func ParseSuperUsers(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ";") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.Contains(p, ":") {
			return nil, fmt.Errorf("expected a string in format principalType:principalName but got %s", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// New returns an authorizer with the given super users (TYPE:NAME each)
// and allow.everyone.if.no.acl.found.
func New(superUsers []string, allowEveryoneIfNoACLFound bool) *Authorizer {
	a := &Authorizer{superUsers: make(map[string]bool, len(superUsers)), allowIfNoACL: allowEveryoneIfNoACLFound}
	for _, u := range superUsers {
		a.superUsers[u] = true
	}
	return a
}

// Requester is who asks: a principal (TYPE:NAME) and the client's address.
type Requester struct {
	Principal string
	// Host is the client's address as text, Addr the same address
	// parsed (invalid when the connection has no IP address).
	Host string
	Addr netip.Addr
}

// NewRequester is the requester of a connection from remote.
func NewRequester(principal string, remote net.Addr) Requester {
	r := Requester{Principal: principal}
	var ip net.IP
	switch a := remote.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	case nil:
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			r.Addr = ap.Addr().Unmap()
			r.Host = r.Addr.String()
			return r
		}
	}
	if addr, ok := netip.AddrFromSlice(ip); ok {
		r.Addr = addr.Unmap()
		r.Host = r.Addr.String()
	}
	return r
}

// SuperUser reports whether p is one of super.users.
func (a *Authorizer) SuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize decides whether who may perform op on the named resource of
// type rt, given the ACLs in s (see the package doc).
func (a *Authorizer) Authorize(s *Set, who Requester, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.superUsers[who.Principal] {
		return true
	}
	allowed, denied, found := false, false, false
	s.applicable(rt, name, func(st *stored) bool {
		found = true
		switch st.result(who, op) {
		case resultDeny:
			denied = true
			return false
		case resultAllow:
			allowed = true
		}
		return true
	})
	switch {
	case denied:
		return false
	case allowed:
		return true
	case found:
		return false
	}
	return a.allowIfNoACL
}

// AuthorizedOps returns the operations, among ops, that who may perform on
// the named resource, as a KIP-430 bitfield (bit n for the operation of
// code n), looking the applicable ACLs up once.
func (a *Authorizer) AuthorizedOps(s *Set, who Requester, rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) int32 {
	var bits int32
	if a.superUsers[who.Principal] {
		for _, op := range ops {
			bits |= 1 << uint(op)
		}
		return bits
	}
	var applicable []*stored
	s.applicable(rt, name, func(st *stored) bool {
		applicable = append(applicable, st)
		return true
	})
	for _, op := range ops {
		allowed, denied := false, false
		for _, st := range applicable {
			switch st.result(who, op) {
			case resultDeny:
				denied = true
			case resultAllow:
				allowed = true
			}
			if denied {
				break
			}
		}
		if !denied && (allowed || len(applicable) == 0 && a.allowIfNoACL) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// AuthorizeByResourceType reports whether who may perform op on at least
// one resource of type rt, as Kafka's Authorizer.authorizeByResourceType
// decides (InitProducerId without IDEMPOTENT_WRITE on the cluster asks
// whether the producer may WRITE some topic): allowed when the action is
// allowed on a resource no ACL names (a super user, or
// allow.everyone.if.no.acl.found), else when a matching LITERAL "*" ALLOW
// exists and no matching LITERAL "*" DENY, or a matching ALLOW of a
// literal name or prefix that no matching DENY of the same literal name,
// or of a prefix of it, overrides. Only ACLs for op itself or ALL count:
// no implied operations here, as in Kafka.
func (a *Authorizer) AuthorizeByResourceType(s *Set, who Requester, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	// Kafka asks first about a resource named "hardcode", so super users
	// pass whatever DENY ACLs say.
	if a.Authorize(s, who, op, rt, "hardcode") {
		return true
	}
	var (
		denyLiteral  = map[string]bool{}
		denyPrefixed = map[string]bool{}
		allowLit     []string
		allowPre     []string
		wildAllow    bool
	)
	for _, st := range s.ofType(rt) {
		if !st.hostMatches(who) || (st.Principal != who.Principal && st.Principal != WildcardPrincipal) {
			continue
		}
		if st.Operation != op && st.Operation != kmsg.ACLOperationAll {
			continue
		}
		switch st.Permission {
		case kmsg.ACLPermissionTypeDeny:
			switch st.PatternType {
			case kmsg.ACLResourcePatternTypeLiteral:
				if st.ResourceName == Wildcard {
					return false
				}
				denyLiteral[st.ResourceName] = true
			case kmsg.ACLResourcePatternTypePrefixed:
				denyPrefixed[st.ResourceName] = true
			}
		case kmsg.ACLPermissionTypeAllow:
			switch st.PatternType {
			case kmsg.ACLResourcePatternTypeLiteral:
				if st.ResourceName == Wildcard {
					wildAllow = true
				} else {
					allowLit = append(allowLit, st.ResourceName)
				}
			case kmsg.ACLResourcePatternTypePrefixed:
				allowPre = append(allowPre, st.ResourceName)
			}
		}
	}
	if wildAllow {
		return true
	}
	dominated := func(name string) bool {
		for i := 1; i <= len(name); i++ {
			if denyPrefixed[name[:i]] {
				return true
			}
		}
		return false
	}
	for _, name := range allowLit {
		if !denyLiteral[name] && !dominated(name) {
			return true
		}
	}
	for _, name := range allowPre {
		if !dominated(name) {
			return true
		}
	}
	return false
}

type result int8

const (
	resultNone result = iota
	resultAllow
	resultDeny
)

// result is what the ACL says about who performing op, its resource
// pattern already known to apply (StandardAuthorizerData.findResult).
func (st *stored) result(who Requester, op kmsg.ACLOperation) result {
	if st.Principal != who.Principal && st.Principal != WildcardPrincipal {
		return resultNone
	}
	if !st.hostMatches(who) {
		return resultNone
	}
	if st.Operation != kmsg.ACLOperationAll {
		if st.Permission == kmsg.ACLPermissionTypeAllow {
			switch op {
			case kmsg.ACLOperationDescribe:
				switch st.Operation {
				case kmsg.ACLOperationDescribe, kmsg.ACLOperationRead, kmsg.ACLOperationWrite,
					kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
				default:
					return resultNone
				}
			case kmsg.ACLOperationDescribeConfigs:
				switch st.Operation {
				case kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs:
				default:
					return resultNone
				}
			default:
				if st.Operation != op {
					return resultNone
				}
			}
		} else if st.Operation != op {
			return resultNone
		}
	}
	switch st.Permission {
	case kmsg.ACLPermissionTypeAllow:
		return resultAllow
	case kmsg.ACLPermissionTypeDeny:
		return resultDeny
	}
	return resultNone
}

// hostMatches reports whether the ACL's host covers the requester's.
func (st *stored) hostMatches(who Requester) bool {
	switch {
	case st.anyHost, st.Host == who.Host:
		return true
	case !who.Addr.IsValid():
		return false
	case st.addr.IsValid():
		return st.addr == who.Addr
	case st.cidr.IsValid():
		return st.cidr.Contains(who.Addr)
	}
	return false
}

// SupportedOperations are the operations a resource type has (Kafka's
// AclEntry.supportedOperations), in Kafka's order: what the KIP-430
// authorized-operations fields are made of.
func SupportedOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
			kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	case kmsg.ACLResourceTypeGroup:
		return []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	case kmsg.ACLResourceTypeCluster:
		return []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
			kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
			kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeTransactionalId:
		return []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite, OpTwoPhaseCommit}
	case kmsg.ACLResourceTypeDelegationToken:
		return []kmsg.ACLOperation{kmsg.ACLOperationDescribe}
	case kmsg.ACLResourceTypeUser:
		return []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens}
	}
	return nil
}
