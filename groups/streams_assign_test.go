package groups

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// tasksOf builds a taskSet from "sub:p" strings.
func tasksOf(ids ...string) taskSet {
	var t taskSet
	for _, id := range ids {
		var sub string
		var p int32
		if _, err := fmt.Sscanf(id, "%1s:%d", &sub, &p); err != nil {
			panic(err)
		}
		t.add(sub, p)
	}
	return t
}

// checkActiveComplete fails unless every task has exactly one active owner
// and the members' active counts differ by at most one.
func checkActiveComplete(t *testing.T, got map[string]streamsTasks, tasks map[string]int32) {
	t.Helper()
	owners := map[taskID]int{}
	lo, hi := 1<<30, -1
	for _, a := range got {
		n := a.active.size()
		lo, hi = min(lo, n), max(hi, n)
		for sub, ps := range a.active {
			for p := range ps {
				owners[taskID{sub, p}]++
			}
		}
	}
	for _, task := range allTasks(tasks) {
		if owners[task] != 1 {
			t.Fatalf("task %v has %d active owners", task, owners[task])
		}
	}
	if len(owners) != len(allTasks(tasks)) {
		t.Fatalf("%d tasks assigned, want %d", len(owners), len(allTasks(tasks)))
	}
	if hi-lo > 1 {
		t.Fatalf("active tasks unbalanced: %d to %d per member", lo, hi)
	}
}

func TestStreamsAssignorActive(t *testing.T) {
	tasks := map[string]int32{"0": 3, "1": 3}
	for _, tc := range []struct {
		name    string
		members []streamsAssignMember
		// kept lists tasks that must stay with their previous owner.
		kept map[string]taskSet
	}{
		{
			name:    "one member gets every task",
			members: []streamsAssignMember{{id: "a", processID: "p1"}},
		},
		{
			name:    "three members share six tasks two each",
			members: []streamsAssignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p2"}, {id: "c", processID: "p3"}},
		},
		{
			name:    "more members than tasks",
			members: []streamsAssignMember{{id: "a"}, {id: "b"}, {id: "c"}, {id: "d"}, {id: "e"}, {id: "f"}, {id: "g"}},
		},
		{
			name: "a joining member takes from the others, who keep the rest",
			members: []streamsAssignMember{
				{id: "a", processID: "p1", previous: streamsTasks{active: tasksOf("0:0", "0:1", "0:2")}},
				{id: "b", processID: "p2", previous: streamsTasks{active: tasksOf("1:0", "1:1", "1:2")}},
				{id: "c", processID: "p3"},
			},
			kept: map[string]taskSet{"a": tasksOf("0:0", "0:1"), "b": tasksOf("1:0", "1:1")},
		},
		{
			name: "the survivors of a member that left keep theirs",
			members: []streamsAssignMember{
				{id: "a", processID: "p1", previous: streamsTasks{active: tasksOf("0:0", "0:1")}},
				{id: "c", processID: "p3", previous: streamsTasks{active: tasksOf("1:1", "1:2")}},
			},
			kept: map[string]taskSet{"a": tasksOf("0:0", "0:1"), "c": tasksOf("1:1", "1:2")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assignStreamsTasks(tc.members, tasks, 0, nil)
			checkActiveComplete(t, got, tasks)
			for id, want := range tc.kept {
				for sub, ps := range want {
					for p := range ps {
						if !got[id].active.has(sub, p) {
							t.Fatalf("member %s lost task %s_%d it owned: got %v", id, sub, p, got[id].active)
						}
					}
				}
			}
			for _, m := range tc.members {
				if got[m.id].standby.size() != 0 {
					t.Fatalf("member %s got standbys without num.standby.replicas", m.id)
				}
			}
			// Deterministic: the same input gives the same output.
			again := assignStreamsTasks(tc.members, tasks, 0, nil)
			for id, a := range got {
				if !a.equal(again[id]) {
					t.Fatalf("member %s: %v then %v", id, a, again[id])
				}
			}
		})
	}
}

func TestStreamsAssignorStandby(t *testing.T) {
	tasks := map[string]int32{"0": 4}
	for _, tc := range []struct {
		name     string
		members  []streamsAssignMember
		standbys int
		perTask  int // standbys every task must get
		sticky   map[string]taskSet
	}{
		{
			name:     "one standby on another process",
			members:  []streamsAssignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p2"}},
			standbys: 1, perTask: 1,
		},
		{
			name:     "two threads of one process hold no standbys of each other",
			members:  []streamsAssignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p1"}},
			standbys: 1, perTask: 0,
		},
		{
			name:     "fewer processes than copies",
			members:  []streamsAssignMember{{id: "a", processID: "p1"}, {id: "b", processID: "p2"}},
			standbys: 2, perTask: 1,
		},
		{
			name: "a standby stays where it was",
			members: []streamsAssignMember{
				{id: "a", processID: "p1", previous: streamsTasks{active: tasksOf("0:0", "0:1")}},
				{id: "b", processID: "p2", previous: streamsTasks{active: tasksOf("0:2", "0:3")}},
				{id: "c", processID: "p3", previous: streamsTasks{standby: tasksOf("0:0", "0:1", "0:2", "0:3")}},
			},
			standbys: 1, perTask: 1,
			sticky: map[string]taskSet{"c": tasksOf("0:0", "0:1", "0:2", "0:3")},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assignStreamsTasks(tc.members, tasks, tc.standbys, nil)
			checkActiveComplete(t, got, tasks)
			process := map[string]string{}
			for _, m := range tc.members {
				process[m.id] = m.processID
			}
			for _, task := range allTasks(tasks) {
				holders := map[string]int{}
				n := 0
				for id, a := range got {
					if a.active.has(task.sub, task.p) {
						holders[process[id]]++
					}
					if a.standby.has(task.sub, task.p) {
						holders[process[id]]++
						n++
					}
				}
				for p, c := range holders {
					if c > 1 {
						t.Fatalf("process %s holds %d copies of task %v", p, c, task)
					}
				}
				if n != tc.perTask {
					t.Fatalf("task %v has %d standbys, want %d", task, n, tc.perTask)
				}
			}
			// A previous standby stays, unless the member became the
			// task's active owner (the balance moved a task to it).
			for id, want := range tc.sticky {
				for sub, ps := range want {
					for p := range ps {
						if !got[id].standby.has(sub, p) && !got[id].active.has(sub, p) {
							t.Fatalf("member %s lost its standby %s_%d: standbys %v, active %v", id, sub, p, got[id].standby, got[id].active)
						}
					}
				}
			}
		})
	}
}

// TestStreamsTopologyConfigure: the task counts, internal topics to create
// and statuses of a topology against the topics that exist.
func TestStreamsTopologyConfigure(t *testing.T) {
	info := func(name string, n int32) TopicInfo { return TopicInfo{Name: name, Partitions: n} }
	topo := &streamsTopology{epoch: 0, subs: []streamsSubtopology{
		{id: "0", sourceTopics: []string{"in"}, repartitionSinks: []string{"app-rep"}},
		{id: "1", repartitionSources: []kmsg.TopicInfo{{Topic: "app-rep"}}, changelogs: []kmsg.TopicInfo{{Topic: "app-store-changelog"}}},
	}}
	cases := []struct {
		name          string
		topics        map[string]TopicInfo
		ready         bool
		tasks         map[string]int32
		create        map[string]int32
		missingSource bool
		incorrect     bool
	}{
		{name: "source missing", topics: map[string]TopicInfo{}, missingSource: true},
		{name: "internal topics to create", topics: map[string]TopicInfo{"in": info("in", 4)},
			create: map[string]int32{"app-rep": 4, "app-store-changelog": 4}},
		{name: "ready", topics: map[string]TopicInfo{"in": info("in", 4), "app-rep": info("app-rep", 4), "app-store-changelog": info("app-store-changelog", 4)},
			ready: true, tasks: map[string]int32{"0": 4, "1": 4}},
		{name: "changelog with the wrong partition count", topics: map[string]TopicInfo{"in": info("in", 4), "app-rep": info("app-rep", 4), "app-store-changelog": info("app-store-changelog", 2)},
			incorrect: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configure(topo, tc.topics)
			if cfg.ready() != tc.ready {
				t.Fatalf("ready %v, want %v (%+v)", cfg.ready(), tc.ready, cfg)
			}
			if (len(cfg.missingSource) > 0) != tc.missingSource || (len(cfg.incorrect) > 0) != tc.incorrect {
				t.Fatalf("missing source %v, incorrect %v", cfg.missingSource, cfg.incorrect)
			}
			for id, n := range tc.tasks {
				if cfg.tasks[id] != n {
					t.Fatalf("subtopology %s: %d tasks, want %d", id, cfg.tasks[id], n)
				}
			}
			got := map[string]int32{}
			for _, c := range cfg.missingInternal {
				got[c.Name] = c.Partitions
			}
			if len(got) != len(tc.create) {
				t.Fatalf("to create %v, want %v", got, tc.create)
			}
			for name, n := range tc.create {
				if got[name] != n {
					t.Fatalf("to create %v, want %v", got, tc.create)
				}
			}
		})
	}
}
