package controller

import (
	"slices"
	"sort"
	"strings"
)

// Leader election and ISR changes are decided here, by pure functions of
// an image and a liveness predicate: no clock, no randomness, no raft. The
// active controller runs them against its current image and writes the
// result as partitionChange records inside a command; the FSM then checks
// each record against the partition epoch it was decided on, so a decision
// made on a stale image changes nothing.
//
// The rules are KRaft's (PartitionChangeBuilder):
//
//   - A broker that is fenced or shutting down leaves every ISR, except that
//     an ISR never becomes empty: the last member stays, so the partition
//     remembers which replica has all committed data.
//   - A partition whose leader leaves elects the first replica in
//     assignment order that is live and in the (new) ISR. With none, the
//     leader is -1 (offline) unless unclean election is enabled for the
//     topic, in which case the first live replica leads and the ISR becomes
//     just that replica.
//   - An offline partition elects as soon as such a replica is live again.
//   - Every leader change (including to or from -1) bumps the leader epoch;
//     every change at all bumps the partition epoch by one.
//
// With the eligible.leader.replicas.version feature at 1 or more, KIP-966's
// rules (elr.go) replace the first and third: the ISR may empty, and a
// leader is elected from the eligible leader replicas when it is empty.

// partitionChange is one decided change of one partition, as written in
// FenceBroker, UnfenceBroker and ChangePartitions commands. PartitionEpoch
// is the epoch the decision was made against; the FSM applies the change
// only if the partition still has it, and then sets the partition epoch to
// PartitionEpoch+1.
type partitionChange struct {
	TopicID        [16]byte `json:"topicId"`
	Partition      int32    `json:"partition"`
	PartitionEpoch int32    `json:"partitionEpoch"`
	Leader         int32    `json:"leader"`
	LeaderEpoch    int32    `json:"leaderEpoch"`
	ISR            []int32  `json:"isr"`
	// ELR and LastKnownELR are the partition's KIP-966 sets after the
	// change (elr.go); changeOf keeps the partition's, so a decision that
	// does not know about them leaves them as they are.
	ELR          []int32 `json:"elr,omitempty"`
	LastKnownELR []int32 `json:"lastKnownElr,omitempty"`
}

// liveFunc reports whether a broker may lead or stay in an ISR: it is
// registered, unfenced and not known to be failing.
type liveFunc func(id int32) bool

// electLeader picks the leader of a partition with assignment replicas and
// ISR isr: the first live replica in assignment order that is in the ISR,
// or, if unclean is set and there is none, the first live replica, which
// then becomes the whole ISR. leader is -1 when nobody may lead, and isr is
// then returned unchanged.
func electLeader(replicas, isr []int32, live liveFunc, unclean bool) (leader int32, newISR []int32) {
	for _, r := range replicas {
		if live(r) && slices.Contains(isr, r) {
			return r, isr
		}
	}
	if unclean {
		for _, r := range replicas {
			if live(r) {
				return r, []int32{r}
			}
		}
	}
	return -1, isr
}

// withoutReplica decides p's state once broker id may no longer lead or be
// in sync (fenced, or in controlled shutdown), without ELR tracking. live
// must already be false for id. ok is false when p does not change.
func withoutReplica(p *Partition, id int32, live liveFunc, unclean bool) (leader int32, isr []int32, ok bool) {
	ch, ok := removeReplica([16]byte{}, p, id, electionPolicy{live: live, unclean: unclean, uncleanShutdown: -1})
	return ch.Leader, ch.ISR, ok
}

// removeReplica decides p's change once broker id may no longer lead or be
// in sync; ok is false when p does not change. Only partitions whose
// leader or ISR holds id change.
func removeReplica(topicID [16]byte, p *Partition, id int32, pol electionPolicy) (partitionChange, bool) {
	if p.Leader != id && !slices.Contains(p.ISR, id) {
		return partitionChange{}, false
	}
	isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
	return decidePartition(topicID, p, isr, pol)
}

// electOffline decides the leader of an offline partition (leader -1)
// without ELR tracking; ok is false when it must stay offline.
func electOffline(p *Partition, live liveFunc, unclean bool) (leader int32, isr []int32, ok bool) {
	ch, ok := electOfflineChange([16]byte{}, p, electionPolicy{live: live, unclean: unclean, uncleanShutdown: -1})
	return ch.Leader, ch.ISR, ok
}

// electOfflineChange decides the election of an offline partition; ok is
// false when it must stay offline (or p is not offline).
func electOfflineChange(topicID [16]byte, p *Partition, pol electionPolicy) (partitionChange, bool) {
	if p.Leader != -1 {
		return partitionChange{}, false
	}
	ch, _ := decidePartition(topicID, p, p.ISR, pol)
	return ch, ch.Leader != -1
}

// changeOf builds the record that moves p to leader and isr.
func changeOf(topicID [16]byte, p *Partition, leader int32, isr []int32) partitionChange {
	leaderEpoch := p.LeaderEpoch
	if leader != p.Leader {
		leaderEpoch++
	}
	return partitionChange{
		TopicID:        topicID,
		Partition:      p.Partition,
		PartitionEpoch: p.PartitionEpoch,
		Leader:         leader,
		LeaderEpoch:    leaderEpoch,
		ISR:            isr,
		ELR:            nonEmpty(slices.Clone(p.ELR)),
		LastKnownELR:   nonEmpty(slices.Clone(p.LastKnownELR)),
	}
}

// sortedTopics returns img's topics by name, so decisions list their
// changes in a stable order.
func sortedTopics(img *Image) []*Topic {
	topics := make([]*Topic, 0, len(img.Topics))
	for _, t := range img.Topics {
		topics = append(topics, t)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	return topics
}

// topicPolicy returns the election policy of a topic of img: liveness,
// its unclean election setting, and ELR tracking with its min ISR. A nil
// minISR counts as 1.
func topicPolicy(img *Image, live liveFunc, unclean func(*Topic) bool, minISR func(*Topic) int) func(*Topic) electionPolicy {
	elr := elrEnabled(img)
	offline := offlineReplicaSet(img)
	return func(t *Topic) electionPolicy {
		pol := electionPolicy{live: live, unclean: unclean(t), elr: elr, minISR: 1, uncleanShutdown: -1, replicaOffline: offline}
		if minISR != nil {
			pol.minISR = minISR(t)
		}
		return pol
	}
}

// planRemoveReplica decides, for every partition of img, what happens when
// broker id is fenced or shuts down. live must be false for id.
func planRemoveReplica(img *Image, id int32, live liveFunc, unclean func(*Topic) bool, minISR func(*Topic) int) []partitionChange {
	policy := topicPolicy(img, live, unclean, minISR)
	var changes []partitionChange
	for _, t := range sortedTopics(img) {
		pol := policy(t)
		for _, p := range t.Partitions {
			if ch, ok := removeReplica(t.ID, p, id, pol); ok {
				changes = append(changes, ch)
			}
		}
	}
	return changes
}

// planOfflineElections decides a leader for every offline partition of img
// that can have one now.
func planOfflineElections(img *Image, live liveFunc, unclean func(*Topic) bool, minISR func(*Topic) int) []partitionChange {
	policy := topicPolicy(img, live, unclean, minISR)
	var changes []partitionChange
	for _, t := range sortedTopics(img) {
		pol := policy(t)
		for _, p := range t.Partitions {
			if ch, ok := electOfflineChange(t.ID, p, pol); ok {
				changes = append(changes, ch)
			}
		}
	}
	return changes
}

// uncleanLeaderElectionKey is the topic and broker config that allows
// electing an out-of-sync replica.
const uncleanLeaderElectionKey = "unclean.leader.election.enable"

// uncleanPolicy returns whether topic t allows unclean election: its topic
// config, else the dynamic config of broker controllerID, else the cluster
// dynamic default, else static. This is the order Kafka resolves a topic
// config whose default is a broker config.
func uncleanPolicy(img *Image, controllerID int32, static bool) func(*Topic) bool {
	broker := func() bool {
		for _, name := range []string{brokerConfigName(controllerID), ""} {
			if v, ok := img.BrokerConfigs[name][uncleanLeaderElectionKey]; ok {
				return strings.EqualFold(strings.TrimSpace(v), "true")
			}
		}
		return static
	}()
	return func(t *Topic) bool {
		if v, ok := t.Configs[uncleanLeaderElectionKey]; ok {
			return strings.EqualFold(strings.TrimSpace(v), "true")
		}
		return broker
	}
}
