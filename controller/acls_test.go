package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/acl"
)

func topicACL(name string, pt kmsg.ACLResourcePatternType, principal string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pt,
		Principal: principal, Host: "*", Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

// TestACLsCreateDeleteReopen: the active controller creates valid ACLs
// once each (a repeat succeeds without a second copy), refuses invalid
// ones per binding, deletes what filters match, and a reopened controller
// rebuilds the same ACLs from its snapshot and the log after it.
func TestACLsCreateDeleteReopen(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	c, _ := openTest(t, cfg)
	ctx := testCtx(t)
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	a := topicACL("orders", lit, "User:alice", kmsg.ACLOperationRead)
	b := topicACL("orders.", pre, "User:bob", kmsg.ACLOperationWrite)
	bad := topicACL("", lit, "User:alice", kmsg.ACLOperationRead)

	errs := c.CreateACLs(ctx, []acl.Binding{a, bad, a, b})
	if errs[0] != nil || errs[2] != nil || errs[3] != nil {
		t.Fatalf("errors %v", errs)
	}
	wantKafkaErr(t, errs[1], kerr.InvalidRequest)
	if got := c.Image().ACLs.Len(); got != 2 {
		t.Fatalf("%d ACLs, want 2", got)
	}
	// Again: already there, nothing written.
	index := c.Image().Index
	if errs := c.CreateACLs(ctx, []acl.Binding{a}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if c.Image().Index != index {
		t.Fatal("an existing ACL was written again")
	}
	if err := c.node.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	cc := topicACL("payments", lit, "User:carol", kmsg.ACLOperationDescribe)
	if errs := c.CreateACLs(ctx, []acl.Binding{cc}); errs[0] != nil {
		t.Fatal(errs[0])
	}

	// Delete bob's by a MATCH filter on a name the prefix covers, and
	// refuse an UNKNOWN filter.
	name := "orders.eu"
	res := c.DeleteACLs(ctx, []acl.Filter{
		{ResourceType: kmsg.ACLResourceTypeAny, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch,
			Operation: kmsg.ACLOperationWrite, Permission: kmsg.ACLPermissionTypeAny},
		{ResourceType: kmsg.ACLResourceTypeTopic, PatternType: 42, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny},
	})
	if res[0].Err != nil || !slices.Equal(res[0].Deleted, []acl.Binding{b}) {
		t.Fatalf("delete result %+v", res[0])
	}
	wantKafkaErr(t, res[1].Err, kerr.InvalidRequest)
	want := []acl.Binding{a, cc}
	got := func(s *ACLSet) []acl.Binding {
		var out []acl.Binding
		for _, e := range s.Entries() {
			out = append(out, e.Binding)
		}
		return out
	}
	if g := got(c.Image().ACLs); !slices.Equal(g, want) {
		t.Fatalf("ACLs %v, want %v", g, want)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, _ := openTest(t, cfg)
	if g := got(c2.Image().ACLs); !slices.Equal(g, want) {
		t.Fatalf("after reopen %v, want %v", g, want)
	}
	// Deleting everything leaves no set.
	res = c2.DeleteACLs(ctx, []acl.Filter{{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
		Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}})
	if res[0].Err != nil || len(res[0].Deleted) != 2 || c2.Image().ACLs != nil {
		t.Fatalf("delete all: %+v, left %v", res[0], c2.Image().ACLs.Entries())
	}
	// The last command in the log is the one the image applied last;
	// the raft entries after it (the new leader's no-op and barrier) do
	// not count.
	if got, want := c2.LastCommandIndex(), c2.Image().Index; got != want || c2.node.raft.LastIndex() < got {
		t.Fatalf("LastCommandIndex %d, image index %d, log end %d", got, want, c2.node.raft.LastIndex())
	}
}
