package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AlterPartitionRequest is one partition of an AlterPartition request
// (KIP-497, KIP-841): a partition leader proposing a new ISR after a
// follower fell behind (shrink) or caught up (expand).
type AlterPartitionRequest struct {
	// BrokerID and BrokerEpoch identify the proposing leader's process;
	// BrokerEpoch -1 skips the epoch check, as Kafka does for old versions.
	BrokerID    int32
	BrokerEpoch int64
	// TopicID names the topic when non-zero, else Topic.
	Topic     string
	TopicID   [16]byte
	Partition int32
	// LeaderEpoch and PartitionEpoch are the leader's view of the
	// partition; the proposal applies only if both are current.
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterPartition commits a partition leader's ISR proposal and returns the
// partition's new state (with the next partition epoch), or its current
// state if the ISR is unchanged. Errors, checked as KRaft does:
//
//   - NOT_CONTROLLER on a node that is not the active controller, or when
//     the request carries a leader epoch newer than this controller knows;
//   - STALE_BROKER_EPOCH when the proposer is not registered at BrokerEpoch;
//   - UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION for a missing partition;
//   - FENCED_LEADER_EPOCH when the leader epoch is stale;
//   - INVALID_REQUEST when the proposer does not lead the partition, or the
//     ISR is not a set of assigned replicas containing the leader;
//   - INVALID_UPDATE_VERSION when the partition epoch is stale (another
//     change won; the leader must refresh its state and propose again);
//   - INELIGIBLE_REPLICA when a new ISR member is fenced or shutting down.
func (c *Controller) AlterPartition(ctx context.Context, req AlterPartitionRequest) (Partition, error) {
	results, err := c.AlterPartitions(ctx, []AlterPartitionRequest{req})
	if err != nil {
		return Partition{}, err
	}
	return results[0].Partition, results[0].Err
}

// AlterPartitionResult is the answer to one proposal of AlterPartitions:
// the partition's state after it, or the error that refused it.
type AlterPartitionResult struct {
	Partition Partition
	Err       error
}

// AlterPartitions decides many ISR proposals, as one AlterPartition request
// carries them: a leader batches every proposal it has pending, as Kafka's
// AlterPartitionManager does, so that a broker rejoining the ISRs of
// thousands of partitions costs a few metadata commands, not one raft round
// trip each. Each proposal is checked on its own, with AlterPartition's
// errors; the accepted ones are committed together in one command (and the
// reassignments they complete in a second). The results are parallel to
// reqs. The error is for the whole request: NOT_CONTROLLER on a node that is
// not the active controller (nothing was committed), or a commit that did
// not complete, whose proposals may or may not be committed
// (ErrOutcomeUnknown: the proposer must wait for metadata to tell). A
// partition named twice gets INVALID_REQUEST the second time.
func (c *Controller) AlterPartitions(ctx context.Context, reqs []AlterPartitionRequest) ([]AlterPartitionResult, error) {
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return nil, err
	}
	img := c.Image()
	type key struct {
		id [16]byte
		p  int32
	}
	results := make([]AlterPartitionResult, len(reqs))
	keys := make([]key, len(reqs))
	seen := make(map[key]bool, len(reqs))
	var changes []partitionChange
	var completions []reassignmentRecord
	live := liveness(img, nil)
	for i, req := range reqs {
		t, p, change, err := decideAlterPartition(img, req)
		if change != nil {
			alterPartitionELR(img, p, change, c.minISR(img)(t))
		}
		if err == nil {
			k := key{t.ID, p.Partition}
			if seen[k] {
				err = fmt.Errorf("%w: %s-%d proposed twice in one request", kerr.InvalidRequest, t.Name, p.Partition)
			}
			seen[k], keys[i] = true, k
		}
		switch {
		case err != nil:
			results[i].Err = err
			keys[i].p = -1
		case change == nil:
			results[i].Partition = *p
		default:
			if rec, ok := completionOf(t.ID, p, change.ISR, live); ok {
				// The last target replica joins the ISR: the
				// reassignment completes in the same step
				// (reassign.go).
				completions = append(completions, rec)
			} else {
				changes = append(changes, *change)
			}
		}
	}
	if len(changes) > 0 {
		if err := c.apply(ctx, changePartitionsCmd{Changes: changes}); err != nil {
			return nil, err
		}
	}
	if len(completions) > 0 {
		if err := c.apply(ctx, reassignPartitionsCmd{Changes: completions}); err != nil {
			if len(changes) > 0 {
				// The ISR changes are committed; only the
				// completions failed.
				for i := range results {
					if k := keys[i]; k.p >= 0 && slices.ContainsFunc(completions, func(r reassignmentRecord) bool { return r.TopicID == k.id && r.Partition == k.p }) {
						results[i].Err = err
						keys[i].p = -1
					}
				}
			} else {
				return nil, err
			}
		}
	}
	next := c.Image()
	for i, k := range keys {
		if k.p < 0 {
			continue
		}
		t := next.TopicsByID[k.id]
		if t == nil || int(k.p) >= len(t.Partitions) {
			results[i].Err = fmt.Errorf("%w: topic deleted", kerr.UnknownTopicOrPartition)
			continue
		}
		results[i].Partition = *t.Partitions[k.p]
	}
	return results, nil
}

// decideAlterPartition checks an AlterPartition proposal against img and
// returns the change to commit, or a nil change if the ISR is unchanged.
func decideAlterPartition(img *Image, req AlterPartitionRequest) (*Topic, *Partition, *partitionChange, error) {
	b := img.Brokers[req.BrokerID]
	if b == nil || (req.BrokerEpoch != -1 && b.Epoch != req.BrokerEpoch) {
		return nil, nil, nil, fmt.Errorf("%w: broker %d is not registered at epoch %d", kerr.StaleBrokerEpoch, req.BrokerID, req.BrokerEpoch)
	}
	var t *Topic
	if req.TopicID != ([16]byte{}) {
		if t = img.TopicsByID[req.TopicID]; t == nil {
			return nil, nil, nil, fmt.Errorf("%w: topic id %s does not exist", kerr.UnknownTopicID, uuidString(req.TopicID))
		}
	} else if t = img.Topics[req.Topic]; t == nil {
		return nil, nil, nil, fmt.Errorf("%w: topic %s does not exist", kerr.UnknownTopicOrPartition, req.Topic)
	}
	if req.Partition < 0 || int(req.Partition) >= len(t.Partitions) {
		return nil, nil, nil, fmt.Errorf("%w: %s has no partition %d", kerr.UnknownTopicOrPartition, t.Name, req.Partition)
	}
	p := t.Partitions[req.Partition]
	switch {
	case req.LeaderEpoch < p.LeaderEpoch:
		return nil, nil, nil, fmt.Errorf("%w: %s-%d is at leader epoch %d, request has %d", kerr.FencedLeaderEpoch, t.Name, p.Partition, p.LeaderEpoch, req.LeaderEpoch)
	case req.LeaderEpoch > p.LeaderEpoch:
		return nil, nil, nil, fmt.Errorf("%w: %s-%d: request leader epoch %d is newer than this controller's %d", kerr.NotController, t.Name, p.Partition, req.LeaderEpoch, p.LeaderEpoch)
	case req.BrokerID != p.Leader:
		return nil, nil, nil, fmt.Errorf("%w: broker %d does not lead %s-%d (leader %d)", kerr.InvalidRequest, req.BrokerID, t.Name, p.Partition, p.Leader)
	case req.PartitionEpoch != p.PartitionEpoch:
		return nil, nil, nil, fmt.Errorf("%w: %s-%d is at partition epoch %d, request has %d", kerr.InvalidUpdateVersion, t.Name, p.Partition, p.PartitionEpoch, req.PartitionEpoch)
	}
	if err := checkPartitionState(p.Replicas, p.Leader, req.NewISR); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %s-%d: %v", kerr.InvalidRequest, t.Name, p.Partition, err)
	}
	for _, r := range req.NewISR {
		if rb := img.Brokers[r]; rb == nil || rb.Fenced {
			return nil, nil, nil, fmt.Errorf("%w: broker %d is fenced, shutting down or unregistered", kerr.IneligibleReplica, r)
		}
	}
	if slices.Equal(req.NewISR, p.ISR) {
		return t, p, nil, nil
	}
	ch := changeOf(t.ID, p, p.Leader, slices.Clone(req.NewISR))
	return t, p, &ch, nil
}

// ControlledShutdown prepares broker brokerID to stop (Kafka's controlled
// shutdown, KIP-631's BrokerHeartbeat with WantShutDown): it fences the
// broker and, in the same command, removes it from every ISR it can leave
// and moves the leadership of its partitions to the first other live ISR
// replica. A partition whose only in-sync replica is this broker goes
// offline (leader -1) rather than losing data, and elects it again when it
// returns. The broker stays fenced while the same process is alive; a
// restarted process is unfenced as usual. Returns NOT_CONTROLLER on a node
// that is not the active controller.
func (c *Controller) ControlledShutdown(ctx context.Context, brokerID int32) error {
	members := c.members()
	c.decide.Lock()
	defer c.decide.Unlock()
	if err := c.requireLeader(); err != nil {
		return err
	}
	if c.Image().Brokers[brokerID] == nil {
		return fmt.Errorf("%w: broker %d is not registered", kerr.StaleBrokerEpoch, brokerID)
	}
	// Brokers whose session is over are not elected; serf's verdict alone
	// excludes nobody (session.go).
	return c.fenceBroker(ctx, brokerID, c.unavailable(c.Image(), members), true)
}
