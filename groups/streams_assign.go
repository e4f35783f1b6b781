package groups

// The task assignor of streams groups ("sticky", group.streams.assignors'
// only entry), after Kafka 4.4's StickyTaskAssignor:
//
//   - active tasks are balanced over the members (each member is one
//     StreamThread): every member gets ⌊T/M⌋ or ⌈T/M⌉ of the T tasks;
//   - a task stays with its previous owner while that keeps the balance;
//     a task that must move, or has no owner, goes to a least-loaded
//     member, preferring one whose process held the task as a standby
//     (its state is there already), then the member id;
//   - each task gets up to num.standby.replicas standbys, each on a
//     process that holds no other copy of the task (active or standby),
//     preferring its previous standby holder, then the least-loaded
//     member. With too few processes a task gets fewer standbys, as in
//     Kafka;
//   - with rack-aware assignment tags (group.streams.rack.aware.assignment.tags,
//     Kafka Streams' client-tag-aware standby assignment), a standby goes
//     first to a process whose client tag values differ from those of
//     every process already holding the task, for as many of the tag keys
//     as possible: with tags zone and cluster, a task active in zone a
//     gets its standby in zone b if a process there can take it. Only
//     then do the previous holder and the load decide. Processes that
//     lack a tag count as one more value of it.
//
// Warm-up tasks (Kafka's internal num.warmup.replicas, for moving an
// active task to a process that must first catch up) are not assigned:
// an active task moves at once and its new owner restores from the
// changelog.

import (
	"slices"
	"strings"
)

// streamsAssignMember is one member as the assignor sees it.
type streamsAssignMember struct {
	id         string
	processID  string
	clientTags map[string]string // StreamsGroupHeartbeat's ClientTags
	previous   streamsTasks      // the member's previous target
}

type taskID struct {
	sub string
	p   int32
}

func allTasks(tasks map[string]int32) []taskID {
	var out []taskID
	for _, sub := range sortedKeys(tasks) {
		for p := int32(0); p < tasks[sub]; p++ {
			out = append(out, taskID{sub, p})
		}
	}
	return out
}

// assignStreamsTasks computes the target assignment of members (sorted by
// id) over tasks (subtopology id → number of tasks), with numStandby
// standbys of each task spread over the values of the client tags named by
// rackTags.
func assignStreamsTasks(members []streamsAssignMember, tasks map[string]int32, numStandby int, rackTags []string) map[string]streamsTasks {
	out := make(map[string]streamsTasks, len(members))
	if len(members) == 0 {
		return out
	}
	members = slices.Clone(members)
	slices.SortFunc(members, func(a, b streamsAssignMember) int { return strings.Compare(a.id, b.id) })
	all := allTasks(tasks)
	active := make(map[string]*taskSet, len(members))
	standby := make(map[string]*taskSet, len(members))
	for _, m := range members {
		active[m.id], standby[m.id] = new(taskSet), new(taskSet)
	}
	byID := make(map[string]streamsAssignMember, len(members))
	for _, m := range members {
		byID[m.id] = m
	}

	// Active tasks: quotas of ⌊T/M⌋, and ⌈T/M⌉ for T mod M members.
	floor := len(all) / len(members)
	extra := len(all) % len(members)
	owner := make(map[taskID]string)
	prevOwner := make(map[taskID]string)
	for _, m := range members {
		for sub, ps := range m.previous.active {
			for p := range ps {
				if p < tasks[sub] {
					prevOwner[taskID{sub, p}] = m.id
				}
			}
		}
	}
	load := func(id string) int { return active[id].size() }
	// Keep up to floor previous tasks per member, then one more for as
	// many members as there are extra slots.
	for pass := 0; pass < 2; pass++ {
		for _, t := range all {
			id, ok := prevOwner[t]
			if !ok || owner[t] != "" {
				continue
			}
			switch {
			case load(id) < floor:
			case pass == 1 && load(id) == floor && extra > 0:
				extra--
			default:
				continue
			}
			owner[t] = id
			active[id].add(t.sub, t.p)
		}
	}
	prevStandby := make(map[taskID]map[string]bool) // task → processes
	for _, m := range members {
		for sub, ps := range m.previous.standby {
			for p := range ps {
				t := taskID{sub, p}
				if prevStandby[t] == nil {
					prevStandby[t] = make(map[string]bool)
				}
				prevStandby[t][m.processID] = true
			}
		}
	}
	for _, t := range all {
		if owner[t] != "" {
			continue
		}
		best := ""
		for _, m := range members {
			l := load(m.id)
			if l > floor || l == floor && extra == 0 {
				continue
			}
			if best == "" {
				best = m.id
				continue
			}
			bl := load(best)
			switch {
			case l < bl:
				best = m.id
			case l == bl && prevStandby[t][m.processID] && !prevStandby[t][byID[best].processID]:
				best = m.id
			}
		}
		if best == "" {
			best = members[0].id // cannot happen: the quotas add up to T
		}
		if load(best) == floor {
			extra--
		}
		owner[t] = best
		active[best].add(t.sub, t.p)
	}

	// Standby tasks.
	if numStandby > 0 {
		prevStandbyMember := make(map[taskID]map[string]bool)
		for _, m := range members {
			for sub, ps := range m.previous.standby {
				for p := range ps {
					t := taskID{sub, p}
					if prevStandbyMember[t] == nil {
						prevStandbyMember[t] = make(map[string]bool)
					}
					prevStandbyMember[t][m.id] = true
				}
			}
		}
		for _, t := range all {
			holders := map[string]bool{byID[owner[t]].processID: true}
			// The tag values the task's copies already sit on.
			used := make(map[string]map[string]bool, len(rackTags))
			useTags := func(m streamsAssignMember) {
				for _, key := range rackTags {
					if used[key] == nil {
						used[key] = make(map[string]bool)
					}
					used[key][m.clientTags[key]] = true
				}
			}
			useTags(byID[owner[t]])
			// spread counts the tag keys on which m would add a value
			// the task's copies do not have yet.
			spread := func(m streamsAssignMember) int {
				n := 0
				for _, key := range rackTags {
					if !used[key][m.clientTags[key]] {
						n++
					}
				}
				return n
			}
			for k := 0; k < numStandby; k++ {
				best := ""
				for _, m := range members {
					if holders[m.processID] {
						continue
					}
					if best == "" {
						best = m.id
						continue
					}
					spreadM, spreadB := spread(m), spread(byID[best])
					prevM, prevB := prevStandbyMember[t][m.id], prevStandbyMember[t][best]
					switch {
					case spreadM != spreadB:
						if spreadM > spreadB {
							best = m.id
						}
					case prevM && !prevB:
						best = m.id
					case prevM == prevB && standby[m.id].size() < standby[best].size():
						best = m.id
					}
				}
				if best == "" {
					break // fewer processes than copies
				}
				holders[byID[best].processID] = true
				useTags(byID[best])
				standby[best].add(t.sub, t.p)
			}
		}
	}
	for _, m := range members {
		out[m.id] = streamsTasks{active: *active[m.id], standby: *standby[m.id]}
	}
	return out
}

// missingClientTags lists, as Java prints a list ("[zone, cluster]"), the
// rack-aware assignment tags that member m did not send as client tags
// (Kafka 4.4's MISSING_CLIENT_TAGS status, heartbeat version 1 on); ""
// when it sent them all.
func missingClientTags(m *streamsMember, rackTags []string) string {
	var missing []string
	for _, key := range rackTags {
		if _, ok := m.clientTags[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "[" + strings.Join(missing, ", ") + "]"
}
