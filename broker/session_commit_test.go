package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/sluicedev/sluice/sluicetest"
)

// A classic member's session, as Kafka 4.x's group coordinator keeps it
// (OffsetMetadataManager.commitOffset): a Heartbeat renews it, and so does
// an OffsetCommit while the group is Stable or PreparingRebalance; when it
// ends, the member is removed at that moment, a static one too, and its
// group rebalances to Empty. librdkafka's test 0081 (DescribeConsumerGroups)
// leans on both: its static consumers commit on close and send no
// LeaveGroup, and DeleteGroups follows exactly one session timeout later.

const commitSession = 1500 * time.Millisecond

// staticClassicMember joins group as the static member inst with a
// session of commitSession and syncs; it returns the member id and
// generation.
func staticClassicMember(t *testing.T, ctx context.Context, cl *kgo.Client, group, inst string) (string, int32) {
	t.Helper()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.InstanceID = group, &inst
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = int32(commitSession/time.Millisecond), 30000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	resp, err := join.RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = resp.MemberID
		resp, err = join.RequestWith(ctx, cl)
	}
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join %s: %v %+v", group, err, resp)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.InstanceID, sync.Generation = group, resp.MemberID, &inst, resp.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: resp.MemberID, MemberAssignment: []byte{}}}
	if sresp, err := sync.RequestWith(ctx, cl); err != nil || sresp.ErrorCode != 0 {
		t.Fatalf("sync %s: %v %+v", group, err, sresp)
	}
	return resp.MemberID, resp.Generation
}

// commitAs commits offset of topic's partition 0 as the member.
func commitAs(ctx context.Context, cl *kgo.Client, group, member, inst string, gen int32, topic string, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.InstanceID, req.Generation = group, member, &inst, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestOffsetCommitRenewsSessionUntilItEnds: three groups, each with one
// static classic member that stops heartbeating but goes on committing
// offsets for four session timeouts. Every commit succeeds (a commit
// renews the session, as in Kafka); once the member stops, the session
// counted from its last commit ends, and a DeleteGroups sent after that
// finds the groups Empty and deletes them, as librdkafka's test 0081 does.
func TestOffsetCommitRenewsSessionUntilItEnds(t *testing.T) {
	n := sluicetest.Start(t, "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")
	const topic = "session-commit"
	createTopic(t, n, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// OffsetCommit v9, which names topics (v10 names them by id), as
	// librdkafka 2.15 sends it.
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	cl := n.Client(kgo.MaxVersions(v))
	type member struct {
		group, id, inst string
		gen             int32
	}
	var members []member
	var groups []string
	for i := range 3 {
		m := member{group: fmt.Sprintf("session-commit-%d", i), inst: fmt.Sprintf("inst-%d", i)}
		m.id, m.gen = staticClassicMember(t, ctx, cl, m.group, m.inst)
		members = append(members, m)
		groups = append(groups, m.group)
	}

	// No heartbeat from here on: commits alone, every 300 ms.
	var lastCommit time.Time
	for off, stop := int64(1), time.Now().Add(4*commitSession); time.Now().Before(stop); off++ {
		for _, m := range members {
			if err := commitAs(ctx, cl, m.group, m.id, m.inst, m.gen, topic, off); err != nil {
				t.Fatalf("commit %d of %s without heartbeats: %v (an OffsetCommit renews a classic member's session)", off, m.group, err)
			}
		}
		lastCommit = time.Now() // after the last answer: every session was renewed before this
		time.Sleep(300 * time.Millisecond)
	}

	// The sessions end at most commitSession after lastCommit; a request
	// sent after that must see the members gone, as with Kafka's timers.
	time.Sleep(time.Until(lastCommit.Add(commitSession)))
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = groups
	resp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Errorf("DeleteGroups %s one session timeout after the member's last commit: %v (its static member should have expired)", g.Group, err)
		}
	}
}

// TestTxnOffsetCommitDoesNotRenewSession: a TxnOffsetCommit does not keep
// a classic member alive (Kafka's commitTransactionalOffset reschedules no
// heartbeat): a static member that stops heartbeating and commits only
// through a transaction is removed when its session ends, and its later
// TxnOffsetCommits answer UNKNOWN_MEMBER_ID.
func TestTxnOffsetCommitDoesNotRenewSession(t *testing.T) {
	n := sluicetest.Start(t, "group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")
	const topic, group, inst, txid = "session-txn-commit", "session-txn-commit", "inst", "session-txn"
	createTopic(t, n, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.Client()
	member, gen := staticClassicMember(t, ctx, cl, group, inst)

	var pid int64
	var epoch int16
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID, init.TransactionTimeoutMillis = kmsg.StringPtr(txid), 60000
		init.ProducerID, init.ProducerEpoch = -1, -1
		resp, err := init.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txid, pid, epoch, group
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("add offsets to txn: %v %+v", err, resp)
	}

	// No heartbeat from here on: transactional commits alone, every 300
	// ms, for up to four session timeouts.
	var last error
	for off, stop := int64(1), time.Now().Add(4*commitSession); time.Now().Before(stop); off++ {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txid, group, pid, epoch
		req.Generation, req.MemberID, req.InstanceID = gen, member, kmsg.StringPtr(inst)
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID(t, n, topic) // by id from v6 (KIP-1319)
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		last = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
		if last != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if last != kerr.UnknownMemberID {
		t.Fatalf("TxnOffsetCommit after four session timeouts without a heartbeat: %v, want UNKNOWN_MEMBER_ID (a transactional commit does not renew the session)", last)
	}
	d, err := n.Admin().DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if g := d[group]; g.State != "Empty" || len(g.Members) != 0 {
		t.Fatalf("group after its only member expired: %s with %d members, want Empty", g.State, len(g.Members))
	}
}
