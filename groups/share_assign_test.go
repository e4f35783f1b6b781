package groups

import (
	"fmt"
	"testing"
)

// TestAssignShareSimple checks the simple assignor's properties: every
// assignable partition is assigned, each to ceil(M/P) members; members'
// counts differ by at most one; a member keeps what it had when that stays
// balanced; members subscribed to other topics get none of a topic.
func TestAssignShareSimple(t *testing.T) {
	a, b := topicID{1}, topicID{2}
	parts := func(id topicID, n int32) shareTopicParts {
		t := shareTopicParts{id: id}
		for p := int32(0); p < n; p++ {
			t.partitions = append(t.partitions, p)
		}
		return t
	}
	member := func(id string, topics ...topicID) shareAssignMember {
		return shareAssignMember{id: id, topics: topics}
	}
	count := func(m map[topicID][]int32) int {
		n := 0
		for _, ps := range m {
			n += len(ps)
		}
		return n
	}
	for _, tc := range []struct {
		name       string
		spec       shareAssignSpec
		perPart    int // members per partition
		minPerMemb int
		maxPerMemb int
	}{
		{"more partitions than members", shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", a)}, partitions: []shareTopicParts{parts(a, 5)}}, 1, 2, 3},
		{"as many partitions as members", shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", a), member("m3", a)}, partitions: []shareTopicParts{parts(a, 3)}}, 1, 1, 1},
		{"more members than partitions", shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", a), member("m3", a), member("m4", a), member("m5", a)}, partitions: []shareTopicParts{parts(a, 2)}}, 3, 1, 2},
		{"one partition shared by all", shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", a), member("m3", a)}, partitions: []shareTopicParts{parts(a, 1)}}, 3, 1, 1},
		{"two topics, same subscription", shareAssignSpec{members: []shareAssignMember{member("m1", a, b), member("m2", a, b)}, partitions: []shareTopicParts{parts(a, 1), parts(b, 1)}}, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := assignShareSimple(tc.spec)
			holders := map[string]int{}
			for _, m := range tc.spec.members {
				n := count(out[m.id])
				if n < tc.minPerMemb || n > tc.maxPerMemb {
					t.Errorf("member %s has %d partitions, want %d..%d: %v", m.id, n, tc.minPerMemb, tc.maxPerMemb, out)
				}
				for id, ps := range out[m.id] {
					for _, p := range ps {
						holders[fmt.Sprint(id[0], "-", p)]++
					}
				}
			}
			for _, tp := range tc.spec.partitions {
				for _, p := range tp.partitions {
					if got := holders[fmt.Sprint(tp.id[0], "-", p)]; got != tc.perPart {
						t.Errorf("partition %d-%d held by %d members, want %d: %v", tp.id[0], p, got, tc.perPart, out)
					}
				}
			}
		})
	}

	t.Run("sticky", func(t *testing.T) {
		spec := shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", a)}, partitions: []shareTopicParts{parts(a, 4)}}
		spec.members[0].current = map[topicID][]int32{a: {2, 3}}
		spec.members[1].current = map[topicID][]int32{a: {0, 1}}
		out := assignShareSimple(spec)
		if fmt.Sprint(out["m1"][a]) != "[2 3]" || fmt.Sprint(out["m2"][a]) != "[0 1]" {
			t.Fatalf("previous holdings not kept: %v", out)
		}
		// A third member takes one partition; the others keep the rest.
		spec.members = append(spec.members, member("m3", a))
		out = assignShareSimple(spec)
		moved := 0
		for _, p := range []int32{2, 3} {
			if !contains(out["m1"][a], p) {
				moved++
			}
		}
		for _, p := range []int32{0, 1} {
			if !contains(out["m2"][a], p) {
				moved++
			}
		}
		if moved != 1 || count(out["m3"]) != 1 {
			t.Fatalf("a joining member should move one partition: %v", out)
		}
	})

	t.Run("heterogeneous", func(t *testing.T) {
		spec := shareAssignSpec{members: []shareAssignMember{member("m1", a), member("m2", b), member("m3", a, b)}, partitions: []shareTopicParts{parts(a, 2), parts(b, 2)}}
		out := assignShareSimple(spec)
		if len(out["m1"][b]) != 0 || len(out["m2"][a]) != 0 {
			t.Fatalf("partitions of unsubscribed topics assigned: %v", out)
		}
		for _, id := range []topicID{a, b} {
			held := map[int32]bool{}
			for _, m := range out {
				for _, p := range m[id] {
					held[p] = true
				}
			}
			if len(held) != 2 {
				t.Fatalf("topic %d not fully assigned: %v", id[0], out)
			}
		}
	})
}

func contains(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}
