package broker_test

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/sluicetest"
)

// TestGroupAdmin drives DescribeGroups, ListGroups, OffsetDelete and
// DeleteGroups through kadm while a group has a member and after it left.
func TestGroupAdmin(t *testing.T) {
	n := groupNode(t)
	const topic = "admin-t"
	createTopic(t, n, topic, 2, nil)
	createTopic(t, n, "other", 1, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 20)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := n.Admin()

	s := &seen{n: map[[2]int64]int{}}
	m := startMember(t, n, "active", topic, s, kgo.ClientID("member-client"))
	waitSeen(t, s, 20)

	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "other", Partition: 0, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "idle", offs); err != nil {
		t.Fatalf("commit idle: %v", err)
	}

	sluicetest.WaitFor(t, 10*time.Second, func() error {
		described, err := adm.DescribeGroups(ctx, "active")
		if err != nil {
			return err
		}
		d := described["active"]
		if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ClientID != "member-client" || d.ProtocolType != "consumer" {
			return errors.New("active group not described as stable with its member: " + d.State)
		}
		ca, ok := d.Members[0].Assigned.AsConsumer()
		if !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 2 {
			return errors.New("member assignment not described")
		}
		return nil
	})

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := listed.Groups()
	sort.Strings(names)
	if len(names) != 2 || names[0] != "active" || names[1] != "idle" {
		t.Fatalf("listed %v", names)
	}
	if stable, _ := adm.ListGroups(ctx, "Stable"); len(stable) != 1 || stable["active"].State != "Stable" {
		t.Fatalf("state filter: %v", stable)
	}

	// Offsets of the subscribed topic cannot be deleted while the member
	// is there, nor can the group.
	del, err := adm.DeleteOffsets(ctx, "active", kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := del.Error(); !errors.Is(err, kerr.GroupSubscribedToTopic) {
		t.Fatalf("delete subscribed offsets: %v", err)
	}
	dg, err := adm.DeleteGroups(ctx, "active")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dg["active"].Err, kerr.NonEmptyGroup) {
		t.Fatalf("delete active group: %v", dg["active"].Err)
	}

	m.stop()
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		d, err := adm.DescribeGroups(ctx, "active")
		if err != nil {
			return err
		}
		if d["active"].State != "Empty" {
			return errors.New("state " + d["active"].State)
		}
		return nil
	})
	del, err = adm.DeleteOffsets(ctx, "active", kadm.TopicsSet{topic: {0: {}}})
	if err != nil || del.Error() != nil {
		t.Fatalf("delete offsets of empty group: %v %v", err, del.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "active")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup(topic, 0); ok {
		t.Fatal("deleted offset still fetched")
	}
	if o, ok := fetched.Lookup(topic, 1); !ok || o.At <= 0 {
		t.Fatalf("partition 1 offset: %+v", o)
	}
	dg, err = adm.DeleteGroups(ctx, "active", "idle", "never")
	if err != nil {
		t.Fatal(err)
	}
	if dg["active"].Err != nil || dg["idle"].Err != nil || !errors.Is(dg["never"].Err, kerr.GroupIDNotFound) {
		t.Fatalf("delete groups: %+v", dg)
	}
	n.Restart()
	listed, err = n.Admin().ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 0 {
		t.Fatalf("deleted groups back after restart: %v", listed.Groups())
	}
}

// TestGroupErrorCodes checks the answers a confused member gets.
func TestGroupErrorCodes(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "codes", 1, nil)
	cl := n.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "codes")
	if err != nil {
		t.Fatal(err)
	}
	topicID := topics["codes"].ID

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "codes-g", 10000, 10000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	resp, err := join.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %v %+v", err, resp)
	}
	join.MemberID = resp.MemberID
	resp, err = join.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || resp.Generation != 1 || resp.LeaderID != join.MemberID {
		t.Fatalf("join: %v %+v", err, resp)
	}
	member := join.MemberID

	hb := func(member string, gen int32) int16 {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID, r.Generation = "codes-g", member, gen
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "codes-g", member, 1
	if sresp, err := sync.RequestWith(ctx, cl); err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sresp)
	}
	commit := func(member string, gen int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.MemberID, r.Generation = "codes-g", member, gen
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Offset = 1
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "codes", TopicID: topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	for _, tc := range []struct {
		name string
		got  int16
		want int16
	}{
		{"heartbeat", hb(member, 1), 0},
		{"heartbeat old generation", hb(member, 0), kerr.IllegalGeneration.Code},
		{"heartbeat unknown member", hb("ghost", 1), kerr.UnknownMemberID.Code},
		{"commit", commit(member, 1), 0},
		{"commit future generation", commit(member, 5), kerr.IllegalGeneration.Code},
		{"commit unknown member", commit("ghost", 1), kerr.UnknownMemberID.Code},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, kerr.ErrorForCode(tc.got), kerr.ErrorForCode(tc.want))
		}
	}
}

// TestStaticMemberRestartKeepsAssignment: a static member (KIP-345) that
// restarts with the same group.instance.id comes back to its partitions
// without the other member being rebalanced.
func TestStaticMemberRestartKeepsAssignment(t *testing.T) {
	n := groupNode(t)
	const topic = "static-t"
	createTopic(t, n, topic, 4, nil)
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 0, 40)

	revoked := make(chan struct{}, 10)
	s := &seen{n: map[[2]int64]int{}}
	a := startMember(t, n, "statics", topic, s, kgo.InstanceID("a"), kgo.Balancers(kgo.RangeBalancer()))
	b := startMember(t, n, "statics", topic, s, kgo.InstanceID("b"), kgo.Balancers(kgo.RangeBalancer()),
		kgo.OnPartitionsRevoked(func(context.Context, *kgo.Client, map[string][]int32) { revoked <- struct{}{} }))
	defer b.stop()
	waitSeen(t, s, 40)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := n.Admin()
	var before []string
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		d, err := adm.DescribeGroups(ctx, "statics")
		if err != nil {
			return err
		}
		g := d["statics"]
		if g.State != "Stable" || len(g.Members) != 2 {
			return errors.New("not settled: " + g.State)
		}
		before = nil
		for _, m := range g.Members {
			before = append(before, *m.InstanceID)
		}
		return nil
	})
	for len(revoked) > 0 {
		<-revoked
	}

	a.stop() // a static member does not leave on close
	d, _ := adm.DescribeGroups(ctx, "statics")
	if len(d["statics"].Members) != 2 {
		t.Fatalf("static member left on close: %d members", len(d["statics"].Members))
	}
	a2 := startMember(t, n, "statics", topic, s, kgo.InstanceID("a"), kgo.Balancers(kgo.RangeBalancer()))
	defer a2.stop()
	produceKeyed(t, n.Client(kgo.DefaultProduceTopic(topic)), topic, 40, 40)
	waitSeen(t, s, 80)
	if len(revoked) > 0 {
		t.Fatal("the other static member was rebalanced when a restarted")
	}
	if d := s.dups(); len(d) > 0 {
		t.Fatalf("consumed twice: %v", d)
	}
}

// TestDeletedTopicLosesOffsets: a topic deleted and created again does not
// inherit the committed offsets of its predecessor.
func TestDeletedTopicLosesOffsets(t *testing.T) {
	n := groupNode(t)
	createTopic(t, n, "doomed", 1, nil)
	createTopic(t, n, "kept", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := n.Admin()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "doomed", Partition: 0, At: 3, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "kept", Partition: 0, At: 4, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopics(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	createTopic(t, n, "doomed", 1, nil)
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		fetched, err := adm.FetchOffsets(ctx, "g")
		if err != nil {
			return err
		}
		if o, ok := fetched.Lookup("doomed", 0); ok {
			return errors.New("offset of the deleted topic still there: " + o.Topic)
		}
		if o, ok := fetched.Lookup("kept", 0); !ok || o.At != 4 {
			t.Fatalf("offset of the other topic: %+v", o)
		}
		return nil
	})
}

// TestGroupSurvivesRestart: a settled group's generation, members and
// assignments come back after a clean restart and after a crash, so its
// member goes on heartbeating without rejoining.
func TestGroupSurvivesRestart(t *testing.T) {
	n := groupNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "durable", 30000, 30000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	cl := n.Client()
	resp, err := join.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	join.MemberID = resp.MemberID
	if resp, err = join.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join: %v %+v", err, resp)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "durable", join.MemberID, resp.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: join.MemberID, MemberAssignment: []byte("mine")}}
	if sresp, err := sync.RequestWith(ctx, cl); err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sresp)
	}
	for _, restart := range []func(){n.Restart, n.CrashRestart} {
		restart()
		cl := n.Client()
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation = "durable", join.MemberID, resp.Generation
		hresp, err := hb.RequestWith(ctx, cl)
		if err != nil || hresp.ErrorCode != 0 {
			t.Fatalf("heartbeat after restart: %v %+v", err, hresp)
		}
		sresp, err := sync.RequestWith(ctx, cl)
		if err != nil || sresp.ErrorCode != 0 || string(sresp.MemberAssignment) != "mine" {
			t.Fatalf("assignment after restart: %v %+v", err, sresp)
		}
		d, err := kadm.NewClient(cl).DescribeGroups(ctx, "durable")
		if err != nil || d["durable"].State != "Stable" || len(d["durable"].Members) != 1 {
			t.Fatalf("describe after restart: %v %+v", err, d["durable"])
		}
	}
}
