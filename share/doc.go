// Package share is the partition-leader side of share groups (KIP-932,
// Kafka 4.4's semantics): per (share group, topic partition) the
// share-partition state that ShareFetch (78) and ShareAcknowledge (79)
// work on, the share sessions those requests form, and the persister that
// keeps the state for the partition's next leader.
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
//     share-group state), and MemoryPersister.
//
// The group side (ShareGroupHeartbeat / ShareGroupDescribe, membership and
// assignment) is groups/share*.go; the request handlers are
// broker/78_share_fetch.go and broker/79_share_acknowledge.go, which read
// the log, decide what a fetch may read (high watermark, or last stable
// offset under share.isolation.level=read_committed) and map this
// package's errors to Kafka's codes.
//
// # What survives a failure today
//
// The broker uses MemoryPersister: share-partition state lives in the
// leader's memory only. Nothing survives a leader failover or a restart:
// a new leader (or the restarted broker) finds no state and starts each
// share-partition afresh at share.auto.offset.reset (latest by default),
// so records that were in flight or not yet fetched when the old leader
// died are not delivered to the group (with latest), or are delivered
// again from the log start (with earliest). A leadership change on a live
// broker drops its share-partitions of that partition (the new leader
// epoch is seen at the next fetch); records that members held are
// neither acknowledged nor redelivered by the old leader. A broker that
// becomes the leader again reloads what its own MemoryPersister kept from
// its earlier leadership, which may be older than what the leader in
// between did: records are then delivered again. Within one
// leader's life, delivery is at least once as KIP-932 promises: a record
// is redelivered until it is acknowledged, rejected or has been delivered
// share.delivery.count.limit times.
//
// A member's acquired records are released when its share session closes
// (ShareFetch / ShareAcknowledge with epoch -1) or when the connection
// that opened the session closes, as Kafka's share session cache does on
// connection disconnect; a member that is fenced or leaves the group
// without closing its session keeps its locks until they expire.
//
// # The durable share coordinator (next step)
//
// Kafka keeps the state in the compacted internal topic
// __share_group_state (50 partitions by default,
// share.coordinator.state.topic.num.partitions, replication factor
// share.coordinator.state.topic.replication.factor), served by the share
// coordinator, the leader of the state partition the key
// "group:topicId:partition" hashes to (FindCoordinator key type 2). The
// design sluice will follow:
//
//   - A ShareCoordinator in this package (coordinator.go), one per state
//     partition this broker leads, rebuilt from the partition's records on
//     becoming its leader, as groups/ rebuilds from __consumer_offsets.
//     Records are Kafka's: ShareSnapshot (key type 0: group, topic id,
//     partition; value: snapshot epoch, state epoch, leader epoch, start
//     offset, state batches) and ShareUpdate (key type 1: the batches that
//     changed since the snapshot), a new snapshot every
//     share.coordinator.snapshot.update.records.per.snapshot updates
//     (default 500), so a load reads at most one snapshot and its updates
//     per key.
//   - The broker handlers of InitializeShareGroupState (83),
//     ReadShareGroupState (84), WriteShareGroupState (85),
//     DeleteShareGroupState (86) and ReadShareGroupStateSummary (87),
//     cluster-action only, on the control or client listener as Kafka.
//   - A network persister implementing Persister: FindCoordinator for the
//     key, then the RPC; writes carry the leader epoch and state epoch so
//     the coordinator fences a stale leader (FENCED_LEADER_EPOCH) and a
//     reset group (FENCED_STATE_EPOCH); NOT_COORDINATOR and
//     COORDINATOR_LOAD_IN_PROGRESS are retried after a new lookup.
//   - Write-before-apply: a share-partition must change its state only
//     after the write succeeded (Kafka's startStateTransition /
//     completeStateTransition with rollback), so an acknowledgement a
//     client saw succeed is never lost. Acquisitions are persisted too, so
//     delivery counts survive (Kafka persists them lazily and may count one
//     delivery short after a failover; at-least-once either way).
//   - The group coordinator initializes state (InitializeShareGroupState
//     with start offset -1) when it first assigns a partition, deletes it
//     on DeleteGroups / DeleteShareGroupOffsets and sets it on
//     AlterShareGroupOffsets, bumping the state epoch.
//
// sluice differs from Kafka, today, in: persistence (above); writes are
// made after every change, not batched; an acknowledgement batch list
// must be in offset order without overlaps (INVALID_REQUEST otherwise);
// and loaded share-partitions are not evicted: a broker holds one per
// (group, partition) it has served since it became the partition's
// leader, each at most 2 × share.partition.max.record.locks offsets
// (Kafka bounds the groups, group.share.max.groups, at the coordinator).
//
// # Tests
//
// partition_test.go and session_test.go step the state machines with a
// fixed clock; broker/share_*_test.go drive ShareFetch and
// ShareAcknowledge on real nodes with raw requests, franz-go's share
// consumer (kgo.ShareGroup) with two members, a leader failover on three
// nodes, read_committed, authorization and RENEW.
package share
