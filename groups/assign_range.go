package groups

// Server-side assignors of consumer groups (group.consumer.assignors) and
// the range assignor.
//
// An assignor gets every member with the topics it subscribes to (by id,
// only topics that exist) and its previous target, and returns each
// member's new target. It is pure: no clock, no I/O, deterministic for a
// given input, so the same group state always yields the same target.

import "slices"

// assignSpec is an assignor's input.
type assignSpec struct {
	members []assignMember // ordered by member id
	topics  map[topicID]assignTopic
}

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id      string
	topics  []topicID           // subscribed topics that exist
	current map[topicID][]int32 // the previous target
}

type assignTopic struct {
	name       string
	partitions int32
}

// assignorFuncs are the assignors by the name a client asks for.
var assignorFuncs = map[string]func(assignSpec) map[string]map[topicID][]int32{
	"range":   assignRange,
	"uniform": assignUniform,
}

// sortedTopics lists the spec's topics by name.
func (s assignSpec) sortedTopics() []topicID {
	ids := make([]topicID, 0, len(s.topics))
	for id := range s.topics {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b topicID) int {
		if s.topics[a].name < s.topics[b].name {
			return -1
		}
		if s.topics[a].name > s.topics[b].name {
			return 1
		}
		return 0
	})
	return ids
}

// assignRange gives each member subscribed to a topic one contiguous block
// of its partitions, in member id order, the first partitions % members
// members one partition more: members subscribed to the same
// co-partitioned topics get the same partition numbers of each. Unlike
// Kafka 4's server-side range assignor it does not try to keep previous
// owners (stickiness); the blocks depend only on the members and topics.
func assignRange(spec assignSpec) map[string]map[topicID][]int32 {
	out := make(map[string]map[topicID][]int32, len(spec.members))
	for _, id := range spec.sortedTopics() {
		var subscribers []string
		for _, m := range spec.members {
			if slices.Contains(m.topics, id) {
				subscribers = append(subscribers, m.id)
			}
		}
		if len(subscribers) == 0 {
			continue
		}
		n := spec.topics[id].partitions
		k := int32(len(subscribers))
		quota, extra := n/k, n%k
		start := int32(0)
		for i, member := range subscribers {
			size := quota
			if int32(i) < extra {
				size++
			}
			if size == 0 {
				continue
			}
			ps := make([]int32, 0, size)
			for p := start; p < start+size; p++ {
				ps = append(ps, p)
			}
			start += size
			if out[member] == nil {
				out[member] = make(map[topicID][]int32)
			}
			out[member][id] = ps
		}
	}
	return out
}
