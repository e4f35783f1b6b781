package broker

// The replica manager runs the follower side of replication and the
// leader's ISR management for one broker. It owns three kinds of
// goroutines, all stopped and waited for by stopReplication:
//
//   - run: reacts to every reconciled metadata image (and a slow tick, to
//     retry a leader that was not reachable) by computing which partitions
//     this node follows from which leader and handing each leader's set to
//     one fetcher — one per source broker, batching all its partitions into
//     one Fetch (replica_fetcher.go);
//   - the fetchers themselves;
//   - runISR: the leader's ISR checks (replica_isr.go), and runAlter,
//     which sends the proposals they queue to the controller in batches.
//
// Lock order: Broker.mu before partition.mu before fetcher.mu; the manager's
// fetcher table is touched only by run, so it has no lock. No lock is held
// across a network call.

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/sluicedev/sluice/logstore"
)

// replicaManager is the follower fetchers and ISR goroutine of one broker.
type replicaManager struct {
	b       *Broker
	kick    chan struct{} // the image changed; capacity 1
	isrKick chan struct{} // a follower may join the ISR; capacity 1
	cancel  context.CancelFunc
	wg      sync.WaitGroup // run, runISR, runAlter, fetchers

	// alterPending is the ISR proposals checkISR queued for runAlter;
	// alterReady (capacity 1) says there are some. alterMu is a leaf lock.
	alterMu      sync.Mutex
	alterPending []alterProposal
	alterReady   chan struct{}

	// fetchers is owned by run.
	fetchers map[int32]*fetcher
}

// startReplication starts the follower fetchers and the ISR goroutine. The
// broker calls it once after its first reconcile; ctx carries values only:
// replication runs until stopReplication, not until ctx ends (New's context
// is a start-up deadline).
func (b *Broker) startReplication(ctx context.Context) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	rm := &replicaManager{
		b:          b,
		kick:       make(chan struct{}, 1),
		isrKick:    make(chan struct{}, 1),
		alterReady: make(chan struct{}, 1),
		cancel:     cancel,
		fetchers:   make(map[int32]*fetcher),
	}
	if !b.replicas.CompareAndSwap(nil, rm) {
		cancel()
		return
	}
	rm.wg.Add(3)
	go func() {
		defer rm.wg.Done()
		rm.run(runCtx)
	}()
	go func() {
		defer rm.wg.Done()
		rm.runISR(runCtx)
	}()
	go func() {
		defer rm.wg.Done()
		rm.runAlter(runCtx)
	}()
}

// stopReplication stops every fetcher and the ISR goroutine and waits for
// them, including AlterPartition calls in flight. The broker calls it on
// shutdown before closing the logs.
func (b *Broker) stopReplication() {
	rm := b.replicas.Swap(nil)
	if rm == nil {
		return
	}
	rm.cancel()
	rm.wg.Wait()
}

// replication is the running replica manager, nil before start and after
// stop.
func (b *Broker) replication() *replicaManager { return b.replicas.Load() }

// kickReplication tells the manager the image changed. It never blocks: it
// runs on the controller's apply goroutine.
func (b *Broker) kickReplication() {
	if rm := b.replication(); rm != nil {
		select {
		case rm.kick <- struct{}{}:
		default:
		}
	}
}

// kickISR asks for an ISR check now rather than at the next tick.
func (b *Broker) kickISR() {
	if rm := b.replication(); rm != nil {
		select {
		case rm.isrKick <- struct{}{}:
		default:
		}
	}
}

// run syncs the fetchers at start and whenever reconcile reports a change
// of leadership, of the partitions held or of the brokers; the slow tick
// only retries a sync that left a leader without a fetcher. Syncing looks
// at every partition, so it is not done when nothing it depends on moved.
func (rm *replicaManager) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	incomplete := rm.sync(ctx)
	for {
		select {
		case <-ctx.Done():
			for id, f := range rm.fetchers {
				f.stop()
				delete(rm.fetchers, id)
			}
			return
		case <-rm.kick:
		case <-t.C:
			if !incomplete {
				continue
			}
		}
		incomplete = rm.sync(ctx)
	}
}

// sync matches the fetchers to the partitions this node follows now: a
// fetcher per leader, restarted if the leader's address changed, stopped
// when it has nothing left to fetch. It reports whether some leader was
// left without a fetcher (unknown broker, fetcher not started), to be
// retried.
func (rm *replicaManager) sync(ctx context.Context) (incomplete bool) {
	b := rm.b
	img := b.metadata()
	if img == nil {
		return true
	}
	self := b.cfg.NodeID
	want := make(map[int32]map[logstore.TopicPartition]*followed)
	b.mu.RLock()
	for tp, p := range b.partitions {
		leader, epoch := p.state()
		if leader < 0 || leader == self {
			continue
		}
		if want[leader] == nil {
			want[leader] = make(map[logstore.TopicPartition]*followed)
		}
		want[leader][tp] = &followed{p: p, leaderEpoch: epoch, fetchFrom: -1}
	}
	b.mu.RUnlock()
	for id, f := range rm.fetchers {
		br := img.Brokers[id]
		if want[id] == nil || br == nil || net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))) != f.addr {
			f.stop()
			delete(rm.fetchers, id)
		}
	}
	for id, parts := range want {
		f := rm.fetchers[id]
		if f == nil {
			br := img.Brokers[id]
			if br == nil {
				incomplete = true
				continue
			}
			var err error
			f, err = rm.startFetcher(ctx, id, net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port))))
			if err != nil {
				b.logger.Warn("cannot start replica fetcher", "leader", id, "err", err)
				incomplete = true
				continue
			}
			rm.fetchers[id] = f
		}
		f.set(parts)
	}
	return incomplete
}

// ReplicaOffsets reports this node's replica of topic/partition: its log
// end offset and high watermark, whether it leads or follows. Tests compare
// replicas through it, since followers do not serve clients.
func (b *Broker) ReplicaOffsets(topic string, partition int32) (logEnd, highWatermark int64, ok bool) {
	p := b.partition(logstore.TopicPartition{Topic: topic, Partition: partition})
	if p == nil {
		return 0, 0, false
	}
	return p.log.LogEndOffset(), p.highWatermark(), true
}

// ReplicaRead returns the raw record batches of this node's replica of
// topic/partition from offset up to its log end offset, for tests that
// check replicas are byte-identical.
func (b *Broker) ReplicaRead(topic string, partition int32, offset int64) ([]byte, error) {
	p := b.partition(logstore.TopicPartition{Topic: topic, Partition: partition})
	if p == nil {
		return nil, logstore.ErrOffsetOutOfRange
	}
	var out []byte
	for {
		res, err := p.log.Read(offset, 1<<20, p.log.LogEndOffset(), true)
		if err != nil {
			return nil, err
		}
		if len(res.Data) == 0 {
			return out, nil
		}
		out = append(out, res.Data...)
		next, err := nextOffsetAfter(res.Data)
		if err != nil {
			return nil, err
		}
		offset = next
	}
}
