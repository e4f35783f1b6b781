package broker

// DeleteRecords (api key 21), versions 0–2.
//
// Moves a partition's log start offset up to the given offset (-1 means the
// high watermark); whole segments below it are deleted and the new start is
// checkpointed so it survives a restart. An offset above the high watermark
// is OFFSET_OUT_OF_RANGE. The response's low watermark is the new log start
// offset.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDeleteRecords(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteRecordsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := b.metadata()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		topic := lookupTopic(img, false, rt.Topic, [16]byte{})
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			err := func() error {
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
			}()
			sp.ErrorCode = errorCode(err)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
