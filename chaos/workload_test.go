//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The workloads run in the test process, in the root namespace, and reach
// every node through the bridge, as an application would.

const (
	// produceInterval paces each partition's producer loop: about 100
	// records a second per partition, enough to see a gap of a few hundred
	// milliseconds and cheap on two shared cores.
	produceInterval = 10 * time.Millisecond
	// maxInFlight bounds each partition's unacknowledged records, so that a
	// stalled partition stops taking new ones instead of buffering without
	// end.
	maxInFlight = 64
	// flushTimeout bounds how long stopping waits for the records still in
	// flight; those left then are failed and counted as unknown.
	flushTimeout = 60 * time.Second
	// produceTimeout and timeoutOverhead bound how long the client waits
	// for a produce answer before it retries elsewhere: a cut peer sends no
	// reset, so this is how long a client sits on a connection to an
	// isolated leader. kgo's default overhead (10 s on top of the request's
	// own timeout) would make every isolation look 15 s long whatever the
	// cluster did; these make the unavailability figures the cluster's.
	produceTimeout  = 3 * time.Second
	timeoutOverhead = time.Second
)

// ack is where an acknowledged record was written, and when the producer
// learned it.
type ack struct {
	partition int32
	offset    int64
	at        time.Time
}

// producer is the idempotent acks=all workload: one loop per partition
// writing unique values with the manual partitioner, so that a stalled
// partition does not hold up the others, and a record of every value
// handed to the client and every acknowledgement.
type producer struct {
	topic      string
	partitions int32
	cl         *kgo.Client

	stopLoops   context.CancelFunc // ends the loops
	failRecords context.CancelFunc // fails records still in flight
	loops       sync.WaitGroup

	mu      sync.Mutex
	sent    map[string]bool // every value given to Produce
	acked   map[string]ack
	failed  map[string]error // values whose record failed: written or not, unknown
	started time.Time
	stopped time.Time // when the loops ended
}

// startProducer starts the loops; stop ends them.
func startProducer(addrs []string, topic string, partitions int32, tag string, extra ...kgo.Opt) (*producer, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MetadataMinAge(200 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.ProduceRequestTimeout(produceTimeout),
		kgo.RequestTimeoutOverhead(timeoutOverhead),
		kgo.DialTimeout(2 * time.Second),
	}, extra...)...)
	if err != nil {
		return nil, err
	}
	loopCtx, stopLoops := context.WithCancel(context.Background())
	recordCtx, failRecords := context.WithCancel(context.Background())
	p := &producer{
		topic: topic, partitions: partitions, cl: cl,
		stopLoops: stopLoops, failRecords: failRecords,
		sent: map[string]bool{}, acked: map[string]ack{}, failed: map[string]error{},
		started: time.Now(),
	}
	for part := range partitions {
		p.loops.Go(func() { p.loop(loopCtx, recordCtx, part, tag) })
	}
	return p, nil
}

// loop produces to one partition until loopCtx ends. Records carry
// recordCtx, which outlives loopCtx so that stop can wait for them.
func (p *producer) loop(loopCtx, recordCtx context.Context, part int32, tag string) {
	slots := make(chan struct{}, maxInFlight)
	tick := time.NewTicker(produceInterval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-loopCtx.Done():
			return
		case <-tick.C:
		}
		select {
		case <-loopCtx.Done():
			return
		case slots <- struct{}{}:
		}
		value := fmt.Sprintf("%s-p%d-%d", tag, part, seq)
		p.mu.Lock()
		p.sent[value] = true
		p.mu.Unlock()
		rec := &kgo.Record{Partition: part, Value: []byte(value)}
		p.cl.Produce(recordCtx, rec, func(r *kgo.Record, err error) {
			now := time.Now()
			<-slots
			p.mu.Lock()
			defer p.mu.Unlock()
			if err != nil {
				p.failed[value] = err
				return
			}
			p.acked[value] = ack{partition: r.Partition, offset: r.Offset, at: now}
		})
	}
}

// stop ends the loops and waits for every record in flight to be
// acknowledged or failed, failing those still waiting after flushTimeout.
func (p *producer) stop() {
	p.stopLoops()
	p.loops.Wait()
	p.mu.Lock()
	p.stopped = time.Now()
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		p.failRecords()
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		p.cl.Flush(ctx2)
	}
	p.failRecords()
	p.cl.Close()
}

// ackedSince counts, per partition, acknowledgements that arrived after t.
func (p *producer) ackedSince(t time.Time) map[int32]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int32]int{}
	for _, a := range p.acked {
		if a.at.After(t) {
			out[a.partition]++
		}
	}
	return out
}

// waitWorking waits until every partition has had an acknowledgement after
// t: the cluster takes writes again.
func (p *producer) waitWorking(t time.Time, timeout time.Duration) error {
	return pollFor(timeout, func() error {
		got := p.ackedSince(t)
		for part := range p.partitions {
			if got[part] == 0 {
				return fmt.Errorf("no acknowledged write to %s-%d since the heal", p.topic, part)
			}
		}
		return nil
	})
}

// longestGap is the longest time any partition went without an
// acknowledgement while its loop was producing: from the start to the
// first ack, between two acks, and from the last ack to when the loops
// stopped. It names the partition.
func (p *producer) longestGap() (time.Duration, int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	times := map[int32][]time.Time{}
	for _, a := range p.acked {
		if !a.at.After(p.stopped) {
			times[a.partition] = append(times[a.partition], a.at)
		}
	}
	var longest time.Duration
	var which int32
	for part := range p.partitions {
		ts := append([]time.Time{p.started}, times[part]...)
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		ts = append(ts, p.stopped)
		for i := 1; i < len(ts); i++ {
			if d := ts[i].Sub(ts[i-1]); d > longest {
				longest, which = d, part
			}
		}
	}
	return longest, which
}

// txnWorkload commits and aborts transactions alternately, four records
// each spread over the topic's partitions, and records which values belong
// to a commit the coordinator acknowledged, to an abort, or to an outcome
// the client never learned. A failure closes the client; the next one,
// with the same transactional id, fences it and ends what it left open.
type txnWorkload struct {
	topic      string
	partitions int32
	addrs      []string
	txnID      string
	extra      []kgo.Opt // more client options, such as a logger

	stopLoop context.CancelFunc
	done     chan struct{}

	mu        sync.Mutex
	sent      map[string]bool
	committed map[string]bool // EndTransaction(commit) returned nil
	aborted   map[string]bool // never asked to commit: must never be visible
	unknown   map[string]bool // asked to commit, answer lost
	errs      int
}

const txnRecords = 4

func startTxnWorkload(addrs []string, topic string, partitions int32, tag string, extra ...kgo.Opt) *txnWorkload {
	ctx, cancel := context.WithCancel(context.Background())
	w := &txnWorkload{
		topic: topic, partitions: partitions, addrs: addrs, txnID: tag + "-txn", extra: extra,
		stopLoop: cancel, done: make(chan struct{}),
		sent: map[string]bool{}, committed: map[string]bool{}, aborted: map[string]bool{}, unknown: map[string]bool{},
	}
	go func() {
		defer close(w.done)
		w.loop(ctx, tag)
	}()
	return w
}

func (w *txnWorkload) client() (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(w.addrs...),
		kgo.TransactionalID(w.txnID),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.DefaultProduceTopic(w.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.MetadataMinAge(200 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.ProduceRequestTimeout(produceTimeout),
		kgo.RequestTimeoutOverhead(timeoutOverhead),
		kgo.DialTimeout(2 * time.Second),
	}, w.extra...)...)
}

func (w *txnWorkload) loop(ctx context.Context, tag string) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cl == nil {
			var err error
			if cl, err = w.client(); err != nil {
				continue
			}
		}
		commit := n%2 == 0
		kind := "abort"
		if commit {
			kind = "commit"
		}
		var values []string
		for i := range txnRecords {
			values = append(values, fmt.Sprintf("%s-txn%d-%s-%d", tag, n, kind, i))
		}
		err := w.one(ctx, cl, values, commit)
		w.mu.Lock()
		for _, v := range values {
			switch {
			case !commit:
				w.aborted[v] = true
			case err == nil:
				w.committed[v] = true
			default:
				w.unknown[v] = true
			}
		}
		if err != nil {
			w.errs++
		}
		w.mu.Unlock()
		if err != nil {
			cl.Close()
			cl = nil
		}
	}
}

// one runs one transaction of values and ends it with commit or abort.
func (w *txnWorkload) one(ctx context.Context, cl *kgo.Client, values []string, commit bool) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var recs []*kgo.Record
	w.mu.Lock()
	for i, v := range values {
		w.sent[v] = true
		recs = append(recs, &kgo.Record{Partition: int32(i) % w.partitions, Value: []byte(v)})
	}
	w.mu.Unlock()
	perr := cl.ProduceSync(ctx, recs...).FirstErr()
	end := kgo.TryAbort
	if commit && perr == nil {
		end = kgo.TryCommit
	}
	if err := cl.EndTransaction(ctx, end); err != nil {
		return err
	}
	return perr
}

// stop ends the loop and then commits one sentinel record per partition
// with a fresh client, which also ends whatever the loop left open. A
// read_committed reader that has seen every sentinel has read everything
// the workload wrote. A failed attempt's sentinels count as unknown (its
// commit may have landed) and the next attempt writes new ones.
func (w *txnWorkload) stop(tag string) ([]string, error) {
	w.stopLoop()
	<-w.done
	var sentinels []string
	attempt := 0
	err := pollFor(60*time.Second, func() error {
		attempt++
		sentinels = sentinels[:0]
		for p := range w.partitions {
			sentinels = append(sentinels, fmt.Sprintf("%s-sentinel%d-%d", tag, attempt, p))
		}
		w.mu.Lock()
		for _, v := range sentinels {
			w.sent[v] = true
			w.unknown[v] = true
		}
		w.mu.Unlock()
		cl, err := w.client()
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		var recs []*kgo.Record
		for p, v := range sentinels {
			recs = append(recs, &kgo.Record{Partition: int32(p), Value: []byte(v)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			cl.EndTransaction(ctx, kgo.TryAbort)
			return err
		}
		return cl.EndTransaction(ctx, kgo.TryCommit)
	})
	if err != nil {
		return nil, errors.Join(errors.New("commit the sentinel transaction"), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range sentinels {
		delete(w.unknown, v)
		w.committed[v] = true
	}
	return sentinels, nil
}
