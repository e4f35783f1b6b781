package txn

import (
	"regexp"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Description is DescribeTransactions' view of one transactional id.
type Description struct {
	ErrorCode     int16
	ProducerID    int64
	Epoch         int16
	State         State
	TimeoutMs     int32
	StartMs       int64 // -1 when no transaction runs
	Partitions    []TopicPartition
	LastUpdatedMs int64
}

// Describe describes transactionalID: NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when this node cannot say,
// TRANSACTIONAL_ID_NOT_FOUND for an unknown id, INVALID_REQUEST for the
// empty id.
func (c *Coordinator) Describe(transactionalID string) Description {
	if transactionalID == "" {
		// Kafka's TransactionCoordinator refuses the empty id before
		// it looks for its coordinator.
		return Description{ErrorCode: kerr.InvalidRequest.Code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	_, e, code := c.lookup(transactionalID)
	if code == 0 && e == nil {
		code = kerr.TransactionalIDNotFound.Code
	}
	if code != 0 {
		return Description{ErrorCode: code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.unloaded {
		return Description{ErrorCode: kerr.NotCoordinator.Code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	m := e.meta
	if m.state == StateDead {
		return Description{ErrorCode: kerr.TransactionalIDNotFound.Code, ProducerID: -1, Epoch: -1, StartMs: -1}
	}
	return Description{
		ProducerID:    m.producerID,
		Epoch:         m.epoch,
		State:         m.state,
		TimeoutMs:     m.timeoutMs,
		StartMs:       m.startMs,
		Partitions:    slices.Clone(m.partitions),
		LastUpdatedMs: m.updateMs,
	}
}

// ListFilter selects transactions for ListTransactions; zero values match
// everything.
type ListFilter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs, when positive, keeps transactions running for longer
	// than this (KIP-994).
	MinDurationMs int64
	// IDPattern, when set, is a regular expression the transactional id
	// must match (KIP-1152).
	IDPattern *regexp.Regexp
}

// Listing is one transaction of ListTransactions.
type Listing struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// List lists the transactional ids of every led partition that match f,
// sorted by id. While a led partition loads the answer is
// COORDINATOR_LOAD_IN_PROGRESS and no ids, as in Kafka.
func (c *Coordinator) List(f ListFilter) ([]Listing, int16) {
	c.mu.Lock()
	var entries []*entry
	for _, s := range c.shards {
		if !s.loaded {
			// As Kafka's TransactionStateManager: the answer is the
			// error alone, and the client asks again.
			c.mu.Unlock()
			return nil, kerr.CoordinatorLoadInProgress.Code
		}
		for _, e := range s.txns {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	now := c.cfg.Now().UnixMilli()
	var out []Listing
	for _, e := range entries {
		e.mu.Lock()
		m, unloaded := e.meta, e.unloaded
		e.mu.Unlock()
		switch {
		case unloaded || m.state == StateDead || m.epoch == noEpoch:
			continue
		case len(f.States) > 0 && !slices.Contains(f.States, m.state):
			continue
		case len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, m.producerID):
			continue
		case f.MinDurationMs > 0 && (m.startMs < 0 || now-m.startMs <= f.MinDurationMs):
			continue
		case f.IDPattern != nil && !f.IDPattern.MatchString(e.id):
			continue
		}
		out = append(out, Listing{TransactionalID: e.id, ProducerID: m.producerID, State: m.state})
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.TransactionalID, b.TransactionalID) })
	return out, 0
}
