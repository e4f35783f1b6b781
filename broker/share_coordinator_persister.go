package broker

// sharePersister: share.Persister over the cluster's share coordinators
// (Kafka's DefaultStatePersister). Each operation finds the coordinator of
// its key — the leader of the key's partition of __share_group_state, the
// topic created on first use, as a FindCoordinator of key type 2 would
// answer — and sends it the share-state request (83-87) over the
// inter-broker client, or serves it locally when this broker is the
// coordinator. NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE and network errors are retried after a new
// lookup, with backoff, for at most shareStateRetryTimeout.
//
// An operation that ends without an answer (a timeout, the connection
// lost after the request went out) has an unknown outcome: it returns an
// error wrapping errShareStateUnknown, and the share-partition that asked
// must neither apply its change nor assume it was not made: it drops its
// state and reads it again (share/partition.go).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/share"
)

const (
	// shareStateRetryTimeout bounds the retries of one persister
	// operation.
	shareStateRetryTimeout = 15 * time.Second
	// shareStateRequestTimeout bounds one round trip to a coordinator.
	shareStateRequestTimeout = 10 * time.Second
)

// errShareStateUnknown: a share-state operation may or may not have been
// applied.
var errShareStateUnknown = errors.New("broker: share-state operation outcome unknown")

// sharePersister is share.Persister through the share coordinators.
type sharePersister struct{ b *Broker }

var _ share.Persister = sharePersister{}

// shareCoordinatorOf returns the node leading key's state partition.
func (b *Broker) shareCoordinatorOf(ctx context.Context, key share.Key) (int32, error) {
	if err := b.ensureShareStateTopic(ctx); err != nil {
		return -1, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	img := b.metadata()
	t := img.Topics[shareStateTopicName]
	if t == nil || len(t.Partitions) == 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	mp := t.Partitions[share.PartitionFor(share.CoordinatorKey(key), int32(len(t.Partitions)))]
	if br := img.Brokers[mp.Leader]; mp.Leader < 0 || br == nil || br.Fenced {
		return -1, kerr.CoordinatorNotAvailable
	}
	return mp.Leader, nil
}

// shareStateCall sends req for key to key's share coordinator (local
// serves it when that is this broker) until it is answered with anything
// but a retriable coordinator error, and returns the answer and its
// partition's code (code reads it) as an error.
func shareStateCall[R kmsg.Response](ctx context.Context, b *Broker, key share.Key, req kmsg.Request, local func(context.Context) R, code func(R) int16) (R, error) {
	var zero R
	ctx, cancel := context.WithTimeout(ctx, shareStateRetryTimeout)
	defer cancel()
	backoff := 20 * time.Millisecond
	unknown := false
	var lastErr error
	for {
		var resp R
		answered := false
		leader, err := b.shareCoordinatorOf(ctx, key)
		switch {
		case err != nil:
			lastErr = err
		case leader == b.cfg.NodeID:
			resp, answered = local(ctx), true
		default:
			cl, err := b.peerClient()
			if err != nil {
				lastErr = err
				break
			}
			rctx, rcancel := context.WithTimeout(ctx, shareStateRequestTimeout)
			kresp, err := cl.Broker(int(leader)).Request(rctx, req)
			rcancel()
			if err != nil {
				cl.ForceMetadataRefresh()
				lastErr, unknown = err, true
				break
			}
			r, ok := kresp.(R)
			if !ok {
				return zero, fmt.Errorf("broker: unexpected %T answering %T", kresp, req)
			}
			resp, answered = r, true
		}
		if answered {
			switch c := code(resp); c {
			case 0:
				return resp, nil
			case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code:
				lastErr = kerr.ErrorForCode(c)
			case kerr.CoordinatorNotAvailable.Code, kerr.RequestTimedOut.Code:
				// The coordinator could not replicate the
				// change in time: it may still be.
				lastErr, unknown = kerr.ErrorForCode(c), true
			default:
				return resp, shareStateError(c)
			}
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			if unknown {
				return zero, fmt.Errorf("%w: %v", errShareStateUnknown, lastErr)
			}
			return zero, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, lastErr)
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// shareStateError maps a share coordinator's code to package share's
// errors.
func shareStateError(code int16) error {
	switch code {
	case 0:
		return nil
	case kerr.UnknownTopicOrPartition.Code:
		return share.ErrStateNotFound
	case kerr.FencedLeaderEpoch.Code:
		return share.ErrFencedLeaderEpoch
	case kerr.FencedStateEpoch.Code:
		return share.ErrFencedStateEpoch
	}
	return kerr.ErrorForCode(code)
}

// firstCode is the code of the only partition of a one-partition answer.
func firstCode[T any, P any](topics []T, parts func(T) []P, code func(P) int16) int16 {
	if len(topics) != 1 || len(parts(topics[0])) != 1 {
		return kerr.UnknownServerError.Code
	}
	return code(parts(topics[0])[0])
}

// InitializeState implements share.Persister.
func (ps sharePersister) InitializeState(ctx context.Context, key share.Key, stateEpoch int32, startOffset int64) error {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.StartOffset = key.Partition, stateEpoch, startOffset
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, err := shareStateCall(ctx, ps.b, key, req,
		func(ctx context.Context) *kmsg.InitializeShareGroupStateResponse {
			return ps.b.initializeShareGroupState(ctx, req, 0)
		},
		func(r *kmsg.InitializeShareGroupStateResponse) int16 {
			return firstCode(r.Topics, func(t kmsg.InitializeShareGroupStateResponseTopic) []kmsg.InitializeShareGroupStateResponseTopicPartition {
				return t.Partitions
			}, func(p kmsg.InitializeShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		})
	return err
}

// ReadState implements share.Persister.
func (ps sharePersister) ReadState(ctx context.Context, key share.Key, leaderEpoch int32) (share.PartitionState, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, leaderEpoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := shareStateCall(ctx, ps.b, key, req,
		func(ctx context.Context) *kmsg.ReadShareGroupStateResponse {
			return ps.b.readShareGroupState(ctx, req, 0)
		},
		func(r *kmsg.ReadShareGroupStateResponse) int16 {
			return firstCode(r.Topics, func(t kmsg.ReadShareGroupStateResponseTopic) []kmsg.ReadShareGroupStateResponseTopicPartition {
				return t.Partitions
			}, func(p kmsg.ReadShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		})
	if err != nil {
		return share.PartitionState{}, err
	}
	rp := resp.Topics[0].Partitions[0]
	st := share.PartitionState{StartOffset: rp.StartOffset, StateEpoch: rp.StateEpoch, LeaderEpoch: leaderEpoch}
	for _, b := range rp.StateBatches {
		st.Batches = append(st.Batches, share.StateBatch{First: b.FirstOffset, Last: b.LastOffset,
			State: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return st, nil
}

// WriteState implements share.Persister. A write that timed out is sent
// again (it carries the whole state, so repeating it is harmless) until
// shareStateRetryTimeout.
func (ps sharePersister) WriteState(ctx context.Context, key share.Key, st share.PartitionState) error {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = key.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
	p.DeliveryCompleteCount = share.DeliveryCompleteCount(st)
	for _, b := range st.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset = b.First, b.Last
		sb.DeliveryState, sb.DeliveryCount = int8(b.State), b.DeliveryCount
		p.StateBatches = append(p.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, err := shareStateCall(ctx, ps.b, key, req,
		func(ctx context.Context) *kmsg.WriteShareGroupStateResponse {
			return ps.b.writeShareGroupState(ctx, req, 0)
		},
		func(r *kmsg.WriteShareGroupStateResponse) int16 {
			return firstCode(r.Topics, func(t kmsg.WriteShareGroupStateResponseTopic) []kmsg.WriteShareGroupStateResponseTopicPartition {
				return t.Partitions
			}, func(p kmsg.WriteShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		})
	return err
}

// DeleteState implements share.Persister.
func (ps sharePersister) DeleteState(ctx context.Context, key share.Key) error {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = key.Group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	p.Partition = key.Partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	_, err := shareStateCall(ctx, ps.b, key, req,
		func(ctx context.Context) *kmsg.DeleteShareGroupStateResponse {
			return ps.b.deleteShareGroupState(ctx, req, 0)
		},
		func(r *kmsg.DeleteShareGroupStateResponse) int16 {
			return firstCode(r.Topics, func(t kmsg.DeleteShareGroupStateResponseTopic) []kmsg.DeleteShareGroupStateResponseTopicPartition {
				return t.Partitions
			}, func(p kmsg.DeleteShareGroupStateResponseTopicPartition) int16 { return p.ErrorCode })
		})
	return err
}

// ReadSummary implements share.Persister.
func (ps sharePersister) ReadSummary(ctx context.Context, key share.Key) (share.Summary, error) {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = key.Group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = key.TopicID
	p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	p.Partition, p.LeaderEpoch = key.Partition, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := shareStateCall(ctx, ps.b, key, req,
		func(ctx context.Context) *kmsg.ReadShareGroupStateSummaryResponse {
			return ps.b.readShareGroupStateSummary(ctx, req, 0)
		},
		func(r *kmsg.ReadShareGroupStateSummaryResponse) int16 {
			return firstCode(r.Topics, func(t kmsg.ReadShareGroupStateSummaryResponseTopic) []kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
				return t.Partitions
			}, func(p kmsg.ReadShareGroupStateSummaryResponseTopicPartition) int16 { return p.ErrorCode })
		})
	if err != nil {
		return share.Summary{}, err
	}
	rp := resp.Topics[0].Partitions[0]
	return share.Summary{StartOffset: rp.StartOffset, StateEpoch: rp.StateEpoch, LeaderEpoch: rp.LeaderEpoch, DeliveryComplete: rp.DeliveryCompleteCount}, nil
}
