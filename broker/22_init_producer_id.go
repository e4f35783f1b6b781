package broker

// InitProducerID (api key 22), versions 0–5.
//
// For an idempotent producer (no transactional id) it hands out a fresh
// producer id at epoch 0. Ids come from blocks the controller commits to the
// metadata log (KIP-730), so they are unique across the cluster and across
// restarts; a broker takes a new block of producerIDBlockSize when its block
// runs out. A v3+ request carrying its current id and epoch (KIP-360) also
// gets a new id, which resets its sequences.
//
// Transactional ids need the transaction coordinator, which sluice does not
// have yet: such requests get COORDINATOR_NOT_AVAILABLE (a client cannot
// find a transaction coordinator through FindCoordinator either).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/protocol"
)

const producerIDBlockSize = 1000

// producerIDs is this broker's current block of producer ids.
type producerIDs struct {
	mu   sync.Mutex
	next int64
	end  int64 // exclusive
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *protocol.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// nextProducerID returns an unused producer id, taking a new block from
// the controller when the current one is used up.
func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	b.pids.mu.Lock()
	defer b.pids.mu.Unlock()
	if b.pids.next >= b.pids.end {
		first, n, err := b.allocateProducerIDs(ctx, producerIDBlockSize)
		if err != nil {
			return 0, err
		}
		b.pids.next, b.pids.end = first, first+n
	}
	id := b.pids.next
	b.pids.next++
	return id, nil
}
