package groups

// A streams group's topology and its configuration against the topics
// that exist (Kafka 4.4's StreamsTopology, InternalTopicManager,
// RepartitionTopics, ChangelogTopics and CopartitionedTopicsEnforcer):
//
//   - source topics (by name or regular expression) must exist, else the
//     group is MISSING_SOURCE_TOPICS and gets no tasks;
//   - a repartition topic without a fixed partition count gets the largest
//     partition count of the source topics of the subtopologies that write
//     to it (resolved transitively);
//   - topics of a copartition group must have the same partition count:
//     repartition topics without a fixed count take the group's count,
//     source topics that differ are INCORRECTLY_PARTITIONED_TOPICS;
//   - a subtopology has as many tasks as its largest source topic
//     (repartition sources included) has partitions, and each of its
//     changelog topics has one partition per task;
//   - internal topics (repartition and changelog) that do not exist are
//     created by the broker (MISSING_INTERNAL_TOPICS until they exist);
//     one that exists with another partition count is
//     INCORRECTLY_PARTITIONED_TOPICS.
//
// Tasks are assigned only when none of these statuses stands.

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsSubtopology is one subtopology of a topology.
type streamsSubtopology struct {
	id                 string
	sourceTopics       []string
	sourceRegex        []string
	repartitionSinks   []string
	changelogs         []kmsg.TopicInfo
	repartitionSources []kmsg.TopicInfo
	copartitionGroups  [][]string // topic names
}

// streamsTopology is a streams group's topology.
type streamsTopology struct {
	epoch int32
	subs  []streamsSubtopology                       // sorted by id
	raw   *kmsg.StreamsGroupHeartbeatRequestTopology // as the member sent it, for the record
}

func topologyOf(t *kmsg.StreamsGroupHeartbeatRequestTopology) *streamsTopology {
	out := &streamsTopology{epoch: t.Epoch, raw: t}
	for _, s := range t.Subtopologies {
		st := streamsSubtopology{
			id:                 s.SubtopologyID,
			sourceTopics:       slices.Clone(s.SourceTopics),
			sourceRegex:        slices.Clone(s.SourceTopicRegex),
			repartitionSinks:   slices.Clone(s.RepartitionSinkTopics),
			changelogs:         slices.Clone(s.StateChangelogTopics),
			repartitionSources: slices.Clone(s.RepartitionSourceTopics),
		}
		for _, cg := range s.CopartitionGroups {
			var names []string
			for _, i := range cg.SourceTopics {
				if int(i) >= 0 && int(i) < len(s.SourceTopics) {
					names = append(names, s.SourceTopics[i])
				}
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) >= 0 && int(i) < len(s.RepartitionSourceTopics) {
					names = append(names, s.RepartitionSourceTopics[i].Topic)
				}
			}
			st.copartitionGroups = append(st.copartitionGroups, names)
		}
		out.subs = append(out.subs, st)
	}
	slices.SortFunc(out.subs, func(a, b streamsSubtopology) int { return cmp.Compare(a.id, b.id) })
	return out
}

// equal compares two topologies: epoch and wire form.
func (t *streamsTopology) equal(o *streamsTopology) bool {
	return t.epoch == o.epoch && fmt.Sprint(t.wire()) == fmt.Sprint(o.wire())
}

// wire is the topology as StreamsGroupDescribe lists it.
func (t *streamsTopology) wire() []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology {
	out := []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
	for _, s := range t.subs {
		d := kmsg.NewStreamsGroupDescribeResponseGroupTopologySubtopology()
		d.SubtopologyID = s.id
		d.SourceTopics = append(slices.Clone(s.sourceTopics), s.sourceRegex...)
		d.RepartitionSinkTopics = nonNil(s.repartitionSinks)
		d.StateChangelogTopics = nonNilInfos(s.changelogs)
		d.RepartitionSourceTopics = nonNilInfos(s.repartitionSources)
		out = append(out, d)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilInfos(s []kmsg.TopicInfo) []kmsg.TopicInfo {
	if s == nil {
		return []kmsg.TopicInfo{}
	}
	return s
}

// validateTopology is the check Kafka makes of a joining member's
// topology (STREAMS_INVALID_TOPOLOGY): subtopology ids unique and
// non-empty, regular expressions valid, every repartition sink topic a
// repartition source topic of some subtopology.
func validateTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) string {
	seen := make(map[string]bool)
	sources := make(map[string]bool)
	for _, s := range t.Subtopologies {
		for _, r := range s.RepartitionSourceTopics {
			sources[r.Topic] = true
		}
	}
	for _, s := range t.Subtopologies {
		if s.SubtopologyID == "" || seen[s.SubtopologyID] {
			return fmt.Sprintf("Subtopology id %q is empty or not unique.", s.SubtopologyID)
		}
		seen[s.SubtopologyID] = true
		for _, re := range s.SourceTopicRegex {
			if _, err := regexp.Compile(re); err != nil {
				return fmt.Sprintf("Source topic regex %s is invalid: %v", re, err)
			}
		}
		for _, sink := range s.RepartitionSinkTopics {
			if !sources[sink] {
				return fmt.Sprintf("Repartition sink topic %s is not a repartition source topic of any subtopology.", sink)
			}
		}
	}
	return ""
}

// configuredTopology is a topology configured against the topics that
// exist.
type configuredTopology struct {
	tasks           map[string]int32    // subtopology id → number of tasks; nil unless ready
	sources         map[string][]string // subtopology id → its source and repartition source topics
	missingSource   []string
	missingInternal []StreamsTopicToCreate
	incorrect       []string // INCORRECTLY_PARTITIONED_TOPICS details
}

func (c *configuredTopology) ready() bool {
	return c.tasks != nil
}

// sameAssignment reports whether two configurations lead to the same
// tasks, so the group needs no new assignment.
func (c *configuredTopology) sameAssignment(o *configuredTopology) bool {
	if o == nil || c.ready() != o.ready() || len(c.tasks) != len(o.tasks) {
		return false
	}
	for id, n := range c.tasks {
		if o.tasks[id] != n {
			return false
		}
	}
	return true
}

// toCreate lists the missing internal topics with their replication
// factor filled in.
func (c *configuredTopology) toCreate(defaultRF int16) []StreamsTopicToCreate {
	out := slices.Clone(c.missingInternal)
	for i := range out {
		if out[i].ReplicationFactor <= 0 {
			out[i].ReplicationFactor = defaultRF
		}
	}
	return out
}

// configure resolves t against topics (by name).
func configure(t *streamsTopology, topics map[string]TopicInfo) *configuredTopology {
	cfg := &configuredTopology{sources: make(map[string][]string)}
	if t == nil {
		return cfg
	}
	partitions := make(map[string]int32) // topic → count, known or decided
	exists := func(name string) (int32, bool) {
		ti, ok := topics[name]
		return ti.Partitions, ok
	}
	// Source topics.
	for _, s := range t.subs {
		for _, name := range s.sourceTopics {
			if n, ok := exists(name); ok {
				partitions[name] = n
				cfg.sources[s.id] = append(cfg.sources[s.id], name)
			} else if !slices.Contains(cfg.missingSource, name) {
				cfg.missingSource = append(cfg.missingSource, name)
			}
		}
		for _, expr := range s.sourceRegex {
			re, err := regexp.Compile(`^(?:` + expr + `)$`)
			if err != nil {
				continue
			}
			for _, name := range sortedKeys(topics) {
				if re.MatchString(name) {
					partitions[name] = topics[name].Partitions
					cfg.sources[s.id] = append(cfg.sources[s.id], name)
				}
			}
		}
	}
	if len(cfg.missingSource) > 0 {
		slices.Sort(cfg.missingSource)
		return cfg
	}
	// Repartition topics: fixed counts first, then from their writers.
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.NumPartitions > 0 {
				partitions[r.Topic] = r.NumPartitions
			}
			cfg.sources[s.id] = append(cfg.sources[s.id], r.Topic)
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range t.subs {
			var most int32
			for _, name := range cfg.sources[s.id] {
				most = max(most, partitions[name])
			}
			if most == 0 {
				continue
			}
			for _, sink := range s.repartitionSinks {
				if partitions[sink] < most && !fixedRepartition(t, sink) {
					partitions[sink] = most
					changed = true
				}
			}
		}
	}
	// Copartition groups.
	for _, s := range t.subs {
		for _, group := range s.copartitionGroups {
			var want int32
			var differ bool
			for _, name := range group {
				if isRepartition(t, name) && !fixedRepartition(t, name) {
					continue
				}
				if n := partitions[name]; want == 0 {
					want = n
				} else if n != want {
					differ = true
				}
			}
			if differ {
				cfg.incorrect = append(cfg.incorrect, fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", joinNames(group)))
				continue
			}
			if want == 0 {
				for _, name := range group {
					want = max(want, partitions[name])
				}
			}
			for _, name := range group {
				if isRepartition(t, name) && !fixedRepartition(t, name) {
					partitions[name] = want
				}
			}
		}
	}
	// Tasks, changelogs and the internal topics.
	tasks := make(map[string]int32)
	seen := make(map[string]bool)
	check := func(info kmsg.TopicInfo, want int32) {
		if seen[info.Topic] {
			return
		}
		seen[info.Topic] = true
		if want <= 0 {
			cfg.incorrect = append(cfg.incorrect, fmt.Sprintf("The number of partitions of internal topic %s could not be determined.", info.Topic))
			return
		}
		n, ok := exists(info.Topic)
		switch {
		case !ok:
			configs := make(map[string]string, len(info.Configs))
			for _, c := range info.Configs {
				configs[c.Key] = c.Value
			}
			cfg.missingInternal = append(cfg.missingInternal, StreamsTopicToCreate{Name: info.Topic, Partitions: want, ReplicationFactor: info.ReplicationFactor, Configs: configs})
		case n != want:
			cfg.incorrect = append(cfg.incorrect, fmt.Sprintf("Existing internal topic %s has invalid number of partitions: %d; expected %d.", info.Topic, n, want))
		}
	}
	for _, s := range t.subs {
		var n int32
		for _, name := range cfg.sources[s.id] {
			n = max(n, partitions[name])
		}
		tasks[s.id] = n
		for _, r := range s.repartitionSources {
			check(r, partitions[r.Topic])
		}
		for _, c := range s.changelogs {
			check(c, n)
		}
	}
	if len(cfg.incorrect) == 0 && len(cfg.missingInternal) == 0 {
		cfg.tasks = tasks
	}
	return cfg
}

func isRepartition(t *streamsTopology, name string) bool {
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.Topic == name {
				return true
			}
		}
	}
	return false
}

func fixedRepartition(t *streamsTopology, name string) bool {
	for _, s := range t.subs {
		for _, r := range s.repartitionSources {
			if r.Topic == name && r.NumPartitions > 0 {
				return true
			}
		}
	}
	return false
}

// partitionsByEndpoint is the group's interactive-query map: for each
// member endpoint, the source partitions of its active and standby tasks
// (a task p of a subtopology holds partition p of each of its source
// topics that has it), from the members' current assignments.
func (sg *streamsGroup) partitionsByEndpoint() []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	type hostPort struct {
		host string
		port uint16
	}
	type parts struct{ active, standby map[string]map[int32]bool }
	by := make(map[hostPort]*parts)
	var order []hostPort
	addTasks := func(dst map[string]map[int32]bool, tasks taskSet) {
		if sg.configured == nil {
			return
		}
		for sub, ps := range tasks {
			for _, topic := range sg.configured.sources[sub] {
				for p := range ps {
					if dst[topic] == nil {
						dst[topic] = make(map[int32]bool)
					}
					dst[topic][p] = true
				}
			}
		}
	}
	for _, id := range sortedKeys(sg.members) {
		m := sg.members[id]
		if m.endpoint == nil {
			continue
		}
		hp := hostPort{m.endpoint.Host, m.endpoint.Port}
		if by[hp] == nil {
			by[hp] = &parts{active: map[string]map[int32]bool{}, standby: map[string]map[int32]bool{}}
			order = append(order, hp)
		}
		addTasks(by[hp].active, m.assigned.active)
		addTasks(by[hp].standby, m.assigned.standby)
	}
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	for _, hp := range order {
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = hp.host, hp.port
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		for _, topic := range sortedKeys(by[hp].active) {
			a := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition()
			a.Topic, a.Partitions = topic, sortedKeys(by[hp].active[topic])
			e.ActivePartitions = append(e.ActivePartitions, a)
		}
		for _, topic := range sortedKeys(by[hp].standby) {
			s := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition()
			s.Topic, s.Partitions = topic, sortedKeys(by[hp].standby[topic])
			e.StandbyPartitions = append(e.StandbyPartitions, s)
		}
		out = append(out, e)
	}
	return out
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func joinNames(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	out := ""
	for i, n := range s {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
