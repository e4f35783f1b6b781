package groups

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerHarness is a coordinator over an in-memory log with topics the
// test can change.
type consumerHarness struct {
	*harness
	mu     sync.Mutex
	topics map[string]TopicInfo
}

var tid = topicID{1} // topic "t"

func newConsumerHarness(t *testing.T) *consumerHarness {
	ch := &consumerHarness{topics: map[string]TopicInfo{"t": {Name: "t", ID: tid, Partitions: 4}}}
	h := &harness{t: t, log: newMemLog(), clock: &clock{now: time.Unix(1_700_000_000, 0)}}
	h.cfg = Config{
		MinSessionTimeout:         time.Second,
		MaxSessionTimeout:         time.Minute,
		ConsumerSessionTimeout:    10 * time.Second,
		ConsumerHeartbeatInterval: time.Second,
		ConsumerMaxGroupSize:      3,
		LookupTopic: func(name string, id [16]byte) (TopicInfo, bool) {
			ch.mu.Lock()
			defer ch.mu.Unlock()
			for _, t := range ch.topics {
				if (name != "" && t.Name == name) || (name == "" && t.ID == id) {
					return t, true
				}
			}
			return TopicInfo{}, false
		},
		ListTopics: func() []TopicInfo {
			ch.mu.Lock()
			defer ch.mu.Unlock()
			var out []TopicInfo
			for _, t := range ch.topics {
				out = append(out, t)
			}
			return out
		},
		Now: h.clock.Now,
	}
	h.start()
	ch.harness = h
	return ch
}

func (h *consumerHarness) setTopic(info TopicInfo) {
	h.mu.Lock()
	h.topics[info.Name] = info
	h.mu.Unlock()
	h.c.TopicsChanged()
	h.c.RefreshConsumerGroups(context.Background())
}

// hb is one heartbeat; owned nil sends Topics as null (unchanged).
type hb struct {
	member   string
	epoch    int32
	topics   []string
	regex    string
	assignor string
	instance string
	owned    []int32 // partitions of "t" the member owns
	nilOwned bool
	// settings are the group's own settings the broker passes along.
	settings ConsumerGroupSettings
}

func (h *consumerHarness) send(r hb) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group = "g"
	req.MemberID = r.member
	req.MemberEpoch = r.epoch
	if r.epoch == 0 {
		req.RebalanceTimeoutMillis = 5000
		if r.regex == "" && r.topics == nil {
			r.topics = []string{"t"}
		}
	}
	if r.topics != nil {
		req.SubscribedTopicNames = r.topics
	}
	if r.regex != "" {
		req.SubscribedTopicRegex = &r.regex
	}
	if r.assignor != "" {
		req.ServerAssignor = &r.assignor
	}
	if r.instance != "" {
		req.InstanceID = &r.instance
	}
	if !r.nilOwned {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if len(r.owned) > 0 {
			req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tid, Partitions: r.owned})
		}
	}
	return h.c.ConsumerHeartbeat(context.Background(), req, "client", "/127.0.0.1", r.settings)
}

// ok sends a heartbeat that must succeed and returns the member's epoch
// and assigned partitions of "t" (nil when the answer has no assignment).
func (h *consumerHarness) ok(r hb) (int32, []int32) {
	h.t.Helper()
	resp := h.send(r)
	if resp.ErrorCode != 0 {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		h.t.Fatalf("heartbeat %+v: error %d %s", r, resp.ErrorCode, msg)
	}
	if resp.Assignment == nil {
		return resp.MemberEpoch, nil
	}
	parts := []int32{}
	for _, t := range resp.Assignment.Topics {
		if t.TopicID == tid {
			parts = t.Partitions
		}
	}
	return resp.MemberEpoch, parts
}

func (h *consumerHarness) fails(r hb, want *kerr.Error) {
	h.t.Helper()
	if got := h.send(r).ErrorCode; got != want.Code {
		h.t.Fatalf("heartbeat %+v: error %v, want %v", r, kerr.ErrorForCode(got), want)
	}
}

func eqParts(t *testing.T, what string, got []int32, want ...int32) {
	t.Helper()
	if want == nil {
		want = []int32{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: partitions %v, want %v", what, got, want)
	}
}

func TestConsumerGroupRevokeBeforeReassign(t *testing.T) {
	h := newConsumerHarness(t)
	epoch, parts := h.ok(hb{member: "a"})
	if epoch != 1 {
		t.Fatalf("first member epoch %d, want 1", epoch)
	}
	eqParts(t, "a joins", parts, 0, 1, 2, 3)

	// b joins: its target is 2,3, which a still owns.
	epoch, parts = h.ok(hb{member: "b"})
	if epoch != 2 {
		t.Fatalf("b epoch %d, want 2", epoch)
	}
	eqParts(t, "b before a revokes", parts)

	// a is asked to revoke 2,3 and stays at epoch 1 until it has.
	epoch, parts = h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3}})
	if epoch != 1 {
		t.Fatalf("a epoch %d while revoking, want 1", epoch)
	}
	eqParts(t, "a revoking", parts, 0, 1)
	if d := h.c.ConsumerDescribe("g"); d.State != "Reconciling" {
		t.Fatalf("state %s, want Reconciling", d.State)
	}
	// A keepalive (owned unknown) does not release anything.
	h.ok(hb{member: "a", epoch: 1, nilOwned: true})
	if _, parts = h.ok(hb{member: "b", epoch: 2}); len(parts) != 0 {
		t.Fatalf("b got %v before a released them", parts)
	}

	// a acknowledges: it moves to epoch 2, then b gets 2,3.
	epoch, _ = h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1}})
	if epoch != 2 {
		t.Fatalf("a epoch %d after revoking, want 2", epoch)
	}
	_, parts = h.ok(hb{member: "b", epoch: 2})
	eqParts(t, "b after a released", parts, 2, 3)
	h.ok(hb{member: "b", epoch: 2, owned: []int32{2, 3}})
	d := h.c.ConsumerDescribe("g")
	if d.State != "Stable" || d.Epoch != 2 || d.AssignmentEpoch != 2 || d.AssignorName != "range" {
		t.Fatalf("describe: %+v", d)
	}

	// a leaves: b is given everything at the next epoch.
	if resp := h.send(hb{member: "a", epoch: leaveEpoch, nilOwned: true}); resp.ErrorCode != 0 || resp.MemberEpoch != leaveEpoch {
		t.Fatalf("leave: %+v", resp)
	}
	epoch, parts = h.ok(hb{member: "b", epoch: 2, owned: []int32{2, 3}})
	if epoch != 3 {
		t.Fatalf("b epoch %d, want 3", epoch)
	}
	eqParts(t, "b alone", parts, 0, 1, 2, 3)
}

func TestConsumerGroupErrors(t *testing.T) {
	h := newConsumerHarness(t)
	h.ok(hb{member: "a"})

	h.fails(hb{member: "a", epoch: 5}, kerr.FencedMemberEpoch)
	h.fails(hb{member: "zz", epoch: 1}, kerr.UnknownMemberID)
	h.fails(hb{member: "b", assignor: "sticky"}, kerr.UnsupportedAssignor)
	h.fails(hb{member: "b", regex: "(unclosed"}, kerr.InvalidRegularExpression)
	h.fails(hb{member: "b", owned: []int32{0}}, kerr.InvalidRequest)
	h.fails(hb{member: "", epoch: 0}, kerr.InvalidRequest)
	h.fails(hb{member: "a", epoch: -3}, kerr.InvalidRequest)

	resp := h.c.ConsumerHeartbeat(context.Background(), &kmsg.ConsumerGroupHeartbeatRequest{Version: 1, Group: "missing", MemberID: "x", MemberEpoch: 3}, "", "", ConsumerGroupSettings{})
	if resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}

	h.ok(hb{member: "b"})
	h.ok(hb{member: "c"})
	h.fails(hb{member: "d"}, kerr.GroupMaxSizeReached)

	// A classic member cannot join a consumer group that has members.
	if r := h.c.Join(context.Background(), joinReq("", nil), "client", "/127.0.0.1"); r.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// v0 members get an id from the coordinator.
	req := &kmsg.ConsumerGroupHeartbeatRequest{Version: 0, Group: "v0", RebalanceTimeoutMillis: 1000, SubscribedTopicNames: []string{"t"}, Topics: []kmsg.ConsumerGroupHeartbeatRequestTopic{}}
	if r := h.c.ConsumerHeartbeat(context.Background(), req, "", "", ConsumerGroupSettings{}); r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID == "" {
		t.Fatalf("v0 join: %+v", r)
	}
}

func TestConsumerGroupStaticMember(t *testing.T) {
	h := newConsumerHarness(t)
	_, parts := h.ok(hb{member: "a", instance: "i1"})
	eqParts(t, "a", parts, 0, 1, 2, 3)
	h.fails(hb{member: "a2", instance: "i1"}, kerr.UnreleasedInstanceID)
	h.fails(hb{member: "a2", epoch: 1, instance: "i1"}, kerr.FencedInstanceID)

	// A temporary leave keeps the assignment for the next incarnation.
	if resp := h.send(hb{member: "a", epoch: staticLeaveEpoch, instance: "i1", nilOwned: true}); resp.ErrorCode != 0 || resp.MemberEpoch != staticLeaveEpoch {
		t.Fatalf("static leave: %+v", resp)
	}
	epoch, parts := h.ok(hb{member: "a2", instance: "i1"})
	if epoch != 1 {
		t.Fatalf("replacement epoch %d, want 1", epoch)
	}
	eqParts(t, "a2", parts, 0, 1, 2, 3)
	h.fails(hb{member: "a", epoch: 1}, kerr.UnknownMemberID)
}

func TestConsumerGroupSessionTimeout(t *testing.T) {
	h := newConsumerHarness(t)
	h.ok(hb{member: "a"})
	h.ok(hb{member: "b"})
	h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1}})
	h.step(6 * time.Second)
	h.ok(hb{member: "b", epoch: 2})
	h.step(6 * time.Second) // a's session ends
	epoch, parts := h.ok(hb{member: "b", epoch: 2})
	if epoch != 3 {
		t.Fatalf("b epoch %d, want 3", epoch)
	}
	eqParts(t, "b after a expired", parts, 0, 1, 2, 3)
	h.fails(hb{member: "a", epoch: 2}, kerr.UnknownMemberID)
}

func TestConsumerGroupTopicChanges(t *testing.T) {
	h := newConsumerHarness(t)
	_, parts := h.ok(hb{member: "a", regex: "t.*"})
	eqParts(t, "a", parts, 0, 1, 2, 3)

	// More partitions: a new group epoch hands them out.
	h.setTopic(TopicInfo{Name: "t", ID: tid, Partitions: 6})
	epoch, parts := h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3}})
	if epoch != 2 {
		t.Fatalf("epoch %d after growth, want 2", epoch)
	}
	eqParts(t, "after growth", parts, 0, 1, 2, 3, 4, 5)

	// A new topic matching the regular expression joins the subscription.
	h.setTopic(TopicInfo{Name: "t2", ID: topicID{2}, Partitions: 1})
	resp := h.send(hb{member: "a", epoch: 2, owned: []int32{0, 1, 2, 3, 4, 5}})
	if resp.MemberEpoch != 3 || resp.Assignment == nil || len(resp.Assignment.Topics) != 2 {
		t.Fatalf("after new topic: %+v", resp)
	}
	h.setTopic(TopicInfo{Name: "u", ID: topicID{3}, Partitions: 1})
	if resp := h.send(hb{member: "a", epoch: 3, nilOwned: true}); resp.MemberEpoch != 3 {
		t.Fatalf("an unmatched topic moved the epoch to %d", resp.MemberEpoch)
	}
}

func TestConsumerGroupOffsets(t *testing.T) {
	h := newConsumerHarness(t)
	h.ok(hb{member: "a"})
	commit := func(member string, epoch int32, partition int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 9
		req.Group, req.MemberID, req.Generation = "g", member, epoch
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: partition, Offset: 7}}}}
		return h.c.CommitOffsets(context.Background(), req).Topics[0].Partitions[0].ErrorCode
	}
	if code := commit("a", 1, 0); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if code := commit("a", 2, 0); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit with a future epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("x", 1, 0); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit of a stranger: %v", kerr.ErrorForCode(code))
	}
	// b joins (epoch 2); a keeps 0,1 which it got at epoch 1, so a late
	// commit at epoch 1 for them is still accepted (KIP-1251).
	h.ok(hb{member: "b"})
	h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3}})
	h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1}})
	if code := commit("a", 1, 1); code != 0 {
		t.Fatalf("commit at the previous epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("a", 1, 3); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit of a revoked partition: %v", kerr.ErrorForCode(code))
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	stale := "a"
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", MemberID: &stale, MemberEpoch: 1}}
	if code := h.c.FetchOffsets(fetch).Groups[0].ErrorCode; code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("fetch at an old epoch: %v", kerr.ErrorForCode(code))
	}
}

func TestConsumerGroupReload(t *testing.T) {
	h := newConsumerHarness(t)
	h.ok(hb{member: "a", instance: "i1"})
	h.ok(hb{member: "b", regex: "t"})
	h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1, 2, 3}})
	before := h.c.ConsumerDescribe("g")

	h.start() // a new coordinator replays the log
	h.c.RefreshConsumerGroups(context.Background())
	after := h.c.ConsumerDescribe("g")
	encode := func(g kmsg.ConsumerGroupDescribeResponseGroup) string {
		r := kmsg.ConsumerGroupDescribeResponse{Version: 1, Groups: []kmsg.ConsumerGroupDescribeResponseGroup{g}}
		return string(r.AppendTo(nil))
	}
	if encode(before) != encode(after) {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
	// The members carry on where they were.
	epoch, _ := h.ok(hb{member: "a", epoch: 1, owned: []int32{0, 1}})
	if epoch != 2 {
		t.Fatalf("a epoch %d after reload, want 2", epoch)
	}
	_, parts := h.ok(hb{member: "b", epoch: 2})
	eqParts(t, "b after reload", parts, 2, 3)

	// Deleting the emptied group removes it for good.
	h.ok(hb{member: "a", epoch: leaveEpoch, nilOwned: true})
	h.ok(hb{member: "b", epoch: leaveEpoch, nilOwned: true})
	if code := h.c.Delete(context.Background(), "g"); code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	h.start()
	if d := h.c.ConsumerDescribe("g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("deleted group after reload: %+v", d)
	}
}

func TestConsumerGroupListAndDescribeGroups(t *testing.T) {
	h := newConsumerHarness(t)
	h.ok(hb{member: "a"})
	list := h.c.List(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}})
	if len(list.Groups) != 1 || list.Groups[0].GroupType != "consumer" || list.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("list: %+v", list.Groups)
	}
	if list := h.c.List(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"classic"}}); len(list.Groups) != 0 {
		t.Fatalf("classic list: %+v", list.Groups)
	}
	d := h.c.Describe(5, "g")
	if d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(d.Members[0].MemberAssignment); err != nil || len(a.Topics) != 1 || len(a.Topics[0].Partitions) != 4 {
		t.Fatalf("assignment %+v: %v", a, err)
	}
}

// TestConsumerGroupOwnSettings: a group's own settings (its group
// configs) decide the heartbeat interval its members are told and when a
// silent member's session ends, from the heartbeat that carries them; a
// coordinator that loads the group asks Config.ConsumerGroupSettings for
// the session timeout of the members it restores.
func TestConsumerGroupOwnSettings(t *testing.T) {
	h := newConsumerHarness(t)
	own := ConsumerGroupSettings{SessionTimeout: 2 * time.Second, HeartbeatInterval: 300 * time.Millisecond}
	if r := h.send(hb{member: "a"}); r.HeartbeatIntervalMillis != 1000 {
		t.Fatalf("heartbeat interval %dms without group settings, want the coordinator's 1000", r.HeartbeatIntervalMillis)
	}
	r := h.send(hb{member: "a", epoch: 1, nilOwned: true, settings: own})
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 300 {
		t.Fatalf("heartbeat with group settings: %v, interval %dms, want 300", kerr.ErrorForCode(r.ErrorCode), r.HeartbeatIntervalMillis)
	}
	h.step(3 * time.Second) // past the group's 2s, well before the coordinator's 10s
	h.fails(hb{member: "a", epoch: 1}, kerr.UnknownMemberID)

	// A restored member's session is the group's, not the coordinator's.
	h.ok(hb{member: "b", settings: own})
	h.cfg.ConsumerGroupSettings = func(group string) ConsumerGroupSettings {
		if group == "g" {
			return ConsumerGroupSettings{SessionTimeout: 2 * time.Second}
		}
		return ConsumerGroupSettings{}
	}
	h.start()
	h.c.RefreshConsumerGroups(context.Background())
	h.step(3 * time.Second)
	if d := h.c.ConsumerDescribe("g"); len(d.Members) != 0 {
		t.Fatalf("restored member still in the group after the group's session timeout: %d members", len(d.Members))
	}
}
