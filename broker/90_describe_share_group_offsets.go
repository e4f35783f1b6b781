package broker

// DescribeShareGroupOffsets (api key 90), versions 0-1 (KIP-932; v1 adds
// the lag of KIP-1226), served by the group coordinator of each group.
//
// Each group is answered from the share-partition state the persister
// keeps (share.Persister.ReadSummary, through this broker's share
// manager): per partition its start offset (SPSO), the leader epoch of its
// last writer and, from v1, its lag, computed as Kafka 4.4's
// GroupCoordinatorService does: the partition's latest offset (its high
// watermark, asked of its leader) minus the start offset minus the
// delivery-complete count (offsets at or past the start offset that are
// ACKNOWLEDGED or ARCHIVED), or -1 when the start offset or the count is
// not initialized. A partition with no state, or whose state cannot be
// read, has start offset -1 and leader epoch 0 and no error, as in Kafka
// ("absence of data"); one whose latest offset cannot be had carries that
// error.
//
// Topics null describes every partition the group has initialized
// (groups.InitializedSharePartitions; none for a group that does not
// exist); an empty list describes nothing. Named topics are read whatever
// the group: a topic that does not exist answers its partitions with start
// offset -1 and a zero topic id.
//
// Authorization as Kafka's KafkaApis: DESCRIBE on the group
// (GROUP_AUTHORIZATION_FAILED for the group), DESCRIBE on each topic: a
// named topic the principal may not describe answers its partitions with
// TOPIC_AUTHORIZATION_FAILED, start offset -1 and a zero topic id; with
// topics null such topics are left out. share.version below 1 is
// UNSUPPORTED_VERSION for each group (share.go).
//
// The state is read through this broker's persister
// (b.shareState().mgr.Persister(): the share coordinator of each key,
// ReadShareGroupStateSummary), one read per partition.

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/groups"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/share"
)

func (b *Broker) handleDescribeShareGroupOffsets(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for i := range req.Groups {
		rg := &req.Groups[i]
		dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		dg.GroupID = rg.GroupID
		switch {
		case !b.shareGroupsEnabled():
			dg.ErrorCode = kerr.UnsupportedVersion.Code
		case !b.authorizedGroup(r, kmsg.ACLOperationDescribe, rg.GroupID):
			dg.ErrorCode = kerr.GroupAuthorizationFailed.Code
		case rg.Topics == nil:
			b.describeShareGroupAllOffsets(ctx, r, &dg)
		case len(rg.Topics) == 0:
		default:
			b.describeShareGroupTopicOffsets(ctx, r, rg.Topics, &dg)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp, nil
}

// describeShareGroupAllOffsets answers a group whose topics are null: the
// partitions the group has initialized, of the topics the principal may
// describe.
func (b *Broker) describeShareGroupAllOffsets(ctx context.Context, r *protocol.Request, dg *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	parts, code := b.groups.InitializedSharePartitions(dg.GroupID)
	img := b.shareDescribeOffsetsImage(dg, code)
	if img == nil {
		return
	}
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	want := make(map[*controller.Topic][]int32)
	for id, ps := range parts {
		t := img.TopicsByID[id]
		if t == nil || !describable.allowed(t.Name) {
			continue
		}
		want[t] = ps
	}
	dg.Topics = b.shareOffsetTopics(ctx, img, dg.GroupID, want)
}

// describeShareGroupTopicOffsets answers a group that names its topics.
func (b *Broker) describeShareGroupTopicOffsets(ctx context.Context, r *protocol.Request, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic, dg *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	img := b.shareDescribeOffsetsImage(dg, b.groups.ShareOffsetsCoordinator(dg.GroupID))
	if img == nil {
		return
	}
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	want := make(map[*controller.Topic][]int32)
	var missing, refused []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, rt := range topics {
		if !describable.allowed(rt.Topic) {
			refused = append(refused, shareOffsetsUnknownTopic(rt, kerr.TopicAuthorizationFailed))
			continue
		}
		t := img.Topics[rt.Topic]
		if t == nil {
			missing = append(missing, shareOffsetsUnknownTopic(rt, nil))
			continue
		}
		want[t] = append(want[t], rt.Partitions...)
	}
	dg.Topics = append(b.shareOffsetTopics(ctx, img, dg.GroupID, want), missing...)
	dg.Topics = append(dg.Topics, refused...)
}

// shareOffsetsUnknownTopic answers every partition of rt with start offset
// -1 and err, and the topic with a zero id.
func shareOffsetsUnknownTopic(rt kmsg.DescribeShareGroupOffsetsRequestGroupTopic, err *kerr.Error) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	out.Topic = rt.Topic
	for _, p := range rt.Partitions {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset = p, -1
		if err != nil {
			rp.ErrorCode = err.Code
			rp.ErrorMessage = errorMessage(err)
		}
		out.Partitions = append(out.Partitions, rp)
	}
	return out
}

// shareDescribeOffsetsImage is the metadata image a group of
// DescribeShareGroupOffsets is answered from, once the group coordinator
// answered code for it: nil, with the group's error set, when code is an
// error or this broker has no image yet (COORDINATOR_NOT_AVAILABLE).
func (b *Broker) shareDescribeOffsetsImage(dg *kmsg.DescribeShareGroupOffsetsResponseGroup, code int16) *controller.Image {
	if code == 0 {
		if img := b.metadata(); img != nil {
			return img
		}
		code = kerr.CoordinatorNotAvailable.Code
	}
	dg.ErrorCode = code
	dg.ErrorMessage = errorMessage(kerr.ErrorForCode(code))
	return nil
}

// shareOffsetTopics reads the state summary of each wanted partition and
// computes its lag; topics come out sorted by name.
func (b *Broker) shareOffsetTopics(ctx context.Context, img *controller.Image, group string, want map[*controller.Topic][]int32) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	persister := b.shareState().mgr.Persister()
	type row struct {
		t       *controller.Topic
		p       int32
		summary share.Summary
		ok      bool
		done    int64 // delivery-complete count, -1 if not known
	}
	var rows []row
	lagOf := make(map[*controller.Topic][]int32)
	for t, ps := range want {
		for _, p := range ps {
			key := share.Key{Group: group, TopicID: t.ID, Partition: p}
			s, err := persister.ReadSummary(ctx, key)
			rw := row{t: t, p: p, summary: s, ok: err == nil, done: int64(s.DeliveryComplete)}
			rows = append(rows, rw)
			// Kafka's shouldComputeSharePartitionLag: a start offset and a
			// delivery-complete count that are not -1.
			if rw.ok && s.StartOffset != -1 && rw.done != -1 {
				lagOf[t] = append(lagOf[t], p)
			}
		}
	}
	latest := b.shareLatestOffsets(ctx, img, lagOf)
	slices.SortStableFunc(rows, func(x, y row) int {
		return cmp.Or(cmp.Compare(x.t.Name, y.t.Name), cmp.Compare(x.p, y.p))
	})
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, rw := range rows {
		if n := len(out); n == 0 || out[n-1].Topic != rw.t.Name {
			rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			rt.Topic, rt.TopicID = rw.t.Name, rw.t.ID
			out = append(out, rt)
		}
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset, rp.LeaderEpoch = rw.p, -1, 0
		if rw.ok {
			// A state no leader wrote yet has leader epoch 0 in Kafka's
			// share coordinator (sluice's persisters keep -1).
			rp.StartOffset, rp.LeaderEpoch = rw.summary.StartOffset, max(rw.summary.LeaderEpoch, 0)
			if l, ok := latest[shareTP{rw.t.Name, rw.p}]; ok {
				if l.err != nil {
					rp.StartOffset, rp.LeaderEpoch = 0, 0
					rp.ErrorCode, rp.ErrorMessage = errorCode(l.err), errorMessage(l.err)
				} else {
					rp.Lag = l.offset - rw.summary.StartOffset - rw.done
				}
			}
		}
		out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, rp)
	}
	return out
}

// shareTP names a topic partition by name.
type shareTP struct {
	topic     string
	partition int32
}

// latestOffset is a partition's latest offset, or why it is not known.
type latestOffset struct {
	offset int64
	err    error
}

// shareLatestOffsets returns the latest offset (the high watermark, as a
// ListOffsets for the latest offset answers) of each partition of want:
// read here for the partitions this broker leads, asked of their leaders
// with ListOffsets for the others (Kafka's PartitionMetadataClient).
func (b *Broker) shareLatestOffsets(ctx context.Context, img *controller.Image, want map[*controller.Topic][]int32) map[shareTP]latestOffset {
	out := make(map[shareTP]latestOffset)
	remote := kmsg.NewPtrListOffsetsRequest()
	remote.ReplicaID = -1
	for t, ps := range want {
		var rt *kmsg.ListOffsetsRequestTopic
		for _, p := range ps {
			rp, _, err := b.leaderReplica(t, p, -1)
			switch {
			case err == nil:
				out[shareTP{t.Name, p}] = latestOffset{offset: rp.highWatermark()}
				continue
			case !errors.Is(err, kerr.NotLeaderForPartition):
				out[shareTP{t.Name, p}] = latestOffset{err: err}
				continue
			}
			if rt == nil {
				remote.Topics = append(remote.Topics, kmsg.NewListOffsetsRequestTopic())
				rt = &remote.Topics[len(remote.Topics)-1]
				rt.Topic = t.Name
			}
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = p, -1
			rt.Partitions = append(rt.Partitions, lp)
		}
	}
	if len(remote.Topics) == 0 {
		return out
	}
	fail := func(err error) {
		for _, rt := range remote.Topics {
			for _, rp := range rt.Partitions {
				out[shareTP{rt.Topic, rp.Partition}] = latestOffset{err: err}
			}
		}
	}
	cl, err := b.peerClient()
	if err != nil {
		fail(kerr.CoordinatorNotAvailable)
		return out
	}
	resp, err := remote.RequestWith(ctx, cl)
	if err != nil {
		fail(kerr.CoordinatorNotAvailable)
		return out
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				out[shareTP{rt.Topic, rp.Partition}] = latestOffset{err: err}
			} else {
				out[shareTP{rt.Topic, rp.Partition}] = latestOffset{offset: rp.Offset}
			}
		}
	}
	for _, rt := range remote.Topics {
		for _, rp := range rt.Partitions {
			if _, ok := out[shareTP{rt.Topic, rp.Partition}]; !ok {
				out[shareTP{rt.Topic, rp.Partition}] = latestOffset{err: kerr.UnknownServerError}
			}
		}
	}
	return out
}

// sharePartitionsOf turns groups' partitions into keys of group.
func sharePartitionsOf(group string, parts groups.SharePartitions) []share.Key {
	var out []share.Key
	for id, ps := range parts {
		for _, p := range ps {
			out = append(out, share.Key{Group: group, TopicID: id, Partition: p})
		}
	}
	return out
}
