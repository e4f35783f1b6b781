package broker

// DeleteRecords (api key 21), versions 0–2.
//
// Moves a partition's log start offset up to the given offset (-1 means the
// high watermark); whole segments below it are deleted and the new start is
// checkpointed so it survives a restart. An offset above the high watermark
// is OFFSET_OUT_OF_RANGE. The response's low watermark is the new log start
// offset.
//
// A partition named more than once is answered once, where it first
// appears, and moved to the offset of its last entry: Kafka reads the
// request into a map keyed by topic and partition. Partitions are answered
// under one entry per topic name.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteRecords(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.metadata()
	type topicPartition struct {
		topic     string
		partition int32
	}
	// Each partition's last entry, by partition; and the partitions of
	// each topic in the order they first appear.
	last := make(map[topicPartition]*kmsg.DeleteRecordsRequestTopicPartition)
	var order []topicPartition
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			k := topicPartition{rt.Topic, rt.Partitions[j].Partition}
			if last[k] == nil {
				order = append(order, k)
			}
			last[k] = &rt.Partitions[j]
		}
	}
	topicAt := make(map[string]int) // index in resp.Topics by name
	for _, k := range order {
		rp := last[k]
		sp := kmsg.NewDeleteRecordsResponseTopicPartition()
		sp.Partition = rp.Partition
		sp.LowWatermark = -1
		sp.ErrorCode = errorCode(b.deleteRecords(lookupTopic(img, false, k.topic, [16]byte{}), rp, &sp))
		ti, ok := topicAt[k.topic]
		if !ok {
			ti = len(resp.Topics)
			topicAt[k.topic] = ti
			st := kmsg.NewDeleteRecordsResponseTopic()
			st.Topic = k.topic
			resp.Topics = append(resp.Topics, st)
		}
		resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, sp)
	}
	return resp, nil
}

// deleteRecords moves one partition's log start offset as rp asks and
// reports the new one in sp.
func (b *Broker) deleteRecords(topic *controller.Topic, rp *kmsg.DeleteRecordsRequestTopicPartition, sp *kmsg.DeleteRecordsResponseTopicPartition) error {
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
