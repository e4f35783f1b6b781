package broker

// Fetch (api key 1), versions 4–18: record format v2 only.
//
// A consumer fetch reads whole batches below the high watermark, or with
// isolation_level=1 (read_committed) below the last stable offset (the
// first offset of the oldest open transaction, producer_state.go), with
// AbortedTransactions listing, from the log's aborted-transaction index,
// the aborted transactions that overlap the batches returned, so the
// consumer drops their records; every response partition carries the last
// stable offset, whatever the isolation level, as Kafka's does. A replica
// fetch (replica
// id >= 0, v15+ in ReplicaState) reads up to the log end offset. MaxWaitMillis
// and MinBytes make a long poll: when less than MinBytes are available the
// request waits for any of its partitions' high watermarks to move (a
// replica fetch: for any append, since a follower waits for data beyond its
// own log end offset), and is answered as soon as enough data arrived or the
// wait ran out.
//
// A replica fetch is also the follower's report of its progress: its
// FetchOffset is its log end offset, which the leader records with the time
// it was last caught up (replica_leader.go) before reading, so the high
// watermark can advance and the ISR can shrink or grow. A replica id that is
// not an assigned replica gets NOT_LEADER_OR_FOLLOWER, as in Kafka.
//
// The record bytes of one answer are capped by the smaller of the request's
// MaxBytes and the broker's fetch.max.bytes (default 55 MiB), for consumers
// and followers alike, as Kafka's KafkaApis caps them, and each partition by
// its PartitionMaxBytes; the first partition with data always gets at least
// one whole batch (KIP-74) so a batch larger than the limits can still be
// consumed. MinBytes is lowered to that cap, as Kafka lowers it, and an
// answer the cap cut short is sent at once (Kafka's delayed fetch counts the
// bytes available, not those that fit), so a long poll asking for more than
// it could ever get is not held for MaxWait. The cap also leaves room for the per-partition fields, so an answer's int32
// size prefix cannot overflow. A partition named more than once is answered
// once, where it first appears, with the fetch offset and limits of its last
// entry: Kafka reads the request into a LinkedHashMap keyed by topic (by id
// from v13) and partition. Partitions of one topic that end up adjacent are
// answered under one topic entry.
//
// Errors per partition: UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID at v13+,
// KIP-516), NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH
// for a CurrentLeaderEpoch older / newer than the leader's (KIP-320),
// OFFSET_OUT_OF_RANGE below the log start offset or beyond the log end. A
// replica fetch from a broker that is not among the partition's replicas is
// UNKNOWN_LEADER_EPOCH if it names the current leader epoch and
// NOT_LEADER_OR_FOLLOWER if it names none, as in Kafka. A
// LastFetchedEpoch (v12+, KIP-595) that diverges from the leader's epoch
// history is answered with DivergingEpoch and no records.
//
// Incremental fetch sessions (KIP-227, v7+): a full fetch at session epoch
// 0 opens a session in the broker's cache, bounded by
// max.incremental.fetch.session.cache.slots; an incremental one names only
// the partitions whose parameters changed and ForgottenTopics, and is
// answered with only the session's partitions that have something new
// (fetch_session.go, fetch_session_request.go). An idle partition costs a
// consumer's incremental fetch no log read beyond the check that the fetch
// offset is at the high watermark, and no bytes on the wire; a follower's
// incremental fetch skips it altogether while nothing changed since it was
// last read idle, and waits on its session's one waiter for it
// (fetch_session_idle.go).

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleFetch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	replicaID := req.ReplicaID
	if req.Version >= 15 {
		replicaID = req.ReplicaState.ID
	}
	sf, code := b.openFetchSession(req, replicaID) // fetch_session_request.go
	if code != 0 {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = code
		return resp, nil
	}
	defer sf.release()
	var deadline <-chan time.Time
	if req.MaxWaitMillis > 0 {
		t := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	plan := sf.plan(req)
	quota := b.consumerFetchQuota(r, replicaID) // client_throttle.go
	budget := quota.capBudget(b.fetchBudget(req, plan))
	minBytes := min(int(req.MinBytes), budget)
	auth := b.fetchAuth(r, replicaID)
	tally := b.metrics.newFetchTally() // nil without metrics (metrics_requests_topics.go)
	answer := func(resp *protocol.SplicedResponse, bytes int) kmsg.Response {
		out := b.answerFetch(ctx, r, quota, req, resp, bytes) // request_quota.go
		delivered := out == kmsg.Response(resp)
		sf.settle(resp, delivered, out, b.now)
		b.metrics.fetched(tally, replicaID >= 0, delivered)
		return out
	}
	for {
		resp, bytes, now, watches := b.fetchOnce(req, replicaID, plan, budget, auth, tally, sf)
		session := sf.sessionWait() // idle partitions skipped (fetch_session_idle.go)
		if req.MaxWaitMillis <= 0 || bytes >= minBytes || now || (len(watches) == 0 && session == nil) {
			return answer(resp, bytes), nil
		}
		end := requestWait(ctx) // not request time (request_quota.go)
		changed := waitFetch(ctx, deadline, watches, session)
		end()
		if !changed {
			resp, bytes, _, _ = b.fetchOnce(req, replicaID, plan, budget, auth, tally, sf)
			return answer(resp, bytes), nil
		}
	}
}

// fetchAuth is what a Fetch may read (authorize_requests.go): a follower
// with CLUSTER_ACTION on the cluster every partition, one without none; a
// consumer the topics it may READ, each asked once per request however
// many rounds its long poll takes.
type fetchAuth struct {
	follower, clusterAction bool
	readable                *topicAuth
}

func (b *Broker) fetchAuth(r *protocol.Request, replicaID int32) *fetchAuth {
	if replicaID >= 0 {
		return &fetchAuth{follower: true, clusterAction: b.authorizedCluster(r, kmsg.ACLOperationClusterAction)}
	}
	return &fetchAuth{readable: b.topicAuth(r, kmsg.ACLOperationRead)}
}

// denied reports whether the partitions of one request topic entry are
// TOPIC_AUTHORIZATION_FAILED: all of a follower without CLUSTER_ACTION; a
// consumer's when it may not READ the topic, by the name the request gives
// or its id resolves to (an id no topic has is UNKNOWN_TOPIC_ID first, as
// in Kafka).
func (a *fetchAuth) denied(rt *kmsg.FetchRequestTopic, topic *controller.Topic, byID bool) bool {
	switch {
	case a.follower:
		return !a.clusterAction
	case !byID:
		return !a.readable.allowed(rt.Topic)
	case topic != nil:
		return !a.readable.allowed(topic.Name)
	}
	return false
}

// fetchTopic is one topic entry of the answer: the request's topic entry
// that named it first, and its partitions, each the last request entry
// that named it (planFetch).
type fetchTopic struct {
	topic      *kmsg.FetchRequestTopic
	partitions []*kmsg.FetchRequestTopicPartition
	// cached is, for an incremental fetch, the session's partition of each
	// of partitions; nil otherwise.
	cached []*sessionPartition
}

// planFetch lists the partitions a Fetch request names, each once, in the
// order they first appear, with the parameters of their last entry, as
// Kafka's LinkedHashMap of fetch partitions holds them. Topics are told
// apart by name before v13 and by id from v13 (KIP-516).
//
// A request without repeats, which is what clients and followers send, is
// recognised with a small bitmap per topic entry and costs a pointer per
// partition. One with repeats costs some 33 bytes per partition entry,
// about what the entry takes on the wire, so a request of millions of
// entries cannot make the plan much larger than itself: keys are packed
// into a uint64, the maps are sized once, and every topic's partitions
// share one array.
func planFetch(req *kmsg.FetchRequest) []fetchTopic {
	canon, total := canonicalFetchTopics(req)
	if plan := planFetchUnique(req, canon, total); plan != nil {
		return plan
	}
	at := make(map[uint64]int32, total) // (topic, partition) to its index in all
	all := make([]*kmsg.FetchRequestTopicPartition, 0, total)
	var plan []fetchTopic
	starts := []int{} // where each plan topic's partitions start in all
	lastCanon := int32(-1)
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := uint64(uint32(canon[i]))<<32 | uint64(uint32(rp.Partition))
			if n, ok := at[k]; ok {
				all[n] = rp
				continue
			}
			if canon[i] != lastCanon {
				plan = append(plan, fetchTopic{topic: rt})
				starts = append(starts, len(all))
				lastCanon = canon[i]
			}
			at[k] = int32(len(all))
			all = append(all, rp)
		}
	}
	for i := range plan {
		end := len(all)
		if i+1 < len(plan) {
			end = starts[i+1]
		}
		plan[i].partitions = all[starts[i]:end:end]
	}
	return plan
}

// canonicalFetchTopics returns, for each topic entry of req, the index of
// the first entry with the same topic, and the number of partition entries.
func canonicalFetchTopics(req *kmsg.FetchRequest) ([]int32, int) {
	canon := make([]int32, len(req.Topics))
	total := 0
	if req.Version >= 13 {
		first := make(map[[16]byte]int32, len(req.Topics))
		for i := range req.Topics {
			c, ok := first[req.Topics[i].TopicID]
			if !ok {
				c = int32(i)
				first[req.Topics[i].TopicID] = c
			}
			canon[i] = c
			total += len(req.Topics[i].Partitions)
		}
		return canon, total
	}
	first := make(map[string]int32, len(req.Topics))
	for i := range req.Topics {
		c, ok := first[req.Topics[i].Topic]
		if !ok {
			c = int32(i)
			first[req.Topics[i].Topic] = c
		}
		canon[i] = c
		total += len(req.Topics[i].Partitions)
	}
	return canon, total
}

// planFetchUnique is planFetch for a request that names every topic in one
// entry and no partition twice; it returns nil for any other request, or
// when a partition number is too large for the bitmap, which holds eight
// bits per partition entry of the topic, plus 64.
func planFetchUnique(req *kmsg.FetchRequest, canon []int32, total int) []fetchTopic {
	for i, c := range canon {
		if c != int32(i) {
			return nil
		}
	}
	all := make([]*kmsg.FetchRequestTopicPartition, total)
	plan := make([]fetchTopic, 0, len(req.Topics))
	var bits []uint64
	n := 0
	for i := range req.Topics {
		rt := &req.Topics[i]
		limit := 8*len(rt.Partitions) + 64
		words := (limit + 63) / 64
		if cap(bits) < words {
			bits = make([]uint64, words)
		}
		bits = bits[:words]
		clear(bits)
		start := n
		for j := range rt.Partitions {
			p := rt.Partitions[j].Partition
			if p < 0 || int(p) >= limit {
				return nil
			}
			word, bit := p/64, uint64(1)<<(p%64)
			if bits[word]&bit != 0 {
				return nil
			}
			bits[word] |= bit
			all[n] = &rt.Partitions[j]
			n++
		}
		if n > start {
			plan = append(plan, fetchTopic{topic: rt, partitions: all[start:n:n]})
		}
	}
	return plan
}

// Bytes an answer may take beyond its record bytes: a generous bound on
// the encoded fields of one partition (error, offsets, epochs, tagged
// fields, the records' length) and of one topic besides its name, and a
// margin for the response header and aborted-transaction lists.
const (
	fetchPartitionOverhead = 128
	fetchTopicOverhead     = 64
	fetchResponseMargin    = 1 << 20
)

// fetchBudget is the most record bytes one answer to req may carry: the
// request's MaxBytes and the broker's fetch.max.bytes, whichever is smaller,
// and never so much that the answer with its per-partition fields would
// overflow the int32 size prefix of its frame.
func (b *Broker) fetchBudget(req *kmsg.FetchRequest, plan []fetchTopic) int {
	const maxFrame = math.MaxInt32
	budget := maxFrame
	if req.MaxBytes > 0 {
		budget = int(req.MaxBytes)
	}
	if limit := int(b.cfg.FetchMaxBytes); limit > 0 {
		budget = min(budget, limit)
	}
	overhead := fetchResponseMargin
	for _, t := range plan {
		overhead += fetchTopicOverhead + len(t.topic.Topic) + fetchPartitionOverhead*len(t.partitions)
	}
	return max(0, min(budget, maxFrame-overhead))
}

// fetchOnce builds a response from what the logs hold now, for the
// partitions of plan and at most budget record bytes (bar the first
// batch). It returns the bytes gathered, whether to answer without
// waiting (a partition errored, or the budget held data back), and the
// partitions that were read, to wait on for new data (fetch_wait.go).
// The partitions auth denies are TOPIC_AUTHORIZATION_FAILED and, as in
// Kafka, do not end a long poll early.
func (b *Broker) fetchOnce(req *kmsg.FetchRequest, replicaID int32, plan []fetchTopic, budget int, auth *fetchAuth, tally *fetchTally, sf *sessionFetch) (*protocol.SplicedResponse, int, bool, []*partitionWatch) {
	if tally != nil {
		tally.parts = tally.parts[:0] // only the round answered counts
	}
	sf.startRound()
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	spliced := protocol.Splice(resp)
	img := b.metadata()
	byID := req.Version >= 13
	total := 0
	hasErr, capped := false, false
	var watches []*partitionWatch
	// A follower's session skips the partitions with nothing new
	// (fetch_session_idle.go).
	fastPath := replicaID >= 0 && sf.incremental()
	var nowNanos int64
	if fastPath {
		nowNanos = b.now().UnixNano()
	}
	for _, ft := range plan {
		rt := ft.topic
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		topic := lookupTopic(img, byID, rt.Topic, rt.TopicID)
		denied := auth.denied(rt, topic, byID)
		for i, rp := range ft.partitions {
			var cached *sessionPartition
			if ft.cached != nil {
				cached = ft.cached[i]
			}
			if fastPath && !denied && topic != nil && cached != nil && sf.skipIdle(cached, nowNanos) {
				tally.add(topic.Name, 0, 0)
				continue
			}
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			// Kafka sends empty, not null, record bytes; librdkafka
			// rejects a null set.
			sp.RecordBatches = []byte{}
			n := 0
			if denied {
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else {
				var changed *partitionWatch
				var err error
				var idle idleRead
				changed, n, err = b.fetchPartition(spliced, topic, byID, req, replicaID, rp, &sp, budget-total, total == 0, &capped, &idle)
				if fastPath {
					sf.noteIdle(cached, &idle, &sp, n)
				}
				if err != nil {
					hasErr = true
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode == kerr.UnknownServerError.Code {
						b.logger.Error("fetch failed", "topic", rt.Topic, "partition", rp.Partition, "err", err)
					}
					if sp.ErrorCode == kerr.NotLeaderForPartition.Code || sp.ErrorCode == kerr.FencedLeaderEpoch.Code {
						if mp := topicPartition(topic, rp.Partition); mp != nil {
							sp.CurrentLeader.LeaderID = mp.Leader
							sp.CurrentLeader.LeaderEpoch = mp.LeaderEpoch
						}
					}
				}
				if changed != nil {
					watches = append(watches, changed)
				}
				if topic != nil {
					tally.add(topic.Name, n, sp.ErrorCode)
				}
				total += n
			}
			if sf.keep(rt, rp, cached, &sp, n) {
				st.Partitions = append(st.Partitions, sp)
			}
		}
		if len(st.Partitions) > 0 || !sf.incremental() {
			resp.Topics = append(resp.Topics, st)
		}
	}
	// An answer the budget cut short is as full as it can get: waiting
	// for more data would not make it bigger.
	return spliced, total, hasErr || capped, watches
}

// fetchPartition reads one partition into sp. It returns what to wait on
// for the partition's next change — taken before anything is read, so a
// change between the read and the wait is not missed — the record bytes
// returned, and the partition's error; it sets *capped when budget, the
// bytes left in the response, held back data the partition's own limit
// would have allowed. Record bytes of spliceMinBytes or
// more are not read: sp carries a placeholder of resp's for the segment
// file range, and the connection sends it with sendfile.
//
// For a follower caught up at the log end offset, idle gets the partition,
// its gen as of before the read and the follower's state, for the fetch
// session's fast path (fetch_session_idle.go).
func (b *Broker) fetchPartition(resp *protocol.SplicedResponse, topic *controller.Topic, byID bool, req *kmsg.FetchRequest, replicaID int32, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition, budget int, first bool, capped *bool, idle *idleRead) (*partitionWatch, int, error) {
	if topic == nil {
		if byID {
			return nil, 0, kerr.UnknownTopicID
		}
		return nil, 0, kerr.UnknownTopicOrPartition
	}
	current := rp.CurrentLeaderEpoch
	if req.Version < 9 {
		current = -1
	}
	p, _, err := b.leaderReplica(topic, rp.Partition, current)
	if err != nil {
		return nil, 0, err
	}
	if replicaID >= 0 && !p.isReplica(replicaID) {
		// Kafka's Partition.followerReplicaOrThrow: with the current
		// epoch the follower is told to retry (the leader may not know
		// of it yet, as in a reassignment), without one that this is not
		// its leader.
		if current >= 0 {
			return nil, 0, kerr.UnknownLeaderEpoch
		}
		return nil, 0, kerr.NotLeaderForPartition
	}
	gen := p.gen.Load()
	changed := p.watchFetch(replicaID)
	if replicaID < 0 {
		// A follower's are read after its progress is recorded, below.
		fillFetchOffsets(p, sp)
	}
	sp.LogStartOffset = p.log.LogStartOffset()
	committed := replicaID < 0 && req.IsolationLevel == isolationCommitted
	if committed {
		sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
	}

	if req.Version >= 12 && rp.LastFetchedEpoch >= 0 {
		divEpoch, divEnd := p.log.EndOffsetForEpoch(rp.LastFetchedEpoch)
		if divEpoch != rp.LastFetchedEpoch || divEnd < rp.FetchOffset {
			sp.DivergingEpoch.Epoch = divEpoch
			sp.DivergingEpoch.EndOffset = divEnd
			if replicaID >= 0 {
				fillFetchOffsets(p, sp)
			}
			return changed, 0, nil
		}
	}

	maxOffset := sp.HighWatermark
	throttled := false
	if committed {
		maxOffset = sp.LastStableOffset
	}
	if replicaID >= 0 {
		brokerEpoch := int64(-1)
		if req.Version >= 15 {
			brokerEpoch = req.ReplicaState.Epoch
		}
		f, caughtUp, _, expand := p.recordFollowerFetchState(b.cfg.NodeID, replicaID, brokerEpoch, rp.FetchOffset, b.now())
		if expand {
			b.kickISR()
		}
		if caughtUp && f != nil {
			idle.p, idle.gen, idle.follower = p, gen, f
		}
		// The follower's progress may have moved the high watermark.
		fillFetchOffsets(p, sp)
		maxOffset = p.log.LogEndOffset()
		if throttled = b.leaderThrottled(topic, p, replicaID); throttled && b.throttle.leader.Exceeded(b.now()) {
			return changed, 0, nil // no records until the replication throttle allows
		}
	}
	limit := int(rp.PartitionMaxBytes)
	if budget < limit {
		limit = budget
	}
	if limit < 0 {
		limit = 0
	}
	sl, err := p.log.ReadSlice(rp.FetchOffset, int32(limit), maxOffset, first)
	if err == nil && budget < int(rp.PartitionMaxBytes) && sl.NextOffset < maxOffset {
		*capped = true // the response's budget, not the partition's, held data back
	}
	if err == nil && sl.Size > 0 {
		if sl.Size >= spliceMinBytes {
			sp.RecordBatches = resp.Bytes(sl.File, sl.Pos, sl.Size)
		} else if data, rerr := sl.Bytes(); rerr != nil {
			err = rerr
		} else {
			sp.RecordBatches = data
		}
	}
	if err != nil {
		if errors.Is(err, logstore.ErrOffsetOutOfRange) {
			return changed, 0, kerr.OffsetOutOfRange
		}
		return changed, 0, err
	}
	if sl.Size == 0 {
		return changed, 0, nil
	}
	if throttled {
		b.throttle.leader.Record(int(sl.Size), b.now())
	}
	if committed {
		for _, a := range p.log.AbortedTxns(rp.FetchOffset, sl.NextOffset) {
			sp.AbortedTransactions = append(sp.AbortedTransactions,
				kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
		}
	}
	return changed, int(sl.Size), nil
}

// fillFetchOffsets sets the high watermark and last stable offset of a
// partition's answer.
func fillFetchOffsets(p *partition, sp *kmsg.FetchResponseTopicPartition) {
	sp.HighWatermark = p.highWatermark()
	sp.LastStableOffset = min(p.lastStableOffset(), sp.HighWatermark)
}

// spliceMinBytes is the smallest partition answer sent from its segment
// file with sendfile; smaller ones are read into the response, where one
// read costs less than the extra writes around a spliced range.
const spliceMinBytes = 8 << 10
