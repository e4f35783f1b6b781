package broker

// EndTxn (api key 26), versions 0–4.
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
// v5 (KIP-890 part 2, transaction.version 2: an epoch bump on every EndTxn)
// is not served; the broker does not advertise the feature, so clients stay
// at v4.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

func (b *Broker) handleEndTxn(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !b.authorizedTxnID(r, kmsg.ACLOperationWrite, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	code := b.txn.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp, nil
}
