package acl

import (
	"fmt"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId
	lit     = kmsg.ACLResourcePatternTypeLiteral
	pre     = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny

	read      = kmsg.ACLOperationRead
	write     = kmsg.ACLOperationWrite
	describe  = kmsg.ACLOperationDescribe
	alter     = kmsg.ACLOperationAlter
	all       = kmsg.ACLOperationAll
	del       = kmsg.ACLOperationDelete
	create    = kmsg.ACLOperationCreate
	descConf  = kmsg.ACLOperationDescribeConfigs
	alterConf = kmsg.ACLOperationAlterConfigs
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func setOf(bs ...Binding) *Set {
	var es []Entry
	for i, b := range bs {
		es = append(es, Entry{ID: [16]byte{byte(i + 1), byte((i + 1) >> 8)}, Binding: b})
	}
	return NewSet(es)
}

func who(principal, ip string) Requester {
	return NewRequester(principal, &net.TCPAddr{IP: net.ParseIP(ip), Port: 5000})
}

// TestAuthorizeDecision checks StandardAuthorizer's decision rules, one
// named case each.
func TestAuthorizeDecision(t *testing.T) {
	alice := who("User:alice", "10.1.2.3")
	for _, tc := range []struct {
		name       string
		acls       []Binding
		super      []string
		allowNoACL bool
		who        Requester
		op         kmsg.ACLOperation
		rt         kmsg.ACLResourceType
		res        string
		want       bool
	}{
		{name: "no ACL denies by default", who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "no ACL with allow.everyone.if.no.acl.found", allowNoACL: true, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "ACLs on another resource leave allow.everyone in force", allowNoACL: true,
			acls: []Binding{bind(topic, "other", lit, "User:bob", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "ACLs on the resource but none matching deny despite allow.everyone", allowNoACL: true,
			acls: []Binding{bind(topic, "t", lit, "User:bob", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "super user allowed without ACLs", super: []string{"User:alice"}, who: alice, op: alter, rt: cluster, res: ClusterName, want: true},
		{name: "super user allowed despite DENY", super: []string{"User:alice"},
			acls: []Binding{bind(topic, "t", lit, "User:alice", "*", all, deny)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "literal ALLOW", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "literal ALLOW is not another name", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", read, allow)}, who: alice, op: read, rt: topic, res: "tt", want: false},
		{name: "literal ALLOW is not another type", acls: []Binding{bind(group, "t", lit, "User:alice", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "wildcard resource", acls: []Binding{bind(topic, "*", lit, "User:alice", "*", read, allow)}, who: alice, op: read, rt: topic, res: "anything", want: true},
		{name: "prefixed", acls: []Binding{bind(topic, "orders.", pre, "User:alice", "*", write, allow)}, who: alice, op: write, rt: topic, res: "orders.eu", want: true},
		{name: "prefixed equal to the name", acls: []Binding{bind(topic, "orders", pre, "User:alice", "*", write, allow)}, who: alice, op: write, rt: topic, res: "orders", want: true},
		{name: "prefixed longer than the name", acls: []Binding{bind(topic, "orders.eu", pre, "User:alice", "*", write, allow)}, who: alice, op: write, rt: topic, res: "orders", want: false},
		{name: "literal that is a prefix does not match", acls: []Binding{bind(topic, "orders", lit, "User:alice", "*", write, allow)}, who: alice, op: write, rt: topic, res: "orders.eu", want: false},
		{name: "wildcard principal", acls: []Binding{bind(topic, "t", lit, "User:*", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "other principal", acls: []Binding{bind(topic, "t", lit, "User:bob", "*", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "DENY wins over ALLOW", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", read, allow),
			bind(topic, "t", pre, "User:*", "*", read, deny)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "wildcard DENY wins over literal ALLOW", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", read, allow),
			bind(topic, "*", lit, "User:alice", "*", read, deny)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "DENY of another operation does not deny", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", read, allow),
			bind(topic, "t", lit, "User:alice", "*", write, deny)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "DENY ALL denies everything", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", read, allow),
			bind(topic, "t", lit, "User:alice", "*", all, deny)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "ALLOW ALL allows", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", all, allow)}, who: alice, op: alterConf, rt: topic, res: "t", want: true},
		{name: "READ implies DESCRIBE", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", read, allow)}, who: alice, op: describe, rt: topic, res: "t", want: true},
		{name: "WRITE implies DESCRIBE", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", write, allow)}, who: alice, op: describe, rt: topic, res: "t", want: true},
		{name: "DELETE implies DESCRIBE", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", del, allow)}, who: alice, op: describe, rt: topic, res: "t", want: true},
		{name: "ALTER implies DESCRIBE", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", alter, allow)}, who: alice, op: describe, rt: topic, res: "t", want: true},
		{name: "CREATE does not imply DESCRIBE", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", create, allow)}, who: alice, op: describe, rt: topic, res: "t", want: false},
		{name: "DESCRIBE does not imply READ", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", describe, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "ALTER_CONFIGS implies DESCRIBE_CONFIGS", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", alterConf, allow)}, who: alice, op: descConf, rt: topic, res: "t", want: true},
		{name: "DENY READ does not deny DESCRIBE", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", write, allow),
			bind(topic, "t", lit, "User:alice", "*", read, deny)}, who: alice, op: describe, rt: topic, res: "t", want: true},
		{name: "host exact", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.1.2.3", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "host other", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.1.2.4", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "host CIDR holds", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.1.0.0/16", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "host CIDR does not hold", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.2.0.0/16", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "host CIDR written with a host address", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.1.9.9/16", read, allow)}, who: alice, op: read, rt: topic, res: "t", want: true},
		{name: "narrower CIDR DENY wins", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "10.0.0.0/8", read, allow),
			bind(topic, "t", lit, "User:alice", "10.1.2.0/24", read, deny)}, who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "IPv6 CIDR", acls: []Binding{bind(topic, "t", lit, "User:alice", "2001:db8::/32", read, allow)},
			who: who("User:alice", "2001:db8::7"), op: read, rt: topic, res: "t", want: true},
		{name: "IPv6 CIDR does not hold an IPv4 address", acls: []Binding{bind(topic, "t", lit, "User:alice", "::/0", read, allow)},
			who: alice, op: read, rt: topic, res: "t", want: false},
		{name: "IPv6 long form", acls: []Binding{bind(topic, "t", lit, "User:alice", "0:0:0:0:0:0:0:1", read, allow)},
			who: who("User:alice", "::1"), op: read, rt: topic, res: "t", want: true},
		{name: "cluster", acls: []Binding{bind(cluster, ClusterName, lit, "User:alice", "*", alter, allow)}, who: alice, op: alter, rt: cluster, res: ClusterName, want: true},
		{name: "transactional id prefixed", acls: []Binding{bind(txnID, "app-", pre, "User:alice", "*", write, allow)}, who: alice, op: write, rt: txnID, res: "app-1", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.super, tc.allowNoACL)
			if got := a.Authorize(setOf(tc.acls...), tc.who, tc.op, tc.rt, tc.res); got != tc.want {
				t.Errorf("Authorize(%s %s %s:%s) = %v, want %v", tc.who.Principal, OperationName(tc.op), ResourceTypeName(tc.rt), tc.res, got, tc.want)
			}
			// AuthorizedOps agrees with Authorize.
			bits := a.AuthorizedOps(setOf(tc.acls...), tc.who, tc.rt, tc.res, []kmsg.ACLOperation{tc.op})
			if got := bits&(1<<uint(tc.op)) != 0; got != tc.want {
				t.Errorf("AuthorizedOps bit = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAuthorizedOpsBitfield(t *testing.T) {
	a := New(nil, false)
	s := setOf(bind(topic, "t", lit, "User:alice", "*", write, allow), bind(topic, "t", lit, "User:alice", "*", alterConf, allow))
	got := a.AuthorizedOps(s, who("User:alice", "127.0.0.1"), topic, "t", SupportedOperations(topic))
	want := int32(1<<write | 1<<describe | 1<<alterConf | 1<<descConf)
	if got != want {
		t.Errorf("bits %b, want %b", got, want)
	}
	if got := New(nil, true).AuthorizedOps(nil, who("User:x", "127.0.0.1"), group, "g", SupportedOperations(group)); got != 1<<read|1<<describe|1<<del|1<<descConf|1<<alterConf {
		t.Errorf("no ACLs with allow.everyone: %b", got)
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	alice := who("User:alice", "10.1.2.3")
	for _, tc := range []struct {
		name string
		acls []Binding
		want bool
	}{
		{name: "none", want: false},
		{name: "literal allow", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", write, allow)}, want: true},
		{name: "implied operations do not count", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", read, allow)}, want: false},
		{name: "ALL counts", acls: []Binding{bind(topic, "t", lit, "User:alice", "*", all, allow)}, want: true},
		{name: "literal allow denied literally", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", write, allow), bind(topic, "t", lit, "User:alice", "*", write, deny)}, want: false},
		{name: "prefixed allow dominated by a shorter prefixed deny", acls: []Binding{
			bind(topic, "abc", pre, "User:alice", "*", write, allow), bind(topic, "ab", pre, "User:alice", "*", write, deny)}, want: false},
		{name: "prefixed allow beside a longer prefixed deny", acls: []Binding{
			bind(topic, "ab", pre, "User:alice", "*", write, allow), bind(topic, "abc", pre, "User:alice", "*", write, deny)}, want: true},
		{name: "wildcard deny", acls: []Binding{
			bind(topic, "t", lit, "User:alice", "*", write, allow), bind(topic, "*", lit, "User:*", "*", write, deny)}, want: false},
		{name: "other host", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.9.9.9", write, allow)}, want: false},
		{name: "CIDR host", acls: []Binding{bind(topic, "t", lit, "User:alice", "10.1.0.0/16", write, allow)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(nil, false).AuthorizeByResourceType(setOf(tc.acls...), alice, write, topic); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !New([]string{"User:alice"}, false).AuthorizeByResourceType(nil, alice, write, topic) {
		t.Error("super user refused")
	}
}

func TestValidateCreate(t *testing.T) {
	ok := bind(topic, "t", lit, "User:alice", "*", read, allow)
	for _, tc := range []struct {
		name string
		mod  func(*Binding)
		msg  string
	}{
		{name: "valid", mod: func(*Binding) {}},
		{name: "cluster name", mod: func(b *Binding) { b.ResourceType = cluster }, msg: "The only valid name for the CLUSTER resource is kafka-cluster"},
		{name: "empty name", mod: func(b *Binding) { b.ResourceName = "" }, msg: "Invalid empty resource name"},
		{name: "any type", mod: func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny }, msg: "Invalid resourceType ANY"},
		{name: "type out of range", mod: func(b *Binding) { b.ResourceType = 42 }, msg: "Invalid resourceType UNKNOWN"},
		{name: "match pattern", mod: func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch }, msg: "Invalid patternType MATCH"},
		{name: "any operation", mod: func(b *Binding) { b.Operation = kmsg.ACLOperationAny }, msg: "Invalid operation ANY"},
		{name: "any permission", mod: func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny }, msg: "Invalid permissionType ANY"},
		{name: "principal without colon", mod: func(b *Binding) { b.Principal = "alice" }, msg: "Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)"},
		{name: "empty host", mod: func(b *Binding) { b.Host = "" }, msg: "Host pattern cannot be null or empty"},
		{name: "host name", mod: func(b *Binding) { b.Host = "client.example" }},
		{name: "CIDR", mod: func(b *Binding) { b.Host = "192.168.0.0/24" }},
		{name: "IPv6 CIDR", mod: func(b *Binding) { b.Host = "2001:db8::/32" }},
		{name: "CIDR mask too long", mod: func(b *Binding) { b.Host = "10.0.0.0/33" }, msg: "Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]"},
		{name: "CIDR not parsed", mod: func(b *Binding) { b.Host = "10.0.0/8" }, msg: "Invalid CIDR notation '10.0.0/8': Could not parse [10.0.0/8]"},
		{name: "IPv6 CIDR prefix too long", mod: func(b *Binding) { b.Host = "2001:db8::/129" }, msg: "Invalid CIDR notation '2001:db8::/129': Could not parse [2001:db8::/129] - prefix length must be between 0 and 128"},
		{name: "IPv4 octet too large", mod: func(b *Binding) { b.Host = "300.0.0.0/8" }, msg: "Invalid CIDR notation '300.0.0.0/8': Value [300] not in range [0,255]"},
		{name: "operation out of range", mod: func(b *Binding) { b.Operation = 99 }, msg: "Invalid operation UNKNOWN"},
		{name: "two-phase commit", mod: func(b *Binding) { b.ResourceType, b.Operation = txnID, OpTwoPhaseCommit }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := ok
			tc.mod(&b)
			err := ValidateCreate(b)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if want := fmt.Sprintf("%v: %s", kerr.InvalidRequest, tc.msg); err == nil || err.Error() != want {
				t.Fatalf("err %v, want %s", err, want)
			}
		})
	}
}

func TestFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	litT := bind(topic, "t", lit, "User:alice", "*", read, allow)
	wild := bind(topic, "*", lit, "User:alice", "*", read, allow)
	preT := bind(topic, "t", pre, "User:bob", "10.0.0.1", write, deny)
	anyF := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	for _, tc := range []struct {
		name string
		mod  func(*Filter)
		want [3]bool // litT, wild, preT
	}{
		{name: "any", mod: func(*Filter) {}, want: [3]bool{true, true, true}},
		{name: "name any pattern", mod: func(f *Filter) { f.ResourceName = s("t") }, want: [3]bool{true, false, true}},
		{name: "literal", mod: func(f *Filter) { f.PatternType = lit }, want: [3]bool{true, true, false}},
		{name: "literal name", mod: func(f *Filter) { f.PatternType, f.ResourceName = lit, s("t") }, want: [3]bool{true, false, false}},
		{name: "match", mod: func(f *Filter) { f.PatternType, f.ResourceName = kmsg.ACLResourcePatternTypeMatch, s("tx") }, want: [3]bool{false, true, true}},
		{name: "match exact", mod: func(f *Filter) { f.PatternType, f.ResourceName = kmsg.ACLResourcePatternTypeMatch, s("t") }, want: [3]bool{true, true, true}},
		{name: "principal", mod: func(f *Filter) { f.Principal = s("User:bob") }, want: [3]bool{false, false, true}},
		{name: "host", mod: func(f *Filter) { f.Host = s("*") }, want: [3]bool{true, true, false}},
		{name: "operation", mod: func(f *Filter) { f.Operation = write }, want: [3]bool{false, false, true}},
		{name: "permission", mod: func(f *Filter) { f.Permission = allow }, want: [3]bool{true, true, false}},
		{name: "group type", mod: func(f *Filter) { f.ResourceType = group }, want: [3]bool{false, false, false}},
		{name: "unknown pattern", mod: func(f *Filter) { f.PatternType = 9 }, want: [3]bool{false, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := anyF
			tc.mod(&f)
			for i, b := range []Binding{litT, wild, preT} {
				if got := f.Matches(b); got != tc.want[i] {
					t.Errorf("binding %d: %v, want %v", i, got, tc.want[i])
				}
			}
		})
	}
	if err := ValidateDelete(Filter{ResourceType: 99, PatternType: lit, Operation: read, Permission: allow}); err == nil || err.Error() != kerr.InvalidRequest.Error()+": Unknown patternFilter." {
		t.Errorf("unknown resource type filter: %v", err)
	}
	if err := ValidateDelete(Filter{ResourceType: topic, PatternType: lit, Operation: 77, Permission: allow}); err == nil || err.Error() != kerr.InvalidRequest.Error()+": Unknown entryFilter." {
		t.Errorf("unknown operation filter: %v", err)
	}
}

func TestSetWith(t *testing.T) {
	a := Entry{ID: [16]byte{1}, Binding: bind(topic, "t", lit, "User:alice", "*", read, allow)}
	b := Entry{ID: [16]byte{2}, Binding: bind(topic, "u", pre, "User:alice", "*", read, allow)}
	s := NewSet([]Entry{a, b, {ID: [16]byte{3}, Binding: a.Binding}})
	if s.Len() != 2 {
		t.Fatalf("len %d, want 2 (a repeated binding is held once)", s.Len())
	}
	s2 := s.With(nil, [][16]byte{{1}})
	if s2.Len() != 1 || s2.Contains(a.Binding) || !s.Contains(a.Binding) {
		t.Fatalf("With removed wrongly: %v / %v", s2.Entries(), s.Entries())
	}
	if s3 := s2.With(nil, [][16]byte{{2}}); s3 != nil {
		t.Fatalf("empty set not nil: %v", s3.Entries())
	}
	if _, ok := s.Get([16]byte{2}); !ok {
		t.Fatal("Get lost an entry")
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers(" User:admin ; ;User:ops")
	if err != nil || len(got) != 2 || got[0] != "User:admin" || got[1] != "User:ops" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Fatal("a principal without a colon was accepted")
	}
}

// BenchmarkAuthorizeManyTopics measures one decision among 10,000 ACLs of
// every kind, as a request touching thousands of topics makes thousands.
func BenchmarkAuthorizeManyTopics(b *testing.B) {
	var bs []Binding
	for i := range 5000 {
		bs = append(bs, bind(topic, fmt.Sprintf("topic-%d", i), lit, fmt.Sprintf("User:u%d", i%50), "*", read, allow))
		bs = append(bs, bind(topic, fmt.Sprintf("app%d.", i), pre, fmt.Sprintf("User:u%d", i%50), "*", write, allow))
	}
	s := setOf(bs...)
	a := New(nil, false)
	w := who("User:u7", "127.0.0.1")
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("topic-%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		a.Authorize(s, w, read, topic, names[i%len(names)])
	}
}
