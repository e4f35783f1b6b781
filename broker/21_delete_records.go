package broker

// DeleteRecords (api key 21), versions 0–2.
//
// Moves a partition's log start offset up to the given offset (-1 means the
// high watermark); whole segments below it are deleted and the new start is
// checkpointed so it survives a restart. An offset above the high watermark
// is OFFSET_OUT_OF_RANGE. The response's low watermark is the new log start
// offset.
//
// Internal topics (__consumer_offsets, __transaction_state) hold the
// coordinators' state: deleting their records is INVALID_TOPIC_EXCEPTION,
// as in Kafka's ReplicaManager, and nothing moves.
//
// A partition named more than once is answered once, where it first
// appears, and moved to the offset of its last entry: Kafka reads the
// request into a map keyed by topic and partition. Partitions are answered
// under one entry per topic name. A topic the principal may not DELETE is
// TOPIC_AUTHORIZATION_FAILED, whether or not it exists
// (authorize_requests.go).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteRecords(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.metadata()
	// The request's partitions, flattened: entry k is parts[k], of topic
	// entry topicOf[k].
	flat := flattenPartitions(req.Topics,
		func(t *kmsg.DeleteRecordsRequestTopic) string { return t.Topic },
		func(t *kmsg.DeleteRecordsRequestTopic) []kmsg.DeleteRecordsRequestTopicPartition { return t.Partitions },
		func(p *kmsg.DeleteRecordsRequestTopicPartition) int32 { return p.Partition })
	topicOf, parts, firsts, next := flat.topicOf, flat.parts, flat.firsts, flat.next
	topicAt := make(map[string]int) // index in resp.Topics by name
	deletable := b.topicAuth(r, kmsg.ACLOperationDelete)
	for k := range firstEntries(len(parts), firsts) {
		name := req.Topics[topicOf[k]].Topic
		last := k
		for next != nil && next[last] >= 0 {
			last = int(next[last])
		}
		rp := parts[last]
		sp := kmsg.NewDeleteRecordsResponseTopicPartition()
		sp.Partition = rp.Partition
		sp.LowWatermark = -1
		if deletable.allowed(name) {
			sp.ErrorCode = errorCode(b.deleteRecords(lookupTopic(img, false, name, [16]byte{}), rp, &sp))
		} else {
			sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
		}
		ti, ok := topicAt[name]
		if !ok {
			ti = len(resp.Topics)
			topicAt[name] = ti
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = name
			resp.Topics = append(resp.Topics, st)
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, sp)
	}
	return resp, nil
}

// deleteRecords moves one partition's log start offset as rp asks and
// reports the new one in sp.
func (b *Broker) deleteRecords(topic *controller.Topic, rp *kmsg.DeleteRecordsRequestTopicPartition, sp *kmsg.DeleteRecordsResponseTopicPartition) error {
	if topic != nil && (topic.Internal || controller.IsInternalTopic(topic.Name)) {
		return fmt.Errorf("%w: Cannot delete records of internal topic %s", kerr.InvalidTopicException, topic.Name)
	}
	p, _, err := b.leaderReplica(topic, rp.Partition, -1)
	if err != nil {
		return err
	}
	hw := p.highWatermark()
	offset := rp.Offset
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return kerr.OffsetOutOfRange
	}
	start, err := p.log.DeleteRecordsBefore(offset)
	if err != nil {
		return err
	}
	sp.LowWatermark = start
	p.wake()
	return nil
}
