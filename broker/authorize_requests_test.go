package broker_test

// What each handler authorizes, as a client sees it (issue 19,
// authorize_requests.go). The clients connect over PLAINTEXT, so their
// principal is User:ANONYMOUS — and so is the brokers' own, over PLAINTEXT,
// for replication, WriteTxnMarkers and the controller channel. One
// principal plays both parts through allow.everyone.if.no.acl.found=true:
// a resource no ACL names is open to it, one an ACL names is open only as
// far as the ACLs say; ACLs naming User:admin, who never connects, close a
// resource to User:ANONYMOUS.

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
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

const (
	anonymous = "User:ANONYMOUS"
	// withAuthorizer turns the built-in authorizer on.
	withAuthorizer = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
)

// createACLs creates every ACL b describes, failing the test on any error.
func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	rs, err := adm.CreateACLs(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("create ACL %+v: %v", r, r.Err)
		}
	}
}

// metadataRequestFor is a Metadata request naming topics.
func metadataRequestFor(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// createACLsAtOnce creates, in one CreateAcls request, an ALLOW ACL for
// every (principal, operation) of each entry, on the literal resource:
// the way to close the cluster to User:ANONYMOUS while giving it some
// operations there, since each later CreateAcls needs ALTER on it.
func createACLsAtOnce(t *testing.T, cl *kgo.Client, entries ...aclEntry) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, e := range entries {
		for _, op := range e.ops {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = e.typ, e.name, kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host = e.principal, "*"
			c.Operation, c.PermissionType = op, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, c)
		}
	}
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("create ACLs: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

type aclEntry struct {
	typ       kmsg.ACLResourceType
	name      string
	principal string
	ops       []kmsg.ACLOperation
}

// TestProduceNeedsWrite: a producer allowed to DESCRIBE a topic but not to
// WRITE it gets TOPIC_AUTHORIZATION_FAILED for its records and nothing is
// appended; once WRITE is allowed the same producer's records are written.
func TestProduceNeedsWrite(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "w", 1, nil)
	createACLs(t, adm, kadm.NewACLs().Topics("w").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))

	cl := n.Client(kgo.RecordRetries(3), kgo.ProduceRequestTimeout(5*time.Second))
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	err := cl.ProduceSync(pctx, &kgo.Record{Topic: "w", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without WRITE: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	offsets, err := adm.ListEndOffsets(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offsets.Lookup("w", 0); o.Err != nil || o.Offset != 0 {
		t.Fatalf("end offset after a refused produce: %+v", o)
	}

	createACLs(t, adm, kadm.NewACLs().Topics("w").Allow(anonymous).AllowHosts("*").Operations(kadm.OpWrite))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "w", Value: []byte("written")}).FirstErr(); err != nil {
		t.Fatalf("produce with WRITE: %v", err)
	}
}

// TestTransactionalProduceNeedsTransactionalID: a transactional producer
// without WRITE on its transactional id is refused by InitProducerId with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and writes nothing.
func TestTransactionalProduceNeedsTransactionalID(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "tx", 1, nil)
	createACLs(t, adm, kadm.NewACLs().TransactionalIDs("tx-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:admin").AllowHosts("*").Operations(kadm.OpWrite))
	cl := n.Client(kgo.TransactionalID("tx-1"), kgo.RecordRetries(3))
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	// kgo asks InitProducerId as the transaction begins, or with the
	// first record.
	err := cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(tctx, &kgo.Record{Topic: "tx", Value: []byte("v")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("transactional produce without WRITE on the id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	// FindCoordinator alone: DESCRIBE on the id is refused too.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{"tx-1", "other"}
	resp, err := req.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, c := range resp.Coordinators {
		codes[c.Key] = c.ErrorCode
	}
	if codes["tx-1"] != kerr.TransactionalIDAuthorizationFailed.Code || codes["other"] != 0 {
		t.Fatalf("FindCoordinator for transactional ids: %v", codes)
	}
}

// TestConsumerNeedsGroupRead: a consumer that may DESCRIBE its group (so
// FindCoordinator answers) but not READ it gets GROUP_AUTHORIZATION_FAILED
// from JoinGroup and consumes nothing; an OffsetCommit to the group is
// refused the same way; with READ the same consumer reads the records.
func TestConsumerNeedsGroupRead(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "in", 1, nil)
	if err := n.Client().ProduceSync(ctx, &kgo.Record{Topic: "in", Value: []byte("r")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Groups("g").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))

	cl := n.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var groupErr error
	for groupErr == nil && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		if fs.NumRecords() > 0 {
			t.Fatal("consumed without READ on the group")
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.GroupAuthorizationFailed) {
				groupErr = err
			}
		})
	}
	if groupErr == nil {
		t.Fatal("no GROUP_AUTHORIZATION_FAILED polling without READ on the group")
	}
	cl.Close()

	offsets := kadm.Offsets{}
	offsets.Add(kadm.Offset{Topic: "in", Partition: 0, At: 1, LeaderEpoch: -1})
	committed, err := adm.CommitOffsets(ctx, "g", offsets)
	if err == nil {
		err = committed.Error()
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("offset commit without READ on the group: %v", err)
	}

	createACLs(t, adm, kadm.NewACLs().Groups("g").Allow(anonymous).AllowHosts("*").Operations(kadm.OpRead))
	cl = n.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pctx2, cancel2 := context.WithTimeout(ctx, 20*time.Second)
	defer cancel2()
	for {
		fs := cl.PollFetches(pctx2)
		if pctx2.Err() != nil {
			t.Fatalf("nothing consumed with READ on the group: %v", fs.Errors())
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
}

// TestMetadataHidesUndescribableTopics: a topic the principal may not
// DESCRIBE is left out of an all-topics Metadata answer, and asked for by
// name it is TOPIC_AUTHORIZATION_FAILED whether or not it exists, so its
// existence is not told; ListOffsets and DescribeConfigs refuse it too.
func TestMetadataHidesUndescribableTopics(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true", "auto.create.topics.enable=false")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "open", 1, nil)
	createTopic(t, n, "hid-den", 1, nil)
	createACLs(t, adm, kadm.NewACLs().Topics("hid-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:admin").AllowHosts("*").Operations(kadm.OpAll))

	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !listed.Has("open") || listed.Has("hid-den") {
		t.Fatalf("all-topics metadata lists %v, want open without hid-den", listed.Names())
	}

	req := metadataRequestFor("open", "hid-den", "hid-missing", "missing")
	resp, err := req.RequestWith(ctx, n.Client())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, mt := range resp.Topics {
		got[*mt.Topic] = mt.ErrorCode
		if mt.ErrorCode == kerr.TopicAuthorizationFailed.Code && (len(mt.Partitions) > 0 || mt.TopicID != [16]byte{}) {
			t.Errorf("%s refused, yet answered with its partitions or id", *mt.Topic)
		}
	}
	want := map[string]int16{
		"open":        0,
		"hid-den":     kerr.TopicAuthorizationFailed.Code,
		"hid-missing": kerr.TopicAuthorizationFailed.Code, // not UNKNOWN_TOPIC_OR_PARTITION
		"missing":     kerr.UnknownTopicOrPartition.Code,
	}
	for name, code := range want {
		if got[name] != code {
			t.Errorf("metadata for %s: error %d, want %d", name, got[name], code)
		}
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "hid-den"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	kresp, err := n.Client().SeedBrokers()[0].Request(ctx, lo) // kgo's own routing would stop at Metadata
	if err != nil {
		t.Fatal(err)
	}
	if code := kresp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("ListOffsets of hid-den: error %d", code)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, "hid-den")
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("DescribeConfigs of hid-den: %v", err)
	}
}

// TestAutoCreateNeedsCreate: Metadata auto-creates a missing topic only
// for a principal with CREATE on the cluster or on the topic; without it
// the topic is TOPIC_AUTHORIZATION_FAILED and not created.
func TestAutoCreateNeedsCreate(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true", "auto.create.topics.enable=true")
	ctx := context.Background()
	adm := n.Admin()
	// An ACL on the cluster closes it: ANONYMOUS keeps ALTER there, to
	// create ACLs, not CREATE.
	createACLs(t, adm, kadm.NewACLs().Clusters().Allow(anonymous).AllowHosts("*").Operations(kadm.OpAlter))
	// ANONYMOUS may DESCRIBE auto- topics, not CREATE them.
	createACLs(t, adm, kadm.NewACLs().Topics("auto-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))

	ask := func(topic string) int16 {
		t.Helper()
		req := metadataRequestFor(topic)
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(ctx, n.Client())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode
	}
	if code := ask("auto-x"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("auto-creation without CREATE: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	if code := ask("auto-x"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("asked again: error %d, want TOPIC_AUTHORIZATION_FAILED (the topic must not exist)", code)
	}
	listed, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listed.Has("auto-x") {
		t.Fatal("auto-x was created without CREATE")
	}

	createACLs(t, adm, kadm.NewACLs().Topics("auto-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow(anonymous).AllowHosts("*").Operations(kadm.OpCreate))
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		if code := ask("auto-x"); code != 0 {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
}

// TestForwardedAdminAuthorizedOnClientBroker: in a three-node cluster a
// CreateTopics sent to a broker that is not the active controller is
// authorized there, with the client's principal, before it is forwarded:
// refused with TOPIC_AUTHORIZATION_FAILED and not created without CREATE;
// with CREATE it is forwarded and created. The brokers' own principal
// (User:ANONYMOUS over PLAINTEXT) has CLUSTER_ACTION from an ACL, as
// Kafka requires of it (usually through super.users), so replication,
// heartbeats and forwarding keep working while ACLs close the cluster to
// everything else: an acks=all produce to three replicas succeeds and the
// ISR stays whole. Admin operations on the cluster (ElectLeaders) are
// refused CLUSTER_AUTHORIZATION_FAILED on the broker the client talks to.
func TestForwardedAdminAuthorizedOnClientBroker(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	c.WaitForBrokers(3)
	adm := c.Admin()
	createACLs(t, adm, kadm.NewACLs().Topics("fwd-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:admin").AllowHosts("*").Operations(kadm.OpCreate))
	createACLs(t, adm, kadm.NewACLs().Topics("fwd-ok").Allow(anonymous).AllowHosts("*").
		Operations(kadm.OpCreate, kadm.OpWrite))
	// Brokers keep CLUSTER_ACTION (and the producers IDEMPOTENT_WRITE,
	// DESCRIBE for the ACLs); the cluster's CREATE and ALTER are
	// User:admin's alone. In one request: the first ACL on the cluster
	// takes ALTER, which CreateAcls needs, from User:ANONYMOUS.
	cluster := "kafka-cluster"
	createACLsAtOnce(t, c.Client(),
		aclEntry{kmsg.ACLResourceTypeCluster, cluster, anonymous, []kmsg.ACLOperation{
			kmsg.ACLOperationClusterAction, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationDescribe}},
		aclEntry{kmsg.ACLResourceTypeCluster, cluster, "User:admin", []kmsg.ACLOperation{
			kmsg.ACLOperationCreate, kmsg.ACLOperationAlter}})
	const aclCount = 8

	ctrl := c.Controller()
	other := 1
	if other == ctrl {
		other = 2
	}
	// Every broker must have the ACLs before the request is sent to one.
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		for id := 1; id <= 3; id++ {
			got, err := c.Node(id).Admin().DescribeACLs(ctx, kadm.NewACLs().AnyResource().
				ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny).Allow().AllowHosts())
			if err != nil {
				return err
			}
			n := 0
			for _, r := range got {
				if r.Err != nil {
					return r.Err
				}
				n += len(r.Described)
			}
			if n != aclCount {
				return errors.New("ACLs not yet everywhere")
			}
		}
		return nil
	})
	nodeAdm := c.Node(other).Admin()

	res, err := nodeAdm.CreateTopic(ctx, 1, 3, nil, "fwd-no")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("CreateTopics without CREATE through node %d (controller %d): %v", other, ctrl, err)
	}
	res, err = nodeAdm.CreateTopic(ctx, 1, 3, nil, "fwd-ok")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatalf("CreateTopics with CREATE through node %d (controller %d): %v", other, ctrl, err)
	}
	for id := 1; id <= 3; id++ {
		sluicetest.WaitFor(t, 10*time.Second, func() error {
			listed, err := c.Node(id).Admin().ListTopics(ctx)
			if err != nil {
				return err
			}
			if listed.Has("fwd-no") || !listed.Has("fwd-ok") {
				return fmt.Errorf("node %d lists %v: fwd-no must not exist, fwd-ok must", id, listed.Names())
			}
			return nil
		})
	}

	// Replication under the authorizer: followers fetch with
	// CLUSTER_ACTION, the leader answers acks=all once all three have
	// the records.
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()))
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "fwd-ok", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
	}
	c.WaitForISR("fwd-ok", 0, 3)

	// ElectLeaders needs ALTER on the cluster.
	er, err := c.Node(other).Admin().ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"fwd-ok": {0: {}}})
	if err == nil {
		for _, ps := range er {
			for _, p := range ps {
				err = p.Err
			}
		}
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("ElectLeaders without ALTER on the cluster: %v", err)
	}
}

// TestListGroupsAndDescribeFiltered: without DESCRIBE on the cluster,
// ListGroups shows only the groups the principal may DESCRIBE, and
// DescribeGroups refuses the others with GROUP_AUTHORIZATION_FAILED.
func TestListGroupsAndDescribeFiltered(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "lg", 1, nil)
	for _, g := range []string{"seen", "unseen"} {
		offsets := kadm.Offsets{}
		offsets.Add(kadm.Offset{Topic: "lg", Partition: 0, At: 0, LeaderEpoch: -1})
		if res, err := adm.CommitOffsets(ctx, g, offsets); err != nil || res.Error() != nil {
			t.Fatalf("commit for %s: %v %v", g, err, res.Error())
		}
	}
	createACLs(t, adm, kadm.NewACLs().Groups("unseen").Allow("User:admin").AllowHosts("*").Operations(kadm.OpAll))
	// Last, as it closes the cluster (ALTER too) to User:ANONYMOUS.
	createACLs(t, adm, kadm.NewACLs().Clusters().Allow("User:admin").AllowHosts("*").Operations(kadm.OpDescribe))

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := listed.Groups()
	slices.Sort(names)
	if !slices.Equal(names, []string{"seen"}) {
		t.Fatalf("ListGroups without DESCRIBE on the cluster: %v, want [seen]", names)
	}
	// DescribeGroups to the node, the coordinator of both (FindCoordinator
	// would refuse "unseen" already).
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{"seen", "unseen"}
	kresp, err := n.Client().SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.DescribeGroupsResponse)
	codes := map[string]int16{}
	for _, g := range resp.Groups {
		codes[g.Group] = g.ErrorCode
	}
	if codes["seen"] != 0 || codes["unseen"] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("DescribeGroups: %v, want seen 0 and unseen GROUP_AUTHORIZATION_FAILED", codes)
	}
}

// TestFetchNeedsRead: a consumer that may DESCRIBE a topic but not READ it
// gets TOPIC_AUTHORIZATION_FAILED from Fetch and no records; a Fetch that
// claims a replica id is a follower's and needs CLUSTER_ACTION on the
// cluster, or every partition is TOPIC_AUTHORIZATION_FAILED.
func TestFetchNeedsRead(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	createTopic(t, n, "r", 1, nil)
	if err := n.Client().ProduceSync(ctx, &kgo.Record{Topic: "r", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	createACLs(t, adm, kadm.NewACLs().Topics("r").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))
	// The cluster's ACL keeps ALTER (for the ACLs) and leaves out
	// CLUSTER_ACTION; a node alone replicates nothing.
	createACLs(t, adm, kadm.NewACLs().Clusters().Allow(anonymous).AllowHosts("*").Operations(kadm.OpAlter))

	cl := n.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"r": {0: kgo.NewOffset().AtStart()}}))
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var fetchErr error
	for fetchErr == nil && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
		if fs.NumRecords() > 0 {
			t.Fatal("records fetched without READ")
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if errors.Is(err, kerr.TopicAuthorizationFailed) {
				fetchErr = err
			}
		})
	}
	if fetchErr == nil {
		t.Fatal("no TOPIC_AUTHORIZATION_FAILED fetching without READ")
	}

	createACLs(t, adm, kadm.NewACLs().Topics("r").Allow(anonymous).AllowHosts("*").Operations(kadm.OpRead))
	details, err := adm.ListTopics(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	follower := kmsg.NewPtrFetchRequest()
	follower.ReplicaID, follower.ReplicaState.ID = 7, 7 // whichever version kgo sends
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "r", details["r"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	follower.Topics = append(follower.Topics, ft)
	follower.MaxBytes = 1 << 20
	kresp, err := n.Client().SeedBrokers()[0].Request(ctx, follower)
	if err != nil {
		t.Fatal(err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch without CLUSTER_ACTION: %+v", resp.Topics)
	}
	// READ on the topic is a consumer's: the same client now consumes.
	cl2 := n.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"r": {0: kgo.NewOffset().AtStart()}}))
	pctx2, cancel2 := context.WithTimeout(ctx, 15*time.Second)
	defer cancel2()
	for {
		fs := cl2.PollFetches(pctx2)
		if pctx2.Err() != nil {
			t.Fatalf("nothing fetched with READ: %v", fs.Errors())
		}
		if fs.NumRecords() > 0 {
			break
		}
	}
}

// TestAdminAPIsAuthorized: the admin APIs check the topic or the cluster
// as Kafka does. DeleteTopics refuses a topic the principal may not delete
// with TOPIC_AUTHORIZATION_FAILED, including one that does not exist but
// that it may not describe, and names a topic given by id only if it may
// describe it; CreatePartitions, DeleteRecords and the config APIs refuse
// a topic without ALTER, DELETE or ALTER_CONFIGS / DESCRIBE_CONFIGS; the
// cluster's APIs refuse CLUSTER_AUTHORIZATION_FAILED once an ACL closes
// it; a topic that no ACL names is still created (CREATE on the topic).
func TestAdminAPIsAuthorized(t *testing.T) {
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	adm := n.Admin()
	for _, name := range []string{"adm-a", "adm-h"} {
		createTopic(t, n, name, 1, nil)
	}
	details, err := adm.ListTopics(ctx, "adm-a", "adm-h")
	if err != nil {
		t.Fatal(err)
	}
	idA, idH := details["adm-a"].ID, details["adm-h"].ID
	createACLs(t, adm, kadm.NewACLs().Topics("adm-a").Allow(anonymous).AllowHosts("*").Operations(kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Topics("adm-h").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:admin").AllowHosts("*").Operations(kadm.OpAll))
	// Last: closes the cluster, ALTER included, to User:ANONYMOUS.
	createACLs(t, adm, kadm.NewACLs().Clusters().Allow("User:admin").AllowHosts("*").Operations(kadm.OpAll))

	send := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := n.Client().SeedBrokers()[0].Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	taf, caf := kerr.TopicAuthorizationFailed.Code, kerr.ClusterAuthorizationFailed.Code

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(6)
	for _, name := range []string{"adm-a", "adm-h", "adm-hidden-missing", "adm-missing"} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(name)
		del.Topics = append(del.Topics, dt)
	}
	for _, id := range [][16]byte{idA, idH} {
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.TopicID = id
		del.Topics = append(del.Topics, dt)
	}
	type answer struct {
		name string
		code int16
	}
	var got []answer
	for _, st := range send(del).(*kmsg.DeleteTopicsResponse).Topics {
		name := "<none>"
		if st.Topic != nil {
			name = *st.Topic
		}
		if st.TopicID == idA || st.TopicID == idH {
			name += " by id"
		}
		got = append(got, answer{name, st.ErrorCode})
	}
	slices.SortFunc(got, func(a, b answer) int { return strings.Compare(a.name, b.name) })
	want := []answer{
		{"<none> by id", taf},       // adm-h by id: not even its name
		{"adm-a", taf},              // describable, not deletable
		{"adm-a by id", taf},        // named, as the principal may describe it
		{"adm-h", taf},              // undescribable
		{"adm-hidden-missing", taf}, // does not exist, and is not told
		{"adm-missing", kerr.UnknownTopicOrPartition.Code}, // no ACL: allowed, and missing
	}
	if !slices.Equal(got, want) {
		t.Errorf("DeleteTopics answers %+v, want %+v", got, want)
	}

	cp := kmsg.NewPtrCreatePartitionsRequest()
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "adm-a", 2
	cp.Topics = append(cp.Topics, cpt)
	if code := send(cp).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != taf {
		t.Errorf("CreatePartitions without ALTER: %d", code)
	}
	dr := kmsg.NewPtrDeleteRecordsRequest()
	drt := kmsg.NewDeleteRecordsRequestTopic()
	drt.Topic = "adm-a"
	drp := kmsg.NewDeleteRecordsRequestTopicPartition()
	drp.Offset = -1
	drt.Partitions = append(drt.Partitions, drp)
	dr.Topics = append(dr.Topics, drt)
	if code := send(dr).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode; code != taf {
		t.Errorf("DeleteRecords without DELETE: %d", code)
	}
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "adm-a"}, {kmsg.ConfigResourceTypeBroker, ""}} {
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = r.typ, r.name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr("1000")
		if r.typ == kmsg.ConfigResourceTypeBroker {
			c.Name = "log.retention.ms"
		}
		ir.Configs = append(ir.Configs, c)
		inc.Resources = append(inc.Resources, ir)
	}
	incResp := send(inc).(*kmsg.IncrementalAlterConfigsResponse)
	if incResp.Resources[0].ErrorCode != taf || incResp.Resources[1].ErrorCode != caf {
		t.Errorf("IncrementalAlterConfigs without ALTER_CONFIGS: topic %d, broker %d", incResp.Resources[0].ErrorCode, incResp.Resources[1].ErrorCode)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dcr := kmsg.NewDescribeConfigsRequestResource()
	dcr.ResourceType, dcr.ResourceName = kmsg.ConfigResourceTypeTopic, "adm-a"
	dc.Resources = append(dc.Resources, dcr)
	if code := send(dc).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode; code != taf {
		t.Errorf("DescribeConfigs without DESCRIBE_CONFIGS: %d", code)
	}

	if code := send(kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse).ErrorCode; code != caf {
		t.Errorf("DescribeLogDirs without DESCRIBE on the cluster: %d", code)
	}
	arld := kmsg.NewPtrAlterReplicaLogDirsRequest()
	arldDir := kmsg.NewAlterReplicaLogDirsRequestDir()
	arldTopic := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
	arldDir.Dir, arldTopic.Topic, arldTopic.Partitions = "/nowhere", "adm-a", []int32{0}
	arldDir.Topics = append(arldDir.Topics, arldTopic)
	arld.Dirs = append(arld.Dirs, arldDir)
	if code := send(arld).(*kmsg.AlterReplicaLogDirsResponse).Topics[0].Partitions[0].ErrorCode; code != caf {
		t.Errorf("AlterReplicaLogDirs without ALTER on the cluster: %d", code)
	}
	if code := send(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse).ErrorCode; code != caf {
		t.Errorf("ListPartitionReassignments without DESCRIBE on the cluster: %d", code)
	}
	if code := send(kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse).ErrorCode; code != caf {
		t.Errorf("DescribeClientQuotas without DESCRIBE_CONFIGS on the cluster: %d", code)
	}

	// CREATE on the cluster is gone, but a topic no ACL names may still
	// be created: CREATE on the topic.
	res, err := adm.CreateTopic(ctx, 1, 1, nil, "free-topic")
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Errorf("CreateTopics of a topic no ACL names: %v", err)
	}
	res, err = adm.CreateTopic(ctx, 1, 1, nil, "adm-h2")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("CreateTopics without CREATE: %v", err)
	}
}

// TestControllerChannelNeedsClusterAction: the active controller serves a
// forwarded admin request only to a peer with CLUSTER_ACTION on the
// cluster (the controller sees the forwarding broker's principal, here
// User:ANONYMOUS over PLAINTEXT, not the client's). Once an ACL closes the
// cluster to User:ANONYMOUS without CLUSTER_ACTION, a CreateTopics the
// client may send (no ACL names the topic) is still refused, by the
// controller, with CLUSTER_AUTHORIZATION_FAILED, and nothing is created:
// the brokers' principal must be a super user or be allowed CLUSTER_ACTION.
func TestControllerChannelNeedsClusterAction(t *testing.T) {
	c := sluicetest.StartCluster(t, 3, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	ctx := context.Background()
	c.WaitForBrokers(3)
	createACLs(t, c.Admin(), kadm.NewACLs().Clusters().Allow(anonymous).AllowHosts("*").
		Operations(kadm.OpCreate, kadm.OpDescribe))
	ctrl := c.Controller()
	other := 1
	if other == ctrl {
		other = 2
	}
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		// The forwarding broker must have the ACL too, for its own check.
		req := kmsg.NewPtrDescribeLogDirsRequest() // DESCRIBE on the cluster: allowed
		if _, err := c.Node(other).Client().SeedBrokers()[0].Request(ctx, req); err != nil {
			return err
		}
		dr := kmsg.NewPtrDescribeClientQuotasRequest() // DESCRIBE_CONFIGS: refused once the ACL is there
		resp, err := c.Node(other).Client().SeedBrokers()[0].Request(ctx, dr)
		if err != nil {
			return err
		}
		if resp.(*kmsg.DescribeClientQuotasResponse).ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			return errors.New("ACL not yet on the forwarding broker")
		}
		return nil
	})
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "via-peer", 1, 1
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	kresp, err := c.Node(other).Client().SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if code := kresp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateTopics through node %d (controller %d), its controller channel without CLUSTER_ACTION: error %d, want CLUSTER_AUTHORIZATION_FAILED", other, ctrl, code)
	}
	listed, err := c.Node(ctrl).Admin().ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if listed.Has("via-peer") {
		t.Fatal("via-peer was created")
	}
}
