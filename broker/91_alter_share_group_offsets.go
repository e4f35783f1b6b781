package broker

// AlterShareGroupOffsets (api key 91), version 0 (KIP-932, Kafka 4.4),
// served by the group coordinator of the group.
//
// Sets the share-partition start offset (SPSO) of a share group's
// partitions: the share-partition state is initialized anew
// (share.Persister.InitializeState) with the requested start offset, no
// in-flight records and a greater state epoch, so that the share-partition
// starts from the new offset at its next fetch. The group must have no
// members (NON_EMPTY_GROUP, "The group is not empty."); a group that does
// not exist is created as an empty share group, as Kafka 4.4 does, and one
// of another type is GROUP_ID_NOT_FOUND (groups.AlterShareOffsets). A
// partition the topic does not have, or a topic that does not exist, is
// UNKNOWN_TOPIC_OR_PARTITION.
//
// Authorization as Kafka's KafkaApis: READ on the group
// (GROUP_AUTHORIZATION_FAILED for the whole request), READ on each topic
// (TOPIC_AUTHORIZATION_FAILED for its partitions). share.version below 1
// is UNSUPPORTED_VERSION (share.go). Top-level errors carry no topics.
//
// The state epoch: Kafka initializes the state with the group epoch, which
// the share coordinator accepts when it is not smaller than the one it
// holds. sluice uses the greater of the group epoch and one more than the
// epoch it holds, so that the epoch always moves and a share-partition
// still loaded with the old state (on the partition leader) is fenced at
// its next write (FENCED_STATE_EPOCH) and loads the new state; one with
// nothing to write loads it when the next member opens its share session
// (share.Manager.Revalidate in ShareFetch). This broker's own loaded
// share-partition of the key is dropped at once (share.Manager.Forget).

import (
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

func (b *Broker) handleAlterShareGroupOffsets(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	topLevel := func(code int16, msg string) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = code, shareOffsetsTopLevelMessage(code, msg)
		return resp, nil
	}
	img, code := b.shareOffsetsGate(r, kmsg.ACLOperationRead, req.GroupID)
	if code != 0 {
		return topLevel(code, "")
	}
	readable := b.topicAuth(r, kmsg.ACLOperationRead)

	// Partitions refused before the group coordinator, then those it answers.
	var refused []kmsg.AlterShareGroupOffsetsResponseTopic
	parts := groups.SharePartitions{}
	offsets := make(map[share.Key]int64)
	names := make(map[[16]byte]string)
	var answered []kmsg.AlterShareGroupOffsetsResponseTopic
	for _, rt := range req.Topics {
		var refuse *kerr.Error
		t := img.Topics[rt.Topic]
		switch {
		case !readable.allowed(rt.Topic):
			refuse = kerr.TopicAuthorizationFailed
		case t == nil:
			refuse = kerr.UnknownTopicOrPartition
		}
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		if t != nil {
			out.TopicID = t.ID
		}
		for _, rp := range rt.Partitions {
			p := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case refuse != nil:
				p.ErrorCode, p.ErrorMessage = refuse.Code, errorMessage(refuse)
			case topicPartition(t, rp.Partition) == nil:
				p.ErrorCode, p.ErrorMessage = kerr.UnknownTopicOrPartition.Code, errorMessage(kerr.UnknownTopicOrPartition)
			default:
				if !slices.Contains(parts[t.ID], rp.Partition) {
					parts[t.ID] = append(parts[t.ID], rp.Partition)
				}
				offsets[share.Key{Group: req.GroupID, TopicID: t.ID, Partition: rp.Partition}] = rp.StartOffset
				names[t.ID] = t.Name
			}
			out.Partitions = append(out.Partitions, p)
		}
		if refuse != nil {
			refused = append(refused, out)
		} else {
			answered = append(answered, out)
		}
	}

	mgr := b.shareState().mgr
	errs, code, msg := b.groups.AlterShareOffsets(ctx, req.GroupID, parts, names, func(ctx context.Context, groupEpoch int32) map[[16]byte]map[int32]error {
		out := make(map[[16]byte]map[int32]error)
		for id, ps := range parts {
			out[id] = make(map[int32]error)
			for _, p := range ps {
				key := share.Key{Group: req.GroupID, TopicID: id, Partition: p}
				out[id][p] = initializeShareOffset(ctx, mgr.Persister(), key, groupEpoch, offsets[key])
				mgr.Forget(key)
			}
		}
		return out
	})
	if code != 0 {
		return topLevel(code, msg)
	}
	for i := range answered {
		t := img.Topics[answered[i].Topic]
		for j := range answered[i].Partitions {
			p := &answered[i].Partitions[j]
			if p.ErrorCode != 0 || t == nil {
				continue
			}
			if err := errs[t.ID][p.Partition]; err != nil {
				p.ErrorCode, p.ErrorMessage = shareErrorCode(err), errorMessage(err)
			}
		}
	}
	resp.Topics = append(refused, answered...)
	return resp, nil
}

// shareOffsetsGate runs the checks AlterShareGroupOffsets and
// DeleteShareGroupOffsets make before they look at the request's topics,
// in Kafka's order: share.version (UNSUPPORTED_VERSION), op on the group
// (GROUP_AUTHORIZATION_FAILED), then a metadata image to resolve the
// topics in (COORDINATOR_NOT_AVAILABLE until this broker has one). It
// returns the image, or the top-level error code and no image.
func (b *Broker) shareOffsetsGate(r *protocol.Request, op kmsg.ACLOperation, group string) (*controller.Image, int16) {
	switch {
	case !b.shareGroupsEnabled():
		return nil, kerr.UnsupportedVersion.Code
	case !b.authorizedGroup(r, op, group):
		return nil, kerr.GroupAuthorizationFailed.Code
	}
	img := b.metadata()
	if img == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	return img, 0
}

// shareOffsetsTopLevelMessage is the message of a top-level error of
// AlterShareGroupOffsets or DeleteShareGroupOffsets: the group
// coordinator's msg when it gave one, else the description of code.
func shareOffsetsTopLevelMessage(code int16, msg string) *string {
	if msg != "" {
		return &msg
	}
	return errorMessage(kerr.ErrorForCode(code))
}

// initializeShareOffset sets key's state to start at offset with no
// in-flight records, at a state epoch greater than the one the persister
// holds (and not below groupEpoch).
func initializeShareOffset(ctx context.Context, persister share.Persister, key share.Key, groupEpoch int32, offset int64) error {
	epoch := groupEpoch
	s, err := persister.ReadSummary(ctx, key)
	switch {
	case err == nil:
		epoch = max(epoch, s.StateEpoch+1)
	case !errors.Is(err, share.ErrStateNotFound):
		return err
	}
	return persister.InitializeState(ctx, key, epoch, offset)
}
