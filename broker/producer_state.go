package broker

// The partition side of idempotence and transactions: every append to a
// replica's log goes through here so that the partition's producer table
// (txn.ProducerState) sees every batch the log holds, in order.
//
//   - A leader validates a producer's batches (appendAsLeader with
//     txn.OriginClient) or a coordinator's markers (txn.OriginCoordinator)
//     before appending: a retried batch is answered with its original
//     offsets, sequence gaps and stale epochs are refused with Kafka's codes.
//   - A follower applies what it appends (appendAsFollower), unchecked, so
//     it has the table when it becomes leader.
//   - Each append that completes aborted transactions records them in the
//     log's aborted-transaction index; each append that rolls a segment
//     snapshots the table at the new segment's base, before applying the
//     appended batches, so the snapshot describes exactly the offsets below.
//   - The table is rebuilt from the newest snapshot at or below the log end
//     plus a replay of the batches after it when the replica is opened and
//     after every truncation (rebuildProducerState).
//   - The last stable offset comes from the table and the high watermark
//     (lastStableOffset).
//
// Lock order: partition.mu before producerState.mu before the log's own
// locks; producerState.mu is held across an append, so the table and the
// log never disagree about which batches are in.

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/txn"
)

// producerState is a partition's producer table under its own lock.
type producerState struct {
	// cfg is set when the partition is created, before any use.
	cfg producerConfig

	mu    sync.Mutex
	table *txn.ProducerState // nil until rebuildProducerState; then never nil
	// rebuilt: the last rebuild read the whole log, so the table knows
	// every producer the log holds (the cleaner may then drop the batches
	// of producers it does not list).
	rebuilt bool
}

// producerConfig is what the producer table needs from the broker. The
// zero value logs to slog.Default, uses the wall clock and never expires
// producers on restore.
type producerConfig struct {
	logger       *slog.Logger
	now          func() time.Time
	expirationMs int64 // producer.id.expiration.ms
}

func (c producerConfig) log() *slog.Logger {
	if c.logger == nil {
		return slog.Default()
	}
	return c.logger
}

func (c producerConfig) nowMs() int64 {
	if c.now == nil {
		return time.Now().UnixMilli()
	}
	return c.now().UnixMilli()
}

// errControlFromClient: INVALID_RECORD, as Kafka answers a producer that
// sends a control batch.
var errControlFromClient = fmt.Errorf("%w: clients may not write control batches", logstore.ErrInvalidRecord)

// txnBatches describes the batches of records for the producer table;
// control batches have their marker decoded. It returns nil when records
// is not a sequence of v2 batches (the append fails on it anyway).
func txnBatches(records []byte) ([]txn.Batch, error) {
	headers := logstore.ParseBatchHeaders(records)
	out := make([]txn.Batch, 0, len(headers))
	pos := int64(0)
	for _, h := range headers {
		b, err := txnBatch(h, records[pos:pos+h.BatchSize()])
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		pos += h.BatchSize()
	}
	return out, nil
}

// txnBatchesInto is txnBatches for a leader's append, appending to
// dst[:0]: records of one batch, as a Produce's are, are converted
// without allocating when dst has room for it.
func txnBatchesInto(dst []txn.Batch, records []byte) ([]txn.Batch, error) {
	h, n := logstore.CountBatchHeaders(records)
	if n != 1 {
		return txnBatches(records)
	}
	b, err := txnBatch(h, records)
	if err != nil {
		return nil, err
	}
	return append(dst[:0], b), nil
}

// txnBatch converts one header; raw is the whole batch, needed only for
// control batches.
func txnBatch(h logstore.BatchHeader, raw []byte) (txn.Batch, error) {
	b := txn.Batch{
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		BaseOffset: h.BaseOffset, LastOffsetDelta: h.LastOffsetDelta, MaxTimestamp: h.MaxTimestamp,
		Transactional: h.IsTransactional(), Control: h.IsControl(),
	}
	if b.Control && h.ProducerID >= 0 {
		m, err := txn.DecodeMarkerBatch(raw)
		if err != nil && !errors.Is(err, txn.ErrNotMarker) {
			return txn.Batch{}, err
		}
		b.Marker = m
	}
	return b, nil
}

// withOffsets sets the base offsets the leader assigned, from first on.
func withOffsets(batches []txn.Batch, first int64) {
	for i := range batches {
		batches[i].BaseOffset = first
		first = batches[i].LastOffset() + 1
	}
}

// leaderAppend is the outcome of appendAsLeader.
type leaderAppend struct {
	res logstore.AppendResult
	// duplicate is set when the batches were a retry of batches the log
	// holds: nothing was appended and dupFirst/dupLast are their offsets.
	duplicate         bool
	dupFirst, dupLast int64
}

// appendAsLeader validates records for origin against the producer table,
// appends them at leaderEpoch and applies them. txnVersion is a
// coordinator's marker transaction version (0 otherwise).
func (p *partition) appendAsLeader(records []byte, leaderEpoch int32, origin txn.Origin, txnVersion int8) (leaderAppend, error) {
	return p.appendAsLeaderWithin(records, leaderEpoch, origin, txnVersion, nil, txn.VerificationGuard{})
}

// appendAsLeaderWithin is appendAsLeader for one partition of a Produce
// request: request is the request's budget of decompressed bytes
// (logstore.RequestDecompressBudget), nil for none; guard is the
// transaction verification the batch passed (txn_verify.go), the zero
// guard when none was needed. A guard a marker has cleared meanwhile is
// INVALID_TXN_STATE and nothing is appended.
func (p *partition) appendAsLeaderWithin(records []byte, leaderEpoch int32, origin txn.Origin, txnVersion int8, request *logstore.RequestDecompressBudget, guard txn.VerificationGuard) (leaderAppend, error) {
	var one [1]txn.Batch
	batches, err := txnBatchesInto(one[:0], records)
	if err != nil {
		return leaderAppend{}, fmt.Errorf("%w: %v", logstore.ErrInvalidRecord, err)
	}
	if origin == txn.OriginClient {
		for _, b := range batches {
			if b.Control {
				return leaderAppend{}, errControlFromClient
			}
		}
	}
	ps := &p.producers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	table := ps.tableLocked()
	if !table.Verified(guard) {
		return leaderAppend{}, errTxnNotVerified
	}
	dup, isDup, err := table.Validate(batches, origin, txnVersion)
	if err != nil {
		return leaderAppend{}, err
	}
	if isDup {
		return leaderAppend{duplicate: true, dupFirst: dup.FirstOffset, dupLast: dup.LastOffset}, nil
	}
	res, err := p.log.AppendAsLeaderWithin(records, leaderEpoch, request)
	if err != nil {
		return leaderAppend{}, err
	}
	withOffsets(batches, res.FirstOffset)
	p.appliedLocked(batches, res)
	return leaderAppend{res: res}, nil
}

// appliedLocked brings the table up to date with an append: a snapshot
// first if the append rolled, then the batches, then the aborted
// transactions they completed into the index. A failure to write either
// file is logged, not returned: the batches are in the log, and a rebuild
// would find them. Lock should be held (producerState.mu).
func (p *partition) appliedLocked(batches []txn.Batch, res logstore.AppendResult) {
	logger := p.producers.cfg.log()
	table := p.producers.tableLocked()
	if res.Rolled {
		if err := p.log.WriteProducerSnapshot(res.FirstOffset, table.Snapshot()); err != nil {
			logger.Warn("cannot write producer snapshot", "partition", p.tp.String(), "offset", res.FirstOffset, "err", err)
		}
	}
	for _, c := range table.Apply(batches) {
		if !c.Aborted {
			continue
		}
		err := p.log.AppendAbortedTxn(logstore.AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset,
			LastOffset: c.LastOffset, LastStableOffset: c.LastStableOffset})
		if err != nil {
			logger.Warn("cannot index aborted transaction", "partition", p.tp.String(), "producer_id", c.ProducerID, "err", err)
		}
	}
}

// tableLocked returns the table, creating an empty one for a partition
// that was never rebuilt (tests that build partitions by hand). Lock
// should be held (producerState.mu).
func (ps *producerState) tableLocked() *txn.ProducerState {
	if ps.table == nil {
		ps.table = txn.NewProducerState()
	}
	return ps.table
}

// rebuildProducerState replaces the table with one rebuilt from the log:
// the newest readable snapshot at or below the log end offset (producers
// already expired at nowMs left out), then every batch after it, whose
// aborted transactions are put back into the index (entries already there
// are skipped). Called when the replica is opened and after truncation.
func (p *partition) rebuildProducerState() error {
	ps := &p.producers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return p.rebuildProducerStateLocked()
}

// rebuildProducerStateLocked: Lock should be held (producerState.mu).
func (p *partition) rebuildProducerStateLocked() error {
	ps := &p.producers
	logger, nowMs, expirationMs := ps.cfg.log(), ps.cfg.nowMs(), ps.cfg.expirationMs
	end := p.log.LogEndOffset()
	table, from := txn.NewProducerState(), int64(0)
	for {
		off, data, ok, err := p.log.LatestProducerSnapshot(end)
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		restored, err := txn.RestoreProducerState(data, nowMs, expirationMs)
		if err == nil {
			table, from = restored, off
			break
		}
		logger.Warn("ignoring unreadable producer snapshot", "partition", p.tp.String(), "offset", off, "err", err)
		if err := p.log.DeleteProducerSnapshot(off); err != nil {
			return err
		}
	}
	ps.table, ps.rebuilt = table, false
	err := p.log.ScanBatches(from, func(h logstore.BatchHeader, control []byte) error {
		if h.ProducerID < 0 {
			return nil
		}
		b, err := txnBatch(h, control)
		if err != nil {
			logger.Warn("skipping unreadable control batch", "partition", p.tp.String(), "offset", h.BaseOffset, "err", err)
			return nil
		}
		p.appliedLocked([]txn.Batch{b}, logstore.AppendResult{})
		return nil
	})
	ps.rebuilt = err == nil
	return err
}

// lastStableOffset is the offset read_committed consumers may read up to:
// the high watermark, or the first offset of the oldest transaction that
// is open or whose marker is not yet below the high watermark.
func (p *partition) lastStableOffset() int64 {
	hw := p.highWatermark()
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	return p.producers.tableLocked().LastStableOffset(hw)
}

// snapshotProducers writes the table as the snapshot at the log end
// offset; the broker calls it at clean shutdown, with appends stopped, so
// the next start replays nothing. A log that never held a record has
// nothing to replay and no producers: it gets no snapshot, which saves a
// file and an fsync per idle partition (a stop of a broker with 10,000
// new partitions spent most of its time writing empty snapshots).
func (p *partition) snapshotProducers() error {
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	table := p.producers.tableLocked()
	leo := p.log.LogEndOffset()
	if leo == 0 && table.Len() == 0 {
		return nil
	}
	return p.log.WriteProducerSnapshot(leo, table.Snapshot())
}

// producerExpiryCheckInterval is producer.id.expiration.check.interval.ms:
// how often the broker's maintenance loop expires idle producers on every
// replica (Broker.expireProducers), 10 minutes (Kafka's default) for a
// config built without it.
func (b *Broker) producerExpiryCheckInterval() time.Duration {
	if ms := b.cfg.ProducerIDExpirationCheckIntervalMs; ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 10 * time.Minute
}

// expireProducers drops producers idle for producer.id.expiration.ms.
func (p *partition) expireProducers() int {
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	if p.producers.cfg.expirationMs <= 0 {
		return 0
	}
	return p.producers.tableLocked().RemoveExpired(p.producers.cfg.nowMs(), p.producers.cfg.expirationMs)
}

// appendAsFollowerLocked appends batches fetched from the leader and
// applies them to the table. Lock should be held (partition.mu).
func (p *partition) appendAsFollowerLocked(records []byte) error {
	batches, err := txnBatches(records)
	if err != nil {
		return fmt.Errorf("%w: %v", logstore.ErrCorruptMessage, err)
	}
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	res, err := p.log.AppendAsFollower(records)
	if err != nil {
		return err
	}
	p.appliedLocked(batches, res)
	return nil
}

// truncateLocked truncates the log to offset and rebuilds the table from
// what is left. Lock should be held (partition.mu).
func (p *partition) truncateLocked(offset int64) error {
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	if err := p.log.TruncateTo(offset); err != nil {
		return err
	}
	return p.rebuildProducerStateLocked()
}

// lastRecordsOfActiveProducers is what the log cleaner must keep of the
// producers in the table (Kafka's UnifiedLog.lastRecordsOfActiveProducers):
// each one's last data offset (-1 when it has written only markers at its
// epoch) and epoch. It answers false while the table has not been rebuilt
// from the whole log, so the cleaner keeps every producer's last batch.
func (p *partition) lastRecordsOfActiveProducers() (map[int64]logstore.ActiveProducer, bool) {
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	if p.producers.table == nil || !p.producers.rebuilt {
		return nil, false
	}
	entries := p.producers.table.Producers()
	out := make(map[int64]logstore.ActiveProducer, len(entries))
	for _, e := range entries {
		last := int64(-1)
		if n := len(e.Batches); n > 0 {
			last = e.Batches[n-1].LastOffset
		}
		out[e.ProducerID] = logstore.ActiveProducer{LastDataOffset: last, Epoch: e.Epoch}
	}
	return out, true
}

// activeProducers returns the table's entries (DescribeProducers).
func (p *partition) activeProducers() []txn.ProducerEntry {
	p.producers.mu.Lock()
	defer p.producers.mu.Unlock()
	return p.producers.tableLocked().Producers()
}
