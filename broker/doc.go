// Package broker is one sluice node: it owns the Kafka listener and its
// connections (through protocol.Server), the request handlers — one file per
// Kafka API, named by api key (00_produce.go, 01_fetch.go, …) — and the
// replica manager: every partition replica this node holds, its log
// (logstore), leader epoch and high watermark.
//
// The broker never decides who leads a partition or which replicas are in
// sync. It reads those facts from the controller's metadata image and reacts
// to every change of it (reconcile.go): a partition assigned to this node gets
// a log, a deleted topic's logs go away, a topic config change reaches the log.
// Admin requests (CreateTopics, DeleteTopics, CreatePartitions, config
// changes) are handed to the controller, which commits them to the metadata
// log before the handler answers.
//
// A replica whose log fails to open (an I/O error, not a missing directory)
// is offline until the next start: logstore keeps its files as they are,
// reconcile creates no log in its place and no fetcher fills it, and it
// answers KAFKA_STORAGE_ERROR (hostedReplica in lookup.go) whether this
// node leads it or follows. Start-up deletes a log on disk only once it
// has opened cleanly and the caught-up metadata does not assign it here
// (removeOrphans). The controller is not told of a single log that fails
// to open: that leader keeps its leadership (serving nothing) until it
// restarts or is fenced.
//
// A node may have several log directories (log.dirs, JBOD, KIP-858;
// log_dirs_set.go): new replicas go to the one with the fewest, a
// directory that fails at start or while running is offline alone and
// takes only its replicas offline, which the node reports in its
// heartbeats so the controller moves their leaderships and ISRs
// (log_dirs_fail.go), and AlterReplicaLogDirs moves a replica between
// directories while it serves (log_dirs_move.go).
//
// Errors reach clients as Kafka error codes; errorCode in errors.go is the one
// place where internal errors become codes.
//
// Replication is Kafka's (replica_*.go): followers pull from the leader with
// Fetch requests carrying their replica id, one fetcher per source broker;
// the leader tracks each follower's log end offset, keeps the high
// watermark at the minimum over the ISR, and proposes ISR changes to the
// controller with AlterPartition, batching every pending proposal into one
// request. Decisions of the controller are forwarded to the active
// controller's broker when this node is not it (forward.go), over the
// controller channel: a Kafka-protocol connection on the raft voters'
// controller listener, told apart from raft by its first byte
// (control_listener.go, controller/channel.go). Only that channel serves
// the inter-broker APIs (AlterPartition, AllocateProducerIds,
// BrokerHeartbeat, ControlledShutdown), as Kafka serves them only on its
// controller listener; on the client listener they are absent from
// ApiVersions and a request for one closes the connection. Work done per
// metadata command is proportional to what the command changed
// (reconcile.go), and a Fetch long poll waits on one channel however many
// partitions it names (fetch_wait.go), so a node holding 10,000 partitions
// spends its idle time on fetch rounds, not on bookkeeping.
//
// Lock order: Broker.reconcileMu before Broker.mu (the partition table)
// before partition.mu, then logstore's own locks, then a fetcher's mutex
// or the replica manager's alterMu (leaves). None is held while
// waiting on the network or the controller; a follower append holds
// partition.mu so a fetch answer that arrives after a leadership change
// cannot be appended.
package broker
