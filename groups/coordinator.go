package groups

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors the Log reports; the coordinator maps them to Kafka codes.
var (
	// ErrNotLeader means this node no longer leads the partition at the
	// given leader epoch: the client must find the new coordinator.
	ErrNotLeader = errors.New("groups: not the leader of the __consumer_offsets partition")
	// ErrRecordTooLarge means the batch exceeds the partition's limits.
	ErrRecordTooLarge = errors.New("groups: record batch too large")
)

// Log is the coordinator's access to the __consumer_offsets partitions this
// node leads. The broker implements it over its replicas.
type Log interface {
	// Append appends one record batch (built by the coordinator, base
	// offset 0) as the leader of partition at leaderEpoch and returns once
	// the high watermark has passed it, as produce with acks=-1 would. It
	// returns ErrNotLeader when the node no longer leads the partition at
	// that epoch, ErrRecordTooLarge for a batch over the limits, and any
	// other error when the batch may not be committed (timeout, too few
	// in-sync replicas). On success it returns the offset the log gave
	// the batch's first record. A transactional batch (TxnOffsetCommit)
	// is checked against the partition's producer state first: a stale
	// producer epoch is refused with an error carrying Kafka's code
	// (*kerr.Error). The Log owns batch after the call.
	Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) (firstOffset int64, err error)
	// Read returns whole record batches of partition starting with the
	// batch holding offset (an offset below the log start reads from the
	// log start), only batches below the high watermark, and the high
	// watermark. An empty result at an offset below the high watermark does
	// not happen. Compressed batches (a compression.type set on the topic
	// stores the coordinator's batches so) come back decompressed. The
	// caller owns the returned bytes.
	Read(ctx context.Context, partition int32, offset int64) (batches []byte, highWatermark int64, err error)
}

// TopicInfo describes a topic for offset commits and fetches.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Config tunes a Coordinator. Durations come from the broker's group.*
// and offsets.* settings.
type Config struct {
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	MaxGroupSize          int           // group.max.size
	MaxMetadataSize       int           // offset.metadata.max.bytes
	OffsetsRetention      time.Duration // offsets.retention.minutes

	// KIP-848 consumer groups.
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	ConsumerMaxGroupSize      int           // group.consumer.max.size
	ConsumerAssignors         []string      // group.consumer.assignors; the first is the default
	// ConsumerGroupSettings, when set, returns a consumer group's own
	// settings (its group configs); the coordinator asks it for the
	// session timeout of members it restores when it loads a partition.
	// Heartbeats carry the settings in force with them
	// (ConsumerHeartbeat), so a nil func only means restored members start
	// with ConsumerSessionTimeout until their next heartbeat.
	ConsumerGroupSettings func(group string) ConsumerGroupSettings

	// KIP-932 share groups (share.go).
	ShareSessionTimeout    time.Duration // group.share.session.timeout.ms
	ShareHeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	ShareMaxGroupSize      int           // group.share.max.size
	// ShareInitializeRetry is how long a share group waits for its
	// partitions' state to be initialized before asking again
	// (group.share.initialize.retry.interval.ms, Kafka's 30 s).
	ShareInitializeRetry time.Duration
	// ShareGroupSettings, when set, returns a share group's own settings
	// (its group configs) for the members restored at a load.
	ShareGroupSettings func(group string) ShareGroupSettings
	// ShareStateInitializer, when set, initializes the share-partition
	// state of partitions a share group starts consuming; without one
	// they count as initialized at once (ShareStateInitializer's doc).
	ShareStateInitializer ShareStateInitializer

	// LookupTopic resolves a topic by name, or by id when name is empty.
	LookupTopic func(name string, id [16]byte) (TopicInfo, bool)
	// ListTopics lists every topic, internal ones included; consumer
	// groups resolve regular expression subscriptions against it.
	ListTopics func() []TopicInfo
	Now        func() time.Time
	Logger     *slog.Logger
}

// Coordinator is the group coordinator of one node: the classic and KIP-848
// consumer groups and committed offsets of every __consumer_offsets partition this node leads.
//
// It starts no goroutines and reads no clock but cfg.Now. The broker tells
// it which partitions it leads (SetLeadership), runs the loading of newly
// led partitions (LoadPending, whenever LoadSignal fires) and steps its
// timers (Tick). Join and Sync block on a channel until their rebalance
// phase completes, which a later request or Tick does.
//
// Lock order: Coordinator.mu, then group.writeMu, then group.mu, then
// Coordinator.markerMu (a leaf). The coordinator lock guards only the
// partition table and each partition's group map; nothing waits on the log
// under a lock except group.writeMu, which orders one group's appends so
// that its log records follow its state.
type Coordinator struct {
	cfg Config
	log Log

	mu         sync.Mutex
	partitions int32            // partition count of __consumer_offsets
	shards     map[int32]*shard // partitions this node leads
	loadSignal chan struct{}    // has a value when LoadPending or PurgeDeletedTopics has work
	closed     bool
	// deletedTopics waits for PurgeDeletedTopics.
	deletedTopics []string
	// topicsChanged is set by TopicsChanged for RefreshConsumerGroups.
	topicsChanged bool

	// markerMu guards lastMarkers. It is a leaf: nothing else is locked
	// while it is held.
	markerMu sync.Mutex
	// lastMarkers holds, per led partition, the newest acknowledged
	// transaction marker of each producer id (txn_offsets.go).
	lastMarkers map[int32]*partitionMarkers
}

// shard is one led __consumer_offsets partition.
type shard struct {
	partition int32
	epoch     int32
	loaded    bool
	groups    map[string]*group
	// markers are transaction markers written while the partition
	// loaded (CompleteTxn).
	markers []txnMarker
}

// New returns a coordinator that leads nothing yet.
func New(cfg Config, log Log) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxMetadataSize <= 0 {
		cfg.MaxMetadataSize = 4096
	}
	if cfg.LookupTopic == nil {
		cfg.LookupTopic = func(string, [16]byte) (TopicInfo, bool) { return TopicInfo{}, false }
	}
	if cfg.ListTopics == nil {
		cfg.ListTopics = func() []TopicInfo { return nil }
	}
	if cfg.ConsumerSessionTimeout <= 0 {
		cfg.ConsumerSessionTimeout = 45 * time.Second
	}
	if cfg.ConsumerHeartbeatInterval <= 0 {
		cfg.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if cfg.ShareSessionTimeout <= 0 {
		cfg.ShareSessionTimeout = 45 * time.Second
	}
	if cfg.ShareHeartbeatInterval <= 0 {
		cfg.ShareHeartbeatInterval = 5 * time.Second
	}
	if cfg.ShareInitializeRetry <= 0 {
		cfg.ShareInitializeRetry = 30 * time.Second
	}
	cfg.ConsumerAssignors = slices.DeleteFunc(slices.Clone(cfg.ConsumerAssignors), func(name string) bool { return assignorFuncs[name] == nil })
	if len(cfg.ConsumerAssignors) == 0 {
		cfg.ConsumerAssignors = []string{"range", "uniform"}
	}
	return &Coordinator{cfg: cfg, log: log, shards: make(map[int32]*shard), loadSignal: make(chan struct{}, 1),
		lastMarkers: make(map[int32]*partitionMarkers)}
}

// SetLeadership tells the coordinator how many partitions __consumer_offsets
// has and which of them this node leads, with their leader epochs. A newly
// led partition (or one led at a new epoch) starts loading: its groups answer
// COORDINATOR_LOAD_IN_PROGRESS until LoadPending has replayed it. A partition
// no longer led is dropped and its groups answer NOT_COORDINATOR.
func (c *Coordinator) SetLeadership(partitions int32, led map[int32]int32) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.partitions = partitions
	var dropped []*shard
	for p, s := range c.shards {
		if epoch, ok := led[p]; !ok || epoch != s.epoch {
			dropped = append(dropped, s)
			delete(c.shards, p)
		}
	}
	signal := false
	for p, epoch := range led {
		if _, ok := c.shards[p]; !ok {
			c.shards[p] = &shard{partition: p, epoch: epoch, groups: make(map[string]*group)}
			signal = true
		}
	}
	c.mu.Unlock()
	for _, s := range dropped {
		c.forgetMarkers(s.partition, s.epoch)
		unload(s)
	}
	if signal {
		select {
		case c.loadSignal <- struct{}{}:
		default:
		}
	}
}

// Close drops every partition: waiting joins and syncs are answered with
// NOT_COORDINATOR so a stopping broker does not hang on long polls.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = make(map[int32]*shard)
	c.mu.Unlock()
	for _, s := range shards {
		unload(s)
	}
}

func unload(s *shard) {
	for _, g := range s.groups {
		g.mu.Lock()
		g.unloadLocked()
		g.mu.Unlock()
	}
}

// LoadSignal has a value whenever a partition waits to be loaded or deleted
// topics wait to be purged: the broker then calls LoadPending and
// PurgeDeletedTopics.
func (c *Coordinator) LoadSignal() <-chan struct{} { return c.loadSignal }

// LoadPending replays every led partition that is not loaded yet. A
// partition whose leadership changed during the replay is left to the next
// call.
func (c *Coordinator) LoadPending(ctx context.Context) {
	c.mu.Lock()
	var todo []shard
	for _, s := range c.shards {
		if !s.loaded {
			todo = append(todo, shard{partition: s.partition, epoch: s.epoch})
		}
	}
	c.mu.Unlock()
	slices.SortFunc(todo, func(a, b shard) int { return int(a.partition - b.partition) })
	for _, t := range todo {
		groups, replayedTo, err := c.replay(ctx, t.partition, t.epoch)
		if err != nil {
			if ctx.Err() == nil {
				c.cfg.Logger.Error("cannot load __consumer_offsets partition", "partition", t.partition, "err", err)
			}
			continue
		}
		c.mu.Lock()
		if s := c.shards[t.partition]; s != nil && s.epoch == t.epoch && !s.loaded {
			// No other goroutine sees these groups before this.
			applyLateMarkers(groups, s.markers, replayedTo)
			s.markers = nil
			s.groups = groups
			s.loaded = true
		}
		c.mu.Unlock()
	}
}

// Loading reports whether a led partition still waits to be loaded (a
// load failed, or the broker has not run LoadPending yet).
func (c *Coordinator) Loading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		if !s.loaded {
			return true
		}
	}
	return false
}

// Tick steps every group's timers to now: session timeouts, the end of a
// join phase, the initial rebalance delay, pending members and syncs. The
// broker calls it periodically.
func (c *Coordinator) Tick(ctx context.Context) {
	now := c.cfg.Now()
	c.mu.Lock()
	var all []*group
	for _, s := range c.shards {
		if s.loaded {
			for _, g := range s.groups {
				all = append(all, g)
			}
		}
	}
	c.mu.Unlock()
	for _, g := range all {
		c.stepGroup(ctx, g, now, true)
	}
	c.reapDead()
}

// catchUp steps g's timers to now before a request reads or changes g, so
// that a deadline that has passed is in force for every request that
// arrives after it, as Kafka's coordinator timers are (they fire at their
// deadline, not at the next Tick): a static member whose session ended
// 1 ms ago is gone for the DeleteGroups, DescribeGroups, Heartbeat or
// OffsetCommit that follows. librdkafka's test 0081 deletes its groups the
// moment the session timeout (counted from the close's OffsetCommit) has
// passed; with Tick alone the member outlived it by up to a tick.
func (c *Coordinator) catchUp(ctx context.Context, g *group) {
	c.stepGroup(ctx, g, c.cfg.Now(), false)
}

// stepGroup steps one group's timers to now and writes what changed. A
// KIP-848 group is visited only when a deadline is due, unless always.
func (c *Coordinator) stepGroup(ctx context.Context, g *group, now time.Time, always bool) {
	g.mu.Lock()
	if g.share != nil {
		due := always || g.share.dueLocked(now)
		g.mu.Unlock()
		if due {
			c.tickShare(ctx, g, now)
		}
		return
	}
	if g.streams != nil {
		due := always || g.streams.dueLocked(now)
		g.mu.Unlock()
		if due {
			c.tickStreams(g, now) // streams.go
		}
		return
	}
	if g.consumer != nil {
		due := always || g.consumer.dueLocked(now)
		g.mu.Unlock()
		if due {
			c.tickConsumer(ctx, g, now)
		}
		return
	}
	g.tickLocked(now)
	dirty := g.takeDirtyLocked()
	g.mu.Unlock()
	if dirty {
		c.persist(ctx, g)
	}
}

// reapDead removes deleted groups from their partition's map.
func (c *Coordinator) reapDead() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		for name, g := range s.groups {
			g.mu.Lock()
			dead := g.state == stateDead
			g.mu.Unlock()
			if dead {
				delete(s.groups, name)
			}
		}
	}
}

// existingGroup looks up a group a request needs to exist: an empty id is
// INVALID_GROUP_ID, a group this coordinator does not own or has not loaded
// yet answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, and a group
// that does not exist gets missing, which differs by API. It returns the
// group, or a non-zero error code.
func (c *Coordinator) existingGroup(name string, missing int16) (*group, int16) {
	if name == "" {
		return nil, kerr.InvalidGroupID.Code
	}
	g, err := c.group(name, false)
	if err != nil {
		return nil, errCode(err)
	}
	if g == nil {
		return nil, missing
	}
	return g, 0
}

// group finds the group, creating it Empty when create is set. It returns
// NOT_COORDINATOR when this node does not lead the group's partition and
// COORDINATOR_LOAD_IN_PROGRESS while that partition loads; a missing group
// without create is (nil, nil). Every request finds its group here, so the
// group's due timers are stepped here first (catchUp).
func (c *Coordinator) group(name string, create bool) (*group, error) {
	g, err := c.findGroup(name, create)
	if g != nil {
		c.catchUp(context.Background(), g)
	}
	return g, err
}

// findGroup is group without stepping the timers.
func (c *Coordinator) findGroup(name string, create bool) (*group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitions <= 0 {
		return nil, kerr.NotCoordinator
	}
	s := c.shards[PartitionFor(name, c.partitions)]
	if s == nil {
		return nil, kerr.NotCoordinator
	}
	if !s.loaded {
		return nil, kerr.CoordinatorLoadInProgress
	}
	g := s.groups[name]
	if g != nil {
		g.mu.Lock()
		dead := g.state == stateDead
		g.mu.Unlock()
		if dead {
			delete(s.groups, name)
			g = nil
		}
	}
	if g == nil && create {
		g = newGroup(name, s.partition, s.epoch, &c.cfg, c.cfg.Now())
		s.groups[name] = g
	}
	return g, nil
}

// loadedGroups lists the groups of every loaded partition, and whether any
// led partition is still loading.
func (c *Coordinator) loadedGroups() (all []*group, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		if !s.loaded {
			loading = true
			continue
		}
		for _, g := range s.groups {
			all = append(all, g)
		}
	}
	return all, loading
}

// persist writes the group's current metadata (taken under its lock) to
// the log. Appends of one group are ordered by writeMu, so the last record
// always describes the newest state.
func (c *Coordinator) persist(ctx context.Context, g *group) error {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.mu.Lock()
	if g.unloaded {
		g.mu.Unlock()
		return kerr.NotCoordinator
	}
	var records []kv
	wasConsumer := g.wasConsumer
	if wasConsumer {
		records = consumerGroupTombstones(g.name)
	}
	records = append(records, kv{key: groupKey(g.name), value: g.metadataValueLocked()})
	g.mu.Unlock()
	if err := c.append(ctx, g, records); err != nil {
		return err
	}
	if wasConsumer {
		g.mu.Lock()
		g.wasConsumer = false
		g.mu.Unlock()
	}
	return nil
}

// append writes records of g's partition as one batch.
func (c *Coordinator) append(ctx context.Context, g *group, records []kv) error {
	_, err := c.appendAt(ctx, g, records, noProducer)
	return err
}

// appendAt writes records of g's partition as one batch of producer and
// returns the offset of the first record.
func (c *Coordinator) appendAt(ctx context.Context, g *group, records []kv, producer batchProducer) (int64, error) {
	return c.log.Append(ctx, g.partition, g.epoch, buildProducerBatch(records, c.cfg.Now().UnixMilli(), producer))
}

// appendErrorCode maps a failed append to the code Kafka's coordinator
// answers with (CoordinatorOperationExceptionHelper): the client retries
// or finds the new coordinator. Replication trouble is
// COORDINATOR_NOT_AVAILABLE and a lost or failed partition NOT_COORDINATOR,
// never the produce errors themselves, which consumers do not expect from
// a group request.
func appendErrorCode(err error, offsets bool) int16 {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		switch ke.Code {
		case kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code, kerr.RequestTimedOut.Code,
			kerr.UnknownTopicOrPartition.Code:
			return kerr.CoordinatorNotAvailable.Code
		case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
			return kerr.NotCoordinator.Code
		}
		return ke.Code
	case errors.Is(err, ErrNotLeader):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrRecordTooLarge) && offsets:
		return kerr.InvalidCommitOffsetSize.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// newMemberID is Kafka's member id: the client id (or the group instance
// id for a static member), a dash and a random UUID.
func newMemberID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
