// Package txn owns idempotent and transactional producers: the bookkeeping
// each partition keeps about the producers that write to it, and the
// transaction coordinator (coordinator*.go) that runs transactions across
// partitions and persists them in __transaction_state.
//
// # Partition side: producer state
//
// ProducerState (producer_state.go) is one partition's table of producers,
// with Kafka's ProducerStateManager semantics (the code is sluice's own):
// per producer id the epoch, the last five batches' sequence and offset
// ranges, the coordinator epoch of the last transaction marker and the
// first offset of its ongoing transaction. The broker
//
//   - validates a producer's batches with it before a leader appends them
//     (Validate): a retry of one of the last five batches is a duplicate and
//     is answered with its original offsets, a sequence gap is
//     OUT_OF_ORDER_SEQUENCE_NUMBER, an epoch older than the known one is
//     INVALID_PRODUCER_EPOCH (Kafka 4 answers produce with it, not with
//     PRODUCER_FENCED, so the client can abort and retry), a data batch
//     without the transactional bit while a transaction is open is
//     INVALID_TXN_STATE, and a marker from an older coordinator epoch is
//     TRANSACTION_COORDINATOR_FENCED. A producer the table does not know is
//     accepted at any sequence (KIP-360: UNKNOWN_PRODUCER_ID is gone, its
//     state may have been removed by retention or expiry); a new epoch must
//     start at sequence 0;
//   - applies every batch it appends, as leader or follower (Apply), so a
//     follower has the state when it becomes leader. Transactional batches
//     open a transaction at their first offset; control batches (COMMIT or
//     ABORT markers, EncodeMarkerBatch / DecodeMarkerBatch in marker.go)
//     close it and yield a CompletedTxn, whose aborted ones the log keeps in
//     its aborted-transaction index;
//   - reads the last stable offset from it: the smallest first offset of an
//     ongoing transaction, or of a completed one whose marker is not yet
//     below the high watermark (so an unreplicated marker lost in a failover
//     cannot have let consumers past the transaction), capped by the high
//     watermark;
//   - snapshots it to Kafka's producer snapshot format (snapshot.go) when a
//     segment rolls and at clean shutdown, and rebuilds it on open and after
//     truncation from the latest snapshot plus the batches after it;
//   - expires producers without an ongoing transaction whose last batch
//     timestamp is older than producer.id.expiration.ms (RemoveExpired).
//
// A ProducerState has no lock and starts no goroutines: the broker guards
// each partition's with its own mutex and supplies the time.
//
// # Transaction coordinator
//
// The coordinator of a transactional id is the leader of partition
// PartitionFor(id, n) of __transaction_state: abs(hashCode(id)) % n with
// Java's String.hashCode (internal/keyhash, shared with the group
// coordinator), n being transaction.state.log.num.partitions (50). The
// broker creates the topic on first use (FindCoordinator with key type 1,
// InitProducerId) and tells the Coordinator which partitions it leads
// (SetLeadership); a newly led partition is replayed from its log
// (LoadPending) and its ids answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, a
// partition no longer led answers NOT_COORDINATOR. After loading, every
// transaction found in PrepareCommit or PrepareAbort has its markers
// written and is completed.
//
// State per id (coordinator_state.go, Kafka's TransactionMetadata): producer
// id and the previous one, epoch and the previous one, timeout, state, the
// partitions of the running transaction, start and update timestamps. Each
// change is one TransactionLogKey / TransactionLogValue record (written as
// value v1, read as v0 or v1, coordinator_records.go); a state becomes the
// committed one only once its record is committed (acks=-1). While a
// record is being written, or markers are in flight, other requests for
// the id get CONCURRENT_TRANSACTIONS.
//
// EndTxn writes PrepareCommit or PrepareAbort and answers; a goroutine of
// the coordinator then sends WriteTxnMarkers to every partition's leader
// (the broker's MarkerWriter retries leader changes until done, including
// the group's __consumer_offsets partition added by AddOffsetsToTxn) and
// writes CompleteCommit or CompleteAbort. InitProducerId on an id with a
// running transaction aborts it at a bumped epoch (fencing the old
// producer) and answers CONCURRENT_TRANSACTIONS; the retry bumps again.
// When the epochs of a producer id run out a new id is allocated (KIP-360).
// A transaction running longer than its timeout is aborted the same way by
// AbortTimedOut, which the broker calls every
// transaction.abort.timed.out.transaction.cleanup.interval.ms; ids idle for
// transactional.id.expiration.ms are tombstoned by ExpireIDs.
//
// # Transaction version 2 (KIP-890 part 2)
//
// A transaction is run at the client's transaction version its requests
// imply, as in Kafka: an add asked by a partition leader for a producer
// (AddPartitionsToTxn v4+ without VerifyOnly, sent for Produce v12+ and
// TxnOffsetCommit v5+) or an EndTxn v5 is version 2; a client's own
// AddPartitionsToTxn or AddOffsetsToTxn is version 0. The version is kept
// in the record (ClientTransactionVersion). EndTxn v5 (decideEndV2)
// bumps the epoch at every commit or abort: PrepareCommit / PrepareAbort
// and their markers (WriteTxnMarkers TransactionVersion 2) carry epoch+1,
// so a late produce of the finished transaction is refused by the
// partition; the answer carries the producer id and epoch the producer
// goes on with. When the bump takes the last epoch (32767), a new producer
// id is allocated, recorded as NextProducerId, and the Complete* state
// moves to it at epoch 0. A retried EndTxn is known by its epoch (one
// below the current one, or the previous id's 32766 after a move) and
// answered with the current id and epoch; an abort with nothing added is
// allowed and only bumps the epoch. Timeouts and InitProducerId fences
// abort as in version 0 (one bump), as Kafka 4.4's coordinator also does.
//
// # Two-phase commit (KIP-939)
//
// As far as Kafka 4.4 builds it (InitProducerIdWith, InitOptions): with
// transaction.two.phase.commit.enable (Config.TwoPhaseCommit) a producer
// that asks for Enable2Pc gets timeout TwoPhaseTimeoutMs (2147483647)
// whatever it asked, written to __transaction_state, and AbortTimedOut
// never aborts such a transaction, here or on the coordinator that loads
// it after a failover: an external coordinator decides when it ends.
// Without the key Enable2Pc is TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// KeepPreparedTxn (keep the ongoing transaction across a producer's
// restart) is UNSUPPORTED_VERSION, as Kafka 4.4's coordinator answers it:
// a re-initialization aborts an ongoing 2PC transaction like any other.
// The v6 wire format is the broker's (broker/22_init_producer_id.go).
package txn
