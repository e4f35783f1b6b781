// Package groups is sluice's group coordinator: classic consumer groups
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, static membership), KIP-848
// consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe, with the
// server-side range and uniform assignors), KIP-932 share groups'
// membership (ShareGroupHeartbeat, ShareGroupDescribe, the simple
// assignor), KIP-1071 streams groups (StreamsGroupHeartbeat,
// StreamsGroupDescribe, the sticky task assignor) and committed offsets,
// persisted in __consumer_offsets as Kafka persists them.
//
// # Placement
//
// A group lives in partition PartitionFor(group, n) of __consumer_offsets
// and its coordinator is that partition's leader. The broker tells the
// Coordinator which partitions it leads (SetLeadership, after every metadata
// change); a newly led partition is replayed from its log (LoadPending) and
// its groups answer COORDINATOR_LOAD_IN_PROGRESS until then; a partition no
// longer led is dropped and its groups answer NOT_COORDINATOR. On a single
// node that happens at start-up and when the topic is created.
//
// # Records
//
// Offsets are OffsetCommitKey (v1) / OffsetCommitValue (v3) records and
// group metadata GroupMetadataKey (v2) / GroupMetadataValue (v3) records, in
// uncompressed magic v2 batches (records.go). A nil value is a tombstone.
// Every write goes through Log.Append, which returns once the record is
// committed (acks=-1); memory changes only after a successful append, except
// that a SyncGroup leader's assignment is held in memory while it is being
// persisted and handed out only afterwards.
//
// # State machine
//
//	Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
//	  ▲                 ▲       │ no members                          │ leader's SyncGroup persisted
//	  │                 │       ▼                                     ▼
//	  └──── last leaves / expires ◀──────────────── rebalance ◀──── Stable
//	Dead: deleted (DeleteGroups) or its partition unloaded.
//
// Kafka's classic rules apply: KIP-394 member ids (MEMBER_ID_REQUIRED),
// KIP-345 static members (a restart with the same group.instance.id keeps a
// settled group as it is, the old member id is FENCED_INSTANCE_ID),
// group.initial.rebalance.delay.ms for a new group, group.max.size, session
// and rebalance timeouts, and the choice of protocol by the members' votes.
//
// The Coordinator starts no goroutines and reads time only from Config.Now:
// the broker calls Tick periodically to expire sessions and end join and
// sync phases, and tests step a fake clock. A request steps its own
// group's timers first, so a deadline is in force the moment it passes, as
// with Kafka's timers, not only at the next Tick. An OffsetCommit from a
// classic member renews its session in Stable and PreparingRebalance, as
// Kafka's OffsetMetadataManager.commitOffset does; TxnOffsetCommit and the
// commits of KIP-848 members do not. JoinGroup and SyncGroup block
// their caller on a channel until the phase completes or ctx ends.
//
// Lock order: Coordinator.mu, then group.writeMu, then group.mu, then
// Coordinator.markerMu (transaction markers, a leaf). group.mu is
// never held while calling Log; group.writeMu is, so that one group's
// records reach the log in the order of its state changes.
//
// Offsets of groups without members expire after offsets.retention.minutes
// (ExpireOffsets, KIP-211).
//
// # Transactional offset commits
//
// TxnOffsetCommit (CommitTxnOffsets, txn_offsets.go) writes a
// transaction's offsets in a transactional batch of its producer and holds
// them pending per producer id; the transaction's marker on the same
// partition (CompleteTxn, called by the broker's WriteTxnMarkers, and
// replay in log order) commits or drops them. OffsetFetch with
// RequireStable answers UNSTABLE_OFFSET_COMMIT for a partition with
// pending offsets.
//
// # Consumer groups (KIP-848)
//
// consumer.go holds the heartbeat state machine (member and group epochs,
// joins, leaves, static members, fencing), consumer_reconcile.go the
// target assignment and the per-member reconciliation that hands a
// partition to its new owner only after the old owner released it,
// assign_range.go and assign_uniform.go the assignors, consumer_records.go
// and consumer_load.go the records (key versions 3–8) and their replay,
// consumer_admin.go the describe views and the member epoch checks of
// offset commits (STALE_MEMBER_EPOCH; KIP-1251's older-epoch commits) and
// fetches. A group is either classic or consumer: a classic JoinGroup on a
// consumer group with members is INCONSISTENT_GROUP_PROTOCOL and a
// ConsumerGroupHeartbeat on a classic group with members GROUP_ID_NOT_FOUND;
// an empty group converts (no online migration). Regular expression
// subscriptions and topic changes are resolved against the broker's topic
// list (Config.ListTopics, TopicsChanged, RefreshConsumerGroups).
//
// # Share groups (KIP-932)
//
// share.go holds the ShareGroupHeartbeat state machine (Kafka 4.4's: member
// ids chosen by the client, epochs, leave with -1, session expiry,
// group.share.max.size; the target assignment computed at most once per
// share.assignment.interval.ms, KIP-1263's batching), share_assign.go the
// simple assignor (a partition may go to several members), share_init.go
// the share-partition state initialization that makes partitions
// assignable (ShareStateInitializer,
// implemented by the share-partition side), share_records.go and
// share_load.go the records (key versions 10–15) and their replay,
// share_admin.go ShareGroupDescribe. A share group shares the group id
// space with the others: a share heartbeat for a classic or consumer group
// is GROUP_ID_NOT_FOUND, and so is a consumer heartbeat, an offset commit
// or a DescribeGroups (answered Dead) for a share group; a JoinGroup is
// INCONSISTENT_GROUP_PROTOCOL. ListGroups lists it with type "share".
// Share groups never expire; DeleteGroups deletes an empty one (its
// share-partition state is not deleted yet).
//
// # Streams groups (KIP-1071)
//
// streams.go holds the StreamsGroupHeartbeat state machine (member and
// group epochs, topology epochs, joins, leaves, static members, fencing,
// session and revocation timeouts, SHUTDOWN_APPLICATION),
// streams_topology.go the topology and its configuration against the
// topics (task counts, repartition and changelog partition counts, the
// internal topics the broker must create, the statuses), streams_assign.go
// the sticky task assignor (active and standby tasks),
// streams_reconcile.go the target assignment and the per-member
// reconciliation that hands an active task to its new owner only after
// the old owner released it, streams_admin.go StreamsGroupDescribe, the
// topology description and the member epoch checks of offset commits and
// fetches. A streams group shares the group id space with the others;
// ListGroups lists it with type "streams", DescribeGroups answers Dead.
// streams_records.go and streams_load.go hold its records (key versions
// 17–23) and their replay.
//
// Not yet: classic members in consumer
// groups (online migration), rack-aware assignment, expiry of unsubscribed topics' offsets in active groups
// (KIP-496's automatic half), removal of offsets of deleted topics.
package groups
