package groups

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestHeartbeatWhileLoading: while the group's __consumer_offsets partition
// loads, Kafka's GroupCoordinatorService answers Heartbeat with no error
// ("the group is still loading, so blindly respond"): the Java consumer
// treats COORDINATOR_LOAD_IN_PROGRESS in a heartbeat answer as an
// unexpected error. The other group requests still say the partition is
// loading.
func TestHeartbeatWhileLoading(t *testing.T) {
	h := newHarness(t, 0)
	h.c = New(h.cfg, h.log)
	h.c.SetLeadership(1, map[int32]int32{0: 0}) // led, not loaded yet
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = "g", "m", 1
	if code := h.c.Heartbeat(hb).ErrorCode; code != 0 {
		t.Fatalf("heartbeat while loading: %v, want no error", kerr.ErrorForCode(code))
	}
	hb.Group = ""
	if code := h.c.Heartbeat(hb).ErrorCode; code != kerr.InvalidGroupID.Code {
		t.Fatalf("heartbeat of the empty group id while loading: %v", kerr.ErrorForCode(code))
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = "g", "m", 1
	if code := h.c.Sync(t.Context(), sync).ErrorCode; code != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("sync while loading: %v", kerr.ErrorForCode(code))
	}
}

// TestListGroupsWhileLoading: while any led partition of __consumer_offsets
// loads, Kafka's GroupCoordinatorService.listGroups answers
// COORDINATOR_LOAD_IN_PROGRESS alone, without the groups of the partitions
// already loaded (its read of every shard fails as a whole), and the
// client asks again.
func TestListGroupsWhileLoading(t *testing.T) {
	h := newHarness(t, 0)
	h.c.SetLeadership(2, map[int32]int32{0: 0})
	h.c.LoadPending(t.Context())
	name := "g"
	for i := 0; PartitionFor(name, 2) != 0; i++ {
		name = fmt.Sprintf("g%d", i)
	}
	commit := commitReq("", -1, 0, 5, "")
	commit.Group = name
	if code := h.commit(commit); code != 0 {
		t.Fatalf("commit: %v", kerr.ErrorForCode(code))
	}
	if l := h.c.List(kmsg.NewPtrListGroupsRequest()); l.ErrorCode != 0 || len(l.Groups) != 1 {
		t.Fatalf("list with every partition loaded: %v, %d groups", kerr.ErrorForCode(l.ErrorCode), len(l.Groups))
	}
	h.c.SetLeadership(2, map[int32]int32{0: 0, 1: 0}) // partition 1 starts loading
	if l := h.c.List(kmsg.NewPtrListGroupsRequest()); l.ErrorCode != kerr.CoordinatorLoadInProgress.Code || len(l.Groups) != 0 {
		t.Fatalf("list while a partition loads: %v with %d groups, want COORDINATOR_LOAD_IN_PROGRESS alone", kerr.ErrorForCode(l.ErrorCode), len(l.Groups))
	}
}
