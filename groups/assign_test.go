package groups

import (
	"fmt"
	"slices"
	"testing"
)

var (
	topicA = topicID{0xa}
	topicB = topicID{0xb}
)

func specOf(topics map[topicID]assignTopic, members ...assignMember) assignSpec {
	return assignSpec{members: members, topics: topics}
}

func TestAssignRange(t *testing.T) {
	ten := map[topicID]assignTopic{topicA: {"a", 10}}
	both := map[topicID]assignTopic{topicA: {"a", 3}, topicB: {"b", 2}}
	tests := []struct {
		name string
		spec assignSpec
		want map[string]map[topicID][]int32
	}{
		{"three members ten partitions", specOf(ten,
			assignMember{id: "m1", topics: []topicID{topicA}},
			assignMember{id: "m2", topics: []topicID{topicA}},
			assignMember{id: "m3", topics: []topicID{topicA}}),
			map[string]map[topicID][]int32{
				"m1": {topicA: {0, 1, 2, 3}},
				"m2": {topicA: {4, 5, 6}},
				"m3": {topicA: {7, 8, 9}},
			}},
		{"previous target ignored", specOf(ten,
			assignMember{id: "m1", topics: []topicID{topicA}, current: map[topicID][]int32{topicA: {9}}},
			assignMember{id: "m2", topics: []topicID{topicA}}),
			map[string]map[topicID][]int32{
				"m1": {topicA: {0, 1, 2, 3, 4}},
				"m2": {topicA: {5, 6, 7, 8, 9}},
			}},
		{"more members than partitions", specOf(map[topicID]assignTopic{topicA: {"a", 2}},
			assignMember{id: "m1", topics: []topicID{topicA}},
			assignMember{id: "m2", topics: []topicID{topicA}},
			assignMember{id: "m3", topics: []topicID{topicA}}),
			map[string]map[topicID][]int32{
				"m1": {topicA: {0}},
				"m2": {topicA: {1}},
			}},
		{"different subscriptions", specOf(both,
			assignMember{id: "m1", topics: []topicID{topicA, topicB}},
			assignMember{id: "m2", topics: []topicID{topicA}}),
			map[string]map[topicID][]int32{
				"m1": {topicA: {0, 1}, topicB: {0, 1}},
				"m2": {topicA: {2}},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := assignRange(tt.spec)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// checkUniform asserts every partition of the members' topics is assigned
// exactly once to a subscriber, and returns the members' counts.
func checkUniform(t *testing.T, spec assignSpec, got map[string]map[topicID][]int32) map[string]int {
	t.Helper()
	counts := make(map[string]int)
	seen := make(map[[2]int]bool)
	for _, m := range spec.members {
		for id, ps := range got[m.id] {
			if !slices.Contains(m.topics, id) {
				t.Fatalf("%s got unsubscribed topic %x", m.id, id[0])
			}
			for _, p := range ps {
				k := [2]int{int(id[0]), int(p)}
				if seen[k] {
					t.Fatalf("partition %v assigned twice", k)
				}
				seen[k] = true
				counts[m.id]++
			}
		}
	}
	want := 0
	for id, tp := range spec.topics {
		for _, m := range spec.members {
			if slices.Contains(m.topics, id) {
				want += int(tp.partitions)
				break
			}
		}
	}
	if len(seen) != want {
		t.Fatalf("%d partitions assigned, want %d", len(seen), want)
	}
	return counts
}

func TestAssignUniform(t *testing.T) {
	topics := map[topicID]assignTopic{topicA: {"a", 7}, topicB: {"b", 5}}
	members := func(n int) []assignMember {
		var out []assignMember
		for i := range n {
			out = append(out, assignMember{id: fmt.Sprintf("m%d", i), topics: []topicID{topicA, topicB}})
		}
		return out
	}

	t.Run("balanced", func(t *testing.T) {
		for n := 1; n <= 13; n++ {
			spec := specOf(topics, members(n)...)
			counts := checkUniform(t, spec, assignUniform(spec))
			lo, hi := 12, 0
			for _, m := range spec.members {
				lo, hi = min(lo, counts[m.id]), max(hi, counts[m.id])
			}
			if hi-lo > 1 {
				t.Fatalf("%d members: counts %v differ by more than one", n, counts)
			}
		}
	})

	t.Run("sticky when a member joins", func(t *testing.T) {
		spec := specOf(topics, members(3)...)
		first := assignUniform(spec)
		next := members(4)
		for i := range 3 {
			next[i].current = first[next[i].id]
		}
		spec = specOf(topics, next...)
		second := assignUniform(spec)
		checkUniform(t, spec, second)
		moved := 0
		for i := range 3 {
			id := next[i].id
			for tid, ps := range first[id] {
				for _, p := range ps {
					if !slices.Contains(second[id][tid], p) {
						moved++
					}
				}
			}
		}
		// 12 partitions over 4 members: the newcomer needs 3, and only
		// those should move.
		if moved != 3 {
			t.Fatalf("%d partitions moved, want 3: %v -> %v", moved, first, second)
		}
	})

	t.Run("different subscriptions", func(t *testing.T) {
		spec := specOf(topics,
			assignMember{id: "m1", topics: []topicID{topicA}},
			assignMember{id: "m2", topics: []topicID{topicA, topicB}},
			assignMember{id: "m3", topics: []topicID{topicB}})
		counts := checkUniform(t, spec, assignUniform(spec))
		if counts["m1"] != 4 || counts["m2"] != 4 || counts["m3"] != 4 {
			t.Fatalf("counts %v, want 4 each", counts)
		}
	})
}
