package broker

// Wiring of the group coordinator (package groups) into the broker.
//
// The coordinator of a group is the leader of the group's partition of
// __consumer_offsets. reconcile tells the coordinator which of those
// partitions this node leads after every metadata change; runGroups, a
// goroutine owned by the broker, steps the coordinator's timers (Tick) and
// expires offsets, and its loader goroutine replays newly led partitions
// (LoadPending), retrying a failed load, so that a load waiting for a new
// leader to catch up does not hold back the timers. The coordinator
// reaches the partitions through offsetsLog: appends as leader, through
// the partition's producer state (a transactional offset commit's epoch is
// checked there), that wait for the high watermark (acks=-1), and reads
// below it once the high watermark has reached the log end offset the
// leader had when elected (waitLeaderCaughtUp).
//
// Lock order: the coordinator never holds its locks while calling
// offsetsLog except group.writeMu; offsetsLog takes Broker.mu and
// partition.mu briefly, as the produce path does.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

const offsetsTopicName = "__consumer_offsets"

// groupsTickInterval is how often the coordinator's timers are stepped:
// session timeouts and rebalance deadlines are honoured to within it.
const groupsTickInterval = 50 * time.Millisecond

func (b *Broker) newGroupCoordinator() *groups.Coordinator {
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	return groups.New(groups.Config{
		InitialRebalanceDelay: ms(b.cfg.GroupInitialRebalanceDelayMs),
		MinSessionTimeout:     ms(b.cfg.GroupMinSessionTimeoutMs),
		MaxSessionTimeout:     ms(b.cfg.GroupMaxSessionTimeoutMs),
		MaxGroupSize:          int(b.cfg.GroupMaxSize),
		MaxMetadataSize:       int(b.cfg.OffsetMetadataMaxBytes),
		OffsetsRetention:      time.Duration(b.cfg.OffsetsRetentionMinutes) * time.Minute,

		ConsumerSessionTimeout:    ms(b.cfg.ConsumerGroupSessionTimeoutMs),
		ConsumerHeartbeatInterval: ms(b.cfg.ConsumerGroupHeartbeatMs),
		ConsumerMaxGroupSize:      int(b.cfg.ConsumerGroupMaxSize),
		ConsumerAssignors:         b.cfg.ConsumerGroupAssignors,
		ConsumerGroupSettings:     b.consumerGroupSettings,

		ShareSessionTimeout:    ms(b.cfg.ShareGroupSessionTimeoutMs),
		ShareHeartbeatInterval: ms(b.cfg.ShareGroupHeartbeatMs),
		ShareMaxGroupSize:      int(b.cfg.ShareGroupMaxSize),
		ShareGroupSettings:     b.shareGroupSettings,     // share.go
		ShareStateInitializer:  shareStateInitializer{b}, // share_coordinator_init.go

		LookupTopic: b.lookupGroupTopic,
		ListTopics:  b.listGroupTopics,
		Now:         b.now,
		Logger:      b.logger.With("component", "groups"),
	}, offsetsLog{b})
}

// lookupGroupTopic resolves a topic named in an offset commit or fetch.
func (b *Broker) lookupGroupTopic(name string, id [16]byte) (groups.TopicInfo, bool) {
	t := lookupTopic(b.metadata(), name == "", name, id)
	if t == nil {
		return groups.TopicInfo{}, false
	}
	return groups.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))}, true
}

// listGroupTopics lists every topic for consumer groups' subscriptions.
func (b *Broker) listGroupTopics() []groups.TopicInfo {
	img := b.metadata()
	if img == nil {
		return nil
	}
	out := make([]groups.TopicInfo, 0, len(img.Topics))
	for _, t := range img.Topics {
		out = append(out, groups.TopicInfo{Name: t.Name, ID: t.ID, Partitions: int32(len(t.Partitions))})
	}
	return out
}

// reconcileGroups tells the coordinator which __consumer_offsets
// partitions this node leads in img, which topics of prev are gone, and
// whether topics were created, deleted or grew (consumer groups then
// re-resolve their subscriptions). reconcile calls it last.
func (b *Broker) reconcileGroups(prev, img *controller.Image) {
	if b.groups == nil {
		return
	}
	if prev != nil {
		var deleted []string
		changed := len(prev.Topics) != len(img.Topics)
		// Only the topics the command touched, when img is the image
		// one command built from prev (reconcile.go).
		prevTopics := maps.All(prev.Topics)
		if names, ok := img.TopicsChangedSince(prev); ok {
			prevTopics = func(yield func(string, *controller.Topic) bool) {
				for _, name := range names {
					if t := prev.Topics[name]; t != nil && !yield(name, t) {
						return
					}
				}
			}
		}
		for name, t := range prevTopics {
			now := img.Topics[name]
			if now == nil || now.ID != t.ID {
				deleted = append(deleted, name)
				changed = true
			} else if len(now.Partitions) != len(t.Partitions) {
				changed = true
			}
		}
		b.groups.TopicsDeleted(deleted)
		if changed {
			b.groups.TopicsChanged()
		}
	}
	b.groups.SetLeadership(b.ledPartitions(img, offsetsTopicName))
}

// ledPartitions returns how many partitions internal topic name has in img
// (0 if it does not exist) and, for those this node leads and holds a
// replica of, their leader epochs: what a coordinator living on the topic
// needs to know after a metadata change.
func (b *Broker) ledPartitions(img *controller.Image, name string) (int32, map[int32]int32) {
	t := img.Topics[name]
	if t == nil {
		return 0, nil
	}
	led := make(map[int32]int32)
	for _, mp := range t.Partitions {
		if mp.Leader == b.cfg.NodeID && b.partition(logstore.TopicPartition{Topic: t.Name, Partition: mp.Partition}) != nil {
			led[mp.Partition] = mp.LeaderEpoch
		}
	}
	return int32(len(t.Partitions)), led
}

// runGroups steps the coordinator's timers and expires old offsets until
// ctx ends; its loader goroutine (loadGroups) loads newly led partitions.
// It returns once the loader has stopped.
func (b *Broker) runGroups(ctx context.Context) {
	var loader sync.WaitGroup
	loader.Add(1)
	go func() {
		defer loader.Done()
		b.loadGroups(ctx)
	}()
	defer loader.Wait()
	t := time.NewTicker(groupsTickInterval)
	defer t.Stop()
	retention := time.Duration(b.cfg.OffsetsRetentionCheckMs) * time.Millisecond
	if retention <= 0 {
		retention = 10 * time.Minute
	}
	expire := time.NewTicker(retention)
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.groups.Tick(ctx)
		case <-expire.C:
			b.groups.ExpireOffsets(ctx)
		}
	}
}

// groupsLoadRetry is how soon a failed load of a __consumer_offsets
// partition (its new leader not caught up, a read error) is tried again.
const groupsLoadRetry = 200 * time.Millisecond

// loadGroups loads newly led partitions, purges deleted topics' offsets
// and refreshes consumer groups whenever the coordinator signals work,
// until ctx ends.
func (b *Broker) loadGroups(ctx context.Context) {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.groups.LoadSignal():
		case <-retry.C:
		}
		b.groups.LoadPending(ctx)
		b.groups.PurgeDeletedTopics(ctx)
		b.groups.RefreshConsumerGroups(ctx)
		b.groups.InitializeShareStates(ctx) // share groups' partition state (share.go)
		if b.groups.Loading() {
			retry.Reset(groupsLoadRetry)
		}
	}
}

// ensureOffsetsTopic creates __consumer_offsets on first use, as Kafka does
// when the first FindCoordinator for a group arrives.
func (b *Broker) ensureOffsetsTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, offsetsTopicName, b.cfg.OffsetsTopicNumPartitions,
		int(b.cfg.OffsetsTopicReplicationFactor), 0, map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.Itoa(int(b.cfg.OffsetsTopicSegmentBytes)),
			"compression.type": "producer",
		})
}

// ensureInternalTopic creates a coordinator's internal topic unless it
// exists: rf replicas but no more than the live brokers, and, when minISR
// is set, a min.insync.replicas no larger than the replicas.
func (b *Broker) ensureInternalTopic(ctx context.Context, name string, partitions int32, rf, minISR int, configs map[string]string) error {
	img := b.metadata()
	if img.Topics[name] != nil {
		return nil
	}
	rf = max(min(rf, len(img.UnfencedBrokers())), 1)
	if minISR > 0 {
		configs["min.insync.replicas"] = strconv.Itoa(max(min(minISR, rf), 1))
	}
	values := make(map[string]*string, len(configs))
	for k, v := range configs {
		values[k] = &v
	}
	res := b.createTopics(ctx, []controller.CreateTopic{{
		Name:              name,
		NumPartitions:     partitions,
		ReplicationFactor: int16(rf),
		Configs:           values,
	}}, false)
	if err := res[0].Err; err != nil && errorCode(err) != kerr.TopicAlreadyExists.Code {
		return err
	}
	return nil
}

// memberClient returns the client id and the host (as clientHost shows it)
// of the connection r came on, which a group records for a joining member.
func memberClient(r *protocol.Request) (clientID, host string) {
	if r.Header.ClientID != nil {
		clientID = *r.Header.ClientID
	}
	if r.Conn != nil {
		host = clientHost(r.Conn.Remote)
	}
	return clientID, host
}

// clientHost is how Kafka shows a member's address: "/" and the IP.
func clientHost(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		return "/" + tcp.IP.String()
	}
	if addr == nil {
		return ""
	}
	return "/" + addr.String()
}

// offsetsLog is groups.Log over this broker's replicas of __consumer_offsets.
type offsetsLog struct{ b *Broker }

var errOffsetsCommitTimeout = errors.New("broker: __consumer_offsets append not replicated within offsets.commit.timeout.ms")

// Append appends batch as the coordinator's write (txn.OriginCoordinator):
// the coordinator's own batches carry no producer and pass the producer
// state untouched; a transactional offset commit's batch must carry an
// epoch no older than the partition knows for its producer
// (INVALID_PRODUCER_EPOCH otherwise), sequences are not checked.
func (l offsetsLog) Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) (int64, error) {
	b := l.b
	p := b.partition(logstore.TopicPartition{Topic: offsetsTopicName, Partition: partition})
	if p == nil {
		return 0, groups.ErrNotLeader
	}
	if leader, epoch := p.state(); leader != b.cfg.NodeID || epoch != leaderEpoch {
		return 0, groups.ErrNotLeader
	}
	if !p.enoughInsync() {
		return 0, kerr.NotEnoughReplicas
	}
	out, err := p.appendAsLeader(batch, leaderEpoch, txn.OriginCoordinator, 0)
	if err != nil {
		switch {
		case errors.Is(err, logstore.ErrMessageTooLarge) || errors.Is(err, logstore.ErrRecordListTooLarge):
			return 0, fmt.Errorf("%w: %v", groups.ErrRecordTooLarge, err)
		case errors.Is(err, logstore.ErrLogClosed):
			return 0, groups.ErrNotLeader
		case errors.Is(err, txn.ErrBatchStaleEpoch), errors.Is(err, txn.ErrBatchNotTransactional):
			return 0, fmt.Errorf("%w: %v", kerr.ErrorForCode(errorCode(err)), err)
		}
		return 0, err
	}
	p.appendedAsLeader(b.cfg.NodeID)
	timeout := time.Duration(b.cfg.OffsetsCommitTimeoutMs) * time.Millisecond
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	if !b.waitHighWatermark(ctx, p, out.res.LastOffset+1, deadline.C) {
		return 0, errOffsetsCommitTimeout
	}
	return out.res.FirstOffset, nil
}

// offsetsReadBytes bounds one read of a __consumer_offsets partition while
// loading; a larger batch is still returned whole.
const offsetsReadBytes = 4 << 20

// Read first waits until this leader's high watermark has reached the log
// end offset it had when elected (at once unless it was just elected):
// below it, records the previous leader already committed, and answered,
// could be missing from a replay.
func (l offsetsLog) Read(ctx context.Context, partition int32, offset int64) ([]byte, int64, error) {
	p := l.b.partition(logstore.TopicPartition{Topic: offsetsTopicName, Partition: partition})
	if p == nil {
		return nil, 0, groups.ErrNotLeader
	}
	if err := l.b.waitLeaderCaughtUp(ctx, p); err != nil {
		if errors.Is(err, txn.ErrNotLeader) {
			return nil, 0, groups.ErrNotLeader
		}
		return nil, 0, err
	}
	hw := p.highWatermark()
	offset = max(offset, p.log.LogStartOffset())
	if offset >= hw {
		return nil, hw, nil
	}
	res, err := p.log.Read(offset, offsetsReadBytes, hw, true)
	if err != nil {
		return nil, hw, err
	}
	// The coordinators write uncompressed batches, but a compression.type
	// set on the topic stores them compressed; the loaders read records.
	return logstore.DecompressBatches(res.Data), hw, nil
}
