package txn

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/internal/keyhash"
)

// Errors the Log and the MarkerWriter report; the coordinator maps them to
// Kafka codes.
var (
	// ErrNotLeader means this node no longer leads the __transaction_state
	// partition at the given leader epoch.
	ErrNotLeader = errors.New("txn: not the leader of the __transaction_state partition")
	// ErrRecordTooLarge means a record exceeds the partition's limits.
	ErrRecordTooLarge = errors.New("txn: record too large for __transaction_state")
	// ErrCoordinatorFenced means a partition leader has seen markers from
	// a coordinator with a newer epoch: this one must stop.
	ErrCoordinatorFenced = errors.New("txn: transaction coordinator fenced")
)

// Log is the coordinator's access to the __transaction_state partitions
// this node leads. The broker implements it over its replicas.
type Log interface {
	// Append appends one record batch (base offset 0) as the leader of
	// partition at leaderEpoch and returns once the high watermark has
	// passed it (acks=-1). It returns ErrNotLeader when the node no longer
	// leads the partition at that epoch, ErrRecordTooLarge for a batch over
	// the limits, and any other error when the batch may not be committed.
	// The Log owns batch after the call.
	Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) error
	// Read returns whole record batches of partition from the batch that
	// holds offset, only below the high watermark, and the high watermark.
	// Compressed batches (a compression.type set on the topic stores the
	// coordinator's batches so) come back decompressed. The caller owns
	// the returned bytes.
	Read(ctx context.Context, partition int32, offset int64) (batches []byte, highWatermark int64, err error)
}

// Markers is one transaction's WriteTxnMarkers work.
type Markers struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// CoordinatorEpoch is the leader epoch of the __transaction_state
	// partition: partition leaders refuse markers of an older coordinator.
	CoordinatorEpoch int32
	Partitions       []TopicPartition
	// TransactionVersion is the transaction's client transaction version
	// (WriteTxnMarkers v2's TransactionVersion): at 2 a partition takes
	// the marker only at an epoch newer than its producer's batches.
	TransactionVersion int8
}

// MarkerWriter writes transaction markers to the leaders of partitions.
type MarkerWriter interface {
	// WriteMarkers writes m's marker to every partition of m through the
	// partition's leader and returns nil once each one is written or needs
	// no marker any more (its topic was deleted). It retries leader
	// changes and transient errors itself until ctx ends, and returns
	// ErrCoordinatorFenced when a leader has seen a newer coordinator.
	WriteMarkers(ctx context.Context, m Markers) error
}

// Config tunes a Coordinator.
type Config struct {
	MaxTimeout   time.Duration // transaction.max.timeout.ms
	IDExpiration time.Duration // transactional.id.expiration.ms
	// NewProducerID allocates an unused producer id (from the
	// controller's blocks, unique in the cluster).
	NewProducerID func(ctx context.Context) (int64, error)
	Now           func() time.Time
	Logger        *slog.Logger
	// TwoPhaseCommit allows InitProducerId's Enable2Pc
	// (transaction.two.phase.commit.enable, KIP-939).
	TwoPhaseCommit bool
}

// Coordinator is the transaction coordinator of one node: the transactional
// ids of every __transaction_state partition this node leads.
//
// The broker tells it which partitions it leads (SetLeadership), runs the
// loading of newly led partitions (LoadPending, whenever LoadSignal fires),
// and calls AbortTimedOut and ExpireIDs periodically. The coordinator runs
// one goroutine per transaction whose markers are being written (from
// PrepareCommit / PrepareAbort to CompleteCommit / CompleteAbort); Close
// and the loss of a partition's leadership stop them.
//
// Lock order: Coordinator.mu, then entry.mu, then Coordinator.goMu. None is held while calling
// the Log or the MarkerWriter: an entry whose record is being written is
// marked pending, and every other request for it meanwhile is answered
// CONCURRENT_TRANSACTIONS, as in Kafka.
type Coordinator struct {
	cfg     Config
	log     Log
	markers MarkerWriter

	mu         sync.Mutex
	partitions int32            // partition count of __transaction_state
	shards     map[int32]*shard // partitions this node leads
	loadSignal chan struct{}
	closed     bool

	// goMu guards stopped and wg.Add: completions start under an entry's
	// lock, which must not take mu.
	goMu    sync.Mutex
	stopped bool
	wg      sync.WaitGroup // completion goroutines
}

// shard is one led __transaction_state partition.
type shard struct {
	partition int32
	epoch     int32
	loaded    bool
	txns      map[string]*entry
	// ctx ends when the partition is no longer led: its completions stop.
	ctx    context.Context
	cancel context.CancelFunc
}

// entry is one transactional id.
type entry struct {
	id    string
	shard *shard

	mu       sync.Mutex
	meta     metadata
	pending  bool // a record for this id is being written
	unloaded bool // its partition is no longer led here
	// completing is set while markers are written for a Prepare* state.
	completing bool
}

// New returns a coordinator that leads nothing yet.
func New(cfg Config, log Log, markers MarkerWriter) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = 15 * time.Minute
	}
	if cfg.IDExpiration <= 0 {
		cfg.IDExpiration = 7 * 24 * time.Hour
	}
	return &Coordinator{cfg: cfg, log: log, markers: markers, shards: make(map[int32]*shard), loadSignal: make(chan struct{}, 1)}
}

// PartitionFor is the __transaction_state partition of transactionalID
// given the topic's partition count.
func PartitionFor(transactionalID string, partitions int32) int32 {
	return keyhash.Partition(transactionalID, partitions)
}

// SetLeadership tells the coordinator how many partitions
// __transaction_state has and which it leads, with their leader epochs. A
// newly led partition (or one led at a new epoch) loads: its ids answer
// COORDINATOR_LOAD_IN_PROGRESS until LoadPending has replayed it. A
// partition no longer led is dropped: its ids answer NOT_COORDINATOR and
// its marker writers stop.
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
			ctx, cancel := context.WithCancel(context.Background())
			c.shards[p] = &shard{partition: p, epoch: epoch, txns: make(map[string]*entry), ctx: ctx, cancel: cancel}
			signal = true
		}
	}
	c.mu.Unlock()
	for _, s := range dropped {
		unload(s)
	}
	if signal {
		select {
		case c.loadSignal <- struct{}{}:
		default:
		}
	}
}

func unload(s *shard) {
	s.cancel()
	for _, e := range s.txns {
		e.mu.Lock()
		e.unloaded = true
		e.mu.Unlock()
	}
}

// Close drops every partition and waits for the marker writers to stop.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = make(map[int32]*shard)
	c.mu.Unlock()
	for _, s := range shards {
		unload(s)
	}
	c.goMu.Lock()
	c.stopped = true
	c.goMu.Unlock()
	c.wg.Wait()
}

// LoadSignal has a value whenever a partition waits to be loaded.
func (c *Coordinator) LoadSignal() <-chan struct{} { return c.loadSignal }

// LoadPending replays every led partition that is not loaded yet, then
// resumes the marker writing of transactions found in PrepareCommit or
// PrepareAbort. A partition whose leadership changed during the replay is
// left to the next call.
func (c *Coordinator) LoadPending(ctx context.Context) {
	c.mu.Lock()
	var todo []*shard
	for _, s := range c.shards {
		if !s.loaded {
			todo = append(todo, s)
		}
	}
	c.mu.Unlock()
	slices.SortFunc(todo, func(a, b *shard) int { return int(a.partition - b.partition) })
	for _, s := range todo {
		metas, err := c.replay(ctx, s.partition)
		if err != nil {
			if ctx.Err() == nil && s.ctx.Err() == nil {
				c.cfg.Logger.Error("cannot load __transaction_state partition", "partition", s.partition, "err", err)
			}
			continue
		}
		c.mu.Lock()
		current := c.shards[s.partition] == s && !s.loaded
		var resume []*entry
		if current {
			for id, m := range metas {
				e := &entry{id: id, shard: s, meta: m}
				s.txns[id] = e
				if m.state == StatePrepareCommit || m.state == StatePrepareAbort {
					resume = append(resume, e)
				}
			}
			s.loaded = true
		}
		c.mu.Unlock()
		if current {
			c.cfg.Logger.Info("loaded __transaction_state partition", "partition", s.partition, "leader_epoch", s.epoch, "transactional_ids", len(metas), "completing", len(resume))
		}
		for _, e := range resume {
			e.mu.Lock()
			c.startCompletionLocked(e)
			e.mu.Unlock()
		}
	}
}

// Loading reports whether a led partition is not loaded yet.
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

// lookup finds the entry of id: NOT_COORDINATOR when this node does not
// lead its partition, COORDINATOR_LOAD_IN_PROGRESS while the partition
// loads; a missing id is (nil, nil, 0).
func (c *Coordinator) lookup(id string) (*shard, *entry, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitions <= 0 {
		return nil, nil, kerr.NotCoordinator.Code
	}
	s := c.shards[PartitionFor(id, c.partitions)]
	if s == nil {
		return nil, nil, kerr.NotCoordinator.Code
	}
	if !s.loaded {
		return nil, nil, kerr.CoordinatorLoadInProgress.Code
	}
	return s, s.txns[id], 0
}

// putIfAbsent adds a new entry for id to s unless one exists, and returns
// the entry that is there.
func (c *Coordinator) putIfAbsent(s *shard, id string, m metadata) (*entry, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards[s.partition] != s {
		return nil, kerr.NotCoordinator.Code
	}
	if e := s.txns[id]; e != nil {
		return e, 0
	}
	e := &entry{id: id, shard: s, meta: m}
	s.txns[id] = e
	return e, 0
}

// write persists next as e's state, e.mu held on entry and on return but
// released during the append; e must have been checked not pending. On
// success next becomes the committed state. It returns a Kafka code.
func (c *Coordinator) writeLocked(ctx context.Context, e *entry, next metadata) int16 {
	if e.unloaded {
		return kerr.NotCoordinator.Code
	}
	e.pending = true
	var value []byte
	if next.state != StateDead {
		value = encodeValue(&next, valueVersionV1)
	}
	batch := buildBatch(encodeKey(e.id), value, c.cfg.Now().UnixMilli())
	e.mu.Unlock()
	err := c.log.Append(ctx, e.shard.partition, e.shard.epoch, batch)
	e.mu.Lock()
	e.pending = false
	if err != nil {
		if !errors.Is(err, ErrNotLeader) && ctx.Err() == nil {
			c.cfg.Logger.Warn("cannot write to __transaction_state", "transactional_id", e.id, "state", next.state, "err", err)
		}
		return appendErrorCode(err)
	}
	if e.unloaded {
		return kerr.NotCoordinator.Code
	}
	e.meta = next
	return 0
}

// appendErrorCode maps a failed append to what Kafka's coordinator
// answers: the client finds the coordinator again or retries.
func appendErrorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.Is(err, ErrNotLeader):
		return kerr.NotCoordinator.Code
	case errors.Is(err, ErrRecordTooLarge):
		return kerr.UnknownServerError.Code
	case errors.As(err, &ke) && ke == kerr.NotCoordinator:
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// startCompletionLocked starts writing the markers of e's Prepare* state
// unless that is already under way. e.mu should be held.
func (c *Coordinator) startCompletionLocked(e *entry) {
	if e.completing || e.unloaded || (e.meta.state != StatePrepareCommit && e.meta.state != StatePrepareAbort) {
		return
	}
	c.goMu.Lock()
	stopped := c.stopped
	if !stopped {
		c.wg.Add(1)
	}
	c.goMu.Unlock()
	if stopped {
		return
	}
	e.completing = true
	go func() {
		defer c.wg.Done()
		c.complete(e.shard.ctx, e)
	}()
}

// complete writes the markers of e's Prepare* state and then its
// Complete* state, retrying until done or the partition is no longer led.
func (c *Coordinator) complete(ctx context.Context, e *entry) {
	defer func() {
		e.mu.Lock()
		e.completing = false
		e.mu.Unlock()
	}()
	e.mu.Lock()
	m := e.meta.clone()
	e.mu.Unlock()
	err := c.markers.WriteMarkers(ctx, Markers{
		ProducerID:         m.producerID,
		ProducerEpoch:      m.epoch,
		Commit:             m.state == StatePrepareCommit,
		CoordinatorEpoch:   e.shard.epoch,
		Partitions:         m.partitions,
		TransactionVersion: int8(min(m.txnVersion, txnVersion2)),
	})
	if err != nil {
		if ctx.Err() == nil {
			c.cfg.Logger.Warn("stopped writing transaction markers", "transactional_id", e.id, "err", err)
		}
		return
	}
	backoff := 50 * time.Millisecond
	for {
		e.mu.Lock()
		if e.unloaded || e.meta.state != m.state || e.meta.producerID != m.producerID || e.meta.epoch != m.epoch {
			e.mu.Unlock()
			return
		}
		code := int16(kerr.ConcurrentTransactions.Code)
		if !e.pending {
			code = c.writeLocked(ctx, e, completed(e.meta, c.cfg.Now().UnixMilli()))
		}
		e.mu.Unlock()
		if code == 0 || code == kerr.NotCoordinator.Code {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
