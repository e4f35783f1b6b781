package groups

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsDelayBeat sends a heartbeat with settings and returns the answer,
// failing on an error code.
func streamsDelayBeat(t *testing.T, c *Coordinator, req *kmsg.StreamsGroupHeartbeatRequest, s StreamsGroupSettings) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	resp, _ := c.StreamsHeartbeat(context.Background(), req, "client", "host", s)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s@%d: %v", req.MemberID, req.MemberEpoch, kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp
}

func delayedDetail(resp *kmsg.StreamsGroupHeartbeatResponse) string {
	for _, s := range resp.Status {
		if s.StatusCode == streamsStatusAssignmentDelayed {
			return s.StatusDetail
		}
	}
	return ""
}

func activeOf(resp *kmsg.StreamsGroupHeartbeatResponse) []int32 {
	if resp.ActiveTasks == nil {
		return nil
	}
	out := []int32{}
	for _, ts := range resp.ActiveTasks {
		out = append(out, ts.Partitions...)
	}
	slices.Sort(out)
	return out
}

// TestStreamsInitialRebalanceDelay: the first member of a group waits for
// the delay with no tasks, at epoch 1, with ASSIGNMENT_DELAYED; a member
// that joins meanwhile waits with it and does not extend the delay; when
// it ends one assignment splits the tasks between both, at a later epoch. A
// group that empties and is joined again waits again.
func TestStreamsInitialRebalanceDelay(t *testing.T) {
	h := newConsumerHarness(t)
	s := streamsSettingsForTest()
	s.InitialRebalanceDelay = 3 * time.Second

	a := streamsDelayBeat(t, h.c, streamsHB("a", "p1", 0, nil, ""), s)
	if a.MemberEpoch != 1 || len(activeOf(a)) != 0 || delayedDetail(a) != "Assignment delayed due to the configured initial rebalance delay." {
		t.Fatalf("first join: epoch %d tasks %v statuses %+v", a.MemberEpoch, activeOf(a), a.Status)
	}
	if d := h.c.StreamsDescribe("sg", 1, false); d.State != "Assigning" {
		t.Fatalf("state during the delay: %s", d.State)
	}
	h.clock.advance(2 * time.Second)
	b := streamsDelayBeat(t, h.c, streamsHB("b", "p2", 0, nil, ""), s)
	if b.MemberEpoch != 1 || len(activeOf(b)) != 0 || delayedDetail(b) == "" {
		t.Fatalf("join during the delay: epoch %d tasks %v statuses %+v", b.MemberEpoch, activeOf(b), b.Status)
	}
	a = streamsDelayBeat(t, h.c, streamsHB("a", "p1", 1, nil, ""), s)
	if a.MemberEpoch != 1 || delayedDetail(a) == "" {
		t.Fatalf("heartbeat during the delay: epoch %d statuses %+v", a.MemberEpoch, a.Status)
	}

	h.step(time.Second) // the delay (counted from the first join) ends
	a = streamsDelayBeat(t, h.c, streamsHB("a", "p1", 1, nil, ""), s)
	b = streamsDelayBeat(t, h.c, streamsHB("b", "p2", 1, nil, ""), s)
	if a.MemberEpoch <= 1 || b.MemberEpoch != a.MemberEpoch || len(activeOf(a)) != 2 || len(activeOf(b)) != 2 || delayedDetail(a) != "" || delayedDetail(b) != "" {
		t.Fatalf("after the delay: a epoch %d tasks %v, b epoch %d tasks %v", a.MemberEpoch, activeOf(a), b.MemberEpoch, activeOf(b))
	}

	// Both leave; a new first member waits again.
	for _, id := range []string{"a", "b"} {
		req := streamsHB(id, "", -1, nil, "")
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nil, nil, nil
		streamsDelayBeat(t, h.c, req, s)
	}
	c := streamsDelayBeat(t, h.c, streamsHB("c", "p3", 0, nil, ""), s)
	if len(activeOf(c)) != 0 || delayedDetail(c) == "" {
		t.Fatalf("first join of the emptied group: tasks %v statuses %+v", activeOf(c), c.Status)
	}
	h.step(3 * time.Second)
	c = streamsDelayBeat(t, h.c, streamsHB("c", "p3", c.MemberEpoch, nil, ""), s)
	if !slices.Equal(activeOf(c), []int32{0, 1, 2, 3}) || delayedDetail(c) != "" {
		t.Fatalf("after the second delay: tasks %v statuses %+v", activeOf(c), c.Status)
	}
}

// TestStreamsAssignmentInterval: a target is computed at most once per
// assignment interval. A member that joins within the interval of the
// last assignment waits with ASSIGNMENT_DELAYED and no tasks while the
// first keeps its tasks; after the interval the tasks are split.
func TestStreamsAssignmentInterval(t *testing.T) {
	h := newConsumerHarness(t)
	s := streamsSettingsForTest()
	s.AssignmentInterval = time.Second

	a := streamsDelayBeat(t, h.c, streamsHB("a", "p1", 0, nil, ""), s)
	if !slices.Equal(activeOf(a), []int32{0, 1, 2, 3}) || delayedDetail(a) != "" {
		t.Fatalf("first join: tasks %v statuses %+v", activeOf(a), a.Status)
	}
	h.clock.advance(400 * time.Millisecond)
	b := streamsDelayBeat(t, h.c, streamsHB("b", "p2", 0, nil, ""), s)
	if len(activeOf(b)) != 0 || b.MemberEpoch != a.MemberEpoch || delayedDetail(b) != "Assignment delayed due to the configured assignment interval." {
		t.Fatalf("join within the interval: epoch %d (a: %d) tasks %v statuses %+v", b.MemberEpoch, a.MemberEpoch, activeOf(b), b.Status)
	}
	a2 := streamsDelayBeat(t, h.c, streamsHB("a", "p1", a.MemberEpoch, activeOf(a), ""), s)
	if a2.MemberEpoch != a.MemberEpoch || a2.ActiveTasks != nil || delayedDetail(a2) == "" {
		t.Fatalf("a within the interval: epoch %d tasks %v statuses %+v", a2.MemberEpoch, activeOf(a2), a2.Status)
	}
	if d := h.c.StreamsDescribe("sg", 1, false); d.State != "Assigning" {
		t.Fatalf("state while the assignment waits: %s", d.State)
	}

	h.step(600 * time.Millisecond) // the Tick computes the target
	a2 = streamsDelayBeat(t, h.c, streamsHB("a", "p1", a.MemberEpoch, activeOf(a), ""), s)
	if len(activeOf(a2)) != 2 || delayedDetail(a2) != "" {
		t.Fatalf("a after the interval: epoch %d tasks %v statuses %+v", a2.MemberEpoch, activeOf(a2), a2.Status)
	}
	a3 := streamsDelayBeat(t, h.c, streamsHB("a", "p1", a2.MemberEpoch, activeOf(a2), ""), s)
	b = streamsDelayBeat(t, h.c, streamsHB("b", "p2", b.MemberEpoch, nil, ""), s)
	if len(activeOf(b)) != 2 || b.MemberEpoch != a3.MemberEpoch || b.MemberEpoch <= a.MemberEpoch {
		t.Fatalf("b after a revoked: epoch %d (a: %d) tasks %v", b.MemberEpoch, a3.MemberEpoch, activeOf(b))
	}
}

// TestStreamsDelayedGroupReloaded: a group whose first assignment was
// still held back when its coordinator moved is assigned by the new
// coordinator with the settings of the group's next heartbeat, not by a
// Tick before it (which knows no settings yet): the standby asked for is
// there.
func TestStreamsDelayedGroupReloaded(t *testing.T) {
	h := newConsumerHarness(t)
	s := streamsSettingsForTest()
	s.InitialRebalanceDelay = 3 * time.Second
	s.NumStandbyReplicas = 1
	a := streamsDelayBeat(t, h.c, streamsHB("a", "p1", 0, nil, ""), s)
	b := streamsDelayBeat(t, h.c, streamsHB("b", "p2", 0, nil, ""), s)

	h.start() // a new coordinator replays the log; the delay is not persisted
	h.step(time.Second)
	a = streamsDelayBeat(t, h.c, streamsHB("a", "p1", a.MemberEpoch, nil, ""), s)
	b = streamsDelayBeat(t, h.c, streamsHB("b", "p2", b.MemberEpoch, nil, ""), s)
	if len(activeOf(a)) != 2 || len(activeOf(b)) != 2 || len(a.StandbyTasks) == 0 || len(b.StandbyTasks) == 0 {
		t.Fatalf("after the reload: a active %v standby %+v, b active %v standby %+v", activeOf(a), a.StandbyTasks, activeOf(b), b.StandbyTasks)
	}
}
