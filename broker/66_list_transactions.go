package broker

// ListTransactions (api key 66), versions 0–2 (KIP-664).
//
// Lists the transactional ids this node coordinates (kafka-transactions.sh
// asks every broker), filtered by state names (unknown names are echoed in
// UnknownStateFilters and match nothing), producer ids, v1's minimum
// running time (KIP-994: transactions started longer ago than
// DurationFilterMillis) and v2's regular expression on the id (KIP-1152;
// Go's RE2 syntax, an invalid one is INVALID_REGULAR_EXPRESSION). While a
// led partition loads the answer is COORDINATOR_LOAD_IN_PROGRESS alone, as
// Kafka's TransactionStateManager answers, and the client asks again.
// Only the ids the principal may DESCRIBE are listed
// (authorize_requests.go).

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
	"github.com/sluicedev/sluice/txn"
)

func (b *Broker) handleListTransactions(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var f txn.ListFilter
	for _, name := range req.StateFilters {
		s, ok := txn.ParseState(name)
		if !ok {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			continue
		}
		f.States = append(f.States, s)
	}
	onlyUnknown := len(req.StateFilters) > 0 && len(f.States) == 0
	f.ProducerIDs = req.ProducerIDFilters
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		f.IDPattern = re
	}
	list, code := b.txn.List(f)
	if code != 0 {
		// Kafka's TransactionStateManager: the error alone, the
		// unknown state names not echoed.
		resp.ErrorCode, resp.UnknownStateFilters = code, nil
		return resp, nil
	}
	if onlyUnknown {
		return resp, nil // only unknown states: nothing matches
	}
	for _, l := range list {
		if !b.authorizedTxnID(r, kmsg.ACLOperationDescribe, l.TransactionalID) {
			continue // only the ids the principal may describe
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.TransactionalID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
