package groups

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsRackAwareStandbys: with rack-aware assignment tags, each
// task's standby goes to a process whose tag value differs from that of
// the task's active process when one can take it. Four processes in two
// zones (p1, p2 in a; p3, p4 in b) with one standby per task: every
// standby sits in the other zone than its active task, while without tags
// the load alone decides and some standby shares its active's zone.
func TestStreamsRackAwareStandbys(t *testing.T) {
	zones := map[string]string{"p1": "a", "p2": "a", "p3": "b", "p4": "b"}
	var members []streamsAssignMember
	for _, p := range []string{"p1", "p2", "p3", "p4"} {
		members = append(members, streamsAssignMember{id: "m-" + p, processID: p, clientTags: map[string]string{"zone": zones[p], "host": p}})
	}
	zoneOf := map[string]string{}
	for _, m := range members {
		zoneOf[m.id] = m.clientTags["zone"]
	}
	tasks := map[string]int32{"0": 8, "1": 4}
	// crossZone counts the tasks whose standby is in the other zone than
	// their active task.
	crossZone := func(got map[string]streamsTasks) (cross, total int) {
		for sub, n := range tasks {
			for p := int32(0); p < n; p++ {
				var activeZone, standbyZone string
				for id, a := range got {
					if a.active.has(sub, p) {
						activeZone = zoneOf[id]
					}
					if a.standby.has(sub, p) {
						standbyZone = zoneOf[id]
					}
				}
				if standbyZone == "" {
					t.Fatalf("task %s_%d has no standby: %+v", sub, p, got)
				}
				total++
				if standbyZone != activeZone {
					cross++
				}
			}
		}
		return cross, total
	}

	got := assignStreamsTasks(members, tasks, 1, []string{"zone"})
	if cross, total := crossZone(got); cross != total {
		t.Errorf("with tags: %d of %d standbys in the other zone, want all", cross, total)
	}
	for id, a := range got {
		if a.active.size() != 3 || a.standby.size() != 3 {
			t.Errorf("with tags: %s has %d active and %d standby tasks, want 3 and 3", id, a.active.size(), a.standby.size())
		}
	}
	// A tag every process has a value of its own (host) spreads nothing
	// beyond what distinct processes already do; zone still decides.
	if cross, total := crossZone(assignStreamsTasks(members, tasks, 1, []string{"host", "zone"})); cross != total {
		t.Errorf("with tags host,zone: %d of %d standbys in the other zone, want all", cross, total)
	}
	if cross, total := crossZone(assignStreamsTasks(members, tasks, 1, nil)); cross == total {
		t.Errorf("without tags every standby (%d) is in the other zone: the test does not tell tags from load", total)
	}
}

// TestStreamsMissingClientTags: a member that does not send every tag
// key of the rack-aware assignment tags is told MISSING_CLIENT_TAGS, in a
// version 1 answer only (a version 0 client fails on a code it does not
// know, KAFKA-20744).
func TestStreamsMissingClientTags(t *testing.T) {
	h := newConsumerHarness(t)
	s := streamsSettingsForTest()
	s.RackAwareTags = []string{"zone", "cluster"} // streamsHB sends zone only
	missing := func(resp *kmsg.StreamsGroupHeartbeatResponse) string {
		for _, st := range resp.Status {
			if st.StatusCode == streamsStatusMissingClientTags {
				return st.StatusDetail
			}
		}
		return ""
	}
	v0 := streamsHB("a", "p1", 0, nil, "")
	v0.Version = 0
	if resp := streamsDelayBeat(t, h.c, v0, s); missing(resp) != "" {
		t.Fatalf("version 0 answer carries MISSING_CLIENT_TAGS: %+v", resp.Status)
	}
	v1 := streamsHB("b", "p2", 0, nil, "")
	v1.Version = 1
	resp := streamsDelayBeat(t, h.c, v1, s)
	if d := missing(resp); !strings.Contains(d, "[cluster]") {
		t.Fatalf("version 1 answer: MISSING_CLIENT_TAGS detail %q, want it to name [cluster]; statuses %+v", d, resp.Status)
	}
	s.RackAwareTags = []string{"zone"}
	v1 = streamsHB("b", "p2", resp.MemberEpoch, nil, "")
	v1.Version = 1
	if resp := streamsDelayBeat(t, h.c, v1, s); missing(resp) != "" {
		t.Fatalf("a member with every tag: %+v", resp.Status)
	}
}
