// Package share is the partition-leader side of share groups (KIP-932,
// Kafka 4.4's semantics): per (share group, topic partition) the
// share-partition state that ShareFetch (78) and ShareAcknowledge (79)
// work on, the share sessions those requests form, and the share
// coordinator that keeps the state in __share_group_state for the
// partition's next leader.
//
// What it owns:
//
//   - partition.go: one share-partition (Kafka's SharePartition): the
//     share-partition start offset (SPSO) and end, the in-flight offsets
//     with their states AVAILABLE / ACQUIRED / ACKNOWLEDGED / ARCHIVED,
//     acquisition locks of share.record.lock.duration.ms, delivery counts
//     against share.delivery.count.limit, acknowledgements ACCEPT /
//     RELEASE / REJECT / GAP and RENEW (KIP-1222), and the in-flight bound
//     share.partition.max.record.locks. A deterministic core: callers pass
//     the time, nothing starts a goroutine.
//   - manager.go: the share-partitions of the partitions this broker
//     leads, loaded from the persister on first use, started at the offset
//     share.auto.offset.reset names when nothing is persisted.
//   - session.go: the share session cache (ShareSessionEpoch,
//     group.share.max.share.sessions).
//   - persister.go: the Persister interface, with the operations of
//     Kafka's persister (Initialize / Read / Write / Delete / ReadSummary
//     share-group state), and MemoryPersister (tests and tools).
//   - coordinator.go, coordinator_load.go: the share coordinator, which
//     keeps the state in the internal topic __share_group_state, one
//     Coordinator per broker serving the state partitions it leads.
//   - records.go: the ShareSnapshot and ShareUpdate records of
//     __share_group_state, in Kafka's layouts.
//
// The group side (ShareGroupHeartbeat / ShareGroupDescribe, membership and
// assignment) is groups/share*.go; the request handlers are
// broker/78_share_fetch.go and broker/79_share_acknowledge.go, which read
// the log, decide what a fetch may read (high watermark, or last stable
// offset under share.isolation.level=read_committed) and map this
// package's errors to Kafka's codes.
//
// # The share coordinator and what survives a failure
//
// The state of a share-partition is kept, as in Kafka, in the internal
// topic __share_group_state (share.coordinator.state.topic.num.partitions
// partitions, 50, replication factor 3 capped by the live brokers,
// min.insync.replicas 2, cleanup.policy=delete), served by the share
// coordinator: the leader of the state partition the key
// "group:topicId:partition" hashes to (FindCoordinator key type 2). Each
// broker's Coordinator (coordinator.go) serves the state partitions it
// leads, rebuilt from their records when it becomes their leader
// (COORDINATOR_LOAD_IN_PROGRESS until then, NOT_COORDINATOR for a
// partition it does not lead). The records are Kafka's: ShareSnapshot
// (key type 0: the whole state) and ShareUpdate (key type 1: batches
// merged over it), a new snapshot every
// share.coordinator.snapshot.update.records.per.snapshot updates (500),
// so a load reads at most one snapshot and its updates per key. Writes
// carry the partition leader's epoch and the state epoch: a stale leader
// is fenced (FENCED_LEADER_EPOCH), as is a write of a state reset since
// (FENCED_STATE_EPOCH); a read by a new leader records its epoch first.
// The broker serves the coordinator with InitializeShareGroupState (83),
// ReadShareGroupState (84), WriteShareGroupState (85),
// DeleteShareGroupState (86) and ReadShareGroupStateSummary (87),
// cluster-action only, and its persister (broker/
// share_coordinator_persister.go) finds the coordinator of a key and
// sends it the request, retrying NOT_COORDINATOR and
// COORDINATOR_LOAD_IN_PROGRESS after a new lookup. The group coordinator
// initializes the state of a partition (start offset -1) before it
// assigns it to a share group's members.
//
// Write-before-apply (partition.go): a share-partition changes its state
// — an acquisition (and its delivery count), an acknowledgement, a
// release, an expired lock — only once the write of the new state
// succeeded; a write that failed, or whose outcome is unknown, undoes the
// change, fails the request, and has the share-partition read its state
// again. So what survives the death of the share coordinator, of the
// partition leader, or of both, is everything a client was told
// succeeded: an acknowledged record is never delivered again, and a
// record acquired but not acknowledged is delivered again (at least
// once, as KIP-932 promises), its delivery count kept, by the new
// leader, which finds the state the old one wrote. The locks of acquired
// records do not survive a leader change: their records become AVAILABLE
// at once. A record is redelivered until it is acknowledged, rejected or
// has been delivered share.delivery.count.limit times.
//
// The dead-letter queue (KIP-1191, share.version 2): while the group names
// an errors.deadletterqueue.topic.name (Settings.DeadLetters), a record a
// member rejects, or one released after share.delivery.count.limit
// deliveries, is ARCHIVING, as in Kafka: handed to the dead-letter queue
// once that state was persisted (broker/share_dlq.go writes it to the DLQ
// topic), and ARCHIVED when the write ended, whatever its outcome. A load
// hands the records it finds ARCHIVING to the dead-letter queue again, so
// a leader's death between the two writes costs a duplicate DLQ record at
// worst, never a lost one.
//
// A member's acquired records are released when its share session closes
// (ShareFetch / ShareAcknowledge with epoch -1) or when the connection
// that opened the session closes, as Kafka's share session cache does on
// connection disconnect; a member that is fenced or leaves the group
// without closing its session keeps its locks until they expire.
//
// sluice differs from Kafka, today, in: writes are made after every
// change, not batched, and each carries the whole in-flight window (Kafka
// writes the batches that changed, and persists acquisitions lazily); the
// coordinator serialises the writes of one state partition (as Kafka, it
// snapshots idle share-partitions and prunes __share_group_state below
// the oldest snapshot still needed, every 5 minutes); an
// acknowledgement batch list must be in offset order without overlaps
// (INVALID_REQUEST otherwise); and loaded share-partitions are not evicted: a broker
// holds one per (group, partition) it has served since it became the
// partition's leader, each at most 2 × share.partition.max.record.locks
// offsets (Kafka bounds the groups, group.share.max.groups, at the
// coordinator).
//
// # Tests
//
// partition_test.go and session_test.go step the state machines with a
// fixed clock; broker/share_*_test.go drive ShareFetch and
// ShareAcknowledge on real nodes with raw requests, franz-go's share
// consumer (kgo.ShareGroup) with two members, a leader failover on three
// nodes, read_committed, authorization and RENEW; records_test.go and
// persister_test.go the record formats and write-before-apply;
// broker/share_coordinator_test.go kills the share coordinator and the
// partition leader under franz-go's share consumer on three nodes.
package share
