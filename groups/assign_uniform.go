package groups

// The uniform assignor: every partition of the subscribed topics goes to a
// member subscribed to its topic so that the members' partition counts
// differ as little as the subscriptions allow, keeping partitions with
// their previous owners where that stays balanced. It is simpler than
// Kafka's optimized uniform assignor (no rack awareness, a greedy balance
// rather than an optimal one) but has the properties clients rely on: an
// even spread and few moves when one member joins or leaves.

import "slices"

func assignUniform(spec assignSpec) map[string]map[topicID][]int32 {
	type tp struct {
		topic     topicID
		partition int32
	}
	count := make(map[string]int, len(spec.members))
	owner := make(map[tp]string)
	subscribed := make(map[string]map[topicID]bool, len(spec.members))
	eligible := make(map[topicID][]string) // members subscribed to a topic, in id order
	var all []tp
	for _, id := range spec.sortedTopics() {
		for p := int32(0); p < spec.topics[id].partitions; p++ {
			all = append(all, tp{id, p})
		}
	}
	for _, m := range spec.members {
		subscribed[m.id] = make(map[topicID]bool, len(m.topics))
		for _, t := range m.topics {
			subscribed[m.id][t] = true
			eligible[t] = append(eligible[t], m.id)
		}
	}
	if len(spec.members) == 0 || len(all) == 0 {
		return map[string]map[topicID][]int32{}
	}

	// The most partitions any member should hold if everything could go
	// anywhere; previous owners keep partitions up to it.
	limit := (len(all) + len(spec.members) - 1) / len(spec.members)
	for _, m := range spec.members {
		for _, id := range sortedTopicIDs(m.current) {
			if !subscribed[m.id][id] {
				continue
			}
			for _, p := range m.current[id] {
				x := tp{id, p}
				if _, taken := owner[x]; taken || p >= spec.topics[id].partitions || count[m.id] >= limit {
					continue
				}
				owner[x] = m.id
				count[m.id]++
			}
		}
	}

	// Hand out the rest, each to the least loaded member that may take it.
	least := func(candidates []string) string {
		best := ""
		for _, c := range candidates {
			if best == "" || count[c] < count[best] {
				best = c
			}
		}
		return best
	}
	for _, x := range all {
		if _, ok := owner[x]; ok {
			continue
		}
		if m := least(eligible[x.topic]); m != "" {
			owner[x] = m
			count[m]++
		}
	}

	// Balance: move a partition from a member holding at least two more
	// than another member that may take it, until no such move exists.
	// Every move lowers the sum of squared counts, so this ends.
	for moved := true; moved; {
		moved = false
		for _, x := range all {
			from, ok := owner[x]
			if !ok {
				continue
			}
			to := least(eligible[x.topic])
			if to != "" && count[from]-count[to] >= 2 {
				owner[x] = to
				count[from]--
				count[to]++
				moved = true
			}
		}
	}

	out := make(map[string]map[topicID][]int32, len(spec.members))
	for _, x := range all {
		m, ok := owner[x]
		if !ok {
			continue
		}
		if out[m] == nil {
			out[m] = make(map[topicID][]int32)
		}
		out[m][x.topic] = append(out[m][x.topic], x.partition)
	}
	for _, byTopic := range out {
		for id := range byTopic {
			slices.Sort(byTopic[id])
		}
	}
	return out
}
