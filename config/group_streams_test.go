package config

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestStreamsGroupBrokerKeys loads and validates the group.streams.* keys
// of streams group assignment as a node does at start: Kafka's names of
// the sticky assignor are accepted, anything else is refused with a
// message saying why; the assignment interval lies within its bounds
// (Kafka's GroupCoordinatorConfig sentences); no tag is listed twice.
func TestStreamsGroupBrokerKeys(t *testing.T) {
	tests := []struct {
		name      string
		overrides []string
		want      string // the exact error text; "" for success
	}{
		{"defaults", nil, ""},
		{"sticky by name", []string{"group.streams.assignors=sticky"}, ""},
		{"sticky by class", []string{"group.streams.assignors=" + StickyTaskAssignorClass}, ""},
		{"custom assignor class", []string{"group.streams.assignors=com.example.MyAssignor"},
			`config: group.streams.assignors: "com.example.MyAssignor" is not a task assignor sluice has: only Kafka's sticky assignor (sticky or ` + StickyTaskAssignorClass + `) is built in, and sluice cannot load an assignor class (in --override)`},
		{"unknown name", []string{"group.streams.assignors=sticky,balanced"},
			`config: group.streams.assignors: "balanced" is not a task assignor sluice has: only Kafka's sticky assignor (sticky or ` + StickyTaskAssignorClass + `) is built in, and sluice cannot load an assignor class (in --override)`},
		{"empty", []string{"group.streams.assignors="}, `config: group.streams.assignors: must not be empty (in --override)`},
		{"duplicate", []string{"group.streams.assignors=sticky,sticky"}, `config: group.streams.assignors: sticky is listed twice (in --override)`},
		{"interval bounds lowered", []string{"group.streams.min.assignment.interval.ms=100", "group.streams.assignment.interval.ms=100", "group.streams.max.assignment.interval.ms=100"}, ""},
		{"max below min", []string{"group.streams.min.assignment.interval.ms=2000", "group.streams.max.assignment.interval.ms=1000"},
			"config: group.streams.max.assignment.interval.ms: must be greater than or equal to group.streams.min.assignment.interval.ms"},
		{"interval below min", []string{"group.streams.min.assignment.interval.ms=2000"},
			"config: group.streams.assignment.interval.ms: must be greater than or equal to group.streams.min.assignment.interval.ms"},
		{"interval above max", []string{"group.streams.assignment.interval.ms=20000"},
			"config: group.streams.assignment.interval.ms: must be less than or equal to group.streams.max.assignment.interval.ms"},
		{"negative interval", []string{"group.streams.assignment.interval.ms=-1"},
			"config: group.streams.assignment.interval.ms: -1 is out of range: must be at least 0 (in --override)"},
		{"negative delay", []string{"group.streams.initial.rebalance.delay.ms=-1"},
			"config: group.streams.initial.rebalance.delay.ms: -1 is out of range: must be at least 0 (in --override)"},
		{"rack tags", []string{"group.streams.rack.aware.assignment.tags=zone,cluster"}, ""},
		{"rack tag twice", []string{"group.streams.rack.aware.assignment.tags=zone,zone"}, "config: group.streams.rack.aware.assignment.tags: zone is listed twice (in --override)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", append([]string{"log.dirs=" + filepath.Join(t.TempDir(), string(rune('a'+i)))}, tt.overrides...))
			if err == nil {
				err = b.Validate()
			}
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error\n got: %v\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("error does not wrap ErrInvalidValue")
			}
		})
	}
}

// TestStreamsGroupAssignmentSettings: a group's streams.* configs override
// the broker's, and a dynamic group.streams.assignment.interval.ms is
// clamped to its bounds, as Kafka clamps it.
func TestStreamsGroupAssignmentSettings(t *testing.T) {
	b, err := Load("", []string{"log.dirs=" + t.TempDir(), "group.streams.rack.aware.assignment.tags=zone", "group.streams.max.assignment.interval.ms=5000"})
	if err != nil {
		t.Fatal(err)
	}
	a := b.StreamsGroupAssignment(nil, nil, nil)
	if a.InitialRebalanceDelayMs != 3000 || a.AssignmentIntervalMs != 1000 || len(a.RackAwareTags) != 1 || a.RackAwareTags[0] != "zone" {
		t.Fatalf("broker values: %+v", a)
	}
	if a := b.StreamsGroupAssignment(nil, nil, map[string]string{"group.streams.assignment.interval.ms": "600000"}); a.AssignmentIntervalMs != 5000 {
		t.Fatalf("cluster default above the max: %d, want 5000", a.AssignmentIntervalMs)
	}
	if a := b.StreamsGroupAssignment(nil, map[string]string{"group.streams.assignment.interval.ms": "200"}, map[string]string{"group.streams.assignment.interval.ms": "600000"}); a.AssignmentIntervalMs != 200 {
		t.Fatalf("per-broker value: %d, want 200", a.AssignmentIntervalMs)
	}
	group := map[string]string{"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0", "streams.rack.aware.assignment.tags": "zone, cluster"}
	if a := b.StreamsGroupAssignment(group, nil, nil); a.InitialRebalanceDelayMs != 0 || a.AssignmentIntervalMs != 0 || len(a.RackAwareTags) != 2 || a.RackAwareTags[1] != "cluster" {
		t.Fatalf("group values: %+v", a)
	}
}
