package broker

// ListOffsets (api key 2), versions 1–11.
//
// Special timestamps: -1 latest (the high watermark; for isolation_level=1,
// read_committed, the last stable offset: the first offset of the oldest
// open transaction, capped by the high watermark), -2 earliest
// (the log start offset), -3 the record with the largest timestamp (v7+,
// KIP-734), -4 earliest local (v8+, KIP-1005: the log start offset, since all
// of sluice's log is local), -5 latest tiered (v9+: no tiered storage, so no
// offset). Any other timestamp finds the first record whose timestamp is at
// least that, through the time index; nothing at or above the high watermark
// is returned to a consumer (nothing at or above the last stable offset
// for read_committed). CurrentLeaderEpoch (v4+) is checked as Fetch
// does (KIP-320). A special timestamp before the version that brought it,
// or any other negative one, is UNSUPPORTED_VERSION before the partition is
// looked up, as Kafka's ReplicaManager.fetchOffset answers.
//
// A partition named more than once is answered once, with
// INVALID_REQUEST, as Kafka's ReplicaManager.fetchOffset answers the
// request's duplicate partitions; partitions are answered under one entry
// per topic name, in the order they first appear.

import (
	"context"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

const (
	listLatest         = -1
	listEarliest       = -2
	listMaxTimestamp   = -3
	listEarliestLocal  = -4
	listLatestTiered   = -5
	isolationCommitted = 1
)

func (b *Broker) handleListOffsets(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	img := b.metadata()
	// The request's partitions, flattened: entry k is parts[k], of topic
	// entry topicOf[k].
	flat := flattenPartitions(req.Topics,
		func(t *kmsg.ListOffsetsRequestTopic) string { return t.Topic },
		func(t *kmsg.ListOffsetsRequestTopic) []kmsg.ListOffsetsRequestTopicPartition { return t.Partitions },
		func(p *kmsg.ListOffsetsRequestTopicPartition) int32 { return p.Partition })
	topicOf, parts, firsts, next := flat.topicOf, flat.parts, flat.firsts, flat.next
	topics := make([]*controller.Topic, len(req.Topics))
	for i := range req.Topics {
		topics[i] = lookupTopic(img, false, req.Topics[i].Topic, [16]byte{})
	}
	topicAt := make(map[string]int) // index in resp.Topics by name
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for k := range firstEntries(len(parts), firsts) {
		rt, rp := &req.Topics[topicOf[k]], parts[k]
		sp := kmsg.NewListOffsetsResponseTopicPartition()
		sp.Partition = rp.Partition
		sp.Timestamp, sp.Offset, sp.LeaderEpoch = -1, -1, -1
		if !describable.allowed(rt.Topic) {
			// Before anything else about the topic, its existence
			// included (authorize_requests.go).
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		} else if next != nil && next[k] >= 0 {
			sp.ErrorCode = kerr.InvalidRequest.Code // named again later
		} else {
			sp.ErrorCode = errorCode(b.listOffset(req, topics[topicOf[k]], rp, &sp))
		}
		ti, ok := topicAt[rt.Topic]
		if !ok {
			ti = len(resp.Topics)
			topicAt[rt.Topic] = ti
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			resp.Topics = append(resp.Topics, st)
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, sp)
	}
	return resp, nil
}

// listTimestampSince is the first ListOffsets version that knows the
// special (negative) timestamp ts, or a version past every one for a
// negative timestamp that is not special.
func listTimestampSince(ts int64) int16 {
	switch ts {
	case listLatest, listEarliest:
		return 1
	case listMaxTimestamp:
		return 7
	case listEarliestLocal:
		return 8
	case listLatestTiered:
		return 9
	}
	return math.MaxInt16
}

// listOffset answers one partition of a ListOffsets request into sp.
func (b *Broker) listOffset(req *kmsg.ListOffsetsRequest, topic *controller.Topic, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) error {
	if rp.Timestamp < 0 && req.Version < listTimestampSince(rp.Timestamp) {
		return kerr.UnsupportedVersion
	}
	current := rp.CurrentLeaderEpoch
	if req.Version < 4 {
		current = -1
	}
	p, _, err := b.leaderReplica(topic, rp.Partition, current)
	if err != nil {
		return err
	}
	hw := p.highWatermark()
	if req.IsolationLevel == isolationCommitted {
		hw = min(p.lastStableOffset(), hw)
	}
	latestEpoch := p.log.LatestEpoch()
	switch rp.Timestamp {
	case listLatest:
		sp.Offset = hw
		sp.LeaderEpoch = latestEpoch
	case listEarliest, listEarliestLocal:
		sp.Offset = p.log.LogStartOffset()
		sp.LeaderEpoch = latestEpoch
	case listLatestTiered:
	case listMaxTimestamp:
		off, ts := p.log.MaxTimestamp()
		if off >= 0 && off < hw {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, latestEpoch
		}
	default:
		off, ts, ok := p.log.OffsetForTimestamp(rp.Timestamp)
		if ok && off < hw {
			sp.Offset, sp.Timestamp, sp.LeaderEpoch = off, ts, latestEpoch
		}
	}
	return nil
}
