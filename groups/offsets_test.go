package groups

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func commitReq(member string, gen int32, partition int32, offset int64, metadata string) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 9
	r.Group, r.MemberID, r.Generation = "g", member, gen
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch, p.Metadata = partition, offset, 3, &metadata
	r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{p}}}
	return r
}

func (h *harness) commit(r *kmsg.OffsetCommitRequest) int16 {
	return h.c.CommitOffsets(context.Background(), r).Topics[0].Partitions[0].ErrorCode
}

// fetched returns the committed offset of t/partition, v8 style.
func (h *harness) fetched(partition int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	return h.fetchOffset(partition, false)
}

// fetchOffset asks OffsetFetch v8 for t/partition of group g.
func (h *harness) fetchOffset(partition int32, requireStable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.RequireStable = requireStable
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{partition}}}}}
	return h.c.FetchOffsets(r).Groups[0].Topics[0].Partitions[0]
}

func TestSimpleCommitFetchReload(t *testing.T) {
	h := newHarness(t, 0)
	if got := h.fetched(1); got.Offset != -1 || got.ErrorCode != 0 {
		t.Fatalf("unknown group fetch: %+v", got)
	}
	if code := h.commit(commitReq("", -1, 1, 42, "meta")); code != 0 {
		t.Fatalf("simple commit: %d", code)
	}
	if code := h.commit(commitReq("", -1, 2, 7, "")); code != 0 {
		t.Fatalf("simple commit: %d", code)
	}
	h.start() // a new coordinator replays the log
	got := h.fetched(1)
	if got.Offset != 42 || got.LeaderEpoch != 3 || *got.Metadata != "meta" {
		t.Fatalf("after reload: %+v", got)
	}
	if h.state() != "Empty" {
		t.Fatalf("state %s", h.state())
	}

	// Delete one offset, then the group: both survive a reload as gone.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 2}}}}
	if resp := h.c.DeleteOffsets(context.Background(), del); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", resp)
	}
	h.start()
	if got := h.fetched(2); got.Offset != -1 {
		t.Fatalf("deleted offset still there: %+v", got)
	}
	if got := h.fetched(1); got.Offset != 42 {
		t.Fatalf("other offset lost: %+v", got)
	}
	if code := h.c.Delete(context.Background(), "g"); code != 0 {
		t.Fatalf("delete group: %d", code)
	}
	if code := h.c.Delete(context.Background(), "g"); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("second delete: %d", code)
	}
	h.start()
	if got := h.fetched(1); got.Offset != -1 {
		t.Fatalf("offset of a deleted group: %+v", got)
	}
	if d := h.c.Describe(5, "g"); d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("describe deleted v5: %+v", d)
	}
	if d := h.c.Describe(6, "g"); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe deleted v6: %+v", d)
	}
}

func TestCommitChecks(t *testing.T) {
	h := newHarness(t, 0)
	if code := h.commit(commitReq("m", 3, 0, 1, "")); code != kerr.GroupIDNotFound.Code {
		t.Fatalf("member commit v9 to unknown group: %d", code)
	}
	v8 := commitReq("m", 3, 0, 1, "")
	v8.Version = 8
	if code := h.commit(v8); code != kerr.IllegalGeneration.Code {
		t.Fatalf("member commit v8 to unknown group: %d", code)
	}
	a, _ := stableGroup(t, h)
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name string
		req  *kmsg.OffsetCommitRequest
		want int16
	}{
		{"member of generation", commitReq(a, 1, 0, 10, ""), 0},
		{"old generation", commitReq(a, 0, 0, 10, ""), kerr.IllegalGeneration.Code},
		{"unknown member", commitReq("ghost", 1, 0, 10, ""), kerr.UnknownMemberID.Code},
		{"simple consumer on an active group", commitReq("", -1, 0, 10, ""), kerr.UnknownMemberID.Code},
		{"unknown partition", commitReq(a, 1, 9, 10, ""), kerr.UnknownTopicOrPartition.Code},
		{"metadata too large", commitReq(a, 1, 0, 10, long), kerr.OffsetMetadataTooLarge.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.commit(tc.req); got != tc.want {
				t.Fatalf("error %d, want %d", got, tc.want)
			}
		})
	}
	unknownTopic := commitReq(a, 1, 0, 1, "")
	unknownTopic.Topics[0].Topic = "nope"
	if got := h.commit(unknownTopic); got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %d", got)
	}
	// A consumer group's subscribed topic cannot lose its offsets, and a
	// group with members cannot be deleted.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if resp := h.c.DeleteOffsets(context.Background(), del); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		// The test members' metadata is not ConsumerMemberMetadata, so
		// they count as subscribed to everything.
		t.Fatalf("offset delete on active group: %+v", resp)
	}
	if code := h.c.Delete(context.Background(), "g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete active group: %d", code)
	}
	// A failed append is reported and leaves memory unchanged.
	h.log.fail = ErrNotLeader
	if got := h.commit(commitReq(a, 1, 0, 99, "")); got != kerr.NotCoordinator.Code {
		t.Fatalf("commit on lost leadership: %d", got)
	}
	h.log.fail = nil
	if got := h.fetched(0); got.Offset != 10 {
		t.Fatalf("offset after failed commit: %+v", got)
	}
}

func TestLeadershipChanges(t *testing.T) {
	h := newHarness(t, 0)
	a, b := h.newMember(), h.newMember()
	ja := h.joinAsync(joinReq(a, nil))
	recv(t, h.joinAsync(joinReq(b, nil)))
	recv(t, ja)
	// a waits for its assignment when the partition moves away.
	sa := h.syncAsync(syncReq(b, 1, nil))

	// The partition moves away: waiting members and new requests learn
	// that this node is no longer the coordinator.
	h.c.SetLeadership(1, nil)
	if r := recv(t, sa); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("waiting sync after losing the partition: %d", r.ErrorCode)
	}
	if code := h.heartbeat(a, 1); code != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat after losing the partition: %d", code)
	}
	// It comes back at a new epoch: loading until replayed.
	h.c.SetLeadership(1, map[int32]int32{0: 1})
	if code := h.heartbeat(a, 1); code != 0 {
		// Kafka answers a heartbeat no error while loading.
		t.Fatalf("heartbeat while loading: %d", code)
	}
	if l := h.c.List(kmsg.NewPtrListGroupsRequest()); l.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("list while loading: %+v", l)
	}
	h.c.LoadPending(context.Background())
	if code := h.heartbeat(a, 1); code != kerr.UnknownMemberID.Code {
		// Generation 1 was never synced, so nothing was persisted
		// for it: the reloaded group does not know a.
		t.Fatalf("heartbeat after reload: %d", code)
	}
}

func TestListGroupsFilters(t *testing.T) {
	h := newHarness(t, 0)
	stableGroup(t, h)
	h.commit(func() *kmsg.OffsetCommitRequest { r := commitReq("", -1, 0, 1, ""); r.Group = "simple"; return r }())
	for _, tc := range []struct {
		name   string
		states []string
		types  []string
		want   string
	}{
		{"all", nil, nil, "g,simple"},
		{"stable", []string{"stable"}, nil, "g"},
		{"empty", []string{"Empty"}, nil, "simple"},
		{"classic", nil, []string{"classic"}, "g,simple"},
		{"consumer type", nil, []string{"consumer"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := kmsg.NewPtrListGroupsRequest()
			r.Version = 5
			r.StatesFilter, r.TypesFilter = tc.states, tc.types
			var names []string
			for _, g := range h.c.List(r).Groups {
				names = append(names, g.Group)
			}
			if got := strings.Join(names, ","); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestOffsetRetention(t *testing.T) {
	h := newHarness(t, 0)
	h.cfg.OffsetsRetention = time.Minute
	h.start()
	h.commit(commitReq("", -1, 0, 5, "")) // a simple consumer's offset
	h.step(30 * time.Second)
	h.commit(commitReq("", -1, 1, 6, ""))
	h.step(31 * time.Second)
	h.c.ExpireOffsets(context.Background())
	if got := h.fetched(0); got.Offset != -1 {
		t.Fatalf("61s old offset kept: %+v", got)
	}
	if got := h.fetched(1); got.Offset != 6 {
		t.Fatalf("31s old offset expired: %+v", got)
	}
	h.step(30 * time.Second)
	h.c.ExpireOffsets(context.Background())
	if d := h.c.Describe(5, "g"); d.State != "Dead" {
		t.Fatalf("group without offsets: %s", d.State)
	}
	h.start()
	if got := h.fetched(1); got.Offset != -1 {
		t.Fatalf("expired offset back after reload: %+v", got)
	}

	// A consumer group's offsets expire from when it became Empty, and
	// not while it has members.
	a, b := stableGroup(t, h)
	h.commit(commitReq(a, 1, 2, 9, ""))
	h.step(2 * time.Minute)
	h.heartbeat(a, 1)
	h.heartbeat(b, 1)
	h.c.ExpireOffsets(context.Background())
	if got := h.fetched(2); got.Offset != 9 {
		t.Fatalf("offset of an active group expired: %+v", got)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: a}, {MemberID: b}}
	h.c.Leave(context.Background(), leave)
	h.step(30 * time.Second)
	h.c.ExpireOffsets(context.Background())
	if got := h.fetched(2); got.Offset != 9 {
		t.Fatalf("expired 30s after the group emptied: %+v", got)
	}
	h.step(31 * time.Second)
	h.c.ExpireOffsets(context.Background())
	if got := h.fetched(2); got.Offset != -1 {
		t.Fatalf("kept 61s after the group emptied: %+v", got)
	}
}

func TestDeletedTopicOffsets(t *testing.T) {
	h := newHarness(t, 0)
	h.commit(commitReq("", -1, 0, 5, ""))
	h.c.TopicsDeleted([]string{"t"})
	h.c.PurgeDeletedTopics(context.Background())
	if got := h.fetched(0); got.Offset != 5 {
		t.Fatalf("offset of a topic that still exists purged: %+v", got)
	}
	lookup := h.cfg.LookupTopic
	h.cfg.LookupTopic = func(string, [16]byte) (TopicInfo, bool) { return TopicInfo{}, false }
	h.c.cfg.LookupTopic = h.cfg.LookupTopic
	h.c.TopicsDeleted([]string{"t"})
	h.c.PurgeDeletedTopics(context.Background())
	h.cfg.LookupTopic = lookup
	h.start()
	if got := h.fetched(0); got.Offset != -1 {
		t.Fatalf("offset of a deleted topic kept: %+v", got)
	}
}
