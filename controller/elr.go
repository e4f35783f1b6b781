package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Eligible leader replicas (KIP-966 part 1), as Kafka 4.4's KRaft
// controller keeps them (PartitionChangeBuilder). They are tracked only
// while the finalized feature eligible.leader.replicas.version is at least
// 1 (a new Kafka cluster finalizes 1 since 4.1); at 0 every partition
// change clears them and the rules of election.go alone apply.
//
// Brokers do not advance a partition's high watermark while its ISR is
// smaller than min.insync.replicas (capped by the replication factor), so
// a replica that leaves the ISR then still holds every committed record:
//
//   - While the ISR is below min ISR, the replicas that leave it join the
//     ELR (the ELR is the old ELR and old ISR less the new ISR). A replica
//     that rejoins the ISR leaves the ELR, and once the ISR is at least
//     min ISR the ELR is empty again.
//   - With ELR tracking the ISR may become empty: the last in-sync
//     replica to be fenced moves to the ELR instead of staying in the ISR.
//   - A leader is elected from the ISR, else (ISR empty) from live ELR
//     members in assignment order; an ELR member elected becomes the whole
//     ISR and leaves the ELR. With neither, the last known leader (below)
//     is elected if it is live and the ELR is empty; then, only where
//     unclean.leader.election.enable allows, the first live replica. An
//     unclean election empties the ELR.
//   - A fenced broker stays in the ELR (its disk is intact); a broker
//     whose process restarts after an unclean shutdown (kill -9, a crash,
//     a lost disk) leaves every ISR and ELR before it is unfenced, so an
//     empty disk is never elected over an ELR member.
//   - LastKnownELR holds, as Kafka 4.4 uses it ("balanced recovery"), the
//     partition's last leader: it is set when the ISR becomes empty and
//     cleared by any change that leaves the partition with a leader.
//
// How sluice detects an unclean shutdown: Kafka's broker sends the broker
// epoch it wrote into its .kafka_cleanshutdown file (-1 without one) in
// BrokerRegistration, and the controller compares it with the registered
// epoch. sluice's log dir has the same marker, written only by a clean
// Close after every log is synced, and removed at start (logstore); the
// broker tells the controller whether it found one (Config.CleanShutdown),
// and the controller gossips that as a serf tag with the new process's
// incarnation, which is what registers it. sluice's marker carries no
// epoch, so a disk restored with an old marker would count as clean: a
// difference from Kafka that only a copied-back disk can observe. A lone
// node (no serf) never has an ELR member to lose.
//
// Changing min.insync.replicas clears the ELR and last known ELR of the
// topic's partitions (every topic's, for a broker or cluster-default
// change), as Kafka does, since the ELR was decided under the old min ISR;
// sluice writes that as a command of its own right after the config
// change. Not done, where Kafka 4.4 differs: the broker-level
// min.insync.replicas stays alterable (Kafka moves it to the cluster
// level when ELR is enabled).

// elrFeatureName is the finalized feature that turns ELR tracking on
// (features.go); brokers apply KIP-966's strict min ISR while it is at
// least 1.
const elrFeatureName = FeatureELRVersion

// elrEnabled reports whether img tracks eligible leader replicas.
func elrEnabled(img *Image) bool { return img.Features[elrFeatureName] >= 1 }

// minInsyncKey is the topic and broker config whose value is min ISR.
const minInsyncKey = "min.insync.replicas"

// minISRPolicy returns each topic's effective min.insync.replicas, resolved
// as uncleanPolicy resolves its config (topic, controller's dynamic broker
// config, cluster default, static) and capped by the replication factor,
// as Kafka's getTopicEffectiveMinIsr is.
func minISRPolicy(img *Image, controllerID int32, static int) func(*Topic) int {
	parse := func(v string) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		return n, err == nil && n >= 1
	}
	broker := max(static, 1)
	for _, name := range []string{brokerConfigName(controllerID), ""} {
		if n, ok := parse(img.BrokerConfigs[name][minInsyncKey]); ok {
			broker = n
			break
		}
	}
	return func(t *Topic) int {
		n := broker
		if v, ok := t.Configs[minInsyncKey]; ok {
			if m, ok := parse(v); ok {
				n = m
			}
		}
		if len(t.Partitions) > 0 && len(t.Partitions[0].Replicas) > 0 {
			n = min(n, len(t.Partitions[0].Replicas))
		}
		return n
	}
}

// electionPolicy is what a partition decision needs beyond the partition:
// who may lead, whether the topic allows unclean election, whether ELR is
// tracked and the topic's min ISR.
type electionPolicy struct {
	live    liveFunc
	unclean bool
	elr     bool
	minISR  int
	// uncleanShutdown is a broker whose new process follows an unclean
	// shutdown, removed from the ISR and ELR; -1 for none.
	uncleanShutdown int32
	// replicaOffline reports a replica in a failed log directory of its
	// broker (log_dirs.go), which may not lead; nil for none.
	replicaOffline func(topicID [16]byte, p, id int32) bool
}

// decidePartition moves p towards target ISR isr and elects a leader if
// its leader may no longer lead, by Kafka's PartitionChangeBuilder rules
// (the ELR ones only when pol.elr). ok is false when nothing changes.
func decidePartition(topicID [16]byte, p *Partition, isr []int32, pol electionPolicy) (ch partitionChange, ok bool) {
	if off := pol.replicaOffline; off != nil {
		live := pol.live
		pol.live = func(r int32) bool { return live(r) && !off(topicID, p.Partition, r) }
	}
	isr = slices.Clone(isr)
	var elr []int32
	if pol.elr {
		elr = targetELR(p, isr, pol.minISR, pol.uncleanShutdown)
	} else if len(isr) == 0 {
		isr = slices.Clone(p.ISR) // without ELR an ISR never empties
	}
	valid := func(r int32) bool {
		return r >= 0 && pol.live(r) && (slices.Contains(isr, r) || (len(isr) == 0 && slices.Contains(elr, r)))
	}
	leader, unclean := int32(-1), false
	switch {
	case valid(p.Leader):
		leader = p.Leader
	default:
		for _, r := range p.Replicas {
			if valid(r) {
				leader = r
				break
			}
		}
	}
	if leader == -1 && pol.elr && len(isr) == 0 && len(elr) == 0 &&
		len(p.LastKnownELR) == 1 && pol.live(p.LastKnownELR[0]) {
		leader, unclean = p.LastKnownELR[0], true
	}
	if leader == -1 && pol.unclean {
		for _, r := range p.Replicas {
			if pol.live(r) {
				leader, unclean = r, true
				break
			}
		}
	}
	switch {
	case unclean:
		isr, elr = []int32{leader}, nil
	case leader != -1 && leader != p.Leader && slices.Contains(elr, leader):
		isr = []int32{leader}
		elr = slices.DeleteFunc(elr, func(r int32) bool { return r == leader })
	}
	lastKnown := slices.Clone(p.LastKnownELR)
	if pol.elr {
		if len(isr) == 0 && len(p.ISR) > 0 && p.Leader >= 0 &&
			!(len(p.LastKnownELR) == 1 && p.LastKnownELR[0] == p.Leader) {
			// The partition loses its last in-sync replica: remember
			// its last leader.
			lastKnown = []int32{p.Leader}
		} else if leader != -1 {
			lastKnown = nil
		}
	} else {
		lastKnown = nil
	}
	ch = changeOf(topicID, p, leader, isr)
	ch.ELR, ch.LastKnownELR = nonEmpty(elr), nonEmpty(lastKnown)
	return ch, leader != p.Leader || !slices.Equal(isr, p.ISR) ||
		!slices.Equal(ch.ELR, nonEmpty(p.ELR)) || !slices.Equal(ch.LastKnownELR, nonEmpty(p.LastKnownELR))
}

// targetELR is p's ELR once its ISR is isr: empty when isr is at least
// minISR, else the old ELR and old ISR less isr and less a replica whose
// shutdown was unclean, in ascending order.
func targetELR(p *Partition, isr []int32, minISR int, uncleanShutdown int32) []int32 {
	if len(isr) >= minISR {
		return nil
	}
	var elr []int32
	for _, r := range append(slices.Clone(p.ELR), p.ISR...) {
		if !slices.Contains(isr, r) && r != uncleanShutdown && !slices.Contains(elr, r) {
			elr = append(elr, r)
		}
	}
	slices.Sort(elr)
	return elr
}

// nonEmpty returns s, or nil when it is empty, so that changes compare and
// encode an empty ELR one way.
func nonEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}

// planUncleanShutdown decides, for every partition of img whose ISR or ELR
// holds broker id, its removal because id's new process follows an
// unclean shutdown (Kafka's handleBrokerUncleanShutdown). live must be
// false for id. Nothing changes while ELR is not tracked.
func planUncleanShutdown(img *Image, id int32, live liveFunc, unclean func(*Topic) bool, minISR func(*Topic) int) []partitionChange {
	if !elrEnabled(img) {
		return nil
	}
	var changes []partitionChange
	for _, t := range sortedTopics(img) {
		for _, p := range t.Partitions {
			if !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
				continue
			}
			isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
			pol := electionPolicy{live: live, unclean: unclean(t), elr: true, minISR: minISR(t), uncleanShutdown: id}
			if ch, ok := decidePartition(t.ID, p, isr, pol); ok {
				changes = append(changes, ch)
			}
		}
	}
	return changes
}

// checkChangeState checks a change's leader, ISR and ELR against the
// assignment: checkPartitionState, except that while img tracks eligible
// leader replicas an offline partition's ISR may be empty; ELR members
// must be replicas outside the ISR.
func checkChangeState(img *Image, replicas []int32, ch partitionChange) error {
	for i, r := range ch.ELR {
		if !slices.Contains(replicas, r) || slices.Contains(ch.ISR, r) || slices.Contains(ch.ELR[:i], r) {
			return fmt.Errorf("ELR %v is not a set of replicas %v outside ISR %v", ch.ELR, replicas, ch.ISR)
		}
	}
	if len(ch.ISR) == 0 && ch.Leader == -1 && elrEnabled(img) {
		return nil
	}
	return checkPartitionState(replicas, ch.Leader, ch.ISR)
}

// alterPartitionELR sets the ELR of ch, an AlterPartition change of p that
// moves its ISR and keeps its leader: replicas leaving an ISR below minISR
// join the ELR, and a partition with a leader forgets its last known one.
func alterPartitionELR(img *Image, p *Partition, ch *partitionChange, minISR int) {
	if !elrEnabled(img) {
		ch.ELR, ch.LastKnownELR = nil, nil
		return
	}
	ch.ELR = nonEmpty(targetELR(p, ch.ISR, minISR, -1))
	if ch.Leader != -1 {
		ch.LastKnownELR = nil
	}
}

// decideUncleanELR decides an unclean ElectLeaders election of offline
// partition p while ELR is tracked: as Kafka's UNCLEAN election, the ISR
// first, then (ISR empty) the ELR, then the last known leader, then any
// live replica. The ISR does not change, so the ELR can only lose the
// member elected; minISR above the ISR's size keeps it as it is.
func decideUncleanELR(topicID [16]byte, p *Partition, live liveFunc) (partitionChange, error) {
	if p.Leader != -1 {
		return partitionChange{}, kerr.ElectionNotNeeded
	}
	pol := electionPolicy{live: live, unclean: true, elr: true, minISR: len(p.ISR) + 1, uncleanShutdown: -1}
	ch, _ := decidePartition(topicID, p, p.ISR, pol)
	if ch.Leader == -1 {
		return partitionChange{}, fmt.Errorf("%w: no replica of partition %d (replicas %v) is live",
			kerr.EligibleLeadersNotAvailable, p.Partition, p.Replicas)
	}
	return ch, nil
}

// clearELRs empties the ELR and last known ELR of every partition of the
// topic res names (of every topic for a broker resource) after its
// min.insync.replicas changed. Decide must be held.
func (c *Controller) clearELRs(ctx context.Context, res ConfigResource) error {
	img := c.Image()
	var changes []partitionChange
	for _, t := range sortedTopics(img) {
		if res.Type == ResourceTopic && t.Name != res.Name {
			continue
		}
		for _, p := range t.Partitions {
			if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
				continue
			}
			ch := changeOf(t.ID, p, p.Leader, slices.Clone(p.ISR))
			ch.ELR, ch.LastKnownELR = nil, nil
			changes = append(changes, ch)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	return c.apply(ctx, changePartitionsCmd{Changes: changes})
}
