package broker

// DescribeTransactions (api key 65), version 0 (KIP-664).
//
// Describes transactional ids this node coordinates: state, producer id and
// epoch, timeout, start time (-1 when no transaction runs) and the
// partitions of the running transaction. An id of another coordinator is
// NOT_COORDINATOR (kafka-transactions.sh asks each id's coordinator), an
// unknown one TRANSACTIONAL_ID_NOT_FOUND, the empty id INVALID_REQUEST (as
// Kafka's TransactionCoordinator.handleDescribeTransactions answers it,
// wherever its coordinator is). An id the principal may not DESCRIBE is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and the transaction's topics it
// may not DESCRIBE are left out (authorize_requests.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleDescribeTransactions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	describable := b.topicAuth(r, kmsg.ACLOperationDescribe)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		if !b.authorizedTxnID(r, kmsg.ACLOperationDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d := b.txn.Describe(id)
		st.ErrorCode = d.ErrorCode
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
		st.StartTimestamp = d.StartMs
		if d.ErrorCode == 0 {
			st.State = d.State.String()
			st.TimeoutMillis = d.TimeoutMs
		}
		for _, tp := range d.Partitions {
			if !describable.allowed(tp.Topic) {
				continue // only the topics the principal may describe
			}
			if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = tp.Topic
				st.Topics = append(st.Topics, t)
			}
			last := &st.Topics[len(st.Topics)-1]
			last.Partitions = append(last.Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
