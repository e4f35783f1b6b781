package broker

// ShareFetch (api key 78), versions 1–2 (KIP-932; version 0 was Kafka 4.0's
// early access and is gone from Kafka 4.1 on; v2 adds ShareAcquireMode,
// KIP-1206, and IsRenewAck, KIP-1222).
//
// A share group member fetches from the leaders of its assigned
// partitions. Its requests to one broker form a share session
// (share/session.go): ShareSessionEpoch 0 opens it with the partitions
// named (acknowledgements on an opening request are INVALID_REQUEST), a
// positive epoch must match the session's (INVALID_SHARE_SESSION_EPOCH;
// SHARE_SESSION_NOT_FOUND without one) and adds its partitions and drops
// ForgottenTopicsData, -1 acknowledges and closes it, releasing what the
// member still holds there. Acknowledgements ride along with a fetch
// (AcknowledgementBatches, applied before fetching, their outcome in each
// partition's AcknowledgeErrorCode); a request with IsRenewAck only
// acknowledges (RENEW needs it; no records are fetched), as in Kafka.
//
// The fetch covers every partition of the session: for each, the records
// from the share-partition's next fetch offset up to the high watermark
// (the last stable offset under share.isolation.level=read_committed, with
// the offsets of aborted transactions archived), acquired for the member
// with share.record.lock.duration.ms locks (share/partition.go), the whole
// log batches holding them in Records and the acquired offsets with their
// delivery counts in AcquiredRecords. MaxRecords bounds the records
// acquired over the whole request, rounded up to a log batch's end unless
// ShareAcquireMode is 1 (record_limit); MaxBytes and the broker's
// fetch.max.bytes bound the bytes, bar the first batch (KIP-74). When
// nothing can be acquired the request waits up to MaxWaitMs for new data
// below the high watermark, released records, or a lock that runs out.
//
// An opening request is answered with every partition it names; later
// ones with the partitions that have records, an error or an
// acknowledgement outcome, as Kafka's share session context does.
//
// Errors: GROUP_AUTHORIZATION_FAILED without READ on the group, a
// partition's TOPIC_AUTHORIZATION_FAILED without READ on its topic,
// UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER with
// the current leader (and its endpoint in NodeEndpoints),
// INVALID_RECORD_STATE / INVALID_REQUEST for acknowledgements,
// INVALID_REQUEST for a missing group or member id.
//
// Where sluice differs from Kafka 4.4: MinBytes counts as 1 (any acquired
// record answers the request: acquired records are never held back);
// BatchSize is not used to split AcquiredRecords; client fetch byte-rate
// quotas do not apply to share fetches yet; records are read into memory
// (no sendfile).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

// shareAnswer is one partition of a ShareFetch or ShareAcknowledge answer.
type shareAnswer struct {
	tp                share.TopicPartition
	code, ackCode     int16
	ackErr            error
	hasAck            bool
	leaderID, leadEp  int32
	records           []byte
	acquired          []share.AcquiredRun
	inRequest, filled bool // named by the request; fetched from
}

func (b *Broker) handleShareFetch(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	if !b.shareGroupsEnabled() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if req.GroupID == nil || *req.GroupID == "" || req.MemberID == nil || *req.MemberID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	group, member := *req.GroupID, *req.MemberID
	if !b.authorizedGroup(r, kmsg.ACLOperationRead, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	s := b.shareState()
	img := b.metadata()
	gs := b.sharePartitionSettings(img, group)
	resp.AcquisitionLockTimeoutMillis = gs.lockMillis()
	readable := b.topicAuth(r, kmsg.ACLOperationRead)

	// The partitions named, each once, with their acknowledgements.
	answers := newShareAnswers()
	var valid []share.TopicPartition
	hasAcks := false
	for i := range req.Topics {
		rt := &req.Topics[i]
		topic := lookupTopic(img, true, "", rt.TopicID)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			a := answers.add(share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			a.inRequest = true
			if len(rp.AcknowledgementBatches) > 0 {
				hasAcks, a.hasAck = true, true
			}
			switch {
			case topic == nil:
				a.code = kerr.UnknownTopicID.Code
			case !readable.allowed(topic.Name):
				a.code = kerr.TopicAuthorizationFailed.Code
			case topicPartition(topic, rp.Partition) == nil:
				a.code = kerr.UnknownTopicOrPartition.Code
			default:
				valid = append(valid, a.tp)
			}
			if a.code != 0 {
				a.ackCode = a.code
			}
		}
	}
	var forgotten []share.TopicPartition
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			forgotten = append(forgotten, share.TopicPartition{TopicID: f.TopicID, Partition: p})
		}
	}

	key := share.SessionKey{Group: group, Member: member}
	var session share.SessionView
	var err error
	switch epoch := req.ShareSessionEpoch; epoch {
	case 0:
		if hasAcks {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		var connCtx context.Context = context.Background()
		var connID uint64
		if r.Conn != nil {
			connCtx, connID = r.Conn.Context(), r.Conn.ID
		}
		session, _, err = s.sessions.Open(key, valid, connID, b.attachShareSession(connCtx, key, connID))
		if err == nil {
			// A share-partition loaded before the group's offsets were
			// altered or deleted loads the new state (share/reset.go).
			for _, tp := range valid {
				_ = s.mgr.Revalidate(ctx, share.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition})
			}
		}
	case -1:
		session, err = s.sessions.Close(key)
	default:
		session, err = s.sessions.Update(key, epoch, valid, forgotten)
	}
	if err != nil {
		resp.ErrorCode = shareErrorCode(err)
		return resp, nil
	}

	now := b.now()
	renew := req.Version >= 2 && req.IsRenewAck && gs.renew
	for i := range req.Topics {
		rt := &req.Topics[i]
		topic := lookupTopic(img, true, "", rt.TopicID)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			a := answers.get(share.TopicPartition{TopicID: rt.TopicID, Partition: rp.Partition})
			if len(rp.AcknowledgementBatches) == 0 || a.ackCode != 0 {
				continue
			}
			batches := make([]share.AckBatch, len(rp.AcknowledgementBatches))
			for k, ab := range rp.AcknowledgementBatches {
				batches[k] = shareAckBatch(ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes)
			}
			b.shareAcknowledge(ctx, group, member, topic, a, batches, renew, gs, now)
		}
	}

	if req.ShareSessionEpoch == -1 {
		s.mgr.ReleaseMember(group, member, session.Partitions, now)
		return b.answerShareFetch(r, req, resp, answers, img, false), nil
	}
	if req.Version >= 2 && req.IsRenewAck {
		return b.answerShareFetch(r, req, resp, answers, img, req.ShareSessionEpoch == 0), nil
	}

	var deadline <-chan time.Time
	if req.MaxWaitMillis > 0 {
		t := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	for {
		got, watches, sps := b.shareFetchOnce(ctx, req, group, member, session.Partitions, answers, img, gs)
		if got || req.MaxWaitMillis <= 0 || (len(watches) == 0 && len(sps) == 0) {
			break
		}
		end := requestWait(ctx)
		changed := waitShare(ctx, deadline, watches, sps)
		end()
		if !changed {
			break
		}
		img = b.metadata()
	}
	return b.answerShareFetch(r, req, resp, answers, img, req.ShareSessionEpoch == 0), nil
}

// shareAckBatch converts one wire acknowledgement batch.
func shareAckBatch(first, last int64, types []int8) share.AckBatch {
	ab := share.AckBatch{First: first, Last: last, Types: make([]share.AckType, len(types))}
	for i, t := range types {
		ab.Types[i] = share.AckType(t)
	}
	return ab
}

// shareAcknowledge applies member's acknowledgements of one partition and
// records the outcome in a.
func (b *Broker) shareAcknowledge(ctx context.Context, group, member string, topic *controller.Topic, a *shareAnswer, batches []share.AckBatch, renew bool, gs sharePartitionSettings, now time.Time) {
	a.hasAck = true
	sp, _, err := b.sharePartitionFor(ctx, group, topic, a.tp, gs)
	if err == nil {
		err = sp.Acknowledge(member, batches, renew, now)
	}
	if err != nil {
		a.ackCode, a.ackErr = shareErrorCode(err), err
		if a.ackCode == kerr.NotLeaderForPartition.Code {
			a.setLeader(topic)
		}
	}
}

func (a *shareAnswer) setLeader(topic *controller.Topic) {
	a.leaderID, a.leadEp = -1, -1
	if mp := topicPartition(topic, a.tp.Partition); mp != nil {
		a.leaderID, a.leadEp = mp.Leader, mp.LeaderEpoch
	}
}

// shareFetchOnce acquires records for member from the session's
// partitions. It reports whether it acquired any or a partition failed,
// and what to wait on otherwise.
func (b *Broker) shareFetchOnce(ctx context.Context, req *kmsg.ShareFetchRequest, group, member string, parts []share.TopicPartition, answers *shareAnswers, img *controller.Image, gs sharePartitionSettings) (bool, []*partitionWatch, []*share.Partition) {
	now := b.now()
	budget := int(req.MaxBytes)
	if req.MaxBytes <= 0 {
		budget = 1 << 30
	}
	if limit := int(b.cfg.FetchMaxBytes); limit > 0 {
		budget = min(budget, limit)
	}
	maxRecords := int(req.MaxRecords)
	strict := req.Version >= 2 && req.ShareAcquireMode == 1
	total, count := 0, 0
	got := false
	var watches []*partitionWatch
	var sps []*share.Partition
	for _, a := range answers.list {
		if a.inRequest && a.code != 0 && !a.filled {
			got = true // a partition the request named is in error: answer now
		}
	}
	for _, tp := range parts {
		a := answers.add(tp)
		a.records, a.acquired, a.code, a.filled = nil, nil, 0, true
		topic := lookupTopic(img, true, "", tp.TopicID)
		if topic == nil {
			a.code = kerr.UnknownTopicID.Code
			got = true
			continue
		}
		if maxRecords > 0 && count >= maxRecords || total >= budget {
			continue
		}
		sp, p, err := b.sharePartitionFor(ctx, group, topic, tp, gs)
		if err != nil {
			a.code = shareErrorCode(err)
			if a.code == kerr.NotLeaderForPartition.Code {
				a.setLeader(topic)
			}
			if a.code == kerr.UnknownServerError.Code {
				b.logger.Error("share fetch failed", "group", group, "topic", topic.Name, "partition", tp.Partition, "err", err)
			}
			got = true
			continue
		}
		watch := p.watchFetch(-1)
		limit := shareFetchLimit(p, gs.readCommitted)
		if !sp.CanAcquire(limit, now) {
			watches, sps = append(watches, watch), append(sps, sp)
			continue
		}
		next := sp.NextFetchOffset(now)
		sl, err := p.log.ReadSlice(next, int32(min(budget-total, 1<<30)), limit, total == 0)
		var data []byte
		if err == nil && sl.Size > 0 {
			data, err = sl.Bytes()
		}
		if err != nil {
			a.code = errorCode(err)
			got = true
			continue
		}
		headers := logstore.ParseBatchHeaders(data)
		if len(headers) == 0 {
			watches, sps = append(watches, watch), append(sps, sp)
			continue
		}
		left := 0
		if maxRecords > 0 {
			left = maxRecords - count
		}
		runs := sp.Acquire(member, shareLogBatches(p, headers, gs.readCommitted), share.AcquireLimit{MaxRecords: left, Strict: strict}, now)
		if len(runs) == 0 {
			watches, sps = append(watches, watch), append(sps, sp)
			continue
		}
		a.acquired = runs
		a.records = trimShareBatches(data, headers, runs[0].First, runs[len(runs)-1].Last)
		for _, run := range runs {
			count += int(run.Last - run.First + 1)
		}
		total += len(a.records)
		got = true
	}
	return got, watches, sps
}

// trimShareBatches keeps the batches of data (with headers) that hold an
// offset in [first, last].
func trimShareBatches(data []byte, headers []logstore.BatchHeader, first, last int64) []byte {
	start, end, pos := -1, 0, 0
	for _, h := range headers {
		size := 12 + int(h.Length)
		if h.LastOffset() >= first && h.BaseOffset <= last {
			if start < 0 {
				start = pos
			}
			end = pos + size
		}
		pos += size
	}
	if start < 0 {
		return []byte{}
	}
	return data[start:end]
}

// answerShareFetch builds the response: every partition for an opening
// request, else those with records, an error or an acknowledgement.
func (b *Broker) answerShareFetch(r *protocol.Request, req *kmsg.ShareFetchRequest, resp *kmsg.ShareFetchResponse, answers *shareAnswers, img *controller.Image, full bool) kmsg.Response {
	endpoints := map[int32]bool{}
	topicAt := map[[16]byte]int{}
	for _, a := range answers.list {
		if !full && a.code == 0 && !a.hasAck && len(a.acquired) == 0 {
			continue
		}
		i, ok := topicAt[a.tp.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicAt[a.tp.TopicID] = i
			resp.Topics = append(resp.Topics, kmsg.ShareFetchResponseTopic{TopicID: a.tp.TopicID})
		}
		st := &resp.Topics[i]
		sp := kmsg.NewShareFetchResponseTopicPartition()
		sp.Partition = a.tp.Partition
		sp.ErrorCode = a.code
		sp.AcknowledgeErrorCode = a.ackCode
		if a.ackErr != nil && a.ackCode != 0 {
			sp.AcknowledgeErrorMessage = errorMessage(a.ackErr)
		}
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = -1, -1
		if a.code == kerr.NotLeaderForPartition.Code || a.ackCode == kerr.NotLeaderForPartition.Code {
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = a.leaderID, a.leadEp
			if a.leaderID >= 0 {
				endpoints[a.leaderID] = true
			}
		}
		sp.Records = a.records
		if sp.Records == nil {
			sp.Records = []byte{}
		}
		for _, run := range a.acquired {
			sp.AcquiredRecords = append(sp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: run.First, LastOffset: run.Last, DeliveryCount: run.DeliveryCount})
		}
		st.Partitions = append(st.Partitions, sp)
	}
	listener := ""
	if r.Conn != nil {
		listener = r.Conn.Listener
	}
	for id := range endpoints {
		if host, port, rack, ok := shareNodeEndpoint(img, id, listener); ok {
			resp.NodeEndpoints = append(resp.NodeEndpoints, kmsg.ShareFetchResponseNodeEndpoint{NodeID: id, Host: host, Port: port, Rack: rack})
		}
	}
	return resp
}

// shareAnswers are the partitions of one answer in the order they were
// first named: the request's, then the session's others.
type shareAnswers struct {
	list []*shareAnswer
	at   map[share.TopicPartition]*shareAnswer
}

func newShareAnswers() *shareAnswers {
	return &shareAnswers{at: make(map[share.TopicPartition]*shareAnswer)}
}

func (s *shareAnswers) add(tp share.TopicPartition) *shareAnswer {
	if a, ok := s.at[tp]; ok {
		return a
	}
	a := &shareAnswer{tp: tp, leaderID: -1, leadEp: -1}
	s.at[tp] = a
	s.list = append(s.list, a)
	return a
}

func (s *shareAnswers) get(tp share.TopicPartition) *shareAnswer { return s.at[tp] }
