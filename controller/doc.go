// Package controller owns sluice's cluster metadata: the brokers, topics,
// partitions (replicas, ISR, leader and epochs) and dynamic configs that
// every node must agree on.
//
// # Metadata log
//
// The metadata is the state machine of a hashicorp/raft log, kept on every
// node as KRaft keeps __cluster_metadata. The raft leader is the active
// controller: it alone decides, and every decision is a command in the log,
// so every node applying the log builds the same Image. A single broker is
// a cluster of one voter, with the same code path.
//
// A log entry is one command:
//
//	+-----------+-----------------------------+
//	| type byte | command payload as JSON     |
//	+-----------+-----------------------------+
//
// Command type numbers (commands.go) are frozen and only appended to. The
// FSM (fsm.go) dispatches through a table with one applyX function per type
// (apply.go) and panics on an unknown type or an undecodable payload, since
// skipping an entry would silently make this node's image diverge. Commands
// are fully decided: the active controller draws topic ids and random
// placement before writing, and the FSM uses nothing but the image and the
// payload, so replay is deterministic. An applyX may still reject a command
// (returning a Kafka error and changing nothing) to protect the image from
// a decision made against a stale view.
//
// Snapshots hold the whole image as one JSON document (image.go); on
// restart raft restores the newest snapshot and replays the log after it.
//
// # Images
//
// Applying a command publishes a new immutable *Image, built
// copy-on-write from the previous one, and calls Config.OnApply with it in
// log order. Readers take Controller.Image() without locks.
//
// # Admin operations
//
// CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs and
// ElectLeaders (elect_leaders.go) validate against the current image under
// the controller's decision lock, then write one command and return after it has been applied. They follow
// Kafka's rules and error codes (kerr, wrapped with %w so errors.As finds
// the code and the rest of the text is the error message). On a node that
// is not the active controller they, like AlterPartition, ControlledShutdown
// and AllocateProducerIDs, return NOT_CONTROLLER and change nothing: the
// broker forwards the request to the broker whose id ActiveControllerID
// reports (KIP-590 style) or hands NOT_CONTROLLER to the client, which
// refreshes metadata and retries. ActiveControllerID is the raft leader's
// id on every node, voter or not, since raft server ids are node ids.
//
// # Cluster
//
// With Config.Voters empty the node is a cluster of one: raft runs on an
// in-memory transport, no serf runs, no port is opened, and the node elects
// itself at once. With voters (controller.quorum.voters) every node runs:
//
//   - raft over TCP. Voters bootstrap the same configuration on first start
//     (hashicorp/raft accepts identical bootstraps on every voter); any
//     other node is a raft non-voter, added by the active controller when
//     serf reports it, so every node applies the same log and holds the
//     same Image, like brokers replicating __cluster_metadata in KRaft.
//   - serf (gossip.go) for membership and discovery, tuned so a killed
//     node is declared failed in about 200-400 ms on a LAN. Each node
//     gossips tags: node id, Kafka host and port, rack, raft address,
//     role (voter or broker) and its process incarnation. serf's verdicts
//     are hints; who is alive is decided by broker sessions.
//   - broker heartbeats (heartbeat.go, session.go): every node heartbeats
//     to the active controller over a long-lived connection, and the
//     controller keeps a session per broker (broker.session.timeout.ms).
//   - the leadership loop (leader.go, reconcile.go), on the raft leader
//     only: establishLeadership (barrier, first InitCluster), then a
//     reconcile at once, on every serf event and every second, then
//     revokeLeadership when raft leadership is lost. serf's event handler
//     only pokes the loop; reconcile reads the whole member list.
//
// Reconcile registers heartbeating members from their tags (a new process
// of a broker re-registers, getting a new broker epoch; if the image still
// had the old process unfenced it is fenced first, since a restarted disk
// may have lost acknowledged data), unfences them, adds non-voters to raft,
// fences brokers whose session is over, and elects leaders of offline
// partitions that can have one. Open in a cluster returns once this
// process's own registration is applied locally and it is unfenced, which
// proves the node has caught up with the log.
//
// Leader election and ISR rules are pure functions (election.go) whose
// results are written as partition changes inside FenceBroker,
// UnfenceBroker and ChangePartitions commands; the FSM applies a command
// only if every change still matches the partition epoch it was decided
// against, so decisions made on a stale image change nothing. Partition
// leaders propose ISR changes with AlterPartition, checked as KRaft checks
// them, many per request (AlterPartitions): each proposal is decided on its
// own and the accepted ones are committed in one command; a stopping broker calls ControlledShutdown to hand its leaderships
// to other in-sync replicas before Close. A broker whose log directory
// failed reports it in its heartbeats, and a ReplicasOffline command takes
// the replicas in it out of their ISRs and leaderships and keeps elections
// from picking them until the broker registers again (log_dirs.go).
//
// # Reassignment
//
// AlterPartitionReassignments (reassign.go) writes a ReassignPartitions
// command that widens a partition's replicas to target ∪ current and
// records AddingReplicas and RemovingReplicas in the image, so a move
// survives a controller failover. The move completes in the command that
// puts the last target replica in the ISR (an AlterPartition), or in the
// leadership loop's reconcile, which completes any move whose target is
// in sync; reassign.go lists its choices.
//
// # Client quotas
//
// AlterClientQuotas (client_quotas.go) validates a batch of quota
// alterations as Kafka's ClientQuotaControlManager does and writes the
// changes of its valid entities as one AlterClientQuotas command (Kafka's
// ClientQuotaRecords); the image keeps them as a quotas.ClientConfig built
// once per change, which brokers read on every request, and snapshots
// hold them as records.
//
// # Feature levels
//
// The finalized feature levels (KIP-584: metadata.version,
// transaction.version, group.version, eligible.leader.replicas.version,
// ...) are UpdateFeatures commands applied to Image.Features
// (features.go). The first active controller writes this binary's
// defaults right after InitCluster, before any broker registers, and so
// does the first controller of a log written before feature levels.
// UpdateFeatures validates as Kafka's FeatureControlManager, all updates
// or none; the levels this binary supports are one table there.
//
// # Choices where Kafka left room
//
//   - Placement is Kafka's classic rack-unaware / rack-aware assignment
//     (placement.go), not KRaft's striped placer; with racks on only some
//     brokers it places rack-unaware instead of failing.
//   - A broker re-registers only when its endpoint or rack changed, so
//     restarts do not grow the log; its epoch is the index of its latest
//     registration.
//   - One CreateTopics or CreatePartitions may create at most 10,000
//     partitions (KRaft's MAX_PARTITIONS_PER_BATCH, which Kafka applies to
//     CreateTopics only), and no broker is given more partition replicas
//     than Config.BrokerPartitions (KIP-578's max.broker.partitions;
//     the open-file limit no longer bounds it); partition_limits.go.
//   - __cluster_metadata cannot be created: its partition directory is
//     where the raft log lives.
//   - Eligible leader replicas (KIP-966, elr.go) follow Kafka 4.4's
//     PartitionChangeBuilder while eligible.leader.replicas.version is at
//     least 1. A broker's unclean shutdown is told by the log dir's
//     clean-shutdown marker, gossiped as a serf tag, not by a broker
//     epoch written into it.
//   - Unclean election is resolved as topic config, then the active
//     controller's dynamic broker config, then the cluster default, then
//     Config.UncleanLeaderElection; a partition elected uncleanly gets an
//     ISR of just its new leader. Setting the config elects offline
//     partitions at once (KRaft waits for its periodic check).
//   - A broker in controlled shutdown is fenced with ShutDown set and stays
//     fenced while the same process gossips; KRaft keeps it "in controlled
//     shutdown" unfenced until its session ends, which sluice has no need
//     to distinguish.
//   - Automatic leader rebalance (leader_balance.go) applies the ZooKeeper
//     controller's per-broker rule, leader.imbalance.per.broker.percentage
//     included, which KRaft ignores; it runs in the leadership loop every
//     leader.imbalance.check.interval.seconds. ElectLeaders follows KRaft:
//     asked for every partition, it leaves those needing no election out
//     of the answer; a topic name no topic can have is
//     INVALID_TOPIC_EXCEPTION rather than UNKNOWN_TOPIC_OR_PARTITION.
//   - Failure detection is KRaft's broker heartbeats (session.go), with
//     one addition: the heartbeat connection's closing is a signal too.
//     A broker is fenced when no heartbeat came for
//     broker.session.timeout.ms (3 s by default, not Kafka's 9 s), or when
//     its heartbeat connection closed and no heartbeat came on another
//     within 300 ms (at once if serf also reports it failed), so a killed
//     process fails over in well under a second and a gossip-only cut
//     fences nobody. Heartbeats travel as BrokerHeartbeat requests to the
//     active controller's Kafka listener, not a separate controller
//     listener: sluice's CONTROLLER listener carries raft only.
package controller
