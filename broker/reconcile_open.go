package broker

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// The log opener opens the logs of the replicas reconcile assigns to this
// node, off the controller's apply goroutine: opening a new log creates its
// directory and files and fsyncs its partition.metadata, and one command
// can create thousands of replicas (a topic of 1,000 partitions at RF 3 is
// 1,000 new logs on each of three nodes). Applying that command used to
// wait for every one of them, one after the other, with the raft apply
// goroutine (and so every later metadata change) stopped behind it.
//
// reconcile now queues the replica (queue) and moves on; the opener takes
// what is queued in batches, opens a batch's logs openConcurrency at a time
// (their fsyncs then reach the disk together, and the log directory is
// flushed once for all of them: logstore's prepareMetadata), and installs
// the opened partitions under reconcileMu against the newest reconciled
// image, which may have changed meanwhile: a partition deleted, reassigned
// away or recreated under a new topic id while its log was being opened
// has its log removed instead, so nothing is left behind. Until installed
// a partition is not served: its leader answers NOT_LEADER_OR_FOLLOWER, as
// a Kafka broker does for a partition in its metadata it has not created
// yet, and clients retry. CreateTopics and CreatePartitions wait (within
// the request's time) for this node's new replicas before answering, and
// New for every queued log before it serves.

// openBatchSize bounds how many logs one batch opens before installing
// them, so the first partitions of a large topic are served early.
const openBatchSize = 256

// openConcurrency is how many logs of a batch are opened at once.
const openConcurrency = 16

// logOpener is the queue of replicas waiting for their log.
type logOpener struct {
	mu sync.Mutex
	// pending holds the replicas queued and not yet taken by a batch,
	// running those of the batch being opened (by topic id).
	pending map[logstore.TopicPartition]openRequest
	running map[logstore.TopicPartition][16]byte
	// wake has a token when pending is not empty; changed is closed and
	// replaced whenever a batch is installed.
	wake    chan struct{}
	changed chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// beforeOpen, if set (tests, export_open_test.go), runs before each
	// log is opened; guarded by mu.
	beforeOpen func(logstore.TopicPartition)
	// settings is what installReplicas resolved of each topic's
	// effective config, kept while the queue is busy; only the opener's
	// goroutine uses it.
	settings topicSettingsCache
}

// openRequest is one replica's log to open.
type openRequest struct {
	topicID [16]byte
	cfg     logstore.Config
	isNew   bool // became a replica of this node after the node started
}

func newLogOpener() *logOpener {
	return &logOpener{
		pending: make(map[logstore.TopicPartition]openRequest),
		running: make(map[logstore.TopicPartition][16]byte),
		wake:    make(chan struct{}, 1),
		changed: make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// queue asks for tp's log. A replica whose log is being opened for the
// same topic id is not queued again.
func (o *logOpener) queue(tp logstore.TopicPartition, req openRequest) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if id, ok := o.running[tp]; ok && id == req.topicID {
		delete(o.pending, tp)
		return
	}
	o.pending[tp] = req
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// cancel forgets a queued replica; one being opened is checked when it is
// installed.
func (o *logOpener) cancel(tp logstore.TopicPartition) {
	o.mu.Lock()
	delete(o.pending, tp)
	o.mu.Unlock()
}

// has reports whether tp is queued or being opened.
func (o *logOpener) has(tp logstore.TopicPartition) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, p := o.pending[tp]
	_, r := o.running[tp]
	return p || r
}

// queued lists the replicas queued or being opened.
func (o *logOpener) queued() []logstore.TopicPartition {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]logstore.TopicPartition, 0, len(o.pending)+len(o.running))
	for tp := range o.pending {
		out = append(out, tp)
	}
	for tp := range o.running {
		out = append(out, tp)
	}
	return out
}

// take moves up to n queued replicas to running.
func (o *logOpener) take(n int) map[logstore.TopicPartition]openRequest {
	o.mu.Lock()
	defer o.mu.Unlock()
	batch := make(map[logstore.TopicPartition]openRequest, min(n, len(o.pending)))
	for tp, req := range o.pending {
		if len(batch) == n {
			break // the opener takes again until nothing is left
		}
		batch[tp] = req
		o.running[tp] = req.topicID
		delete(o.pending, tp)
	}
	return batch
}

// finish marks a batch done and wakes waiters.
func (o *logOpener) finish(batch map[logstore.TopicPartition]openRequest) {
	o.mu.Lock()
	for tp := range batch {
		delete(o.running, tp)
	}
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
}

// wait blocks until no replica matching match is queued or being opened,
// or ctx ends.
func (o *logOpener) wait(ctx context.Context, match func(logstore.TopicPartition) bool) error {
	for {
		o.mu.Lock()
		ch := o.changed
		busy := false
		for tp := range o.pending {
			busy = busy || match(tp)
		}
		for tp := range o.running {
			busy = busy || match(tp)
		}
		o.mu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-o.done:
			return errors.New("broker: log opener stopped")
		}
	}
}

// waitLogsOpen waits until this node's queued replicas of topics are
// installed (or failed), or ctx ends.
func (b *Broker) waitLogsOpen(ctx context.Context, topics []string) {
	if len(topics) == 0 {
		return
	}
	set := make(map[string]bool, len(topics))
	for _, t := range topics {
		set[t] = true
	}
	_ = b.opener.wait(ctx, func(tp logstore.TopicPartition) bool { return set[tp.Topic] })
}

// waitCreatedLogs waits, at most timeoutMs (the request's timeout, if
// positive), until this node's new replicas of topics are served: a client
// that produces to a topic right after this node answered its CreateTopics
// finds the partitions this node leads ready. Replicas on other nodes are
// theirs to open; clients retry NOT_LEADER_OR_FOLLOWER meanwhile.
func (b *Broker) waitCreatedLogs(ctx context.Context, timeoutMs int32, topics iter.Seq[string]) {
	names := slices.Collect(topics)
	if len(names) == 0 {
		return
	}
	if timeoutMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
		defer cancel()
	}
	b.waitLogsOpen(ctx, names)
}

// waitReplicaOpen waits a little (replicaOpenWait at most) while tp's log
// is queued or being opened, for requests that act on the replica itself.
func (b *Broker) waitReplicaOpen(tp logstore.TopicPartition) {
	if !b.opener.has(tp) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), replicaOpenWait)
	defer cancel()
	_ = b.opener.wait(ctx, func(q logstore.TopicPartition) bool { return q == tp })
}

// replicaOpenWait bounds waitReplicaOpen.
const replicaOpenWait = 5 * time.Second

// runOpener opens queued logs until stopOpener.
func (b *Broker) runOpener() {
	o := b.opener
	defer close(o.done)
	for {
		select {
		case <-o.stop:
			return
		case <-o.wake:
		}
		for {
			select {
			case <-o.stop:
				return
			default:
			}
			batch := o.take(openBatchSize)
			if len(batch) == 0 {
				o.settings = topicSettingsCache{} // nothing kept between bursts
				break
			}
			b.openBatch(batch)
			o.finish(batch)
		}
	}
}

// stopOpener stops the opener after the batch it is opening; no reconcile
// may run any more (the controller is closed).
func (b *Broker) stopOpener() {
	select {
	case <-b.opener.stop:
	default:
		close(b.opener.stop)
	}
	<-b.opener.done
}

// openedLog is one log of a batch, opened and ready to install.
type openedLog struct {
	tp  logstore.TopicPartition
	req openRequest
	p   *partition
	err error
}

// openBatch opens a batch's logs concurrently, then installs them.
func (b *Broker) openBatch(batch map[logstore.TopicPartition]openRequest) {
	logs := make([]openedLog, 0, len(batch))
	for tp, req := range batch {
		logs = append(logs, openedLog{tp: tp, req: req})
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(openConcurrency, len(logs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				logs[i].p, logs[i].err = b.openReplica(logs[i].tp, logs[i].req)
			}
		}()
	}
	for i := range logs {
		next <- i
	}
	close(next)
	wg.Wait()
	b.installReplicas(logs)
}

// openReplica opens tp's log and builds its partition: producer state
// rebuilt from the log, high watermark from the checkpoint.
func (b *Broker) openReplica(tp logstore.TopicPartition, req openRequest) (*partition, error) {
	b.opener.mu.Lock()
	hook := b.opener.beforeOpen
	b.opener.mu.Unlock()
	if hook != nil {
		hook(tp)
	}
	log, err := b.dir.Open(tp, req.topicID, req.cfg, req.isNew)
	if err != nil {
		return nil, err
	}
	p := newPartition(tp, req.topicID, log)
	p.producers.cfg = producerConfig{logger: b.logger, now: b.now, expirationMs: int64(b.cfg.ProducerIDExpirationMs)}
	if err := p.rebuildProducerState(); err != nil {
		b.logger.Error("cannot rebuild producer state", "topic", tp.Topic, "partition", tp.Partition, "err", err)
	}
	hw, ok := b.dir.CheckpointedHighWatermark(tp)
	if !ok || hw > log.LogEndOffset() {
		hw = 0
	}
	if hw < log.LogStartOffset() {
		hw = log.LogStartOffset()
	}
	p.hw.Store(hw)
	return p, nil
}

// installReplicas makes the opened partitions served, against the newest
// reconciled image: a partition that image no longer assigns here under the
// same topic id loses the log just opened.
func (b *Broker) installReplicas(logs []openedLog) {
	b.reconcileMu.Lock()
	defer b.reconcileMu.Unlock()
	img, self := b.metadata(), b.cfg.NodeID
	kick := false
	for _, ol := range logs {
		tp := ol.tp
		if errors.Is(ol.err, logstore.ErrLogOffline) {
			// Offline until the next start (the Dir logged why): no
			// empty log takes its place, no fetcher fills it, clients
			// get KAFKA_STORAGE_ERROR.
			continue
		}
		if ol.err != nil {
			b.logger.Error("cannot open partition log", "topic", tp.Topic, "partition", tp.Partition, "err", ol.err)
			b.reconcileAll = true // try again at the next image
			continue
		}
		var t *controller.Topic
		if img != nil {
			t = img.Topics[tp.Topic]
		}
		mp := topicPartition(t, tp.Partition)
		if cur := b.partition(tp); cur != nil {
			continue // installed already (the same log: Open returns it)
		}
		if mp == nil || t.ID != ol.req.topicID || !slices.Contains(mp.Replicas, self) {
			// Deleted, recreated or moved away while opening.
			if err := b.dir.Remove(tp); err != nil {
				b.logger.Warn("cannot remove partition log", "topic", tp.Topic, "partition", tp.Partition, "err", err)
			}
			continue
		}
		ts := b.opener.settings.of(b, img, t)
		if ts.err == nil && ol.p.log.Config() != ts.logCfg {
			ol.p.log.SetConfig(ts.logCfg)
		}
		b.mu.Lock()
		b.partitions[tp] = ol.p
		b.mu.Unlock()
		ol.p.update(self, mp, ts.minInsync, b.now())
		ol.p.setHighWatermarkMinISR(self, min(ts.hwMinISR, len(mp.Replicas)))
		kick = true
	}
	if kick && img != nil {
		// The coordinators learn of partitions they lead only once
		// their logs are served (ledPartitions).
		b.reconcileGroups(img, img)
		b.reconcileTxn(img)
		b.reconcileShareCoordinator(img)
		b.kickReplication()
	}
}

// topicSettings is what installing a replica takes from its topic's
// effective config.
type topicSettings struct {
	logCfg              logstore.Config
	err                 error
	minInsync, hwMinISR int
}

// topicSettingsCache resolves a topic's settings once, not once per
// partition: the effective config walks every broker key (config's
// staticValues), which was the largest share of a restart's CPU, and a
// burst of thousands of logs spreads each topic over many batches. An
// entry is for one *controller.Topic (an image replaces the Topic of a
// topic it changes) under the broker configs and feature levels of the
// image it was resolved in; other ones empty the cache.
type topicSettingsCache struct {
	img     *controller.Image
	byTopic map[*controller.Topic]*topicSettings
}

// of returns t's settings in img.
func (c *topicSettingsCache) of(b *Broker, img *controller.Image, t *controller.Topic) *topicSettings {
	if c.img != img {
		if c.img == nil || !sameBrokerConfigs(c.img, img) || c.img.Features[elrFeature] != img.Features[elrFeature] {
			c.byTopic = nil
		}
		c.img = img
	}
	if ts := c.byTopic[t]; ts != nil {
		return ts
	}
	ts := &topicSettings{}
	ts.logCfg, ts.err = b.logConfig(img, t)
	ts.minInsync, ts.hwMinISR = b.minInsyncOf(img, t)
	if c.byTopic == nil {
		c.byTopic = make(map[*controller.Topic]*topicSettings)
	}
	c.byTopic[t] = ts
	return ts
}

// minInsyncOf returns topic t's min.insync.replicas in img and the
// strict minimum ISR its high watermark waits for (KIP-966's, 0 while
// eligible leader replicas are off).
func (b *Broker) minInsyncOf(img *controller.Image, t *controller.Topic) (minInsync, hwMinISR int) {
	minInsync = b.minInsyncReplicas(img, t)
	if img.Features[elrFeature] >= 1 {
		hwMinISR = minInsync
	}
	return minInsync, hwMinISR
}
