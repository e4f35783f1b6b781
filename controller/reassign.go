package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition reassignment (KIP-455) as KRaft runs it. A reassignment of a
// partition from its current replicas C to a target T is written as one
// ReassignPartitions command that sets
//
//	Replicas         = T followed by C − T
//	AddingReplicas   = T − C
//	RemovingReplicas = C − T
//
// keeping ISR and leader. Every node's broker reconciles the wider replica
// set: an adding replica opens an empty log and fetches from the leader
// like any follower, and the leader proposes it into the ISR through
// AlterPartition once it has caught up. The reassignment completes in the
// same command as the ISR change that puts the last target replica in the
// ISR (or at once, when the target replicas are in the ISR already):
// Replicas = T, the ISR loses the removing replicas, and a leader that is
// being removed hands over to the first target replica in the ISR that is
// live. Brokers then drop the replicas no longer assigned to them, log and
// all. The leadership loop also completes any reassignment whose target is
// in the ISR (reconcile.go), so a controller that took over after a
// failover finishes what its predecessor started.
//
// A cancel (null target) reverts to the original replicas, C = Replicas −
// AddingReplicas, dropping the adding replicas from the ISR. A new target
// for a partition already being reassigned starts from those original
// replicas, as if the first reassignment had been cancelled.
//
// Choices where Kafka left room:
//
//   - The leader epoch grows only when the leader changes. KRaft also bumps
//     it when replicas are removed, to fence their fetches; sluice's
//     removed replicas delete their log and stop fetching when they apply
//     the command, and a leader rejects fetches from brokers outside the
//     replica set, so in-flight acks=all produce requests on a leader that
//     stays are not failed for nothing.
//   - A completion whose target has no live replica in the ISR to lead
//     waits, rather than leaving the partition offline.
//   - A cancel whose ISR would hold only adding replicas keeps the first
//     original replica as the ISR (the ISR is never empty), electing it if
//     it is live.
//   - Target replicas must be registered brokers; fenced ones are accepted
//     (the move completes once they return).

// ReassignPartition is one partition of an AlterPartitionReassignments
// request.
type ReassignPartition struct {
	Topic     string
	Partition int32
	// Replicas is the target replica list, its first entry the preferred
	// leader; nil cancels the reassignment in progress.
	Replicas []int32
}

// ReassignResult is the outcome for one partition of the request, in
// request order. Err wraps a kerr code.
type ReassignResult struct {
	Topic     string
	Partition int32
	Err       error
}

// Reassignment is a partition being reassigned, as
// ListPartitionReassignments reports it.
type Reassignment struct {
	Topic     string
	Partition int32
	// Replicas is the whole current replica set (target and leaving);
	// the slices belong to the image and must not be modified.
	Replicas         []int32
	AddingReplicas   []int32
	RemovingReplicas []int32
}

// Reassigning reports whether p is being reassigned.
func (p *Partition) Reassigning() bool {
	return len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
}

// TargetReplicas returns the replicas p is moving to: its replicas minus
// those being removed (all of them when no reassignment is in progress).
func (p *Partition) TargetReplicas() []int32 { return without(p.Replicas, p.RemovingReplicas) }

// AlterPartitionReassignments starts, replaces or cancels the
// reassignment of each partition, in one command, and returns once it is
// applied (not once the replicas have moved). With allowRFChange false a
// target of another length than the original replicas is refused with
// INVALID_REPLICATION_FACTOR (KIP-860). Per partition errors:
// UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT (empty,
// duplicate, negative or unregistered brokers),
// NO_REASSIGNMENT_IN_PROGRESS (cancelling nothing), INVALID_REQUEST (a
// partition named twice). Every partition gets NOT_CONTROLLER on a node
// that is not the active controller, and REQUEST_TIMED_OUT when the
// command could not be committed in time.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []ReassignPartition, allowRFChange bool) []ReassignResult {
	results := make([]ReassignResult, len(reqs))
	for i, r := range reqs {
		results[i] = ReassignResult{Topic: r.Topic, Partition: r.Partition}
	}
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	img := c.Image()
	live := liveness(img, nil)
	type key struct {
		topic     string
		partition int32
	}
	seen := map[key]bool{}
	var records []reassignmentRecord
	var decided []int // indexes of results whose change is in records
	for i, r := range reqs {
		k := key{r.Topic, r.Partition}
		if seen[k] {
			results[i].Err = fmt.Errorf("%w: %s-%d is named more than once", kerr.InvalidRequest, r.Topic, r.Partition)
			continue
		}
		seen[k] = true
		// Kafka's messages (ReplicationControlManager.alterPartitionReassignment).
		t := img.Topics[r.Topic]
		if t == nil {
			results[i].Err = fmt.Errorf("%w: Unable to find a topic named %s.", kerr.UnknownTopicOrPartition, r.Topic)
			continue
		}
		if r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			results[i].Err = fmt.Errorf("%w: Unable to find partition %s:%d.", kerr.UnknownTopicOrPartition, r.Topic, r.Partition)
			continue
		}
		if r.Replicas != nil {
			if err := validateTarget(img, r.Replicas); err != nil {
				results[i].Err = err
				continue
			}
		}
		p := t.Partitions[r.Partition]
		if r.Replicas != nil && !allowRFChange {
			if orig := without(p.Replicas, p.AddingReplicas); len(orig) != len(r.Replicas) {
				results[i].Err = fmt.Errorf("%w: The replication factor is changed from %d to %d but allowReplicationFactorChange is false.",
					kerr.InvalidReplicationFactor, len(orig), len(r.Replicas))
				continue
			}
		}
		rec, changed, err := planReassignment(t.ID, p, r.Replicas, live)
		if err != nil {
			results[i].Err = err
			continue
		}
		if changed {
			records = append(records, rec)
			decided = append(decided, i)
		}
	}
	if len(records) == 0 {
		return results
	}
	if err := c.apply(ctx, reassignPartitionsCmd{Changes: records}); err != nil {
		for _, i := range decided {
			results[i].Err = err
		}
		return results
	}
	c.log.Info("partition reassignment changed", "partitions", len(records))
	return results
}

// validateTarget checks a target replica list as Kafka checks a manual
// assignment.
func validateTarget(img *Image, target []int32) error {
	if len(target) == 0 {
		return fmt.Errorf("%w: The manual partition assignment includes an empty replica list.", kerr.InvalidReplicaAssignment)
	}
	for i, r := range target {
		if r < 0 {
			return fmt.Errorf("%w: The manual partition assignment includes an invalid broker id %d.", kerr.InvalidReplicaAssignment, r)
		}
		if slices.Contains(target[:i], r) {
			return fmt.Errorf("%w: The manual partition assignment includes the broker %d more than once.", kerr.InvalidReplicaAssignment, r)
		}
		if img.Brokers[r] == nil {
			return fmt.Errorf("%w: The manual partition assignment includes broker %d, but no such broker is registered.", kerr.InvalidReplicaAssignment, r)
		}
	}
	return nil
}

// planReassignment decides p's state for a reassignment to target, or for
// a cancel when target is nil. changed is false when p is already in that
// state. The only error is NO_REASSIGNMENT_IN_PROGRESS.
func planReassignment(topicID [16]byte, p *Partition, target []int32, live liveFunc) (rec reassignmentRecord, changed bool, err error) {
	orig, isr := p.Replicas, p.ISR
	if p.Reassigning() {
		orig = without(p.Replicas, p.AddingReplicas)
		isr = without(p.ISR, p.AddingReplicas)
		if len(isr) == 0 {
			isr = []int32{orig[0]}
		}
	}
	if target == nil {
		if !p.Reassigning() {
			return rec, false, kerr.NoReassignmentInProgress
		}
		target = orig
	}
	removing := without(orig, target)
	rec = reassignmentRecord{
		TopicID:          topicID,
		Partition:        p.Partition,
		PartitionEpoch:   p.PartitionEpoch,
		Replicas:         append(slices.Clone(target), removing...),
		AddingReplicas:   without(target, orig),
		RemovingReplicas: removing,
		ISR:              slices.Clone(isr),
		Leader:           p.Leader,
	}
	if rec.Leader != -1 && !slices.Contains(rec.ISR, rec.Leader) {
		// The leader was an adding replica and the move is undone.
		rec.Leader, rec.ISR = electLeader(orig, rec.ISR, live, false)
	}
	if len(rec.AddingReplicas) > 0 || len(rec.RemovingReplicas) > 0 {
		if isr, leader, ok := finishReassignment(target, rec.ISR, rec.Leader, live); ok {
			rec.Replicas, rec.AddingReplicas, rec.RemovingReplicas = slices.Clone(target), nil, nil
			rec.ISR, rec.Leader = isr, leader
		}
	}
	rec.LeaderEpoch = p.LeaderEpoch
	if rec.Leader != p.Leader {
		rec.LeaderEpoch++
	}
	changed = !slices.Equal(rec.Replicas, p.Replicas) || !slices.Equal(rec.ISR, p.ISR) || rec.Leader != p.Leader ||
		!slices.Equal(rec.AddingReplicas, p.AddingReplicas) || !slices.Equal(rec.RemovingReplicas, p.RemovingReplicas)
	return rec, changed, nil
}

// finishReassignment decides whether a reassignment to target can complete
// with ISR isr and leader: every target replica must be in the ISR, and a
// leader outside the target must have a live successor among the target's
// in-sync replicas (the first in target order). It returns the ISR without
// the leaving replicas and the leader.
func finishReassignment(target, isr []int32, leader int32, live liveFunc) (newISR []int32, newLeader int32, ok bool) {
	for _, r := range target {
		if !slices.Contains(isr, r) {
			return nil, 0, false
		}
	}
	newISR = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !slices.Contains(target, r) })
	newLeader = leader
	if leader == -1 || !slices.Contains(target, leader) {
		if newLeader, _ = electLeader(target, newISR, live, false); newLeader == -1 {
			return nil, 0, false
		}
	}
	return newISR, newLeader, true
}

// completionOf returns the record that completes p's reassignment once its
// ISR is isr (p's own ISR, or an ISR a leader is proposing), or ok false
// when p is not being reassigned or cannot complete yet.
func completionOf(topicID [16]byte, p *Partition, isr []int32, live liveFunc) (rec reassignmentRecord, ok bool) {
	if !p.Reassigning() {
		return rec, false
	}
	target := p.TargetReplicas()
	newISR, leader, ok := finishReassignment(target, isr, p.Leader, live)
	if !ok {
		return rec, false
	}
	rec = reassignmentRecord{
		TopicID:        topicID,
		Partition:      p.Partition,
		PartitionEpoch: p.PartitionEpoch,
		Replicas:       slices.Clone(target),
		ISR:            newISR,
		Leader:         leader,
		LeaderEpoch:    p.LeaderEpoch,
	}
	if leader != p.Leader {
		rec.LeaderEpoch++
	}
	return rec, true
}

// completeReassignmentsLocked completes every reassignment whose target
// replicas are all in the ISR, in one command: the safety net for a
// controller that took over after the ISR change was committed. Decide
// must be held.
func (c *Controller) completeReassignmentsLocked(ctx context.Context, down map[int32]bool) error {
	img := c.Image()
	live := liveness(img, down)
	var records []reassignmentRecord
	for _, t := range sortedTopics(img) {
		for _, p := range t.Partitions {
			if rec, ok := completionOf(t.ID, p, p.ISR, live); ok {
				records = append(records, rec)
			}
		}
	}
	if len(records) == 0 {
		return nil
	}
	if err := c.apply(ctx, reassignPartitionsCmd{Changes: records}); err != nil {
		return err
	}
	c.log.Info("completed partition reassignments", "partitions", len(records))
	return nil
}

// Reassignments lists the partitions being reassigned, sorted by topic and
// partition. With topics nil every reassignment is listed; otherwise only
// the named partitions, where an unknown topic or partition, or one not
// being reassigned, is left out, as Kafka's controller does.
func (img *Image) Reassignments(topics map[string][]int32) []Reassignment {
	var out []Reassignment
	add := func(t *Topic, p *Partition) {
		if p.Reassigning() {
			out = append(out, Reassignment{Topic: t.Name, Partition: p.Partition, Replicas: p.Replicas,
				AddingReplicas: p.AddingReplicas, RemovingReplicas: p.RemovingReplicas})
		}
	}
	for _, t := range sortedTopics(img) {
		if topics == nil {
			for _, p := range t.Partitions {
				add(t, p)
			}
			continue
		}
		parts, ok := topics[t.Name]
		if !ok {
			continue
		}
		for _, i := range slices.Compact(slices.Sorted(slices.Values(parts))) {
			if i >= 0 && int(i) < len(t.Partitions) {
				add(t, t.Partitions[i])
			}
		}
	}
	return out
}

// without returns list minus the ids in drop, in list's order, as a new
// slice (nil when empty).
func without(list, drop []int32) []int32 {
	var out []int32
	for _, r := range list {
		if !slices.Contains(drop, r) {
			out = append(out, r)
		}
	}
	return out
}
