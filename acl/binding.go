package acl

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Names Kafka gives to the wildcards and the cluster resource.
const (
	// Wildcard is the LITERAL resource name that matches any name, and
	// the host that matches any host.
	Wildcard = "*"
	// WildcardPrincipal is the principal that matches every principal.
	WildcardPrincipal = "User:*"
	// ClusterName is the name of the one CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// OpTwoPhaseCommit is Kafka 4's TWO_PHASE_COMMIT operation (KIP-939), a
// TRANSACTIONAL_ID operation kmsg does not name yet.
const OpTwoPhaseCommit kmsg.ACLOperation = 15

// Binding is one ACL: Kafka's AclBinding, a resource pattern and an access
// control entry. Principal is written TYPE:NAME (User:alice, User:*).
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// String writes b as Kafka's AclBinding.toString does, for logs.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		ResourceTypeName(b.ResourceType), b.ResourceName, PatternTypeName(b.PatternType),
		b.Principal, b.Host, OperationName(b.Operation), PermissionName(b.Permission))
}

// ResourceTypeName is the Java enum name of rt, UNKNOWN for a code Kafka
// does not know (as ResourceType.fromCode maps it).
func ResourceTypeName(rt kmsg.ACLResourceType) string { return rt.String() }

// PatternTypeName is the Java enum name of pt.
func PatternTypeName(pt kmsg.ACLResourcePatternType) string { return pt.String() }

// PermissionName is the Java enum name of p.
func PermissionName(p kmsg.ACLPermissionType) string { return p.String() }

// OperationName is the Java enum name of op.
func OperationName(op kmsg.ACLOperation) string {
	if op == OpTwoPhaseCommit {
		return "TWO_PHASE_COMMIT"
	}
	return op.String()
}

// knownResourceType reports whether rt is a code Kafka 4.4 knows, ANY
// and UNKNOWN included (anything else reads as UNKNOWN).
func knownResourceType(rt kmsg.ACLResourceType) bool {
	return rt >= kmsg.ACLResourceTypeUnknown && rt <= kmsg.ACLResourceTypeUser
}

func knownPatternType(pt kmsg.ACLResourcePatternType) bool {
	return pt >= kmsg.ACLResourcePatternTypeUnknown && pt <= kmsg.ACLResourcePatternTypePrefixed
}

func knownOperation(op kmsg.ACLOperation) bool {
	return op >= kmsg.ACLOperationUnknown && op <= OpTwoPhaseCommit
}

func knownPermission(p kmsg.ACLPermissionType) bool {
	return p >= kmsg.ACLPermissionTypeUnknown && p <= kmsg.ACLPermissionTypeAllow
}

// canonical maps the codes Kafka does not know to UNKNOWN, as its
// fromCode methods do, so messages and comparisons see what Kafka sees.
func canonical(b Binding) Binding {
	if !knownResourceType(b.ResourceType) {
		b.ResourceType = kmsg.ACLResourceTypeUnknown
	}
	if !knownPatternType(b.PatternType) {
		b.PatternType = kmsg.ACLResourcePatternTypeUnknown
	}
	if !knownOperation(b.Operation) {
		b.Operation = kmsg.ACLOperationUnknown
	}
	if !knownPermission(b.Permission) {
		b.Permission = kmsg.ACLPermissionTypeUnknown
	}
	return b
}

// HasUnknown reports whether a request field is Kafka's UNKNOWN code (0),
// which Kafka's request parsing refuses (CreateAclsRequest, DescribeAcls
// and DeleteAcls validate it while parsing): the broker then closes the
// connection instead of answering.
func HasUnknown(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) bool {
	return rt == kmsg.ACLResourceTypeUnknown || pt == kmsg.ACLResourcePatternTypeUnknown ||
		op == kmsg.ACLOperationUnknown || perm == kmsg.ACLPermissionTypeUnknown
}

// Unconstructible reports whether a CreateAcls creation names what an ACL
// cannot be: resource type ANY, pattern type MATCH or ANY, operation ANY
// or permission ANY. Kafka's ResourcePattern and AccessControlEntry
// constructors throw on these before any validation, which fails the
// whole request: every creation is answered UNKNOWN_SERVER_ERROR, without
// a message (measured on Kafka 4.4).
func Unconstructible(b Binding) bool {
	return b.ResourceType == kmsg.ACLResourceTypeAny ||
		b.PatternType == kmsg.ACLResourcePatternTypeMatch || b.PatternType == kmsg.ACLResourcePatternTypeAny ||
		b.Operation == kmsg.ACLOperationAny || b.Permission == kmsg.ACLPermissionTypeAny
}

// ValidateCreate checks a binding a CreateAcls request asks for, with
// Kafka's checks, order and messages: first the broker's (AclApis: the
// CLUSTER resource's name, an empty name), then the controller's
// (AclControlManager.validateNewAcl: concrete types, operation and
// permission, a principal with a colon, a host pattern). Every error is
// INVALID_REQUEST except a CIDR host a metadata version cannot carry,
// which sluice (always at Kafka 4.4's newest) never refuses.
func ValidateCreate(b Binding) error {
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("%w: The only valid name for the CLUSTER resource is %s", kerr.InvalidRequest, ClusterName)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: Invalid empty resource name", kerr.InvalidRequest)
	}
	c := canonical(b)
	switch c.ResourceType {
	case kmsg.ACLResourceTypeUnknown, kmsg.ACLResourceTypeAny:
		return fmt.Errorf("%w: Invalid resourceType %s", kerr.InvalidRequest, ResourceTypeName(c.ResourceType))
	}
	switch c.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Errorf("%w: Invalid patternType %s", kerr.InvalidRequest, PatternTypeName(c.PatternType))
	}
	switch c.Operation {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return fmt.Errorf("%w: Invalid operation %s", kerr.InvalidRequest, OperationName(c.Operation))
	}
	switch c.Permission {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return fmt.Errorf("%w: Invalid permissionType %s", kerr.InvalidRequest, PermissionName(c.Permission))
	}
	if !strings.Contains(b.Principal, ":") {
		return fmt.Errorf("%w: Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", kerr.InvalidRequest, b.Principal)
	}
	return validateHost(b.Host)
}

// validateHost checks an ACL's host as AclControlManager.validateHostPattern
// does: not empty; "*", an address or any other text as it is; and, when
// it holds a '/', a valid IPv4 or IPv6 CIDR range (KIP-1276).
func validateHost(host string) error {
	if host == "" {
		return fmt.Errorf("%w: Host pattern cannot be null or empty", kerr.InvalidRequest)
	}
	if host == Wildcard || !strings.Contains(host, "/") {
		return nil
	}
	if _, err := parseCIDR(host); err != nil {
		return fmt.Errorf("%w: Invalid CIDR notation '%s': %v", kerr.InvalidRequest, host, err)
	}
	return nil
}

// ipv4CIDR is the form Apache Commons Net's SubnetUtils accepts, which
// Kafka uses to read an IPv4 range.
var ipv4CIDR = regexp.MustCompile(`^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})/(\d{1,2})$`)

// parseCIDR reads an IPv4 or IPv6 CIDR range (a ':' makes it IPv6, as
// Kafka's CidrUtils decides). Any address in the range may be written
// before the '/'. Its errors read as SubnetUtils' do.
func parseCIDR(s string) (netip.Prefix, error) {
	if strings.Contains(s, ":") {
		addr, bits, _ := strings.Cut(s, "/")
		if n, err := strconv.Atoi(bits); err == nil && (n < 0 || n > 128) {
			return netip.Prefix{}, fmt.Errorf("Could not parse [%s] - prefix length must be between 0 and 128", s)
		}
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() || p.Addr().Zone() != "" || strings.Contains(addr, ".") {
			return netip.Prefix{}, fmt.Errorf("Could not parse [%s]", s)
		}
		return p.Masked(), nil
	}
	m := ipv4CIDR.FindStringSubmatch(s)
	if m == nil {
		return netip.Prefix{}, fmt.Errorf("Could not parse [%s]", s)
	}
	var a [4]byte
	for i := range 4 {
		n, _ := strconv.Atoi(m[i+1])
		if n > 255 {
			return netip.Prefix{}, fmt.Errorf("Value [%d] not in range [0,255]", n)
		}
		a[i] = byte(n)
	}
	bits, _ := strconv.Atoi(m[5])
	if bits > 32 {
		return netip.Prefix{}, fmt.Errorf("Value [%d] not in range [0,32]", bits)
	}
	return netip.PrefixFrom(netip.AddrFrom4(a), bits).Masked(), nil
}

// Filter selects bindings, as Kafka's AclBindingFilter: ANY (or nil)
// fields match everything; PatternType MATCH selects the ACLs that would
// apply to the named resource (the LITERAL one, LITERAL "*", and every
// PREFIXED one that starts the name).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// ValidateDelete checks a DeleteAcls filter as AclControlManager's
// validateFilter does: a filter with an UNKNOWN part matches nothing
// definite and is refused with INVALID_REQUEST.
func ValidateDelete(f Filter) error {
	c := canonicalFilter(f)
	if c.ResourceType == kmsg.ACLResourceTypeUnknown || c.PatternType == kmsg.ACLResourcePatternTypeUnknown {
		return fmt.Errorf("%w: Unknown patternFilter.", kerr.InvalidRequest)
	}
	if c.Operation == kmsg.ACLOperationUnknown || c.Permission == kmsg.ACLPermissionTypeUnknown {
		return fmt.Errorf("%w: Unknown entryFilter.", kerr.InvalidRequest)
	}
	return nil
}

func canonicalFilter(f Filter) Filter {
	c := canonical(Binding{ResourceType: f.ResourceType, PatternType: f.PatternType, Operation: f.Operation, Permission: f.Permission})
	f.ResourceType, f.PatternType, f.Operation, f.Permission = c.ResourceType, c.PatternType, c.Operation, c.Permission
	return f
}

// Matches reports whether f selects b, as AclBindingFilter.matches does.
func (f Filter) Matches(b Binding) bool {
	f = canonicalFilter(f)
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	anyPattern := f.PatternType == kmsg.ACLResourcePatternTypeAny
	if !anyPattern && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case anyPattern || f.PatternType == b.PatternType:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != Wildcard {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}
