package broker

// AddPartitionsToTxn (api key 24), versions 0–5.
//
// A transactional producer adds the partitions it is about to write to its
// transaction (the first add starts it: Ongoing). Asked of the transaction
// coordinator (txn.go); NOT_COORDINATOR elsewhere. Partitions of topics
// that do not exist are UNKNOWN_TOPIC_OR_PARTITION and the rest of the
// request is then OPERATION_NOT_ATTEMPTED, as in Kafka. A stale epoch is
// PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588), a producer
// id that is not the transactional id's INVALID_PRODUCER_ID_MAPPING, and a
// transaction whose markers are being written CONCURRENT_TRANSACTIONS.
//
// v4+ (KIP-890 part 1) is the brokers' form: several transactions in one
// request, answered per transaction, each either added or, with
// VerifyOnly, only checked (a partition not in the running transaction is
// INVALID_TXN_STATE). A partition leader sends it before appending a
// transactional batch (txn_verify.go): VerifyOnly for Produce v11 and
// below and TxnOffsetCommit v4 and below, an add for Produce v12+ and
// TxnOffsetCommit v5+ (KIP-890 part 2), which runs the transaction at
// transaction version 2, as Kafka's
// TransactionVersion.transactionVersionForAddPartitionsToTxn has it for
// every v4+ add. v5 only adds TRANSACTION_ABORTABLE to the errors a
// leader understands (sluice's coordinator does not answer it).
//
// v0–3 need WRITE on the transactional id (every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic but the
// internal ones; v4+ CLUSTER_ACTION on the cluster, a broker's
// (CLUSTER_AUTHORIZATION_FAILED), as KafkaApis checks them
// (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleAddPartitionsToTxn(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 && !b.authorizedCluster(r, kmsg.ACLOperationClusterAction) {
		// The brokers' form: only a broker may send it.
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	if req.Version < 4 {
		topics := make([]kmsg.AddPartitionsToTxnRequestTransactionTopic, len(req.Topics))
		for i, t := range req.Topics {
			topics[i] = kmsg.AddPartitionsToTxnRequestTransactionTopic{Topic: t.Topic, Partitions: t.Partitions}
		}
		var res []kmsg.AddPartitionsToTxnResponseTransactionTopic
		if b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID) {
			res = b.addPartitionsToTxn(ctx, req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topics, b.topicAuth(r, kmsg.ACLOperationWrite))
		} else {
			res = txnTopicsRefused(topics, kerr.TransactionalIDAuthorizationFailed.Code)
		}
		for _, t := range res {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	for _, t := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.TransactionalID
		rt.Topics = b.addPartitionsToTxn(ctx, req.Version, t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly, t.Topics, nil)
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

// addPartitionsToTxn adds (or verifies) one transaction's partitions and
// answers per partition. A client's request (writable not nil) needs WRITE
// on each topic but the internal ones: one refused is
// TOPIC_AUTHORIZATION_FAILED, and the request is then not attempted, as
// for an unknown partition.
func (b *Broker) addPartitionsToTxn(ctx context.Context, version int16, transactionalID string, producerID int64, epoch int16, verifyOnly bool, topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, writable *topicAuth) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	img := b.metadata()
	var parts []txn.TopicPartition
	codes := make(map[txn.TopicPartition]int16)
	unknown := false
	for _, t := range topics {
		mt := img.Topics[t.Topic]
		denied := writable != nil && !controller.IsInternalTopic(t.Topic) && !writable.allowed(t.Topic)
		for _, p := range t.Partitions {
			tp := txn.TopicPartition{Topic: t.Topic, Partition: p}
			if denied {
				codes[tp] = kerr.TopicAuthorizationFailed.Code
				unknown = true
				continue
			}
			if mt == nil || p < 0 || int(p) >= len(mt.Partitions) {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				unknown = true
				continue
			}
			parts = append(parts, tp)
		}
	}
	switch {
	case unknown:
		for _, tp := range parts {
			codes[tp] = kerr.OperationNotAttempted.Code
		}
	case verifyOnly:
		code, each := b.txn.VerifyPartitions(transactionalID, producerID, epoch, parts)
		for i, tp := range parts {
			if code != 0 {
				codes[tp] = code
			} else {
				codes[tp] = each[i]
			}
		}
	default:
		txnVersion := int16(0)
		if version >= 4 {
			txnVersion = 2
		}
		code := fencedForVersion(b.txn.AddPartitions(ctx, transactionalID, producerID, epoch, parts, txnVersion), version, 2)
		for _, tp := range parts {
			codes[tp] = code
		}
	}
	var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// txnTopicsRefused answers every partition of topics with code.
func txnTopicsRefused(topics []kmsg.AddPartitionsToTxnRequestTransactionTopic, code int16) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	out := make([]kmsg.AddPartitionsToTxnResponseTransactionTopic, 0, len(topics))
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}
