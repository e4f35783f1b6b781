package broker

// A fetcher replicates every partition this node follows from one leader:
// one goroutine and one connection per source broker, each Fetch carrying
// all of its partitions, as Kafka's ReplicaFetcherThread does.
//
// Each round asks, per partition, for FetchOffset = the local log end
// offset and LastFetchedEpoch = the local log's latest leader epoch, with
// CurrentLeaderEpoch = the epoch this node was told about. The leader
// checks LastFetchedEpoch against its epoch history (KIP-595) and answers a
// divergence with DivergingEpoch instead of records: the follower then
// truncates to where its log and the leader's agree and fetches again. This
// is what makes a follower that has just changed leaders — or restarted,
// or was itself the leader and kept writes no one else got — converge to
// the leader's log by leader epoch, never by blindly cutting at its old
// high watermark.
//
// Per partition error handling:
//   - FENCED_LEADER_EPOCH: this node's leader epoch is older than the
//     leader's; the partition is paused until the next image gives it a
//     new leader epoch (or moves it to another fetcher).
//   - NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH,
//     UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID: the leader has not
//     applied the image this node acted on yet (a new topic or leader is
//     reconciled on every node at its own pace); the partition is retried
//     after a short backoff, like any other error.
//   - OFFSET_OUT_OF_RANGE: below the leader's log start offset (retention
//     or DeleteRecords moved it past us) the log is emptied and restarts at
//     the leader's log start offset; otherwise the follower is ahead of the
//     leader and asks OffsetForLeaderEpoch where to truncate.
//
// The fetches use an incremental fetch session (KIP-227) with the leader,
// as Kafka's fetcher threads do: the first is a full fetch at session epoch
// 0; after it, each names only the partitions whose fetch parameters
// changed (fetch offset, epochs) and forgets those no longer fetched
// (paused, backing off, throttled, moved), and the leader answers only the
// partitions with something new. A follower of thousands of idle
// partitions thus sends and receives nearly empty requests. The session
// starts again with a full fetch after any doubt about what the leader
// holds: a failed request, a top-level error (FETCH_SESSION_ID_NOT_FOUND
// after an eviction or a leader restart, INVALID_FETCH_SESSION_EPOCH), a
// partition answer this node could not apply.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
)

// replicaFetchBackoff is how often a fetcher whose partitions are all
// held back (throttled, or waiting out an error) looks again. The fetch
// itself follows the replica.fetch.* keys: wait.max.ms, min.bytes,
// response.max.bytes, max.bytes (per partition) and backoff.ms (after an
// error).
const replicaFetchBackoff = 100 * time.Millisecond

// errorBackoff is replica.fetch.backoff.ms: the pause after a failed
// fetch, or before a partition whose fetch failed is fetched again.
func (f *fetcher) errorBackoff() time.Duration {
	return time.Duration(f.rm.b.cfg.ReplicaFetchBackoffMs) * time.Millisecond
}

// followed is one partition a fetcher replicates, at one leader epoch.
type followed struct {
	p           *partition
	leaderEpoch int32
	// fetchFrom, when >= 0, overrides the log end offset as the fetch
	// offset: after the leader's log start moved past this log, the next
	// fetch starts at the leader's log start offset.
	fetchFrom int64
	// paused is set on an error only a new image can resolve.
	paused bool
	// retryAt delays the partition's next fetch after an error.
	retryAt time.Time
}

// fetcher is the goroutine replicating from one leader.
type fetcher struct {
	rm     *replicaManager
	leader int32
	addr   string
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex // guards parts and gen; a leaf lock
	parts map[logstore.TopicPartition]*followed
	// gen counts the replacements of parts (set), so a quiet round
	// (replica_fetcher_quiet.go) knows its batch is still the one to fetch.
	gen     uint64
	changed chan struct{} // capacity 1

	// built describes the last request buildRequest made, and quiet the
	// round to repeat without building one; only run's goroutine uses
	// them.
	built fetchBuild
	quiet *quietRound

	// session is the fetch session with the leader; only run's goroutine
	// uses it.
	session fetcherSession
}

// fetcherSession is the follower's side of its fetch session: the session
// id and the epoch its next incremental request carries (id 0: none, the
// next request is a full fetch opening one), and the fetch parameters of
// each partition as the leader's session holds them.
type fetcherSession struct {
	id, epoch int32
	sent      map[logstore.TopicPartition]sessionParams
	// dropped is the session given up on, which the next full fetch
	// names so the leader closes it rather than keep it until evicted.
	dropped int32
}

// sessionParams is what a fetch request says of one partition.
type sessionParams struct {
	topicID            [16]byte
	fetchOffset        int64
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	maxBytes           int32
}

// sessionRequest is what one request changes in the session, applied when
// it is answered: the parameters of the partitions it names, and the
// partitions it forgets.
type sessionRequest struct {
	full      bool
	named     map[logstore.TopicPartition]sessionParams
	forgotten []logstore.TopicPartition
}

// reset drops the session: the next request is a full fetch.
func (s *fetcherSession) reset() {
	dropped := s.id
	if dropped == 0 {
		dropped = s.dropped
	}
	*s = fetcherSession{dropped: dropped}
}

// answered applies a request's changes once the leader answered it
// without a top-level error with session id.
func (s *fetcherSession) answered(sr *sessionRequest, id int32) {
	if sr.full {
		// The leader closed the dropped session, if any, and opened
		// this one (none if id is 0: its cache had no room).
		*s = fetcherSession{}
		if id != 0 {
			s.id, s.epoch, s.sent = id, 1, sr.named
		}
		return
	}
	if id == 0 || id != s.id {
		s.reset() // the leader closed the session
		return
	}
	for tp, sp := range sr.named {
		s.sent[tp] = sp
	}
	for _, tp := range sr.forgotten {
		delete(s.sent, tp)
	}
	s.epoch = nextSessionEpoch(s.epoch)
}

func (rm *replicaManager) startFetcher(ctx context.Context, leader int32, addr string) (*fetcher, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ClientID(fmt.Sprintf("sluice-replica-fetcher-%d-%d", rm.b.cfg.NodeID, leader)),
		kgo.DialTimeout(2 * time.Second),
	}, rm.b.peerDialOpts()...)...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &fetcher{
		rm: rm, leader: leader, addr: addr, cl: cl, cancel: cancel,
		done:    make(chan struct{}),
		parts:   make(map[logstore.TopicPartition]*followed),
		changed: make(chan struct{}, 1),
	}
	rm.wg.Add(1)
	go func() {
		defer rm.wg.Done()
		defer close(f.done)
		defer cl.Close()
		f.run(ctx)
	}()
	return f, nil
}

// stop ends the fetcher and waits for it.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// set replaces the partitions fetched. A partition at the same leader
// epoch keeps its state (a pause stays until the epoch changes).
func (f *fetcher) set(parts map[logstore.TopicPartition]*followed) {
	f.mu.Lock()
	for tp, nf := range parts {
		if old := f.parts[tp]; old != nil && old.p == nf.p && old.leaderEpoch == nf.leaderEpoch {
			parts[tp] = old
		}
	}
	f.parts = parts
	f.gen++
	f.mu.Unlock()
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fetcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		var (
			req   *kmsg.FetchRequest
			batch map[logstore.TopicPartition]*followed
			sr    *sessionRequest
			built fetchBuild
		)
		if quiet := f.quietBatch(); quiet != nil {
			batch, built = quiet.batch, fetchBuild{gen: quiet.gen}
			req, sr = f.quietRequest()
		} else {
			var delayed bool
			req, batch, delayed = f.buildRequest()
			built = f.built
			if len(batch) == 0 {
				if delayed {
					f.wait(ctx, replicaFetchBackoff)
					continue
				}
				select {
				case <-ctx.Done():
				case <-f.changed:
				}
				continue
			}
		}
		seeds := f.cl.SeedBrokers()
		if len(seeds) == 0 {
			return
		}
		if sr == nil {
			sr = f.sessionRequest(req, batch)
		}
		kresp, err := seeds[0].Request(ctx, req)
		if err != nil {
			f.session.reset()
			if ctx.Err() == nil {
				f.rm.b.logger.Debug("replica fetch failed", "leader", f.leader, "err", err)
				f.wait(ctx, f.errorBackoff())
			}
			continue
		}
		resp := kresp.(*kmsg.FetchResponse)
		if resp.ErrorCode == 0 {
			f.session.answered(sr, resp.SessionID)
		} else {
			f.session.reset()
			if resp.ErrorCode == kerr.FetchSessionIDNotFound.Code || resp.ErrorCode == kerr.InvalidFetchSessionEpoch.Code {
				// The leader lost the session (evicted, restarted):
				// a full fetch at once opens another.
				continue
			}
		}
		progress, clean := f.handle(ctx, resp, batch)
		if !clean {
			f.session.reset()
		}
		f.noteRound(sr, resp, batch, built, clean)
		if !progress {
			f.wait(ctx, f.errorBackoff())
		}
	}
}

// wait sleeps for d, or less if the partitions change or ctx ends.
func (f *fetcher) wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-f.changed:
	case <-t.C:
	}
}

// buildRequest makes one Fetch for every partition not paused or backing
// off. batch maps each requested partition to its state, so the response is
// applied only to the state it was asked for; delayed reports partitions
// left out only for their backoff.
func (f *fetcher) buildRequest() (req *kmsg.FetchRequest, batch map[logstore.TopicPartition]*followed, delayed bool) {
	b := f.rm.b
	req = f.newFetchRequest()
	cfg := b.cfg

	f.mu.Lock()
	defer f.mu.Unlock()
	f.built = fetchBuild{gen: f.gen}
	defer func() { f.built.delayed = delayed }()
	now := time.Now()
	batch = make(map[logstore.TopicPartition]*followed, len(f.parts))
	topics := map[string]int{}
	for tp, st := range f.parts {
		if st.paused {
			continue
		}
		if now.Before(st.retryAt) {
			delayed = true
			continue
		}
		if b.followerThrottled(st.p) {
			f.built.throttled = true
			if b.throttle.follower.Exceeded(b.now()) {
				delayed = true // the replication throttle holds it back
				continue
			}
		}
		batch[tp] = st
		i, ok := topics[tp.Topic]
		if !ok {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = tp.Topic
			rt.TopicID = st.p.topicID
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
			topics[tp.Topic] = i
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = tp.Partition
		rp.CurrentLeaderEpoch = st.leaderEpoch
		rp.FetchOffset = st.p.log.LogEndOffset()
		if st.fetchFrom > rp.FetchOffset {
			rp.FetchOffset = st.fetchFrom
		}
		rp.LastFetchedEpoch = st.p.log.LatestEpoch()
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = cfg.ReplicaFetchMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req, batch, delayed
}

// newFetchRequest is a follower's Fetch with the replica.fetch.* settings
// and this node's id and broker epoch, naming no partition yet.
func (f *fetcher) newFetchRequest() *kmsg.FetchRequest {
	b := f.rm.b
	self := b.cfg.NodeID
	brokerEpoch := int64(-1)
	if img := b.metadata(); img != nil && img.Brokers[self] != nil {
		brokerEpoch = img.Brokers[self].Epoch
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = self
	req.ReplicaState.ID = self
	req.ReplicaState.Epoch = brokerEpoch
	req.MaxWaitMillis = b.cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = b.cfg.ReplicaFetchMinBytes
	req.MaxBytes = b.cfg.ReplicaFetchResponseMaxBytes
	return req
}

// sessionRequest makes req, a full list of the partitions to fetch (batch),
// a request of the fetch session: a full fetch at epoch 0 opening one when
// there is none, else an incremental fetch naming only the partitions whose
// parameters differ from what the session holds, and forgetting those not
// in batch. It returns what the request changes in the session.
func (f *fetcher) sessionRequest(req *kmsg.FetchRequest, batch map[logstore.TopicPartition]*followed) *sessionRequest {
	s := &f.session
	sr := &sessionRequest{full: s.id == 0, named: make(map[logstore.TopicPartition]sessionParams, len(batch))}
	if sr.full {
		req.SessionID, req.SessionEpoch = s.dropped, sessionEpochInitial
		for _, rt := range req.Topics {
			for i := range rt.Partitions {
				rp := &rt.Partitions[i]
				sr.named[logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = paramsOf(&rt, rp)
			}
		}
		return sr
	}
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	kept := req.Topics[:0]
	for _, rt := range req.Topics {
		parts := rt.Partitions[:0]
		for i := range rt.Partitions {
			rp := rt.Partitions[i]
			tp := logstore.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}
			sp := paramsOf(&rt, &rp)
			if old, ok := s.sent[tp]; ok && old == sp {
				continue
			}
			sr.named[tp] = sp
			parts = append(parts, rp)
		}
		if len(parts) > 0 {
			rt.Partitions = parts
			kept = append(kept, rt)
		}
	}
	req.Topics = kept
	forgotten := map[string]int{}
	for tp, sp := range s.sent {
		if batch[tp] != nil {
			continue
		}
		sr.forgotten = append(sr.forgotten, tp)
		i, ok := forgotten[tp.Topic]
		if !ok {
			req.ForgottenTopics = append(req.ForgottenTopics, kmsg.FetchRequestForgottenTopic{Topic: tp.Topic, TopicID: sp.topicID})
			i = len(req.ForgottenTopics) - 1
			forgotten[tp.Topic] = i
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, tp.Partition)
	}
	return sr
}

func paramsOf(rt *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition) sessionParams {
	return sessionParams{topicID: rt.TopicID, fetchOffset: rp.FetchOffset, currentLeaderEpoch: rp.CurrentLeaderEpoch,
		lastFetchedEpoch: rp.LastFetchedEpoch, maxBytes: rp.PartitionMaxBytes}
}

// current reports whether st is still what the fetcher should fetch.
func (f *fetcher) current(tp logstore.TopicPartition, st *followed) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[tp] == st
}

func (f *fetcher) pause(tp logstore.TopicPartition, st *followed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.parts[tp] == st {
		st.paused = true
	}
}

func (f *fetcher) backOff(tp logstore.TopicPartition, st *followed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st.retryAt = time.Now().Add(f.errorBackoff())
}

// handle applies a fetch response. It reports progress false when nothing
// was gained (every partition answered errored), so the caller backs off,
// and clean false when a partition's answer was not applied (the partition
// changed meanwhile, or applying failed), so the session starts again.
// An incremental answer with no partitions, nothing new, is progress.
func (f *fetcher) handle(ctx context.Context, resp *kmsg.FetchResponse, batch map[logstore.TopicPartition]*followed) (progress, clean bool) {
	b := f.rm.b
	if resp.ErrorCode != 0 {
		b.logger.Debug("replica fetch rejected", "leader", f.leader, "err", kerr.ErrorForCode(resp.ErrorCode))
		return false, false
	}
	img := b.metadata()
	answered := false
	clean = true
	for _, rt := range resp.Topics {
		name := rt.Topic
		if img != nil && rt.TopicID != ([16]byte{}) {
			if t := img.TopicsByID[rt.TopicID]; t != nil {
				name = t.Name
			}
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			tp := logstore.TopicPartition{Topic: name, Partition: rp.Partition}
			answered = true
			st := batch[tp]
			if st == nil || !f.current(tp, st) {
				clean = false
				continue
			}
			ok, err := f.apply(ctx, tp, st, rp)
			if err != nil {
				clean = false
				b.logger.Warn("replica fetch: cannot apply", "topic", tp.Topic, "partition", tp.Partition, "leader", f.leader, "err", err)
			}
			progress = progress || ok
		}
	}
	return progress || !answered, clean
}

// apply handles one partition of a fetch response.
func (f *fetcher) apply(ctx context.Context, tp logstore.TopicPartition, st *followed, rp *kmsg.FetchResponseTopicPartition) (bool, error) {
	p := st.p
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
	case errors.Is(err, kerr.OffsetOutOfRange):
		return false, f.outOfRange(ctx, tp, st, rp.LogStartOffset)
	case errors.Is(err, kerr.FencedLeaderEpoch):
		f.pause(tp, st)
		return false, nil
	case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.UnknownLeaderEpoch),
		errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		f.backOff(tp, st)
		return false, nil
	default:
		f.backOff(tp, st)
		return false, err
	}
	if div := rp.DivergingEpoch; div.Epoch != -1 || div.EndOffset != -1 {
		if div.EndOffset < 0 {
			// The leader knows no epoch this old: nothing here is
			// shared with it.
			if err := p.truncateFully(f.rm.b.logger, f.leader, st.leaderEpoch, "the leader has no epoch this old"); err != nil {
				return false, err
			}
			st.fetchFrom = rp.LogStartOffset
			return true, nil
		}
		return true, p.truncateByEpoch(f.rm.b.logger, f.leader, st.leaderEpoch, div.Epoch, div.EndOffset)
	}
	if len(rp.RecordBatches) > 0 {
		if f.rm.b.followerThrottled(p) {
			f.rm.b.throttle.follower.Record(len(rp.RecordBatches), f.rm.b.now())
		}
		if err := p.appendAsFollower(f.leader, st.leaderEpoch, rp.RecordBatches); err != nil {
			return false, err
		}
		f.rm.b.metrics.replicated(len(rp.RecordBatches)) // metrics_requests_topics.go
		st.fetchFrom = -1
	}
	if rp.LogStartOffset > p.log.LogStartOffset() {
		// Retention or DeleteRecords on the leader: follow it.
		if _, err := p.log.DeleteRecordsBefore(min(rp.LogStartOffset, p.log.LogEndOffset())); err != nil {
			return true, err
		}
	}
	p.setFollowerHighWatermark(f.leader, rp.HighWatermark)
	return true, nil
}

// outOfRange handles OFFSET_OUT_OF_RANGE: a log behind the leader's log
// start offset restarts there; a log ahead of the leader's end is truncated
// where OffsetForLeaderEpoch says the two agree.
func (f *fetcher) outOfRange(ctx context.Context, tp logstore.TopicPartition, st *followed, leaderStart int64) error {
	p := st.p
	if leo := p.log.LogEndOffset(); leo < leaderStart || st.fetchFrom >= 0 {
		if err := p.truncateFully(f.rm.b.logger, f.leader, st.leaderEpoch, "out of the leader's range"); err != nil {
			return err
		}
		st.fetchFrom = leaderStart
		return nil
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.rm.b.cfg.NodeID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = tp.Topic
	rpart := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rpart.Partition = tp.Partition
	rpart.CurrentLeaderEpoch = st.leaderEpoch
	rpart.LeaderEpoch = p.log.LatestEpoch()
	rt.Partitions = append(rt.Partitions, rpart)
	req.Topics = append(req.Topics, rt)
	kresp, err := f.cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return fmt.Errorf("broker: OffsetForLeaderEpoch answered %d topics", len(resp.Topics))
	}
	ep := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(ep.ErrorCode); err != nil {
		return err
	}
	return p.truncateByEpoch(f.rm.b.logger, f.leader, st.leaderEpoch, ep.LeaderEpoch, ep.EndOffset)
}

// nextOffsetAfter returns the offset after the last record batch in data
// (whole v2 batches: base offset at byte 0, length at 8, last offset delta
// at 23).
func nextOffsetAfter(data []byte) (int64, error) {
	next := int64(-1)
	for len(data) > 0 {
		if len(data) < 27 {
			return 0, fmt.Errorf("broker: short record batch header (%d bytes)", len(data))
		}
		base := int64(binary.BigEndian.Uint64(data[0:]))
		length := int(int32(binary.BigEndian.Uint32(data[8:])))
		delta := int64(int32(binary.BigEndian.Uint32(data[23:])))
		next = base + delta + 1
		if length < 0 || 12+length > len(data) {
			return 0, fmt.Errorf("broker: record batch length %d beyond %d bytes", length, len(data))
		}
		data = data[12+length:]
	}
	return next, nil
}
