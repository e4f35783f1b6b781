package broker

// EndTxn (api key 26), versions 0–5.
//
// A transactional producer commits or aborts its transaction. The
// coordinator writes PrepareCommit or PrepareAbort to __transaction_state
// and answers; it then writes the COMMIT or ABORT marker to every
// partition of the transaction through the partitions' leaders
// (WriteTxnMarkers) and finally CompleteCommit or CompleteAbort (txn.go).
// Until then the id's requests are CONCURRENT_TRANSACTIONS, as is a retried
// EndTxn; a retry after completion succeeds. Ending a transaction that is
// not running, or committing one being aborted, is INVALID_TXN_STATE; a
// stale epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2, KIP-588);
// a producer id that is not the transactional id's
// INVALID_PRODUCER_ID_MAPPING. WRITE on the transactional id is needed
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
//
// v5 (KIP-890 part 2, transaction version 2) bumps the producer epoch at
// every commit or abort and answers the producer id and epoch the producer
// goes on with (a new producer id at epoch 0 when the bump used the last
// epoch); the markers carry the bumped epoch. A retry of an end already
// done (the epoch one below the current one) is answered with the current
// id and epoch, and an abort with nothing added is allowed. As in Kafka,
// the request's version decides (TransactionVersion.transactionVersionForEndTxn),
// and v5 is advertised whatever transaction.version is finalized: clients
// send v5 only once the cluster finalizes transaction.version 2
// (txn/coordinator_state.go, decideEndV2).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleEndTxn(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	res := b.txn.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit, req.Version >= 5)
	resp.ErrorCode = fencedForVersion(res.ErrorCode, req.Version, 2)
	resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
	return resp, nil
}
