package broker_test

// Tests of when and how a streams group assigns its tasks, as a Streams
// client sees it in its StreamsGroupHeartbeat answers: the initial
// rebalance delay, the assignment interval (broker keys and group
// configs) and the spreading of standbys over client tags.

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/sluicetest"
)

// streamsAssignmentDelayed is ASSIGNMENT_DELAYED, the status a member gets
// while a delay holds its group's assignment back.
const streamsAssignmentDelayed = 5

func streamsAssignmentNode(t *testing.T, overrides ...string) *sluicetest.Node {
	return sluicetest.Start(t, append([]string{
		"group.streams.min.session.timeout.ms=1000",
		"group.streams.session.timeout.ms=3000",
		"group.streams.min.heartbeat.interval.ms=100",
		"group.streams.heartbeat.interval.ms=200",
	}, overrides...)...)
}

// TestStreamsGroupInitialRebalanceDelay: with
// group.streams.initial.rebalance.delay.ms, the first member of a group
// gets no tasks and ASSIGNMENT_DELAYED; a member that joins meanwhile too;
// when the delay ends the one assignment splits the tasks between both,
// so the first never held them all. A group whose
// streams.initial.rebalance.delay.ms is 0 is assigned at once.
func TestStreamsGroupInitialRebalanceDelay(t *testing.T) {
	n := streamsAssignmentNode(t, "group.streams.initial.rebalance.delay.ms=2000", "group.streams.assignment.interval.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	const group = "delayed-app"
	a := &streamsMember{id: "a", process: "p1", source: "in", changelog: group + "-store-changelog"}
	b := &streamsMember{id: "b", process: "p2", source: "in", changelog: group + "-store-changelog"}
	a.beatOK(ctx, t, cl, group)
	if len(a.active) != 0 || !slices.Contains(a.status, streamsAssignmentDelayed) {
		t.Fatalf("first member: tasks %v statuses %v, want none and ASSIGNMENT_DELAYED", a.active, a.status)
	}
	b.beatOK(ctx, t, cl, group)
	if len(b.active) != 0 || !slices.Contains(b.status, streamsAssignmentDelayed) {
		t.Fatalf("second member: tasks %v statuses %v, want none and ASSIGNMENT_DELAYED", b.active, b.status)
	}
	if d := streamsDescribe(ctx, t, cl, group); d.State != "Assigning" {
		t.Fatalf("state during the delay: %s", d.State)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		for _, m := range []*streamsMember{a, b} {
			m.beatOK(ctx, t, cl, group)
			if len(m.active) > 2 {
				t.Fatalf("%s got %v: the first assignment did not wait for the second member", m.id, m.active)
			}
		}
		if len(a.active) != 2 || len(b.active) != 2 {
			return fmt.Errorf("a %v (statuses %v), b %v (statuses %v)", a.active, a.status, b.active, b.status)
		}
		return nil
	})
	if slices.Contains(a.status, streamsAssignmentDelayed) {
		t.Fatalf("statuses after the delay: %v", a.status)
	}

	const quick = "quick-app"
	if code, msg := alterGroupConfigs(t, cl, quick, false, "set:streams.initial.rebalance.delay.ms=0"); code != 0 {
		t.Fatalf("set streams.initial.rebalance.delay.ms: %v (%s)", kerr.ErrorForCode(code), msg)
	}
	c := &streamsMember{id: "c", process: "p3", source: "in", changelog: quick + "-store-changelog"}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		c.beatOK(ctx, t, cl, quick)
		if slices.Contains(c.status, streamsAssignmentDelayed) {
			t.Fatalf("a group with streams.initial.rebalance.delay.ms=0 was delayed: statuses %v", c.status)
		}
		if len(c.active) != 4 {
			return fmt.Errorf("c %v, statuses %v", c.active, c.status)
		}
		return nil
	})
}

// TestStreamsGroupAssignmentInterval: group.streams.assignment.interval.ms,
// altered as the cluster default (clamped to its max, 15 s), holds a new
// member's assignment back while the group's last one is recent: the new
// member waits with ASSIGNMENT_DELAYED and no tasks and the first keeps
// all of them. The group's own streams.assignment.interval.ms of 0 then
// lets the next heartbeat assign the tasks to both.
func TestStreamsGroupAssignmentInterval(t *testing.T) {
	n := streamsAssignmentNode(t, "group.streams.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	if err := alterClusterDefault(t, n, "group.streams.assignment.interval.ms", "600000"); err != nil {
		t.Fatalf("alter group.streams.assignment.interval.ms: %v", err)
	}
	const group = "batched-app"
	a := &streamsMember{id: "a", process: "p1", source: "in", changelog: group + "-store-changelog"}
	b := &streamsMember{id: "b", process: "p2", source: "in", changelog: group + "-store-changelog"}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		if len(a.active) != 4 {
			return fmt.Errorf("a %v, statuses %v", a.active, a.status)
		}
		return nil
	})
	// The altered interval reaches the coordinator through the metadata
	// log: b joins (again) until its assignment is held back.
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		b.epoch, b.active = 0, nil
		b.beatOK(ctx, t, cl, group)
		if !slices.Contains(b.status, streamsAssignmentDelayed) {
			return fmt.Errorf("b: tasks %v statuses %v, want ASSIGNMENT_DELAYED", b.active, b.status)
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		a.beatOK(ctx, t, cl, group)
		b.beatOK(ctx, t, cl, group)
		if len(a.active) != 4 || len(b.active) != 0 || !slices.Contains(b.status, streamsAssignmentDelayed) {
			t.Fatalf("within the interval: a %v, b %v (statuses %v)", a.active, b.active, b.status)
		}
	}
	if code, msg := alterGroupConfigs(t, cl, group, false, "set:streams.assignment.interval.ms=0"); code != 0 {
		t.Fatalf("set streams.assignment.interval.ms: %v (%s)", kerr.ErrorForCode(code), msg)
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		a.beatOK(ctx, t, cl, group)
		b.beatOK(ctx, t, cl, group)
		if len(a.active) != 2 || len(b.active) != 2 {
			return fmt.Errorf("a %v, b %v (statuses %v)", a.active, b.active, b.status)
		}
		return nil
	})
}

// streamsMissingClientTags is MISSING_CLIENT_TAGS (heartbeat v1 on).
const streamsMissingClientTags = 6

// TestStreamsGroupRackAwareStandbys: with
// group.streams.rack.aware.assignment.tags=zone and one standby per task,
// four processes in two zones each run one task, and every task's standby
// is in the other zone than the task. A member that sends no zone tag is
// told MISSING_CLIENT_TAGS.
func TestStreamsGroupRackAwareStandbys(t *testing.T) {
	n := streamsAssignmentNode(t, "group.streams.initial.rebalance.delay.ms=0", "group.streams.assignment.interval.ms=0",
		"group.streams.rack.aware.assignment.tags=zone", "group.streams.num.standby.replicas=1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := n.Client()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 4, 1, nil, "in"); err != nil {
		t.Fatal(err)
	}
	const group = "rack-app"
	zone := map[string]string{"p1": "a", "p2": "a", "p3": "b", "p4": "b"}
	var members []*streamsMember
	for _, p := range []string{"p1", "p2", "p3", "p4"} {
		members = append(members, &streamsMember{id: "m-" + p, process: p, source: "in", changelog: group + "-store-changelog",
			tags: map[string]string{"zone": zone[p]}})
	}
	sluicetest.WaitFor(t, 30*time.Second, func() error {
		activeZone, standbyZone := map[int32]string{}, map[int32]string{}
		for _, m := range members {
			m.beatOK(ctx, t, cl, group)
			if slices.Contains(m.status, streamsMissingClientTags) {
				t.Fatalf("%s sent its zone and got MISSING_CLIENT_TAGS", m.id)
			}
			for _, p := range m.active {
				activeZone[p] = zone[m.process]
			}
			for _, p := range m.standby {
				standbyZone[p] = zone[m.process]
			}
		}
		for p := int32(0); p < 4; p++ {
			if activeZone[p] == "" || standbyZone[p] == "" || activeZone[p] == standbyZone[p] {
				return fmt.Errorf("task %d: active in zone %q, standby in zone %q", p, activeZone[p], standbyZone[p])
			}
		}
		return nil
	})

	untagged := &streamsMember{id: "m-p5", process: "p5", source: "in", changelog: group + "-store-changelog"}
	untagged.beatOK(ctx, t, cl, group)
	if !slices.Contains(untagged.status, streamsMissingClientTags) {
		t.Fatalf("a member without a zone tag: statuses %v, want MISSING_CLIENT_TAGS", untagged.status)
	}
}
