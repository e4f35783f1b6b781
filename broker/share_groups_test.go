package broker_test

// Share groups (KIP-932), the group coordinator's half: ShareGroupHeartbeat
// and ShareGroupDescribe sent as raw requests by a franz-go client (which
// routes them to the group's coordinator), on one node and on three.

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

	"github.com/sluicedev/sluice/broker"
	"github.com/sluicedev/sluice/sluicetest"
)

// sendShareHeartbeat sends one ShareGroupHeartbeat; topics nil leaves the
// subscription out.
func sendShareHeartbeat(ctx context.Context, cl *kgo.Client, group, member string, epoch int32, topics []string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("ShareGroupHeartbeat %s/%s@%d: %w", group, member, epoch, err)
	}
	return resp, nil
}

// shareHeartbeat is sendShareHeartbeat failing the test on a transport
// error.
func shareHeartbeat(ctx context.Context, t *testing.T, cl *kgo.Client, group, member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
	t.Helper()
	resp, err := sendShareHeartbeat(ctx, cl, group, member, epoch, topics)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// shareDescribe describes one share group.
func shareDescribe(ctx context.Context, t *testing.T, cl *kgo.Client, group string) kmsg.ShareGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ShareGroupDescribe %s: %v", group, err)
	}
	if len(resp.Groups) != 1 {
		t.Fatalf("ShareGroupDescribe %s: %d groups answered", group, len(resp.Groups))
	}
	return resp.Groups[0]
}

// assignedPartitions lists a heartbeat answer's partitions as "id:p" pairs
// of the topic named by ids; nil when the answer carries no assignment.
func assignedPartitions(resp *kmsg.ShareGroupHeartbeatResponse) []int32 {
	if resp.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, tp := range resp.Assignment.TopicPartitions {
		out = append(out, tp.Partitions...)
	}
	slices.Sort(out)
	return out
}

func shareErr(code int16) error { return kerr.ErrorForCode(code) }

// shareMember is a member driven by the test: it heartbeats with its epoch
// and remembers the last assignment it was given.
type shareMember struct {
	id       string
	epoch    int32
	assigned []int32
}

func (m *shareMember) beat(ctx context.Context, t *testing.T, cl *kgo.Client, group string, topics []string) error {
	t.Helper()
	resp, err := sendShareHeartbeat(ctx, cl, group, m.id, m.epoch, topics)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 {
		return shareErr(resp.ErrorCode)
	}
	m.epoch = resp.MemberEpoch
	if a := assignedPartitions(resp); a != nil {
		m.assigned = a
	}
	return nil
}

// join makes m join group with topics, waiting while the coordinator's
// partition of a new cluster still loads.
func (m *shareMember) join(ctx context.Context, t *testing.T, cl *kgo.Client, group string, topics []string) {
	t.Helper()
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		m.epoch = 0
		err := m.beat(ctx, t, cl, group, topics)
		if err != nil && !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.NotCoordinator) && !errors.Is(err, kerr.CoordinatorNotAvailable) {
			t.Fatalf("member %s joining %s: %v", m.id, group, err)
		}
		return err
	})
}

// joinAssigned is join, then heartbeats until m is assigned partitions: a
// share group assigns a partition only once its share-partition state is
// initialized at the share coordinator, after the first heartbeat that
// subscribes to it (as in Kafka).
func (m *shareMember) joinAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, group string, topics []string) {
	t.Helper()
	m.join(ctx, t, cl, group, topics)
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		if err := m.beat(ctx, t, cl, group, nil); err != nil {
			return err
		}
		if len(m.assigned) == 0 {
			return fmt.Errorf("member %s has no partitions yet", m.id)
		}
		return nil
	})
}

// shareNode starts a node whose share groups have short sessions and
// heartbeats, and compute their target assignment at every change
// (group.share.assignment.interval.ms=0), so that the membership tests see
// each change at the next heartbeat; extra overrides come last.
func shareNode(t *testing.T, extra ...string) *sluicetest.Node {
	return sluicetest.Start(t, append([]string{
		"group.share.assignment.interval.ms=0",
		"group.share.min.session.timeout.ms=1000",
		"group.share.session.timeout.ms=2000",
		"group.share.min.heartbeat.interval.ms=100",
		"group.share.heartbeat.interval.ms=200",
	}, extra...)...)
}

// TestShareGroupsNeedShareVersion: with share.version not finalized at 1,
// the share-group APIs answer UNSUPPORTED_VERSION, as Kafka's do.
func TestShareGroupsNeedShareVersion(t *testing.T) {
	n := sluicetest.Start(t)
	disableShareGroups(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := n.Client()
	if resp := shareHeartbeat(ctx, t, cl, "sg", "m1", 0, []string{"t"}); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("heartbeat: %v, want UNSUPPORTED_VERSION", shareErr(resp.ErrorCode))
	}
	if g := shareDescribe(ctx, t, cl, "sg"); g.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("describe: %v, want UNSUPPORTED_VERSION", shareErr(g.ErrorCode))
	}
}

// TestShareGroupMembership: members join with the ids they chose, share
// the partitions out by the simple assignor, are listed and described as
// Kafka shows a share group, leave, and the errors Kafka gives come back.
func TestShareGroupMembership(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t, "group.share.max.size=3", "group.share.session.timeout.ms=30000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, "queue"); err != nil {
		t.Fatal(err)
	}
	const group = "workers"
	topics := []string{"queue"}

	m1 := &shareMember{id: "member-one"}
	m1.joinAssigned(ctx, t, cl, group, topics)
	if m1.epoch < 1 || !slices.Equal(m1.assigned, []int32{0, 1, 2, 3}) {
		t.Fatalf("a lone member has epoch %d and partitions %v, want every partition", m1.epoch, m1.assigned)
	}

	m2 := &shareMember{id: "member-two"}
	if err := m2.beat(ctx, t, cl, group, topics); err != nil {
		t.Fatalf("second join: %v", err)
	}
	// m1 learns its new assignment at its next heartbeat.
	if err := m1.beat(ctx, t, cl, group, nil); err != nil {
		t.Fatal(err)
	}
	if len(m1.assigned) != 2 || len(m2.assigned) != 2 {
		t.Fatalf("two members on four partitions: %v and %v", m1.assigned, m2.assigned)
	}
	if all := slices.Sorted(slices.Values(append(slices.Clone(m1.assigned), m2.assigned...))); !slices.Equal(all, []int32{0, 1, 2, 3}) {
		t.Fatalf("partitions %v and %v do not cover the topic once", m1.assigned, m2.assigned)
	}

	// Errors, as Kafka's coordinator answers them.
	for _, tc := range []struct {
		name   string
		member string
		epoch  int32
		topics []string
		want   *kerr.Error
	}{
		{"unknown member", "nobody", 3, nil, kerr.UnknownMemberID},
		{"epoch ahead", m1.id, m1.epoch + 5, nil, kerr.FencedMemberEpoch},
		{"join without topics", "member-three", 0, nil, kerr.InvalidRequest},
		{"member id too long", strings.Repeat("x", 37), 0, topics, kerr.InvalidRequest},
		{"invalid epoch", m1.id, -3, nil, kerr.InvalidRequest},
		{"leave of an unknown member", "nobody", -1, nil, kerr.UnknownMemberID},
	} {
		if resp := shareHeartbeat(ctx, t, cl, group, tc.member, tc.epoch, tc.topics); resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: %v, want %v", tc.name, shareErr(resp.ErrorCode), tc.want)
		}
	}
	m3 := &shareMember{id: "member-three"}
	if err := m3.beat(ctx, t, cl, group, topics); err != nil {
		t.Fatal(err)
	}
	if resp := shareHeartbeat(ctx, t, cl, group, "member-four", 0, topics); resp.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Errorf("fourth member of a group of at most 3: %v, want GROUP_MAX_SIZE_REACHED", shareErr(resp.ErrorCode))
	}
	if resp := shareHeartbeat(ctx, t, cl, "no-such-group", "m", 4, nil); resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("heartbeat of an unknown group: %v, want GROUP_ID_NOT_FOUND", shareErr(resp.ErrorCode))
	}

	// Described and listed as a share group.
	g := shareDescribe(ctx, t, cl, group)
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || len(g.Members) != 3 || g.GroupEpoch < 3 {
		t.Fatalf("describe: %+v", g)
	}
	for _, m := range g.Members {
		if len(m.SubscribedTopicNames) != 1 || m.SubscribedTopicNames[0] != "queue" || m.MemberEpoch < 1 {
			t.Fatalf("described member %+v", m)
		}
	}
	lg := kmsg.NewPtrListGroupsRequest()
	lg.TypesFilter = []string{"share"}
	lresp, err := lg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lresp.Groups) != 1 || lresp.Groups[0].Group != group || lresp.Groups[0].GroupType != "share" || lresp.Groups[0].GroupState != "Stable" || lresp.Groups[0].ProtocolType != "share" {
		t.Fatalf("ListGroups type share: %+v", lresp.Groups)
	}
	// The other protocols do not take the group.
	chb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	chb.Group, chb.MemberID, chb.MemberEpoch, chb.RebalanceTimeoutMillis, chb.SubscribedTopicNames, chb.Topics = group, "c1", 0, 30000, topics, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if cresp, err := chb.RequestWith(ctx, cl); err != nil || cresp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupHeartbeat on a share group: %v %v, want GROUP_ID_NOT_FOUND", err, cresp)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = group, 10000, 10000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	if jresp, err := jg.RequestWith(ctx, cl); err != nil || jresp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Errorf("JoinGroup on a share group: %v %v, want INCONSISTENT_GROUP_PROTOCOL", err, jresp)
	}
	if _, err := adm.FetchOffsets(ctx, group); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("OffsetFetch of a share group: %v, want GROUP_ID_NOT_FOUND", err)
	}
	if dr, err := adm.DeleteGroups(ctx, group); err != nil || !errors.Is(dr[group].Err, kerr.NonEmptyGroup) {
		t.Errorf("deleting a share group with members: %v %v, want NON_EMPTY_GROUP", err, dr)
	}

	// Leaving: the others get the partitions.
	for _, m := range []*shareMember{m1, m3} {
		resp := shareHeartbeat(ctx, t, cl, group, m.id, -1, nil)
		if resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
			t.Fatalf("leave of %s: %v epoch %d", m.id, shareErr(resp.ErrorCode), resp.MemberEpoch)
		}
	}
	if err := m2.beat(ctx, t, cl, group, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m2.assigned, []int32{0, 1, 2, 3}) {
		t.Fatalf("the last member has %v, want every partition", m2.assigned)
	}
	if resp := shareHeartbeat(ctx, t, cl, group, m2.id, -1, nil); resp.ErrorCode != 0 {
		t.Fatal(shareErr(resp.ErrorCode))
	}
	if g := shareDescribe(ctx, t, cl, group); g.GroupState != "Empty" || len(g.Members) != 0 {
		t.Fatalf("describe after everyone left: %+v", g)
	}
	if dr, err := adm.DeleteGroups(ctx, group); err != nil || dr[group].Err != nil {
		t.Fatalf("deleting the empty share group: %v %v", err, dr)
	}
	if g := shareDescribe(ctx, t, cl, group); g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe of a deleted group: %v, want GROUP_ID_NOT_FOUND", shareErr(g.ErrorCode))
	}
}

// TestShareGroupSharesPartitions: with more members than partitions each
// partition goes to several members, and every member gets one.
func TestShareGroupSharesPartitions(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, "small"); err != nil {
		t.Fatal(err)
	}
	members := make([]*shareMember, 4)
	for i := range members {
		members[i] = &shareMember{id: fmt.Sprintf("m%d", i)}
		if i == 0 {
			members[i].joinAssigned(ctx, t, cl, "crowd", []string{"small"})
			continue
		}
		members[i].join(ctx, t, cl, "crowd", []string{"small"})
	}
	holders := map[int32]int{}
	for _, m := range members {
		if err := m.beat(ctx, t, cl, "crowd", nil); err != nil {
			t.Fatal(err)
		}
		if len(m.assigned) != 1 {
			t.Fatalf("member %s has %v, want one partition", m.id, m.assigned)
		}
		holders[m.assigned[0]]++
	}
	if holders[0] != 2 || holders[1] != 2 {
		t.Fatalf("partition holders %v, want each partition shared by two members", holders)
	}
}

// TestShareGroupSessionExpiry: a member that stops heartbeating is removed
// after group.share.session.timeout.ms and its partitions go to the others.
func TestShareGroupSessionExpiry(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	live, silent := &shareMember{id: "live"}, &shareMember{id: "silent"}
	for _, m := range []*shareMember{live, silent} {
		m.join(ctx, t, cl, "expiry", []string{"work"})
	}
	sluicetest.WaitFor(t, 20*time.Second, func() error {
		if err := live.beat(ctx, t, cl, "expiry", nil); err != nil {
			return err
		}
		if !slices.Equal(live.assigned, []int32{0, 1, 2, 3}) {
			return fmt.Errorf("the live member has %v", live.assigned)
		}
		return nil
	})
	if g := shareDescribe(ctx, t, cl, "expiry"); len(g.Members) != 1 || g.Members[0].MemberID != "live" {
		t.Fatalf("after the silent member's session: %+v", g.Members)
	}
	if err := silent.beat(ctx, t, cl, "expiry", nil); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("the expired member's heartbeat: %v, want UNKNOWN_MEMBER_ID", err)
	}
}

// TestShareGroupCoordinatorFailover: the share group's state lives in
// __consumer_offsets; when its coordinator's node dies, the new
// coordinator reloads it and the members go on with their epochs and
// assignments.
func TestShareGroupCoordinatorFailover(t *testing.T) {
	broker.ForceShareGroups(t)
	c := sluicetest.StartCluster(t, 3,
		"group.share.min.session.timeout.ms=1000",
		"group.share.session.timeout.ms=20000",
		"group.share.min.heartbeat.interval.ms=100",
		"group.share.heartbeat.interval.ms=200",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fast := kgo.MetadataMinAge(50 * time.Millisecond)
	cl := c.Client(fast)
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 3, nil, "jobs"); err != nil {
		t.Fatal(err)
	}
	const group = "durable"
	a, b := &shareMember{id: "a"}, &shareMember{id: "b"}
	a.joinAssigned(ctx, t, cl, group, []string{"jobs"})
	for _, m := range []*shareMember{b, a} {
		if err := m.beat(ctx, t, cl, group, []string{"jobs"}); err != nil {
			t.Fatal(err)
		}
	}
	before := shareDescribe(ctx, t, cl, group)
	if before.ErrorCode != 0 || len(before.Members) != 2 {
		t.Fatalf("before the kill: %+v", before)
	}

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || len(fresp.Coordinators) != 1 || fresp.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %+v", err, fresp)
	}
	coord := fresp.Coordinators[0].NodeID
	c.Kill(int(coord))
	t.Logf("coordinator %d killed", coord)

	// A fresh client finds the new coordinator; the members heartbeat
	// there with the epochs they had.
	cl2 := c.Client(fast)
	var after kmsg.ShareGroupDescribeResponseGroup
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		for _, m := range []*shareMember{a, b} {
			if err := m.beat(ctx, t, cl2, group, nil); err != nil {
				return fmt.Errorf("member %s: %w", m.id, err)
			}
		}
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, cl2)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return fmt.Errorf("describe: %+v", resp.Groups)
		}
		after = resp.Groups[0]
		return nil
	})
	if after.GroupEpoch != before.GroupEpoch || len(after.Members) != 2 {
		t.Fatalf("after the failover: epoch %d (was %d), members %+v", after.GroupEpoch, before.GroupEpoch, after.Members)
	}
	for i, m := range after.Members {
		was := before.Members[i]
		if m.MemberID != was.MemberID || m.MemberEpoch != was.MemberEpoch || fmt.Sprint(m.Assignment.TopicPartitions) != fmt.Sprint(was.Assignment.TopicPartitions) {
			t.Fatalf("member changed across the failover:\n before %+v\n after  %+v", was, m)
		}
	}
	if len(a.assigned)+len(b.assigned) != 4 {
		t.Fatalf("assignments after the failover: %v and %v", a.assigned, b.assigned)
	}
}

// TestShareGroupConfigs: a share group's share.heartbeat.interval.ms and
// share.session.timeout.ms group configs apply from the members' next
// heartbeat, and values outside the broker's group.share.min/max bounds are
// refused.
func TestShareGroupConfigs(t *testing.T) {
	broker.ForceShareGroups(t)
	n := shareNode(t, "group.share.session.timeout.ms=30000")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "cfg"); err != nil {
		t.Fatal(err)
	}
	m := &shareMember{id: "m1"}
	m.join(ctx, t, cl, "tuned", []string{"cfg"})
	resp := shareHeartbeat(ctx, t, cl, "tuned", m.id, m.epoch, nil)
	if resp.ErrorCode != 0 || resp.HeartbeatIntervalMillis != 200 {
		t.Fatalf("heartbeat: %v, interval %d, want the broker's 200", shareErr(resp.ErrorCode), resp.HeartbeatIntervalMillis)
	}
	mustAlterGroupConfigs(t, cl, "tuned", "set:share.heartbeat.interval.ms=300", "set:share.session.timeout.ms=45000")
	sluicetest.WaitFor(t, 10*time.Second, func() error {
		resp := shareHeartbeat(ctx, t, cl, "tuned", m.id, m.epoch, nil)
		if resp.ErrorCode != 0 {
			return shareErr(resp.ErrorCode)
		}
		if resp.HeartbeatIntervalMillis != 300 {
			return fmt.Errorf("interval %d, want the group's 300", resp.HeartbeatIntervalMillis)
		}
		return nil
	})
	if code, msg := alterGroupConfigs(t, cl, "tuned", false, "set:share.session.timeout.ms=500"); code != kerr.InvalidConfig.Code {
		t.Fatalf("a session timeout below group.share.min.session.timeout.ms: %v %q, want INVALID_CONFIG", shareErr(code), msg)
	}
}
