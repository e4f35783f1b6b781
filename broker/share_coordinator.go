package broker

// Wiring of the share coordinator (package share, coordinator.go) into the
// broker, in the pattern of txn.go: the coordinator of a share-partition's
// state is the leader of its partition of __share_group_state
// (FindCoordinator key type 2). reconcileShareCoordinator tells the
// coordinator which of those partitions this node leads after every
// metadata change; runShareCoordinator, a goroutine owned by the broker,
// replays newly led partitions and runs the coordinator's maintenance
// (cold snapshots, pruning). The coordinator reaches its partitions
// through shareStateLog: appends as leader that wait for the high
// watermark, reads below it once a new leader has caught up, and the log
// start offset moved up as DeleteRecords moves it.
//
// The share.coordinator.* keys are read here: the topic's settings below,
// snapshot.update.records.per.snapshot, write.timeout.ms (how long an
// append waits to be replicated), load.buffer.size (the read size of a
// load) and state.topic.compression.codec (the codec of the batches
// appended; a load reads them decompressed whatever their codec).
//
// The topic is created on first use, as Kafka's share coordinator does:
// share.coordinator.state.topic.num.partitions partitions (50),
// share.coordinator.state.topic.replication.factor (3) capped by the live
// brokers, min.insync.replicas share.coordinator.state.topic.min.isr (2)
// capped by that, and Kafka's topic configs for it (ShareCoordinatorService
// .shareGroupStateTopicConfigs): cleanup.policy=delete, compression.type=
// producer, segment.bytes share.coordinator.state.topic.segment.bytes. It
// is internal: clients cannot produce to it.
//
// Lock order: the coordinator holds a state partition's write lock while
// calling shareStateLog, which takes Broker.mu and partition.mu briefly,
// as the produce path does.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
	"github.com/sluicedev/sluice/txn"
)

const shareStateTopicName = share.StateTopic

const (
	// shareStateMaintainInterval is how often cold share-partitions get
	// a new snapshot and the state partitions are pruned (Kafka's
	// share.coordinator.cold.partition.snapshot.interval.ms and
	// share.coordinator.state.topic.prune.interval.ms, 5 minutes).
	shareStateMaintainInterval = 5 * time.Minute
)

// shareCoordinator returns the broker's share coordinator, made at first
// use.
func (b *Broker) shareCoordinator() *share.Coordinator {
	s := &b.shares
	s.coordOnce.Do(func() {
		s.coord = share.NewCoordinator(share.CoordinatorConfig{
			SnapshotEvery: int(b.cfg.ShareCoordinatorSnapshotUpdateRecords),
			Now:           b.now,
			Logger:        b.logger.With("component", "share-coordinator"),
		}, shareStateLog{b})
	})
	return s.coord
}

// reconcileShareCoordinator tells the share coordinator which
// __share_group_state partitions this node leads in img; reconcile calls
// it after reconcileTxn.
func (b *Broker) reconcileShareCoordinator(img *controller.Image) {
	b.shareCoordinator().SetLeadership(b.ledPartitions(img, shareStateTopicName))
}

// runShareCoordinator loads newly led state partitions until ctx ends,
// retrying a failed load; its maintenance goroutine snapshots cold
// share-partitions and prunes the state partitions every
// shareStateMaintainInterval (share.Coordinator.Maintain), apart, so that
// the appends of a long maintenance never delay a load. It returns once
// both have stopped.
func (b *Broker) runShareCoordinator(ctx context.Context) {
	c := b.shareCoordinator()
	var maintainer sync.WaitGroup
	maintainer.Add(1)
	go func() {
		defer maintainer.Done()
		t := time.NewTicker(shareStateMaintainInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				c.Maintain(ctx, shareStateMaintainInterval)
			}
		}
	}()
	defer maintainer.Wait()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.LoadSignal():
		case <-retry.C:
		}
		c.LoadPending(ctx)
		if c.Loading() {
			retry.Reset(200 * time.Millisecond)
		}
	}
}

// ensureShareStateTopic creates __share_group_state on first use.
func (b *Broker) ensureShareStateTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, shareStateTopicName, b.cfg.ShareCoordinatorStateTopicNumPartitions,
		int(b.cfg.ShareCoordinatorStateTopicReplicationFactor), max(int(b.cfg.ShareCoordinatorStateTopicMinIsr), 1), map[string]string{
			"cleanup.policy":   "delete",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(b.cfg.ShareCoordinatorStateTopicSegmentBytes)),
		})
}

// shareStateLog is share.StateLog over this broker's replicas of
// __share_group_state.
type shareStateLog struct{ b *Broker }

var errShareStateTimeout = errors.New("broker: __share_group_state append not replicated within share.coordinator.write.timeout.ms")

func (l shareStateLog) Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) (int64, error) {
	b := l.b
	p := b.partition(logstore.TopicPartition{Topic: shareStateTopicName, Partition: partition})
	if p == nil {
		return 0, share.ErrNotCoordinator
	}
	if leader, epoch := p.state(); leader != b.cfg.NodeID || epoch != leaderEpoch {
		return 0, share.ErrNotCoordinator
	}
	if !p.enoughInsync() {
		return 0, kerr.NotEnoughReplicas
	}
	batch, err := logstore.CompressBatches(batch, int8(b.cfg.ShareCoordinatorStateTopicCompressionCodec))
	if err != nil {
		return 0, fmt.Errorf("broker: __share_group_state batch: %w", err)
	}
	res, err := p.log.AppendAsLeader(batch, leaderEpoch)
	if err != nil {
		if errors.Is(err, logstore.ErrLogClosed) {
			return 0, share.ErrNotCoordinator
		}
		return 0, fmt.Errorf("broker: __share_group_state append: %w", err)
	}
	p.appendedAsLeader(b.cfg.NodeID)
	deadline := time.NewTimer(time.Duration(max(b.cfg.ShareCoordinatorWriteTimeoutMs, 1)) * time.Millisecond)
	defer deadline.Stop()
	if !b.waitHighWatermark(ctx, p, res.LastOffset+1, deadline.C) {
		if leader, epoch := p.state(); leader != b.cfg.NodeID || epoch != leaderEpoch {
			// The record may yet be replicated by the next leader:
			// not a plain refusal, the coordinator reloads.
			return 0, fmt.Errorf("%w: leadership moved during the append", errShareStateTimeout)
		}
		return 0, errShareStateTimeout
	}
	return res.LastOffset, nil
}

func (l shareStateLog) Read(ctx context.Context, partition int32, offset int64) ([]byte, int64, error) {
	p := l.b.partition(logstore.TopicPartition{Topic: shareStateTopicName, Partition: partition})
	if p == nil {
		return nil, 0, share.ErrNotCoordinator
	}
	if err := l.b.waitLeaderCaughtUp(ctx, p); err != nil {
		if errors.Is(err, txn.ErrNotLeader) {
			return nil, 0, share.ErrNotCoordinator
		}
		return nil, 0, err
	}
	hw := p.highWatermark()
	offset = max(offset, p.log.LogStartOffset())
	if offset >= hw {
		return nil, hw, nil
	}
	res, err := p.log.Read(offset, max(l.b.cfg.ShareCoordinatorLoadBufferSize, 1), hw, true)
	if err != nil {
		return nil, hw, err
	}
	return logstore.DecompressBatches(res.Data), hw, nil
}

// Prune moves the log start offset of a state partition this node leads
// up to offset (at most its high watermark), as DeleteRecords does; the
// followers follow it.
func (l shareStateLog) Prune(_ context.Context, partition, leaderEpoch int32, offset int64) error {
	p := l.b.partition(logstore.TopicPartition{Topic: shareStateTopicName, Partition: partition})
	if p == nil {
		return share.ErrNotCoordinator
	}
	if leader, epoch := p.state(); leader != l.b.cfg.NodeID || epoch != leaderEpoch {
		return share.ErrNotCoordinator
	}
	offset = min(offset, p.highWatermark())
	if offset <= p.log.LogStartOffset() {
		return nil
	}
	if _, err := p.log.DeleteRecordsBefore(offset); err != nil {
		return err
	}
	p.wake()
	return nil
}

// shareCoordinatorErrorCode maps the share coordinator's errors to
// Kafka's codes.
func shareCoordinatorErrorCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, share.ErrNotCoordinator):
		return kerr.NotCoordinator.Code
	case errors.Is(err, share.ErrCoordinatorLoadInProgress):
		return kerr.CoordinatorLoadInProgress.Code
	case errors.Is(err, share.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, share.ErrFencedStateEpoch):
		return kerr.FencedStateEpoch.Code
	case errors.Is(err, share.ErrStateNotFound):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, errShareStateTimeout), errors.Is(err, kerr.NotEnoughReplicas):
		// Kafka's coordinator runtime answers a write that failed to
		// replicate with a retriable coordinator error.
		return kerr.CoordinatorNotAvailable.Code
	}
	return errorCode(err)
}

// shareStateRefusal is the code every partition of a share-state request
// (83-87) is answered with before the share coordinator sees it:
// CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION on the cluster (the
// requests are the brokers' own, as in Kafka), 0 to serve it.
func (b *Broker) shareStateRefusal(r *protocol.Request) int16 {
	if !b.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

// shareStateMessage is the error message of a share-state partition
// answer.
func shareStateMessage(code int16) *string {
	if code == 0 {
		return nil
	}
	return errorMessage(kerr.ErrorForCode(code))
}

// validShareCoordinatorKey reports whether key is a share coordinator key
// "group:topicId:partition" (the group may itself hold colons): a
// non-empty group, a topic id in Kafka's Uuid form, a partition number.
func validShareCoordinatorKey(key string) bool {
	last := strings.LastIndexByte(key, ':')
	if last < 0 {
		return false
	}
	mid := strings.LastIndexByte(key[:last], ':')
	if mid <= 0 {
		return false
	}
	id, err := base64.RawURLEncoding.DecodeString(key[mid+1 : last])
	if err != nil || len(id) != 16 {
		return false
	}
	n, err := strconv.ParseInt(key[last+1:], 10, 32)
	return err == nil && n >= 0
}
