package broker_test

// The ACL admin APIs (CreateAcls, DescribeAcls, DeleteAcls) and the
// authorizer as a client sees them (issue 19). The clients here connect
// over PLAINTEXT, so their principal is User:ANONYMOUS and their host
// 127.0.0.1.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// describedACLs lists every ACL node answers, as "TYPE:PATTERN:name principal host OP PERM".
func describedACLs(t *testing.T, adm *kadm.Client) ([]string, error) {
	t.Helper()
	res, err := adm.DescribeACLs(context.Background(), kadm.NewACLs().AnyResource().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range res {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, d := range r.Described {
			out = append(out, d.Type.String()+":"+d.Pattern.String()+":"+d.Name+" "+d.Principal+" "+d.Host+" "+d.Operation.String()+" "+d.Permission.String())
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out, nil
}

// TestACLsSecurityDisabled: without authorizer.class.name the ACL APIs
// answer SECURITY_DISABLED, as Kafka's AclApis does with no authorizer.
func TestACLsSecurityDisabled(t *testing.T) {
	n := sluicetest.Start(t)
	adm := n.Admin()
	ctx := context.Background()
	cr, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(cr) != 1 || !errors.Is(cr[0].Err, kerr.SecurityDisabled) || cr[0].ErrMessage != "No Authorizer is configured." {
		t.Fatalf("create: %+v", cr)
	}
	// Even a creation no ACL could be (operation ANY): the missing
	// authorizer is answered first, as Kafka's AclApis checks it first.
	anyOp := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.Principal, c.Host = kmsg.ACLResourceTypeTopic, "t", "User:a", "*"
	c.Operation, c.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAllow
	anyOp.Creations = append(anyOp.Creations, c)
	if cresp, err := anyOp.RequestWith(ctx, n.Client()); err != nil || cresp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("create ANY without an authorizer: %v %+v", err, cresp)
	}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.SecurityDisabled.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != "No Authorizer is configured on the broker" {
		t.Fatalf("describe: %d %v", resp.ErrorCode, resp.ErrorMessage)
	}
	dr, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().AllowHosts())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dr {
		if !errors.Is(r.Err, kerr.SecurityDisabled) {
			t.Fatalf("delete: %+v", r)
		}
	}
}

// TestACLsAdmin: as a super user, create literal and prefixed ACLs (a
// repeat succeeds once more, invalid bindings get Kafka's
// INVALID_REQUEST messages), describe them by filters, MATCH included,
// delete some, and find the rest after a restart.
func TestACLsAdmin(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "super.users=User:ANONYMOUS")
	adm := n.Admin()
	ctx := context.Background()

	cr, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Groups("g").Allow("User:alice").AllowHosts("*", "10.0.0.0/8").
		Operations(kadm.OpRead, kadm.OpDescribe))
	if err != nil {
		t.Fatal(err)
	}
	if len(cr) != 8 {
		t.Fatalf("%d results, want 8", len(cr))
	}
	for _, r := range cr {
		if r.Err != nil {
			t.Fatalf("create %+v", r)
		}
	}
	if cr, err = adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders.").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:bob").DenyHosts("*").Operations(kadm.OpWrite)); err != nil || cr[0].Err != nil {
		t.Fatalf("prefixed: %v %+v", err, cr)
	}
	// Again: no error, no second copy.
	if cr, err = adm.CreateACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts("*").Operations(kadm.OpRead)); err != nil || cr[0].Err != nil {
		t.Fatalf("repeat: %v %+v", err, cr)
	}

	// Invalid bindings, each refused alone, with Kafka's message.
	create := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt        kmsg.ACLResourceType
		name      string
		principal string
		host      string
	}{
		{kmsg.ACLResourceTypeCluster, "other", "User:a", "*"},
		{kmsg.ACLResourceTypeTopic, "t", "alice", "*"},
		{kmsg.ACLResourceTypeTopic, "t", "User:a", "10.0.0.0/33"},
		{kmsg.ACLResourceTypeTopic, "t", "User:a", "10.0.0.1"},
	} {
		cc := kmsg.NewCreateACLsRequestCreation()
		cc.ResourceType, cc.ResourceName, cc.Principal, cc.Host = c.rt, c.name, c.principal, c.host
		cc.Operation, cc.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		create.Creations = append(create.Creations, cc)
	}
	cresp, err := create.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	wantMsgs := []string{
		"The only valid name for the CLUSTER resource is kafka-cluster",
		"Could not parse principal from `alice` (no colon is present separating the principal type from the principal name)",
		"Invalid CIDR notation '10.0.0.0/33': Value [33] not in range [0,32]",
		"",
	}
	for i, r := range cresp.Results {
		var msg string
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		wantCode := kerr.InvalidRequest.Code
		if wantMsgs[i] == "" {
			wantCode = 0
		}
		if r.ErrorCode != wantCode || msg != wantMsgs[i] || r.ErrorMessage == nil {
			t.Errorf("creation %d: %d %v, want %d %q", i, r.ErrorCode, r.ErrorMessage, wantCode, wantMsgs[i])
		}
	}
	// A creation of operation ANY cannot be an ACL at all: Kafka fails
	// the whole request, every creation UNKNOWN_SERVER_ERROR.
	create.Creations[0].Operation = kmsg.ACLOperationAny
	if cresp, err = create.RequestWith(ctx, n.Client()); err != nil {
		t.Fatal(err)
	}
	for i, r := range cresp.Results {
		if r.ErrorCode != kerr.UnknownServerError.Code || r.ErrorMessage != nil {
			t.Errorf("with an ANY creation, creation %d: %d %v", i, r.ErrorCode, r.ErrorMessage)
		}
	}

	all := []string{
		"GROUP:LITERAL:g User:alice * DESCRIBE ALLOW", "GROUP:LITERAL:g User:alice * READ ALLOW",
		"GROUP:LITERAL:g User:alice 10.0.0.0/8 DESCRIBE ALLOW", "GROUP:LITERAL:g User:alice 10.0.0.0/8 READ ALLOW",
		"TOPIC:LITERAL:orders User:alice * DESCRIBE ALLOW", "TOPIC:LITERAL:orders User:alice * READ ALLOW",
		"TOPIC:LITERAL:orders User:alice 10.0.0.0/8 DESCRIBE ALLOW", "TOPIC:LITERAL:orders User:alice 10.0.0.0/8 READ ALLOW",
		"TOPIC:LITERAL:t User:a 10.0.0.1 READ ALLOW",
		"TOPIC:PREFIXED:orders. User:bob * WRITE DENY",
	}
	got, err := describedACLs(t, adm)
	if err != nil || !slices.Equal(got, all) {
		t.Fatalf("described %v %q\nwant %q", err, got, all)
	}

	// MATCH: what applies to topic orders.eu is the prefixed DENY.
	match, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("orders.eu").ResourcePatternType(kadm.ACLPatternMatch).
		Operations(kadm.OpAny).Allow().Deny().AllowHosts().DenyHosts())
	if err != nil {
		t.Fatal(err)
	}
	if len(match) != 1 || len(match[0].Described) != 1 || match[0].Described[0].Principal != "User:bob" {
		t.Fatalf("MATCH orders.eu: %+v", match)
	}

	// Delete alice's READs on every resource.
	dr, err := adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Allow("User:alice").AllowHosts().Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(dr) != 1 || dr[0].Err != nil || len(dr[0].Deleted) != 4 {
		t.Fatalf("delete %+v", dr)
	}
	rest := []string{
		"GROUP:LITERAL:g User:alice * DESCRIBE ALLOW", "GROUP:LITERAL:g User:alice 10.0.0.0/8 DESCRIBE ALLOW",
		"TOPIC:LITERAL:orders User:alice * DESCRIBE ALLOW", "TOPIC:LITERAL:orders User:alice 10.0.0.0/8 DESCRIBE ALLOW",
		"TOPIC:LITERAL:t User:a 10.0.0.1 READ ALLOW",
		"TOPIC:PREFIXED:orders. User:bob * WRITE DENY",
	}
	if got, err := describedACLs(t, adm); err != nil || !slices.Equal(got, rest) {
		t.Fatalf("after delete %v %q", err, got)
	}

	n.Restart()
	if got, err := describedACLs(t, n.Admin()); err != nil || !slices.Equal(got, rest) {
		t.Fatalf("after restart %v %q", err, got)
	}
}

// TestACLsUnknownElementClosesConnection: a filter with an UNKNOWN (0)
// code is refused while Kafka parses the request, which closes the
// connection.
func TestACLsUnknownElementClosesConnection(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "super.users=User:ANONYMOUS")
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationUnknown, kmsg.ACLPermissionTypeAny
	cl := n.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	brokers := cl.DiscoveredBrokers()
	if len(brokers) == 0 {
		if err := cl.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		brokers = cl.DiscoveredBrokers()
	}
	if _, err := brokers[0].RetriableRequest(ctx, req); err == nil {
		t.Fatal("an UNKNOWN operation was answered")
	}
}

// TestACLsEnforced: with an authorizer and allow.everyone.if.no.acl.found,
// User:ANONYMOUS may do what no ACL speaks of; once an ACL names the
// cluster, only what the ACLs allow: CreateAcls and DescribeAcls need
// ALTER and DESCRIBE on it, DENY wins over ALLOW, a host outside an ACL's
// CIDR range does not match, and the KIP-430 authorized operations show
// what the principal may do.
func TestACLsEnforced(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	adm := n.Admin()
	ctx := context.Background()
	// No ACL names the cluster yet: allowed by allow.everyone.
	createACLs(t, adm, kadm.NewACLs().Topics("ops-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:ANONYMOUS").AllowHosts("127.0.0.0/8").Operations(kadm.OpWrite))
	createACLs(t, adm, kadm.NewACLs().Topics("ops-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:*").AllowHosts("10.0.0.0/8").Operations(kadm.OpRead))
	createACLs(t, adm, kadm.NewACLs().Topics("ops-secret").Deny("User:ANONYMOUS").DenyHosts("*").Operations(kadm.OpWrite))
	// ALTER on the cluster for ANONYMOUS from loopback, DESCRIBE from
	// another network only: ACLs on the cluster turn off allow.everyone
	// for it.
	createACLs(t, adm, kadm.NewACLs().Clusters().Allow("User:ANONYMOUS").AllowHosts("127.0.0.1").Operations(kadm.OpAlter, kadm.OpCreate))

	createTopic(t, n, "ops-a", 1, nil)
	createTopic(t, n, "ops-secret", 1, nil)
	createTopic(t, n, "free", 1, nil)

	// DescribeAcls: ALTER implies DESCRIBE, so it is allowed.
	if _, err := describedACLs(t, adm); err != nil {
		t.Fatalf("describe with ALTER on the cluster: %v", err)
	}
	clusterOps := func() int32 {
		t.Helper()
		dc := kmsg.NewPtrDescribeClusterRequest()
		dc.IncludeClusterAuthorizedOperations = true
		resp, err := dc.RequestWith(ctx, n.Client())
		if err != nil {
			t.Fatal(err)
		}
		return resp.ClusterAuthorizedOperations
	}
	if got, want := clusterOps(), int32(1<<kmsg.ACLOperationAlter|1<<kmsg.ACLOperationCreate|1<<kmsg.ACLOperationDescribe); got != want {
		t.Errorf("cluster operations %v, want ALTER, CREATE and DESCRIBE", kadm.DecodeACLOperations(got))
	}
	// Take ALTER away: Create and Describe are refused.
	dr, err := adm.DeleteACLs(ctx, kadm.NewACLs().Clusters().Allow("User:ANONYMOUS").AllowHosts("127.0.0.1").Operations(kadm.OpAlter))
	if err != nil || dr[0].Err != nil || len(dr[0].Deleted) != 1 {
		t.Fatalf("delete ALTER: %v %+v", err, dr)
	}
	if _, err := describedACLs(t, adm); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe without DESCRIBE on the cluster: %v", err)
	}
	cr, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("x").Allow("User:ANONYMOUS").AllowHosts("*").Operations(kadm.OpRead))
	if err != nil || !errors.Is(cr[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("create without ALTER on the cluster: %v %+v", err, cr)
	}
	dr, err = adm.DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().AllowHosts())
	if err != nil || !errors.Is(dr[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("delete without ALTER on the cluster: %v %+v", err, dr)
	}

	// KIP-430: what ANONYMOUS at 127.0.0.1 may do.
	req := metadataRequestFor("ops-a", "ops-secret", "free")
	req.IncludeTopicAuthorizedOperations = true
	resp, err := req.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	// CREATE is left on the cluster, but without DESCRIBE Kafka answers
	// no cluster operations at all.
	if got := clusterOps(); got != 0 {
		t.Errorf("cluster operations without DESCRIBE %v, want none", kadm.DecodeACLOperations(got))
	}
	want := map[string][]kadm.ACLOperation{
		// WRITE (and DESCRIBE it implies) from the loopback ACL; the
		// 10.0.0.0/8 READ does not match 127.0.0.1; no other
		// operation is allowed on a topic ACLs name.
		"ops-a": {kadm.OpWrite, kadm.OpDescribe},
		// The literal DENY WRITE wins; DESCRIBE stays (a DENY denies
		// only its own operation).
		"ops-secret": {kadm.OpDescribe},
	}
	for _, mt := range resp.Topics {
		if mt.Topic == nil {
			continue
		}
		got := kadm.DecodeACLOperations(mt.AuthorizedOperations)
		slices.Sort(got)
		if *mt.Topic == "free" {
			// No ACL applies: allow.everyone allows every operation.
			if mt.AuthorizedOperations != 1<<3|1<<4|1<<5|1<<6|1<<7|1<<8|1<<10|1<<11 {
				t.Errorf("free: %v", got)
			}
			continue
		}
		w := want[*mt.Topic]
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: operations %v, want %v", *mt.Topic, got, w)
		}
	}
}

// TestACLsCluster: ACLs created through one broker are described by every
// other and enforced there (KIP-430 operations), survive a restart of a
// broker, and are deleted through a third.
func TestACLsCluster(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, withAuthorizer, "super.users=User:admin", "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := func(id int) *kadm.Client { return c.Node(id).Admin() }
	rs, err := adm(1).CreateACLs(ctx, kadm.NewACLs().Topics("c-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:ANONYMOUS").DenyHosts("*").Operations(kadm.OpWrite))
	if err != nil || rs[0].Err != nil {
		t.Fatalf("create through node 1: %v %+v", err, rs)
	}
	want := []string{"TOPIC:PREFIXED:c- User:ANONYMOUS * WRITE DENY"}
	for id := 1; id <= 3; id++ {
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			got, err := describedACLs(t, adm(id))
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return errors.New("node " + string(rune('0'+id)) + " describes " + strings.Join(got, ", "))
			}
			return nil
		})
	}
	// Enforced on node 3. A topic the prefixed DENY applies to: no
	// operation at all, since an ACL applies to it and none allows
	// (allow.everyone.if.no.acl.found covers only resources no ACL
	// applies to); a topic no ACL names: every operation.
	topicOps := func(id int, topic string) (int16, int32) {
		t.Helper()
		req := metadataRequestFor(topic)
		req.IncludeTopicAuthorizedOperations = true
		cl := c.Node(id).Client()
		defer cl.Close()
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode, resp.Topics[0].AuthorizedOperations
	}
	for _, topic := range []string{"c-t", "other-t"} {
		if _, err := adm(1).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// c-t, with no operation allowed, not even DESCRIBE, is hidden from
	// the principal: TOPIC_AUTHORIZATION_FAILED, as Kafka answers it.
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if code, _ := topicOps(3, "c-t"); code != kerr.TopicAuthorizationFailed.Code {
			return fmt.Errorf("node 3: c-t error %d, want TOPIC_AUTHORIZATION_FAILED", code)
		}
		return nil
	})
	for topic, want := range map[string]int32{"other-t": 1<<3 | 1<<4 | 1<<5 | 1<<6 | 1<<7 | 1<<8 | 1<<10 | 1<<11} {
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			if code, ops := topicOps(3, topic); code != 0 || ops != want {
				return fmt.Errorf("node 3: %s error %d, operations %v, want %v", topic, code, kadm.DecodeACLOperations(ops), kadm.DecodeACLOperations(want))
			}
			return nil
		})
	}

	// A restarted broker answers from the whole metadata log, not from
	// the image it starts with: its authorizer waits until the log it had
	// is applied, so the first answer already has the ACL.
	c.Restart(2)
	if got, err := describedACLs(t, adm(2)); err != nil || !slices.Equal(got, want) {
		t.Fatalf("restarted node 2 describes %v %q, want %q", err, got, want)
	}

	dr, err := adm(3).DeleteACLs(ctx, kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Deny().DenyHosts())
	if err != nil || dr[0].Err != nil || len(dr[0].Deleted) != 1 {
		t.Fatalf("delete through node 3: %v %+v", err, dr)
	}
	// The deleting broker answers once its own image has the change.
	if got, err := describedACLs(t, adm(3)); err != nil || len(got) != 0 {
		t.Fatalf("node 3 after its delete: %v %v", err, got)
	}
}
