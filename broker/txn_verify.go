package broker

// Transaction verification and implicit adds on the partition leader
// (KIP-890 parts 1 and 2, Kafka's AddPartitionsToTxnManager and
// ReplicaManager.appendRecordsWithTransactionVerification).
//
// Before a leader appends a transactional batch (a Produce, or the offsets
// of a TxnOffsetCommit on __consumer_offsets) it asks the transaction
// coordinator of the request's transactional id about the partition:
//
//   - Produce v12+ and TxnOffsetCommit v5+ come from a transaction
//     version 2 producer, which sends no AddPartitionsToTxn or
//     AddOffsetsToTxn: the leader asks the coordinator to add the partition
//     (AddPartitionsToTxn v5 without VerifyOnly), whatever
//     transaction.partition.verification.enable says;
//   - older versions are only verified (VerifyOnly), and only while
//     transaction.partition.verification.enable is true (Kafka's default):
//     a partition not in the producer's running transaction is
//     INVALID_TXN_STATE and nothing is appended, so a late or stray batch
//     cannot open a transaction that will never end (a hanging
//     transaction).
//
// No question is asked when the partition already has the producer's
// transaction open at the batch's epoch. The coordinator's answer is
// mapped as Kafka maps it: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, and
// CONCURRENT_TRANSACTIONS (after retrying it for up to
// add.partitions.to.txn.retry.backoff.max.ms, every
// add.partitions.to.txn.retry.backoff.ms), a coordinator that is loading,
// moving or unreachable are NOT_ENOUGH_REPLICAS, which every client
// retries without refreshing its metadata. (Kafka 4.4 retries
// CONCURRENT_TRANSACTIONS only when it adds the partition, transaction
// version 2, and answers a VerifyOnly question at once; sluice retries
// both.) A guard (txn/verification.go)
// makes the append fail with INVALID_TXN_STATE if the transaction's marker
// reached the partition between the answer and the append.
//
// The coordinator is asked directly when this node leads the id's
// __transaction_state partition, otherwise with AddPartitionsToTxn over
// the inter-broker client.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
	"github.com/sluicedev/sluice/txn"
)

// txnVerifyTimeout bounds one question to the coordinator.
const txnVerifyTimeout = 10 * time.Second

// errTxnNotVerified is a batch whose verification a marker overtook, or a
// partition not in the producer's transaction.
var errTxnNotVerified = fmt.Errorf("%w: The transaction was not ongoing", kerr.InvalidTxnState)

// txnVerifyAdds reports whether a request at version adds partitions to
// the transaction (transaction version 2) rather than only verifying
// them: Produce v12+, TxnOffsetCommit v5+.
func txnVerifyAdds(key, version int16) bool {
	switch key {
	case 0:
		return version >= 12
	case 28:
		return version >= 5
	}
	return false
}

// txnVerificationEnabled is transaction.partition.verification.enable as
// in force now: set for this broker, else for the cluster, else static.
func (b *Broker) txnVerificationEnabled() bool {
	perBroker, clusterDefault := b.dynamicBrokerConfigs(b.metadata())
	for _, m := range []map[string]string{perBroker, clusterDefault} {
		if v, ok := m["transaction.partition.verification.enable"]; ok {
			if on, err := strconv.ParseBool(v); err == nil {
				return on
			}
		}
	}
	return b.cfg.TransactionPartitionVerificationEnable
}

// txnCheck is one partition's transactional batch waiting for the
// coordinator.
type txnCheck struct {
	p     *partition
	tp    txn.TopicPartition
	guard txn.VerificationGuard
	err   error // the outcome, for the caller
}

// startTxnVerification records a pending check of producerID's batch at
// epoch on p, or reports that none is needed; add is a transaction
// version 2 producer's.
func (p *partition) startTxnVerification(producerID int64, epoch int16, add bool) (txn.VerificationGuard, bool) {
	ps := &p.producers
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.tableLocked().StartVerification(producerID, epoch, add, ps.cfg.nowMs())
}

// verifyTxnPartitions asks the coordinator of transactionalID about the
// checks (add: add them to the transaction, else only verify) and sets
// each one's err to what the client is to be answered. Checks that need
// no question keep a zero guard and a nil err.
func (b *Broker) verifyTxnPartitions(ctx context.Context, transactionalID string, producerID int64, epoch int16, add bool, checks []*txnCheck) {
	var ask []*txnCheck
	for _, c := range checks {
		if g, needed := c.p.startTxnVerification(producerID, epoch, add); needed {
			c.guard = g
			ask = append(ask, c)
		}
	}
	if len(ask) == 0 {
		return
	}
	parts := make([]txn.TopicPartition, len(ask))
	for i, c := range ask {
		parts[i] = c.tp
	}
	backoff := time.Duration(b.cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond
	backoffMax := time.Duration(b.cfg.AddPartitionsToTxnRetryBackoffMaxMs) * time.Millisecond
	codes, err := askWhileConcurrent(ctx, backoff, backoffMax, func() ([]int16, error) {
		return b.askTxnCoordinator(ctx, transactionalID, producerID, epoch, add, parts)
	})
	for i, c := range ask {
		if err != nil {
			c.err = fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %v", kerr.NotEnoughReplicas, err)
			continue
		}
		c.err = txnVerifyError(codes[i])
	}
}

// askWhileConcurrent calls ask, and again every backoff
// (add.partitions.to.txn.retry.backoff.ms) for as long as every code it
// answers is CONCURRENT_TRANSACTIONS, until backoffMax
// (add.partitions.to.txn.retry.backoff.max.ms) has passed since the first
// call or ctx ends; it returns the last answer.
func askWhileConcurrent(ctx context.Context, backoff, backoffMax time.Duration, ask func() ([]int16, error)) ([]int16, error) {
	deadline := time.Now().Add(backoffMax)
	for {
		codes, err := ask()
		retry := err == nil && len(codes) > 0 && time.Now().Before(deadline) && ctx.Err() == nil
		for _, code := range codes {
			if code != kerr.ConcurrentTransactions.Code {
				retry = false
			}
		}
		if !retry {
			return codes, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// txnVerifyError is the answer to a batch whose partition the coordinator
// answered code for (Kafka's AddPartitionsToTxnManager and
// ReplicaManager mapping).
func txnVerifyError(code int16) error {
	switch code {
	case 0:
		return nil
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch
	case kerr.InvalidTxnState.Code:
		return errTxnNotVerified
	case kerr.ConcurrentTransactions.Code, kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code,
		kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return fmt.Errorf("%w: Unable to verify the partition has been added to the transaction. Underlying error: %s",
			kerr.NotEnoughReplicas, kerr.ErrorForCode(code).(*kerr.Error).Message)
	}
	return kerr.ErrorForCode(code)
}

// askTxnCoordinator adds or verifies parts with the coordinator of
// transactionalID and returns each partition's code; an error means the
// coordinator could not be asked.
func (b *Broker) askTxnCoordinator(ctx context.Context, transactionalID string, producerID int64, epoch int16, add bool, parts []txn.TopicPartition) ([]int16, error) {
	codes := make([]int16, len(parts))
	fill := func(code int16) []int16 {
		for i := range codes {
			codes[i] = code
		}
		return codes
	}
	img := b.metadata()
	t := img.Topics[txnStateTopicName]
	if t == nil || len(t.Partitions) == 0 {
		return fill(kerr.CoordinatorNotAvailable.Code), nil
	}
	leader := t.Partitions[txn.PartitionFor(transactionalID, int32(len(t.Partitions)))].Leader
	if leader < 0 {
		return fill(kerr.CoordinatorNotAvailable.Code), nil
	}
	if leader == b.cfg.NodeID {
		if add {
			return fill(b.txn.AddPartitions(ctx, transactionalID, producerID, epoch, parts, 2)), nil
		}
		code, each := b.txn.VerifyPartitions(transactionalID, producerID, epoch, parts)
		if code != 0 {
			return fill(code), nil
		}
		return each, nil
	}
	cl, err := b.peerClient()
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = transactionalID, producerID, epoch, !add
	for _, tp := range parts {
		if n := len(tr.Topics); n == 0 || tr.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic = tp.Topic
			tr.Topics = append(tr.Topics, rt)
		}
		last := &tr.Topics[len(tr.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, tr)
	rctx, cancel := context.WithTimeout(ctx, txnVerifyTimeout)
	defer cancel()
	kresp, err := cl.Broker(int(leader)).Request(rctx, req)
	if err != nil {
		cl.ForceMetadataRefresh()
		return nil, err
	}
	resp := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return fill(resp.ErrorCode), nil
	}
	answered := make(map[txn.TopicPartition]int16)
	for _, rt := range resp.Transactions {
		if rt.TransactionalID != transactionalID {
			continue
		}
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				answered[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range parts {
		code, ok := answered[tp]
		if !ok {
			return nil, errors.New("broker: the transaction coordinator did not answer for every partition")
		}
		codes[i] = code
	}
	return codes, nil
}

// transactionalBatch returns the producer id and epoch of records when
// they start with a transactional magic v2 batch.
func transactionalBatch(records []byte) (producerID int64, epoch int16, ok bool) {
	headers := logstore.ParseBatchHeaders(records)
	if len(headers) == 0 || !headers[0].IsTransactional() || headers[0].ProducerID < 0 {
		return 0, 0, false
	}
	return headers[0].ProducerID, headers[0].ProducerEpoch, true
}

// produceTxnChecks verifies (or, from v12, adds) the partitions of a
// transactional Produce with the coordinator before anything is appended,
// and returns each checked partition's outcome by its place in the
// request (topic index, partition index). Partitions that will fail for
// another reason (unknown, not led here, refused) are not asked about:
// the append path answers them.
func (b *Broker) produceTxnChecks(ctx context.Context, img *controller.Image, req *kmsg.ProduceRequest, writable *topicAuth) map[[2]int]*txnCheck {
	if req.TransactionID == nil || !hasTransactionalBatch(req) {
		return nil
	}
	add := txnVerifyAdds(0, req.Version)
	if !add && !b.txnVerificationEnabled() {
		return nil
	}
	checks := make(map[[2]int]*txnCheck)
	var list []*txnCheck
	producerID, epoch := int64(-1), int16(-1)
	for i := range req.Topics {
		rt := &req.Topics[i]
		topic := lookupTopic(img, req.Version >= 13, rt.Topic, rt.TopicID)
		if topic == nil || topic.Internal || !writable.allowed(topic.Name) {
			continue
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			pid, ep, ok := transactionalBatch(rp.Records)
			if !ok || rp.Partition < 0 || int(rp.Partition) >= len(topic.Partitions) {
				continue
			}
			p := b.partition(logstore.TopicPartition{Topic: topic.Name, Partition: rp.Partition})
			if p == nil {
				continue
			}
			if leader, _ := p.state(); leader != b.cfg.NodeID {
				continue
			}
			c := &txnCheck{p: p, tp: txn.TopicPartition{Topic: topic.Name, Partition: rp.Partition}}
			checks[[2]int{i, j}] = c
			if producerID < 0 {
				producerID, epoch = pid, ep
			} else if pid != producerID || ep != epoch {
				// Kafka refuses transactional records of more than one
				// producer in one request.
				c.err = fmt.Errorf("%w: Transactional records contained more than one producer ID", kerr.InvalidProducerIDMapping)
				continue
			}
			list = append(list, c)
		}
	}
	if len(list) > 0 {
		b.verifyTxnPartitions(ctx, *req.TransactionID, producerID, epoch, add, list)
	}
	return checks
}
