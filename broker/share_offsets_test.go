package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// produceSharePartition writes n records to one partition of topic.
func produceSharePartition(t *testing.T, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("p%d-%d", partition, i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// alterShareOffsets is kadm's AlterShareGroupOffsets, asked again while
// the group's coordinator answers that it is still loading or moving (a
// node just started loads its __consumer_offsets partitions; kadm hands
// such an answer back rather than retrying it), within 30 s.
func alterShareOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, group string, offsets kadm.Offsets) (kadm.AlterShareGroupOffsetsResponses, error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rs, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
		retry := errors.Is(err, kerr.CoordinatorLoadInProgress) || errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorNotAvailable)
		if !retry || time.Now().After(deadline) {
			return rs, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shareConsumeAll consumes with a new share consumer of group, accepting
// every record, until want records came (or the deadline), and closes it;
// it returns partition → offsets delivered.
func shareConsumeAll(t *testing.T, n *sluicetest.Node, group, topic string, want int) map[int32][]int64 {
	t.Helper()
	cl := n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	got := acceptShareRecords(ctx, cl, want)
	count := 0
	for _, offsets := range got {
		count += len(offsets)
	}
	if count < want {
		t.Fatalf("share consumer of %s got %d records, want %d: %v", group, count, want, got)
	}
	// Send the acknowledgements before leaving.
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	_ = cl.FlushAcks(fctx)
	return got
}

// acceptShareRecords polls the share consumer cl, accepting every record,
// until want records came or ctx ends; it returns partition → offsets
// delivered, in delivery order. The acknowledgements are the caller's to
// flush.
func acceptShareRecords(ctx context.Context, cl *kgo.Client, want int) map[int32][]int64 {
	got := make(map[int32][]int64)
	for count := 0; count < want && ctx.Err() == nil; {
		for _, r := range cl.PollRecords(ctx, 100).Records() {
			r.Ack(kgo.AckAccept)
			got[r.Partition] = append(got[r.Partition], r.Offset)
			count++
		}
	}
	return got
}

// createTopicAwayFromCoordinator waits for group's coordinator among the
// three nodes cl reaches and creates topic with one partition whose only
// replica is on another node, so that the partition's leader is not the
// group coordinator.
func createTopicAwayFromCoordinator(ctx context.Context, t *testing.T, cl *kgo.Client, adm *kadm.Client, group, topic string) {
	t.Helper()
	var coordinator int32
	for ctx.Err() == nil {
		r := adm.FindGroupCoordinators(ctx, group)[group]
		if r.Err == nil {
			coordinator = r.NodeID
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	createAssigned(t, cl, topic, []int32{coordinator%3 + 1}, nil)
}

// describeShareTopicOffsets sends a DescribeShareGroupOffsets of group
// naming partition 0 of each of topics (kadm describes only the
// partitions the group initialized).
func describeShareTopicOffsets(ctx context.Context, t *testing.T, cl *kgo.Client, group string, topics ...string) *kmsg.DescribeShareGroupOffsetsResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = group
	for _, name := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// waitShareGroupEmpty waits until the share group has no members.
func waitShareGroupEmpty(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ds, err := adm.DescribeShareGroups(context.Background(), group)
		if err == nil && ds[group].Err == nil && len(ds[group].Members) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("share group %s still has members: %v %+v", group, err, ds[group])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// describeShareOffsets describes the offsets of every partition group has
// initialized (kadm asks with topics null).
func describeShareOffsets(t *testing.T, adm *kadm.Client, group string) kadm.ShareOffsets {
	t.Helper()
	ds, err := adm.DescribeShareGroupOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	d := ds[group]
	if d.Err != nil {
		t.Fatalf("DescribeShareGroupOffsets %s: %v", group, d.Err)
	}
	return d.Offsets
}

// wantShareOffset checks partition p of topic in got: no error, start
// offset start and lag lag.
func wantShareOffset(t *testing.T, got kadm.ShareOffsets, topic string, p int32, start, lag int64) {
	t.Helper()
	o, ok := got[topic][p]
	if !ok {
		t.Fatalf("no offsets of %s[%d]: %+v", topic, p, got)
	}
	if o.Err != nil || o.StartOffset != start || o.Lag != lag {
		t.Fatalf("%s[%d]: start offset %d lag %d err %v, want start %d lag %d", topic, p, o.StartOffset, o.Lag, o.Err, start, lag)
	}
}

// The share-group offset admin APIs on a real node with franz-go's kadm:
// DescribeShareGroupOffsets reports each partition's start offset and lag
// (KIP-1226: latest offset − start offset − delivery-complete count);
// AlterShareGroupOffsets and DeleteShareGroupOffsets are refused while the
// group has members (NON_EMPTY_GROUP); once it is empty an altered start
// offset is where the group's next consumer starts (the share-partition
// loaded before is not used again), and deleted state is gone.
func TestShareGroupOffsetsAdmin(t *testing.T) {
	broker.ForceShareGroups(t)
	n := sluicetest.Start(t)
	adm := n.Admin()
	const topic, group = "sq-offs", "sg-offs"
	createTopic(t, n, topic, 2, nil)
	mustAlterGroupConfigs(t, n.Client(), group, "set:share.auto.offset.reset=earliest")
	producer := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	t.Cleanup(producer.Close)
	produceSharePartition(t, producer, topic, 0, 10)
	produceSharePartition(t, producer, topic, 1, 10)

	// A member holds the group while the admin tries to change it.
	member := n.Client(kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	acceptShareRecords(ctx, member, 20)
	if err := member.FlushAcks(ctx); err != nil {
		t.Fatalf("FlushAcks: %v", err)
	}
	if _, err := adm.AlterShareGroupOffsets(ctx, group, kadm.Offsets{topic: {0: {At: 0}}}); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("AlterShareGroupOffsets of a group with a member: %v, want NON_EMPTY_GROUP", err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, group, topic); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteShareGroupOffsets of a group with a member: %v, want NON_EMPTY_GROUP", err)
	}
	got := describeShareOffsets(t, adm, group)
	wantShareOffset(t, got, topic, 0, 10, 0)
	wantShareOffset(t, got, topic, 1, 10, 0)
	member.Close()
	waitShareGroupEmpty(t, adm, group)

	produceSharePartition(t, producer, topic, 0, 5)
	got = describeShareOffsets(t, adm, group)
	wantShareOffset(t, got, topic, 0, 10, 5)

	// Alter: partition 0 back to 3, partition 1 to 8; a partition the
	// topic does not have and a topic that does not exist are refused.
	rs, err := adm.AlterShareGroupOffsets(ctx, group, kadm.Offsets{
		topic:     {0: {At: 3}, 1: {At: 8}, 7: {At: 0}},
		"sq-none": {0: {At: 0}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for tp, want := range map[[2]any]error{{topic, int32(0)}: nil, {topic, int32(1)}: nil, {topic, int32(7)}: kerr.UnknownTopicOrPartition, {"sq-none", int32(0)}: kerr.UnknownTopicOrPartition} {
		if e, ok := rs.Lookup(tp[0].(string), tp[1].(int32)); !ok || !errors.Is(e, want) && e != want {
			t.Fatalf("AlterShareGroupOffsets %v: %v (answered %v), want %v", tp, e, ok, want)
		}
	}
	got = describeShareOffsets(t, adm, group)
	wantShareOffset(t, got, topic, 0, 3, 12)
	wantShareOffset(t, got, topic, 1, 8, 2)

	// The next consumer starts at the altered offsets.
	delivered := shareConsumeAll(t, n, group, topic, 14)
	if len(delivered[0]) != 12 || delivered[0][0] != 3 || len(delivered[1]) != 2 || delivered[1][0] != 8 {
		t.Fatalf("after the alter the group got %v, want offsets 3-14 of partition 0 and 8-9 of partition 1", delivered)
	}
	waitShareGroupEmpty(t, adm, group)

	// Delete: the topic's state goes; a topic the group never read and a
	// group that does not exist are refused.
	createTopic(t, n, "sq-other", 1, nil)
	drs, err := adm.DeleteShareGroupOffsets(ctx, group, topic, "sq-other")
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := drs.Lookup(topic); !ok || e != nil {
		t.Fatalf("DeleteShareGroupOffsets %s: %v %v", topic, e, ok)
	}
	if e, _ := drs.Lookup("sq-other"); !errors.Is(e, kerr.UnknownTopicOrPartition) {
		t.Fatalf("DeleteShareGroupOffsets of a topic the group never read: %v", e)
	}
	if got := describeShareOffsets(t, adm, group); len(got) != 0 {
		t.Fatalf("after the delete the group describes %+v, want nothing", got)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "sg-none", topic); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("DeleteShareGroupOffsets of a group that does not exist: %v", err)
	}
	// Named topics are read whatever the group: no state is start offset -1.
	resp := describeShareTopicOffsets(ctx, t, n.Client(), group, topic)
	if p := resp.Groups[0].Topics[0].Partitions[0]; p.StartOffset != -1 || p.Lag != -1 || p.ErrorCode != 0 {
		t.Fatalf("deleted state describes as %+v, want start offset -1", p)
	}
	// The next consumer starts afresh from share.auto.offset.reset.
	if delivered := shareConsumeAll(t, n, group, topic, 25); len(delivered[0]) != 15 || len(delivered[1]) != 10 {
		t.Fatalf("after the delete the group got %v, want every record again", delivered)
	}
}

// AlterShareGroupOffsets creates a share group that does not exist (Kafka
// 4.4), refuses a group of another type (GROUP_ID_NOT_FOUND), and
// DeleteGroups of a share group deletes its share-partition state.
func TestShareGroupOffsetsNewGroupAndDeleteGroups(t *testing.T) {
	broker.ForceShareGroups(t)
	n := sluicetest.Start(t)
	adm := n.Admin()
	const topic = "sq-new"
	createTopic(t, n, topic, 1, nil)
	producer := n.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	t.Cleanup(producer.Close)
	produceSharePartition(t, producer, topic, 0, 20)
	ctx := context.Background()

	rs, err := alterShareOffsets(ctx, t, adm, "sg-new", kadm.Offsets{topic: {0: {At: 8}}})
	if err != nil || rs.Error() != nil {
		t.Fatalf("AlterShareGroupOffsets of a new group: %v %v", err, rs)
	}
	got := describeShareOffsets(t, adm, "sg-new")
	wantShareOffset(t, got, topic, 0, 8, 12)
	ls, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := ls["sg-new"]; !ok || l.GroupType != "share" {
		t.Fatalf("the altered group is listed as %+v (%v)", l, ok)
	}

	// A classic consumer group's id is not a share group's.
	if _, err := adm.CommitOffsets(ctx, "cg-classic", kadm.Offsets{topic: {0: {At: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterShareGroupOffsets(ctx, "cg-classic", kadm.Offsets{topic: {0: {At: 1}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("AlterShareGroupOffsets of a consumer group: %v, want GROUP_ID_NOT_FOUND", err)
	}

	dr, err := adm.DeleteGroups(ctx, "sg-new")
	if err != nil || dr.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, dr)
	}
	resp := describeShareTopicOffsets(ctx, t, n.Client(), "sg-new", topic)
	if p := resp.Groups[0].Topics[0].Partitions[0]; p.StartOffset != -1 {
		t.Fatalf("after DeleteGroups the state describes as %+v, want start offset -1", p)
	}
}

// The offset admin APIs check Kafka's ACLs: DESCRIBE on the group for
// DescribeShareGroupOffsets, READ on the group for Alter, DELETE for
// Delete (GROUP_AUTHORIZATION_FAILED), and per topic DESCRIBE (describe)
// or READ (alter, delete): TOPIC_AUTHORIZATION_FAILED.
func TestShareGroupOffsetsAuthorization(t *testing.T) {
	broker.ForceShareGroups(t)
	n := sluicetest.Start(t, withAuthorizer, "allow.everyone.if.no.acl.found=true")
	adm := n.Admin()
	createTopic(t, n, "sq-open", 1, nil)
	createTopic(t, n, "sq-closed", 1, nil)
	createACLs(t, adm, kadm.NewACLs().Groups("g-closed").Allow("User:admin").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDelete, kadm.OpDescribe))
	createACLs(t, adm, kadm.NewACLs().Topics("sq-closed").Allow("User:admin").AllowHosts("*").Operations(kadm.OpRead, kadm.OpDescribe))
	ctx := context.Background()

	if _, err := adm.AlterShareGroupOffsets(ctx, "g-closed", kadm.Offsets{"sq-open": {0: {At: 0}}}); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("AlterShareGroupOffsets without READ on the group: %v", err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "g-closed", "sq-open"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("DeleteShareGroupOffsets without DELETE on the group: %v", err)
	}
	if _, err := adm.DescribeShareGroupOffsets(ctx, "g-closed"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("DescribeShareGroupOffsets without DESCRIBE on the group: %v", err)
	}
	rs, err := alterShareOffsets(ctx, t, adm, "g-open", kadm.Offsets{"sq-open": {0: {At: 0}}, "sq-closed": {0: {At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := rs.Lookup("sq-closed", 0); !errors.Is(e, kerr.TopicAuthorizationFailed) {
		t.Fatalf("AlterShareGroupOffsets without READ on the topic: %v", e)
	}
	if e, ok := rs.Lookup("sq-open", 0); !ok || e != nil {
		t.Fatalf("AlterShareGroupOffsets with READ on the topic: %v %v", e, ok)
	}
	resp := describeShareTopicOffsets(ctx, t, n.Client(), "g-open", "sq-open", "sq-closed")
	for _, rt := range resp.Groups[0].Topics {
		p := rt.Partitions[0]
		switch rt.Topic {
		case "sq-open":
			if p.ErrorCode != 0 || p.StartOffset != 0 {
				t.Fatalf("describe of the open topic: %+v", p)
			}
		case "sq-closed":
			if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || p.StartOffset != -1 {
				t.Fatalf("describe of the closed topic: %+v", p)
			}
		}
	}
	drs, err := adm.DeleteShareGroupOffsets(ctx, "g-open", "sq-open", "sq-closed")
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := drs.Lookup("sq-closed"); !errors.Is(e, kerr.TopicAuthorizationFailed) {
		t.Fatalf("DeleteShareGroupOffsets without READ on the topic: %v", e)
	}
	if e, ok := drs.Lookup("sq-open"); !ok || e != nil {
		t.Fatalf("DeleteShareGroupOffsets with READ on the topic: %v %v", e, ok)
	}
}

// On three nodes, the lag DescribeShareGroupOffsets reports for a
// partition led by another broker than the group coordinator comes from
// that leader's latest offset (a ListOffsets to it, as Kafka's
// PartitionMetadataClient asks).
func TestShareGroupOffsetsLagOfRemoteLeader(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic, group = "sq-remote", "sg-remote"
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createTopicAwayFromCoordinator(ctx, t, cl, adm, group, topic)
	if err := produce(cl, topic, valuesN("r", 20)...); err != nil {
		t.Fatal(err)
	}
	rs, err := alterShareOffsets(ctx, t, adm, group, kadm.Offsets{topic: {0: {At: 5}}})
	if err != nil || rs.Error() != nil {
		t.Fatalf("AlterShareGroupOffsets: %v %v", err, rs)
	}
	got := describeShareOffsets(t, adm, group)
	wantShareOffset(t, got, topic, 0, 5, 15)
}

// Without share.version finalized at 1 the offset admin APIs answer
// UNSUPPORTED_VERSION, as Kafka's KafkaApis does.
func TestShareGroupOffsetsNeedShareVersion(t *testing.T) {
	n := sluicetest.Start(t)
	adm := n.Admin()
	ctx := context.Background()
	// share.version disabled, in case a new cluster finalizes it.
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = 30000
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = "share.version", 0, 2
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	_, _ = req.RequestWith(ctx, n.Client())
	createTopic(t, n, "sq-gate", 1, nil)
	if _, err := adm.AlterShareGroupOffsets(ctx, "sg-gate", kadm.Offsets{"sq-gate": {0: {At: 0}}}); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("AlterShareGroupOffsets: %v", err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "sg-gate", "sq-gate"); !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("DeleteShareGroupOffsets: %v", err)
	}
	ds, err := adm.DescribeShareGroupOffsets(ctx, "sg-gate")
	if err == nil {
		err = ds["sg-gate"].Err
	}
	if !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("DescribeShareGroupOffsets: %v", err)
	}
}

// On three nodes, with the partition led by another node than the group
// coordinator: a share-partition the leader loaded before the group's
// offsets were altered serves the altered start offset to the next
// consumer, though the alter happened on the coordinator; after a delete
// the next consumer starts afresh (share.auto.offset.reset=earliest).
// Without share.Manager.Revalidate at the opening of a share session the
// leader kept serving its old state.
func TestShareGroupOffsetsAlterReachesRemoteLeader(t *testing.T) {
	broker.ForceShareGroups(t)
	const topic, group = "sq-remote-alter", "sg-remote-alter"
	c := sluicetest.StartCluster(t, 3)
	cl := clusterClient(c)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	createTopicAwayFromCoordinator(ctx, t, cl, adm, group, topic)
	mustAlterGroupConfigs(t, cl, group, "set:share.auto.offset.reset=earliest")
	if err := produce(cl, topic, valuesN("r", 10)...); err != nil {
		t.Fatal(err)
	}
	consume := func(want int) []int64 {
		t.Helper()
		m := clusterClient(c, kgo.ConsumeTopics(topic), kgo.ShareGroup(group))
		defer m.Close()
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel()
		got := acceptShareRecords(cctx, m, want)[0]
		_ = m.FlushAcks(cctx)
		return got
	}
	if got := consume(10); len(got) != 10 {
		t.Fatalf("first consumer got %v", got)
	}
	waitShareGroupEmpty(t, adm, group)
	rs, err := alterShareOffsets(ctx, t, adm, group, kadm.Offsets{topic: {0: {At: 4}}})
	if err != nil || rs.Error() != nil {
		t.Fatalf("AlterShareGroupOffsets: %v %v", err, rs)
	}
	if got := consume(6); len(got) != 6 || got[0] != 4 {
		t.Fatalf("after the alter the next consumer got %v, want offsets 4-9", got)
	}
	waitShareGroupEmpty(t, adm, group)
	drs, err := adm.DeleteShareGroupOffsets(ctx, group, topic)
	if err != nil || drs.Error() != nil {
		t.Fatalf("DeleteShareGroupOffsets: %v %v", err, drs)
	}
	if got := consume(10); len(got) != 10 || got[0] != 0 {
		t.Fatalf("after the delete the next consumer got %v, want offsets 0-9 (earliest)", got)
	}
}
