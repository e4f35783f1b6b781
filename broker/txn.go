package broker

// Wiring of the transaction coordinator (package txn) into the broker, in
// the pattern of groups.go.
//
// The coordinator of a transactional id is the leader of the id's
// partition of __transaction_state. reconcile tells the coordinator which
// of those partitions this node leads after every metadata change; runTxn,
// a goroutine owned by the broker, replays newly led partitions
// (LoadPending), aborts timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms and expires
// idle transactional ids every
// transaction.remove.expired.transaction.cleanup.interval.ms. The
// coordinator reaches its partitions through txnStateLog (appends as leader
// that wait for the high watermark, reads below it) and the partitions of
// transactions through txnMarkerWriter, which sends WriteTxnMarkers to each
// partition's leader with the inter-broker franz-go client (forward.go),
// this node included, and retries until every marker is written.
//
// Lock order: the coordinator holds none of its locks while calling
// txnStateLog or txnMarkerWriter; txnStateLog takes Broker.mu and
// partition.mu briefly, as the produce path does.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/txn"
)

const txnStateTopicName = "__transaction_state"

const (
	// txnStateAppendTimeout bounds the replication of one
	// __transaction_state record, as Kafka's request.timeout.ms does.
	txnStateAppendTimeout = 30 * time.Second
	// txnMarkerRequestTimeout bounds one WriteTxnMarkers round trip.
	txnMarkerRequestTimeout = 10 * time.Second
	// txnStateReadBytes bounds one read of a __transaction_state partition
	// while loading (transaction.state.log.load.buffer.size's default).
	txnStateReadBytes = 5 << 20
)

func (b *Broker) newTxnCoordinator() *txn.Coordinator {
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	return txn.New(txn.Config{
		MaxTimeout:    ms(b.cfg.TransactionMaxTimeoutMs),
		IDExpiration:  ms(b.cfg.TransactionalIDExpirationMs),
		NewProducerID: b.nextProducerID,
		Now:           b.now,
		Logger:        b.logger.With("component", "txn"),
		// transaction.two.phase.commit.enable (KIP-939,
		// 22_init_producer_id.go).
		TwoPhaseCommit: b.cfg.TransactionTwoPhaseCommitEnable,
	}, txnStateLog{b}, txnMarkerWriter{b})
}

// reconcileTxn tells the coordinator which __transaction_state partitions
// this node leads in img. reconcile calls it after reconcileGroups.
func (b *Broker) reconcileTxn(img *controller.Image) {
	if b.txn == nil {
		return
	}
	b.txn.SetLeadership(b.ledPartitions(img, txnStateTopicName))
}

// runTxn loads newly led partitions, aborts timed-out transactions and
// expires idle transactional ids until ctx ends.
func (b *Broker) runTxn(ctx context.Context) {
	interval := func(v int32, def time.Duration) time.Duration {
		if v <= 0 {
			return def
		}
		return time.Duration(v) * time.Millisecond
	}
	abort := time.NewTicker(interval(b.cfg.TransactionAbortTimedOutIntervalMs, time.Second))
	defer abort.Stop()
	expire := time.NewTicker(interval(b.cfg.TransactionRemoveExpiredIntervalMs, time.Hour))
	defer expire.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.txn.LoadSignal():
			b.txn.LoadPending(ctx)
			if b.txn.Loading() {
				// A load failed (leader not caught up, a read error):
				// try again shortly.
				retry.Reset(200 * time.Millisecond)
			}
		case <-retry.C:
			b.txn.LoadPending(ctx)
			if b.txn.Loading() {
				retry.Reset(200 * time.Millisecond)
			}
		case <-abort.C:
			b.txn.AbortTimedOut(ctx)
		case <-expire.C:
			b.txn.ExpireIDs(ctx)
		}
	}
}

// ensureTxnStateTopic creates __transaction_state on first use, as Kafka
// does when the first FindCoordinator for a transactional id arrives:
// transaction.state.log.num.partitions partitions,
// transaction.state.log.replication.factor capped by the live brokers,
// min.insync.replicas transaction.state.log.min.isr capped by that,
// compacted.
func (b *Broker) ensureTxnStateTopic(ctx context.Context) error {
	return b.ensureInternalTopic(ctx, txnStateTopicName, b.cfg.TransactionStateLogNumPartitions,
		int(b.cfg.TransactionStateLogReplicationFactor), max(int(b.cfg.TransactionStateLogMinIsr), 1), map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.Itoa(int(b.cfg.TransactionStateLogSegmentBytes)),
			"compression.type": "uncompressed",
		})
}

// fencedForVersion is the producer-fenced code an older client
// understands: PRODUCER_FENCED (KIP-588) only from firstVersion on,
// INVALID_PRODUCER_EPOCH before.
func fencedForVersion(code int16, version, firstVersion int16) int16 {
	if code == kerr.ProducerFenced.Code && version < firstVersion {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// txnStateLog is txn.Log over this broker's replicas of
// __transaction_state.
type txnStateLog struct{ b *Broker }

var errTxnStateTimeout = errors.New("broker: __transaction_state append not replicated in time")

func (l txnStateLog) Append(ctx context.Context, partition, leaderEpoch int32, batch []byte) error {
	b := l.b
	p := b.partition(logstore.TopicPartition{Topic: txnStateTopicName, Partition: partition})
	if p == nil {
		return txn.ErrNotLeader
	}
	if leader, epoch := p.state(); leader != b.cfg.NodeID || epoch != leaderEpoch {
		return txn.ErrNotLeader
	}
	if !p.enoughInsync() {
		return kerr.NotEnoughReplicas
	}
	res, err := p.log.AppendAsLeader(batch, leaderEpoch)
	if err != nil {
		if errors.Is(err, logstore.ErrMessageTooLarge) || errors.Is(err, logstore.ErrRecordListTooLarge) {
			return fmt.Errorf("%w: %v", txn.ErrRecordTooLarge, err)
		}
		if errors.Is(err, logstore.ErrLogClosed) {
			return txn.ErrNotLeader
		}
		return err
	}
	// Wake the followers' parked fetches, as a produce does: without it
	// they see the record only when their long poll times out.
	p.appendedAsLeader(b.cfg.NodeID)
	deadline := time.NewTimer(txnStateAppendTimeout)
	defer deadline.Stop()
	if !b.waitHighWatermark(ctx, p, res.LastOffset+1, deadline.C) {
		if leader, epoch := p.state(); leader != b.cfg.NodeID || epoch != leaderEpoch {
			return txn.ErrNotLeader
		}
		return errTxnStateTimeout
	}
	return nil
}

func (l txnStateLog) Read(ctx context.Context, partition int32, offset int64) ([]byte, int64, error) {
	p := l.b.partition(logstore.TopicPartition{Topic: txnStateTopicName, Partition: partition})
	if p == nil {
		return nil, 0, txn.ErrNotLeader
	}
	if err := l.b.waitLeaderCaughtUp(ctx, p); err != nil {
		return nil, 0, err
	}
	hw := p.highWatermark()
	offset = max(offset, p.log.LogStartOffset())
	if offset >= hw {
		return nil, hw, nil
	}
	res, err := p.log.Read(offset, txnStateReadBytes, hw, true)
	if err != nil {
		return nil, hw, err
	}
	// The coordinators write uncompressed batches, but a compression.type
	// set on the topic stores them compressed; the loaders read records.
	return logstore.DecompressBatches(res.Data), hw, nil
}

// txnMarkerWriter is txn.MarkerWriter: WriteTxnMarkers to the partitions'
// leaders.
type txnMarkerWriter struct{ b *Broker }

// WriteMarkers sends m's marker to the leader of each partition, grouped
// by leader, until every partition has it. A partition whose topic is gone
// needs none; one without a live leader waits for one. NOT_LEADER, timeouts,
// too few in-sync replicas and network errors are retried with backoff;
// TRANSACTION_COORDINATOR_FENCED stops (a newer coordinator owns the id).
func (w txnMarkerWriter) WriteMarkers(ctx context.Context, m txn.Markers) error {
	b := w.b
	pending := slices.Clone(m.Partitions)
	backoff := 20 * time.Millisecond
	for attempt := 1; ; attempt++ {
		img := b.metadata()
		byLeader := make(map[int32][]txn.TopicPartition)
		var waiting []txn.TopicPartition
		for _, tp := range pending {
			t := img.Topics[tp.Topic]
			if t == nil || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
				continue // deleted: no marker is needed
			}
			leader := t.Partitions[tp.Partition].Leader
			if br := img.Brokers[leader]; leader < 0 || br == nil || br.Fenced {
				waiting = append(waiting, tp)
				continue
			}
			byLeader[leader] = append(byLeader[leader], tp)
		}
		var lastErr error
		for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
			retry, err := w.send(ctx, leader, m, byLeader[leader])
			if errors.Is(err, txn.ErrCoordinatorFenced) {
				return err
			}
			if err != nil {
				lastErr = err
			}
			waiting = append(waiting, retry...)
		}
		pending = waiting
		if len(pending) == 0 {
			return nil
		}
		if attempt%50 == 0 {
			b.logger.Warn("transaction markers still not written", "producer_id", m.ProducerID, "epoch", m.ProducerEpoch,
				"commit", m.Commit, "partitions", len(pending), "attempts", attempt, "err", lastErr)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// send sends one WriteTxnMarkers to leader for parts and returns the
// partitions to try again.
func (w txnMarkerWriter) send(ctx context.Context, leader int32, m txn.Markers, parts []txn.TopicPartition) (retry []txn.TopicPartition, err error) {
	cl, err := w.b.peerClient()
	if err != nil {
		return parts, err
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	marker := kmsg.NewWriteTxnMarkersRequestMarker()
	marker.ProducerID, marker.ProducerEpoch = m.ProducerID, m.ProducerEpoch
	marker.Committed, marker.CoordinatorEpoch = m.Commit, m.CoordinatorEpoch
	marker.TransactionVersion = m.TransactionVersion // v2+: the partition checks the bumped epoch
	for _, tp := range parts {
		if n := len(marker.Topics); n == 0 || marker.Topics[n-1].Topic != tp.Topic {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic = tp.Topic
			marker.Topics = append(marker.Topics, mt)
		}
		last := &marker.Topics[len(marker.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, marker)
	rctx, cancel := context.WithTimeout(ctx, txnMarkerRequestTimeout)
	defer cancel()
	kresp, err := cl.Broker(int(leader)).Request(rctx, req)
	if err != nil {
		cl.ForceMetadataRefresh()
		return parts, err
	}
	resp := kresp.(*kmsg.WriteTxnMarkersResponse)
	answered := make(map[txn.TopicPartition]int16)
	for _, rm := range resp.Markers {
		if rm.ProducerID != m.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				answered[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	for _, tp := range parts {
		code, ok := answered[tp]
		if !ok {
			retry = append(retry, tp)
			continue
		}
		switch code {
		case 0,
			// The partition has seen a newer epoch of this producer: the
			// transaction cannot be open there any more.
			kerr.InvalidProducerEpoch.Code, kerr.ProducerFenced.Code,
			// Nothing to mark on a partition that cannot hold markers.
			kerr.UnsupportedForMessageFormat.Code, kerr.UnsupportedVersion.Code:
		case kerr.TransactionCoordinatorFenced.Code:
			return nil, txn.ErrCoordinatorFenced
		default:
			retry = append(retry, tp)
			err = kerr.ErrorForCode(code)
		}
	}
	return retry, err
}

// errLeaderNotCaughtUp is returned by a load that waited too long for a
// new leader's high watermark.
var errLeaderNotCaughtUp = errors.New("broker: new leader's high watermark has not reached its epoch start offset")

// waitLeaderCaughtUp waits until p's high watermark has reached the log end
// offset p had when this node became its leader. Until then the high
// watermark a new leader inherited may lag records the previous leader
// already committed, and a coordinator loading only below it would miss
// the newest state.
func (b *Broker) waitLeaderCaughtUp(ctx context.Context, p *partition) error {
	deadline := time.NewTimer(txnStateAppendTimeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		leader, start, ch := p.leader, p.epochStartOffset, p.waiters
		p.mu.Unlock()
		if leader != b.cfg.NodeID {
			return txn.ErrNotLeader
		}
		if p.highWatermark() >= start {
			return nil
		}
		poll := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			poll.Stop()
			return ctx.Err()
		case <-deadline.C:
			poll.Stop()
			return errLeaderNotCaughtUp
		case <-ch:
		case <-poll.C:
		}
		poll.Stop()
	}
}
