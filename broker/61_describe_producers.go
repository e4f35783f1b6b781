package broker

// DescribeProducers (api key 61), version 0 (KIP-664): the producers a
// partition's leader has in its producer table (producer_state.go), as
// kafka-transactions.sh describe-producers shows them: producer id and
// epoch, last sequence and timestamp, the coordinator epoch of the last
// marker and the first offset of the open transaction (-1 if none).
// Any replica answers from its own producer table, a follower too (KIP-664
// lets kafka-transactions.sh ask a chosen broker; Kafka's
// Partition.activeProducerState answers from the replica's log). Unknown
// partitions are UNKNOWN_TOPIC_OR_PARTITION, partitions this broker holds
// no replica of NOT_LEADER_OR_FOLLOWER, as in Kafka. Before either, a name
// that cannot be a topic is INVALID_TOPIC_EXCEPTION and a topic the
// principal may not READ TOPIC_AUTHORIZATION_FAILED
// (KafkaApis.handleDescribeProducersRequest, authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeProducers(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	img := b.metadata()
	readable := b.topicAuth(r, kmsg.ACLOperationRead)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		topic := lookupTopic(img, false, rt.Topic, [16]byte{})
		// A name that cannot be a topic first, then READ on the
		// topic, then whether it exists (KafkaApis).
		var topicErr error
		if err := controller.ValidateTopicName(rt.Topic); err != nil {
			topicErr = err
		} else if !readable.allowed(rt.Topic) {
			topicErr = kerr.TopicAuthorizationFailed
		}
		for _, part := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = part
			if topicErr != nil {
				sp.ErrorCode, sp.ErrorMessage = errorCode(topicErr), errorMessage(topicErr)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ErrorCode = b.describeProducers(topic != nil && part >= 0 && int(part) < len(topic.Partitions),
				logstore.TopicPartition{Topic: rt.Topic, Partition: part}, &sp)
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// describeProducers fills sp from tp's producer table and returns the
// partition's error code.
func (b *Broker) describeProducers(known bool, tp logstore.TopicPartition, sp *kmsg.DescribeProducersResponseTopicPartition) int16 {
	if !known {
		return kerr.UnknownTopicOrPartition.Code
	}
	p, err := b.hostedReplica(tp)
	if err != nil {
		return errorCode(err)
	}
	for _, e := range p.activeProducers() {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = e.ProducerID
		ap.ProducerEpoch = int32(e.Epoch)
		ap.LastSequence = e.LastSequence()
		ap.LastTimestamp = e.LastTimestamp
		ap.CoordinatorEpoch = e.CoordinatorEpoch
		ap.CurrentTxnStartOffset = e.TxnFirstOffset
		sp.ActiveProducers = append(sp.ActiveProducers, ap)
	}
	return 0
}
