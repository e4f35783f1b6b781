// Package txn owns idempotent and transactional producers: the bookkeeping
// each partition keeps about the producers that write to it, and (to come)
// the transaction coordinator that runs transactions across partitions and
// persists them in __transaction_state.
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
// Not yet: the transaction coordinator (persisted in __transaction_state)
// comes next; WriteTxnMarkers (broker/27_write_txn_markers.go) is the seam
// it writes markers through.
package txn
