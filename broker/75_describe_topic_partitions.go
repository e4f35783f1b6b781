package broker

// DescribeTopicPartitions (api key 75), version 0 (KIP-966).
//
// Like Metadata's topic part, with paging: topics are answered in name order
// (all topics when none are named), starting at the cursor's topic and
// partition, and at most ResponsePartitionLimit partitions in all (Kafka's
// cap is 2000); when partitions remain, NextCursor names the first of them.
// EligibleLeaderReplicas and LastKnownELR are the partition's KIP-966 sets
// from the metadata image (controller/elr.go), empty while the
// eligible.leader.replicas.version feature is 0.
//
// As Kafka's DescribeTopicPartitionsRequestHandler: a cursor whose topic is
// not among the listed topics, or whose partition is negative, is
// INVALID_REQUEST for every listed topic, and a partition limit below 1
// counts as 1.
//
// Each answered topic carries its authorized operations (KIP-430;
// authorized_ops.go), the request having no flag for them, a missing topic
// included, as the handler sets them on every topic it looked up; the
// INVALID_REQUEST answers to a bad cursor keep the "not requested" value.
//
// A topic the principal may not DESCRIBE is left out of an answer for
// every topic, and a named one is TOPIC_AUTHORIZATION_FAILED without its
// id, after the others (authorize_requests.go).

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

const maxDescribePartitions = 2000

// elrFeature is the feature that turns eligible leader replicas on; while
// it is at least 1 a leader's high watermark also waits for
// min.insync.replicas in the ISR (partition.hwMinISR).
const elrFeature = controller.FeatureELRVersion

func (b *Broker) handleDescribeTopicPartitions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.metadata()

	var names []string
	if len(req.Topics) == 0 {
		for _, t := range sortedTopics(img) {
			names = append(names, t.Name)
		}
	} else {
		for _, t := range req.Topics {
			names = append(names, t.Topic)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	if req.Cursor != nil && (req.Cursor.Partition < 0 ||
		len(req.Topics) > 0 && !slices.Contains(names, req.Cursor.Topic)) {
		for _, t := range req.Topics {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic = kmsg.StringPtr(t.Topic)
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil
	}
	limit := min(max(int(req.ResponsePartitionLimit), 1), maxDescribePartitions)
	startPartition := int32(0)
	if req.Cursor != nil {
		i, _ := slices.BinarySearch(names, req.Cursor.Topic)
		names = names[i:]
		if len(names) > 0 && names[0] == req.Cursor.Topic {
			startPartition = req.Cursor.Partition
		}
	}
	count := 0
	// A topic the principal may not DESCRIBE is left out of an answer for
	// every topic; a named one is TOPIC_AUTHORIZATION_FAILED, whether or
	// not it exists, after the others and whatever the limit, as Kafka's
	// handler adds them.
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	var refused []kmsg.DescribeTopicPartitionsResponseTopic
	for _, name := range names {
		if !describable.allowed(name) && len(req.Topics) > 0 {
			st := kmsg.NewDescribeTopicPartitionsResponseTopic()
			st.Topic = kmsg.StringPtr(name)
			st.ErrorCode = kerr.TopicAuthorizationFailed.Code
			refused = append(refused, st)
		}
	}
	for ti, name := range names {
		if !describable.allowed(name) {
			continue
		}
		st := kmsg.NewDescribeTopicPartitionsResponseTopic()
		st.Topic = &name
		st.AuthorizedOperations = b.topicAuthorizedOps(r, name)
		t := img.Topics[name]
		if t == nil {
			st.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.IsInternal = t.Internal
		from := int32(0)
		if ti == 0 {
			from = startPartition
		}
		for _, mp := range t.Partitions {
			if mp.Partition < from {
				continue
			}
			if count == limit {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: mp.Partition}
				break
			}
			sp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			sp.Partition = mp.Partition
			sp.LeaderID = mp.Leader
			sp.LeaderEpoch = mp.LeaderEpoch
			sp.Replicas = append([]int32{}, mp.Replicas...)
			sp.ISR = append([]int32{}, mp.ISR...)
			sp.EligibleLeaderReplicas = append([]int32{}, mp.ELR...)
			sp.LastKnownELR = append([]int32{}, mp.LastKnownELR...)
			sp.OfflineReplicas = offlineReplicas(img, mp)
			if mp.Leader < 0 {
				sp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			st.Partitions = append(st.Partitions, sp)
			count++
		}
		resp.Topics = append(resp.Topics, st)
		if resp.NextCursor != nil {
			break
		}
	}
	resp.Topics = append(resp.Topics, refused...)
	return resp, nil
}
