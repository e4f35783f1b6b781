package groups

// The simple assignor of share groups (group.share.assignors = simple),
// with the principles of Kafka 4.4's SimpleAssignor
// (SimpleHomogeneousAssignmentBuilder): balance first, then stickiness.
// A partition may be assigned to several members: with P assignable
// partitions and M members each partition goes to ceil(M/P) members (one
// when there are at least as many partitions as members), and the
// assignments are spread so that members' counts differ by at most one;
// members keep what they had where that stays balanced.
//
// When all members subscribe to the same topics the partitions of all of
// them are balanced together, as Kafka does. With differing
// subscriptions each topic is balanced among the members subscribed to
// it, which is simpler than Kafka's heterogeneous builder (that also
// balances counts across topics) but keeps its guarantees per topic.
//
// Only partitions whose share state is initialized are assignable
// (share.go). The assignor is pure: deterministic for a given input.

import "slices"

// shareAssignSpec is the simple assignor's input.
type shareAssignSpec struct {
	members    []shareAssignMember // ordered by member id
	partitions []shareTopicParts   // assignable partitions, ordered by topic id
	topics     map[topicID]int32   // topic id → number of assignable partitions
}

// shareTopicParts lists a topic's assignable partitions, sorted.
type shareTopicParts struct {
	id         topicID
	partitions []int32
}

// shareAssignMember is one member as the assignor sees it.
type shareAssignMember struct {
	id      string
	topics  []topicID           // subscribed topics that exist
	current map[topicID][]int32 // the previous target
}

type shareTP struct {
	topic     topicID
	partition int32
}

// assignShareSimple returns each member's target.
func assignShareSimple(spec shareAssignSpec) map[string]map[topicID][]int32 {
	out := make(map[string]map[topicID][]int32, len(spec.members))
	if len(spec.members) == 0 || len(spec.partitions) == 0 {
		return out
	}
	homogeneous := true
	for _, m := range spec.members[1:] {
		if !sameTopicSet(m.topics, spec.members[0].topics) {
			homogeneous = false
			break
		}
	}
	add := func(member string, x shareTP) {
		if out[member] == nil {
			out[member] = make(map[topicID][]int32)
		}
		out[member][x.topic] = append(out[member][x.topic], x.partition)
	}
	if homogeneous {
		var parts []shareTP
		for _, t := range spec.partitions {
			if slices.Contains(spec.members[0].topics, t.id) {
				for _, p := range t.partitions {
					parts = append(parts, shareTP{t.id, p})
				}
			}
		}
		balanceShare(spec.members, parts, add)
	} else {
		for _, t := range spec.partitions {
			var members []shareAssignMember
			for _, m := range spec.members {
				if slices.Contains(m.topics, t.id) {
					members = append(members, m)
				}
			}
			parts := make([]shareTP, 0, len(t.partitions))
			for _, p := range t.partitions {
				parts = append(parts, shareTP{t.id, p})
			}
			balanceShare(members, parts, add)
		}
	}
	for _, byTopic := range out {
		for id := range byTopic {
			slices.Sort(byTopic[id])
		}
	}
	return out
}

func sameTopicSet(a, b []topicID) bool {
	if len(a) != len(b) {
		return false
	}
	for _, id := range a {
		if !slices.Contains(b, id) {
			return false
		}
	}
	return true
}

// balanceShare assigns parts among members: each partition to
// ceil(M/P) members, member i wanting ceil(S(i+1)/M) − ceil(Si/M) of the
// S = ceil(M/P)·P assignments, previous holdings kept first.
func balanceShare(members []shareAssignMember, parts []shareTP, add func(string, shareTP)) {
	nm, np := len(members), len(parts)
	if nm == 0 || np == 0 {
		return
	}
	sharing := (nm + np - 1) / np
	total := sharing * np
	ceilDiv := func(a, b int) int { return (a + b - 1) / b }
	desired := make([]int, nm)
	for i := range desired {
		desired[i] = ceilDiv(total*(i+1), nm) - ceilDiv(total*i, nm)
	}
	valid := make(map[shareTP]bool, np)
	for _, x := range parts {
		valid[x] = true
	}
	holders := make(map[shareTP]map[int]bool, np)
	count := make([]int, nm)
	give := func(i int, x shareTP) {
		if holders[x] == nil {
			holders[x] = make(map[int]bool)
		}
		holders[x][i] = true
		count[i]++
	}
	// Stickiness: keep previous holdings within both limits.
	for i, m := range members {
		for _, id := range sortedTopicIDs(m.current) {
			for _, p := range m.current[id] {
				x := shareTP{id, p}
				if valid[x] && !holders[x][i] && count[i] < desired[i] && len(holders[x]) < sharing {
					give(i, x)
				}
			}
		}
	}
	// Balance: fill every partition up to its sharing, each time with the
	// least loaded member that still wants more (or, when none does, the
	// least loaded one not holding it yet).
	for _, x := range parts {
		for len(holders[x]) < sharing {
			best := -1
			for pass := 0; pass < 2 && best < 0; pass++ {
				for i := range members {
					if holders[x][i] || (pass == 0 && count[i] >= desired[i]) {
						continue
					}
					if best < 0 || count[i] < count[best] {
						best = i
					}
				}
			}
			if best < 0 {
				break
			}
			give(best, x)
		}
	}
	for _, x := range parts {
		for i := range members {
			if holders[x][i] {
				add(members[i].id, x)
			}
		}
	}
}
