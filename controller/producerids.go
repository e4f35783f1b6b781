package controller

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// AllocateProducerIDs reserves count producer ids for broker brokerID and
// returns the first; the block is committed to the metadata log, so no id
// is handed out twice, across restarts and brokers. A decision that lost a
// race with another allocation is retried against the newer image.
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, count int64) (int64, error) {
	if err := c.requireLeader(); err != nil {
		return 0, err
	}
	for attempt := 0; attempt < 10; attempt++ {
		first := c.Image().NextProducerID
		err := c.apply(ctx, allocateProducerIDsCmd{BrokerID: brokerID, First: first, Count: count})
		if err == nil {
			return first, nil
		}
		if !errors.Is(err, kerr.UnknownServerError) || ctx.Err() != nil {
			return 0, err
		}
	}
	return 0, kerr.ConcurrentTransactions
}
