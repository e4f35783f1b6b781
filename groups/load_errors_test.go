package groups

import (
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
