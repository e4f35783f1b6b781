package broker

// WriteTxnMarkers (api key 27), versions 1–2 (Kafka 4.0 removed v0,
// KIP-896): a transaction coordinator asks the leaders of a transaction's
// partitions to end it there.
//
// For every marker and every partition this broker leads, a control batch
// (COMMIT or ABORT, with the producer's id and epoch and the coordinator
// epoch; txn.EncodeMarkerBatch) is appended as leader, checked first
// against the partition's producer table with coordinator rules
// (txn.OriginCoordinator): an epoch older than the partition knows is
// INVALID_PRODUCER_EPOCH (with TransactionVersion >= 2, v2+, the marker must
// carry a newer epoch, except a retry of a marker already written), a
// coordinator epoch older than the last marker's is
// TRANSACTION_COORDINATOR_FENCED. The append updates the producer table,
// the aborted-transaction index (for ABORT) and so the last stable offset.
// Each partition is answered as an acks=all produce is: once the high
// watermark passes the marker (every ISR member has it), with
// NOT_ENOUGH_REPLICAS when the ISR is below min.insync.replicas before the
// append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it shrank below it
// meanwhile, REQUEST_TIMED_OUT after request.timeout.ms, as in Kafka.
// A partition this broker does not lead is NOT_LEADER_OR_FOLLOWER; an
// unknown one UNKNOWN_TOPIC_OR_PARTITION. A marker for a producer without
// an open transaction on the partition is written all the same (Kafka
// does; it completes nothing).
//
// A marker written to a partition of __consumer_offsets settles the
// offsets the producer committed there in its transaction
// (TxnOffsetCommit): once the marker is acknowledged, the group
// coordinator applies them (COMMIT) or drops them (ABORT), before the
// response goes back to the transaction coordinator, so a transaction
// completes with its offsets visible.
//
// The sender needs ALTER or CLUSTER_ACTION on the cluster, or every
// partition is CLUSTER_AUTHORIZATION_FAILED and nothing is written, as
// KafkaApis.handleWriteTxnMarkersRequest checks it: the coordinators'
// principal (the brokers', User:ANONYMOUS on a PLAINTEXT listener) must be
// allowed it.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleWriteTxnMarkers(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.WriteTxnMarkersRequest)
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	img := b.metadata()

	type acked struct {
		code   *int16
		p      *partition
		epoch  int32
		next   int64
		marker *kmsg.WriteTxnMarkersRequestMarker
	}
	var waits []acked
	// Only a transaction coordinator may write markers: ALTER or
	// CLUSTER_ACTION on the cluster (authorize_requests.go).
	refused := !b.authorizedCluster(r, kmsg.ACLOperationAlter) && !b.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j := range m.Topics {
			rt := &m.Topics[j]
			st := &rm.Topics[j]
			*st = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			st.Topic = rt.Topic
			st.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(rt.Partitions))
			topic := lookupTopic(img, false, rt.Topic, [16]byte{})
			for k, part := range rt.Partitions {
				sp := &st.Partitions[k]
				*sp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				sp.Partition = part
				if refused {
					sp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				if topic == nil || part < 0 || int(part) >= len(topic.Partitions) {
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
					continue
				}
				p, epoch, last, err := b.writeTxnMarker(logstore.TopicPartition{Topic: topic.Name, Partition: part}, m, req.Version)
				if err != nil {
					sp.ErrorCode = errorCode(err)
					if sp.ErrorCode == kerr.UnknownServerError.Code {
						b.logger.Error("write txn marker failed", "topic", rt.Topic, "partition", part, "producer_id", m.ProducerID, "err", err)
					}
					continue
				}
				waits = append(waits, acked{code: &sp.ErrorCode, p: p, epoch: epoch, next: last + 1, marker: m})
			}
		}
	}
	if len(waits) > 0 {
		timeout := time.Duration(b.cfg.RequestTimeoutMs) * time.Millisecond
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		for _, w := range waits {
			*w.code = b.waitAcks(ctx, w.p, w.epoch, w.next, deadline.C)
			if *w.code == 0 && w.p.tp.Topic == offsetsTopicName && b.groups != nil {
				b.groups.CompleteTxn(w.p.tp.Partition, w.epoch, w.marker.ProducerID, w.marker.Committed, w.next-1)
			}
		}
	}
	return resp, nil
}

// writeTxnMarker appends m's marker to tp as its leader and returns the
// replica, the leader epoch it appended at and the marker's offset.
func (b *Broker) writeTxnMarker(tp logstore.TopicPartition, m *kmsg.WriteTxnMarkersRequestMarker, version int16) (*partition, int32, int64, error) {
	p, err := b.hostedReplica(tp)
	if err != nil {
		return nil, 0, 0, err
	}
	leader, epoch := p.state()
	if leader != b.cfg.NodeID {
		return nil, 0, 0, kerr.NotLeaderForPartition
	}
	if !p.enoughInsync() {
		return nil, 0, 0, kerr.NotEnoughReplicas
	}
	txnVersion := int8(0)
	if version >= 2 {
		txnVersion = m.TransactionVersion
	}
	batch := txn.EncodeMarkerBatch(m.ProducerID, m.ProducerEpoch,
		txn.EndTxnMarker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}, b.now().UnixMilli())
	out, err := p.appendAsLeader(batch, epoch, txn.OriginCoordinator, txnVersion)
	if err != nil {
		return nil, 0, 0, err
	}
	p.appendedAsLeader(b.cfg.NodeID)
	return p, epoch, out.res.LastOffset, nil
}
