package config

// This file is the table of broker keys. Names, types, defaults, ranges and
// update modes follow Kafka 4.0; the doc strings are sluice's own. Keys marked
// "accepted; no effect in sluice" load and describe but change nothing.

func bk(name string, typ int8, def *string, mode UpdateMode, doc string, checks ...checker) keyDef {
	return keyDef{name: name, typ: typ, def: def, mode: mode, doc: doc, checks: checks}
}

const (
	ro = ReadOnly
	pb = PerBroker
	cw = ClusterWide
)

var brokerKeyList = []keyDef{
	// Identity and cluster membership.
	bk("node.id", TypeInt, v("1"), ro, "This node's id, unique in the cluster. sluice defaults it to 1 so a lone node needs no file.", atLeast(0)),
	bk("broker.id", TypeInt, v("-1"), ro, "Legacy name for node.id; if set it must equal node.id."),
	bk("process.roles", TypeList, v("broker,controller"), ro, "Roles of this node. Every sluice node is a broker and a raft member, so this is accepted for compatibility.", eachOf("broker", "controller")),
	bk("controller.quorum.voters", TypeList, v(""), ro, "Raft voters as id@host:port. Empty: the first nodes to form the cluster become voters."),
	bk("controller.quorum.bootstrap.servers", TypeList, v(""), ro, "Accepted; no effect in sluice (nodes find each other through gossip.join)."),
	bk("controller.listener.names", TypeList, nil, ro, "Names of the listeners that carry the raft metadata quorum (controller.quorum.voters), not Kafka clients. Empty: CONTROLLER."),
	bk("gossip.listener", TypeString, v(""), ro, "sluice: host:port serf binds to for membership gossip. Empty: chosen by the controller package."),
	bk("gossip.join", TypeList, v(""), ro, "sluice: serf addresses (host:port) of existing members to join at start. Empty: start a new cluster."),
	bk("broker.rack", TypeString, nil, ro, "Rack of this broker, used for rack-aware replica placement."),
	bk("broker.heartbeat.interval.ms", TypeInt, v("500"), ro, "How often this broker heartbeats to the active controller (Kafka: 2000). sluice's default is 500 so a session of 3000 survives several lost heartbeats.", atLeast(1)),
	bk("broker.session.timeout.ms", TypeInt, v("3000"), ro, "How long the active controller waits without a heartbeat before fencing a broker, and how long a broker that cannot reach the controller keeps leading for acks=all (Kafka: 9000). A killed broker is fenced at once when its heartbeat connection closes; this timeout only bounds silence, such as a network cut or a stalled process.", atLeast(1)),
	bk("metadata.log.dir", TypeString, nil, ro, "Directory for the raft metadata log. Empty: the first log dir."),
	bk("controlled.shutdown.enable", TypeBoolean, v("true"), ro, "Move leadership away from this broker before it shuts down."),

	// Listeners and sockets.
	bk("listeners", TypeString, v("PLAINTEXT://127.0.0.1:9092"), pb, "Comma list of NAME://host:port to listen on. sluice binds loopback by default; an empty host binds all interfaces.", nonEmpty, validListeners),
	bk("advertised.listeners", TypeString, nil, pb, "Listeners published to clients in Metadata. Defaults to listeners.", validListeners),
	bk("listener.security.protocol.map", TypeString, v("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"), pb, "Maps each listener name to its security protocol.", validProtocolMap),
	bk("inter.broker.listener.name", TypeString, nil, ro, "Listener followers use to fetch from leaders. Empty: the first listener."),
	bk("security.inter.broker.protocol", TypeString, v("PLAINTEXT"), ro, "Accepted; sluice picks the inter-broker listener by name.", oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
	bk("num.network.threads", TypeInt, v("3"), cw, "Accepted; no effect in sluice (one goroutine per connection).", atLeast(1)),
	bk("num.io.threads", TypeInt, v("8"), cw, "Accepted; no effect in sluice.", atLeast(1)),
	bk("background.threads", TypeInt, v("10"), cw, "Accepted; no effect in sluice.", atLeast(1)),
	bk("socket.send.buffer.bytes", TypeInt, v("102400"), ro, "SO_SNDBUF for client sockets; -1 uses the OS default."),
	bk("socket.receive.buffer.bytes", TypeInt, v("102400"), ro, "SO_RCVBUF for client sockets; -1 uses the OS default."),
	bk("socket.request.max.bytes", TypeInt, v("104857600"), ro, "Largest request frame accepted; checked before the frame is read.", atLeast(1)),
	bk("socket.listen.backlog.size", TypeInt, v("50"), ro, "Accepted; no effect in sluice (Go uses the OS backlog).", atLeast(1)),
	bk("max.connections", TypeInt, v(maxInt32), cw, "Most connections this broker has open at once. At the limit a new connection is held on probation until its first request: a sluice peer (client id sluice-broker-… or sluice-replica-fetcher-…) is admitted and the least recently active client connection closed, as Kafka protects its inter-broker listener; a client is closed.", atLeast(0)),
	bk("max.connections.per.ip", TypeInt, v(maxInt32), cw, "Most connections open at once from one IP address; a new connection over it is closed at once. 0 is allowed only with max.connections.per.ip.overrides.", atLeast(0)),
	bk("max.connections.per.ip.overrides", TypeString, v(""), cw, "Per-IP or per-host overrides of max.connections.per.ip, as comma-separated host:count pairs (hostName:100,127.0.0.1:200).", validConnOverrides),
	bk("max.connection.creation.rate", TypeInt, v(maxInt32), cw, "Most new connections a second (KIP-612). Not supported yet: only the default is accepted until client quotas are built (issue 18).", atLeast(0), notYet(maxInt32, "connection creation rate limits come with client quotas")),
	bk("connections.max.idle.ms", TypeLong, v("600000"), ro, "Close a connection that sends nothing for this long after its last answer, and one whose request frame has not fully arrived this long after its first byte (a slow client). -1: never."),
	bk("queued.max.request.bytes", TypeLong, v("536870912"), ro, "Memory budget, shared by all connections, for requests being read and served: each is charged its frame and what decoding it may cost; a connection waits (is muted) while the budget is exhausted, and a request that could never fit is refused by closing its connection. Kafka's default is -1 (unbounded); sluice's is 512 MiB. Must be at least socket.request.max.bytes, or -1."),
	bk("queued.max.requests", TypeInt, v("500"), ro, "Accepted; no effect in sluice.", atLeast(1)),
	bk("request.timeout.ms", TypeInt, v("30000"), ro, "Timeout for requests this broker sends to other brokers.", atLeast(0)),
	bk("fetch.max.bytes", TypeInt, v("57671680"), ro, "Most bytes returned for one Fetch request.", atLeast(1024)),
	bk("max.incremental.fetch.session.cache.slots", TypeInt, v("1000"), ro, "Most incremental fetch sessions (KIP-227) kept.", atLeast(0)),

	// Topics and replication.
	bk("auto.create.topics.enable", TypeBoolean, v("true"), ro, "Create a topic when a client asks for its metadata and it does not exist (a Metadata request that allows auto-creation); that request is answered UNKNOWN_TOPIC_OR_PARTITION and the topic shows on the next."),
	bk("delete.topic.enable", TypeBoolean, v("true"), ro, "Allow DeleteTopics."),
	bk("num.partitions", TypeInt, v("1"), ro, "Partitions of an auto-created topic or a CreateTopics request that asks for the default.", atLeast(1)),
	bk("default.replication.factor", TypeInt, v("1"), ro, "Replication factor of an auto-created topic or a CreateTopics request that asks for the default.", between(1, 32767)),
	bk("max.broker.partitions", TypeInt, v(maxInt32), ro, "sluice (KIP-578's name, not a Kafka key): most partition replicas the active controller places on one broker; CreateTopics and CreatePartitions beyond it get POLICY_VIOLATION. The open-file limit lowers it further: a quarter of the limit (at least 64) is kept for connections and the node's own files, and each replica holds one.", atLeast(1)),
	bk("min.insync.replicas", TypeInt, v("1"), cw, "Fewest in-sync replicas an acks=all produce needs.", atLeast(1)),
	bk("unclean.leader.election.enable", TypeBoolean, v("false"), cw, "Elect an out-of-sync replica when no in-sync one is alive, losing data."),
	bk("unclean.leader.election.interval.ms", TypeLong, v("300000"), ro, "How often the controller looks for partitions needing an unclean election.", atLeast(1)),
	bk("replica.lag.time.max.ms", TypeLong, v("30000"), ro, "A follower that has not caught up for this long leaves the ISR.", atLeast(1)),
	bk("replica.fetch.max.bytes", TypeInt, v("1048576"), ro, "Bytes a follower asks for per partition.", atLeast(0)),
	bk("replica.fetch.min.bytes", TypeInt, v("1"), ro, "Bytes a follower fetch waits for.", atLeast(0)),
	bk("replica.fetch.wait.max.ms", TypeInt, v("500"), ro, "Longest a follower fetch waits on the leader.", atLeast(0)),
	bk("replica.fetch.backoff.ms", TypeInt, v("100"), ro, "Pause after a follower fetch error. sluice's default is 100 ms (Kafka's 1000): a follower that fetched from a leader that has just lost or gained leadership is back in the ISR sooner, which acks=all waits for.", atLeast(0)),
	bk("replica.fetch.response.max.bytes", TypeInt, v("10485760"), ro, "Bytes a follower asks for in one fetch.", atLeast(0)),
	bk("replica.socket.timeout.ms", TypeInt, v("30000"), ro, "Socket timeout of follower fetches."),
	bk("replica.high.watermark.checkpoint.interval.ms", TypeLong, v("5000"), ro, "How often high watermarks are checkpointed to disk.", atLeast(1)),
	bk("num.replica.fetchers", TypeInt, v("1"), cw, "Fetcher goroutines per source broker. Not supported yet: sluice runs one fetcher per source broker, so only the default 1 is accepted.", atLeast(1), notYet("1", "one fetcher per source broker")),
	bk("leader.replication.throttled.rate", TypeLong, v(maxInt64), cw, "Bytes per second this broker sends, as leader, to followers of the replicas named in leader.replication.throttled.replicas (kafka-reassign-partitions.sh --throttle).", atLeast(0)),
	bk("follower.replication.throttled.rate", TypeLong, v(maxInt64), cw, "Bytes per second this broker fetches, as follower, for the replicas named in follower.replication.throttled.replicas (kafka-reassign-partitions.sh --throttle).", atLeast(0)),
	bk("auto.leader.rebalance.enable", TypeBoolean, v("true"), ro, "Move leadership back to preferred replicas when imbalance passes leader.imbalance.per.broker.percentage."),
	bk("leader.imbalance.check.interval.seconds", TypeLong, v("300"), ro, "How often the controller checks leader balance.", atLeast(1)),
	bk("leader.imbalance.per.broker.percentage", TypeInt, v("10"), ro, "Share of a broker's partitions not led by their preferred replica that triggers a rebalance.", between(0, 100)),

	// Log storage: these are the broker synonyms of topic configs.
	bk("log.dirs", TypeString, nil, ro, "Comma list (or TOML array) of data directories. Defaults to log.dir."),
	bk("log.dir", TypeString, v("./sluice-data"), ro, "Data directory used when log.dirs is not set."),
	bk("log.segment.bytes", TypeInt, v("1073741824"), cw, "Largest segment file before a new one is rolled.", atLeast(MinSegmentBytes)),
	bk("log.roll.ms", TypeLong, nil, cw, "Roll a new segment after this long. Defaults to log.roll.hours.", atLeast(1)),
	bk("log.roll.hours", TypeInt, v("168"), ro, "Roll a new segment after this many hours, if log.roll.ms is not set.", atLeast(1)),
	bk("log.roll.jitter.ms", TypeLong, nil, cw, "Most random time subtracted from the roll time. Defaults to log.roll.jitter.hours.", atLeast(0)),
	bk("log.roll.jitter.hours", TypeInt, v("0"), ro, "Jitter in hours, if log.roll.jitter.ms is not set.", atLeast(0)),
	bk("log.retention.ms", TypeLong, nil, cw, "Delete segments older than this; -1 keeps them forever. Wins over minutes and hours."),
	bk("log.retention.minutes", TypeInt, nil, ro, "Retention in minutes, if log.retention.ms is not set."),
	bk("log.retention.hours", TypeInt, v("168"), ro, "Retention in hours, if neither log.retention.ms nor log.retention.minutes is set."),
	bk("log.retention.bytes", TypeLong, v("-1"), cw, "Delete old segments while a partition is larger than this; -1 is unlimited."),
	bk("log.retention.check.interval.ms", TypeLong, v("300000"), ro, "How often retention is enforced.", atLeast(1)),
	bk("log.cleanup.policy", TypeList, v("delete"), cw, "delete, compact, or both.", eachOf("compact", "delete")),
	bk("log.index.size.max.bytes", TypeInt, v("10485760"), cw, "Size of a segment's offset index.", atLeast(4)),
	bk("log.index.interval.bytes", TypeInt, v("4096"), cw, "Bytes of records between offset index entries.", atLeast(0)),
	bk("log.flush.interval.messages", TypeLong, v(maxInt64), cw, "fsync after this many records.", atLeast(1)),
	bk("log.flush.interval.ms", TypeLong, nil, cw, "fsync after records have waited this long. Defaults to log.flush.scheduler.interval.ms."),
	bk("log.flush.scheduler.interval.ms", TypeLong, v(maxInt64), ro, "How often logs are checked for a needed flush."),
	bk("log.flush.offset.checkpoint.interval.ms", TypeInt, v("60000"), ro, "How often the recovery point checkpoint is written.", atLeast(0)),
	bk("log.flush.start.offset.checkpoint.interval.ms", TypeInt, v("60000"), ro, "How often the log start offset checkpoint is written.", atLeast(0)),
	bk("log.segment.delete.delay.ms", TypeLong, v("60000"), cw, "Wait before deleting a segment's files.", atLeast(0)),
	bk("log.preallocate", TypeBoolean, v("false"), cw, "Preallocate segment files."),
	bk("log.message.timestamp.type", TypeString, v("CreateTime"), cw, "CreateTime keeps the producer's timestamp; LogAppendTime replaces it.", oneOf("CreateTime", "LogAppendTime")),
	bk("log.message.timestamp.before.max.ms", TypeLong, v(maxInt64), cw, "Reject a batch whose timestamp is further than this in the past.", atLeast(0)),
	bk("log.message.timestamp.after.max.ms", TypeLong, v("3600000"), cw, "Reject a batch whose timestamp is further than this in the future (Kafka 4 default: one hour).", atLeast(0)),
	bk("log.message.downconversion.enable", TypeBoolean, v("true"), cw, "Accepted; no effect in sluice (never down-converts)."),
	bk("message.max.bytes", TypeInt, v("1048588"), cw, "Largest record batch accepted.", atLeast(0)),
	bk("compression.type", TypeString, v("producer"), cw, "Compression of stored batches; producer keeps the producer's.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	bk("compression.gzip.level", TypeInt, v("-1"), cw, "gzip level when recompressing.", gzipLevel),
	bk("compression.lz4.level", TypeInt, v("9"), cw, "lz4 level when recompressing.", between(1, 17)),
	bk("compression.zstd.level", TypeInt, v("3"), cw, "zstd level when recompressing.", between(-131072, 22)),
	bk("num.recovery.threads.per.data.dir", TypeInt, v("2"), cw, "Goroutines per log dir recovering logs at start.", atLeast(1)),
	bk("log.cleaner.enable", TypeBoolean, v("true"), ro, "Run the log cleaner for compacted topics."),
	bk("log.cleaner.threads", TypeInt, v("1"), cw, "Cleaner goroutines.", atLeast(0)),
	bk("log.cleaner.backoff.ms", TypeLong, v("15000"), cw, "Sleep when no log needs cleaning.", atLeast(0)),
	bk("log.cleaner.dedupe.buffer.size", TypeLong, v("134217728"), cw, "Memory for the cleaner's key map across all threads."),
	bk("log.cleaner.io.buffer.size", TypeInt, v("524288"), cw, "Cleaner I/O buffer memory across all threads.", atLeast(0)),
	bk("log.cleaner.io.buffer.load.factor", TypeDouble, v("0.9"), cw, "Fill factor of the cleaner's key map."),
	bk("log.cleaner.io.max.bytes.per.second", TypeDouble, v(maxFloat), cw, "Throttle on cleaner I/O."),
	bk("log.cleaner.delete.retention.ms", TypeLong, v("86400000"), cw, "Keep tombstones this long in compacted topics.", atLeast(0)),
	bk("log.cleaner.min.compaction.lag.ms", TypeLong, v("0"), cw, "Records younger than this are not compacted.", atLeast(0)),
	bk("log.cleaner.max.compaction.lag.ms", TypeLong, v(maxInt64), cw, "Records older than this are compacted even below the dirty ratio.", atLeast(1)),
	bk("log.cleaner.min.cleanable.ratio", TypeDouble, v("0.5"), cw, "Dirty share of a log that triggers cleaning.", between(0, 1)),

	// Groups and committed offsets.
	bk("offsets.topic.num.partitions", TypeInt, v("50"), ro, "Partitions of __consumer_offsets; do not change after it exists.", atLeast(1)),
	bk("offsets.topic.replication.factor", TypeShort, v("3"), ro, "Replication factor of __consumer_offsets, capped by the live brokers when it is created (Kafka fails instead).", atLeast(1)),
	bk("offsets.topic.segment.bytes", TypeInt, v("104857600"), ro, "Segment size of __consumer_offsets.", atLeast(1)),
	bk("offsets.topic.compression.codec", TypeInt, v("0"), ro, "Compression codec id of offset commits written to __consumer_offsets."),
	bk("offsets.retention.minutes", TypeInt, v("10080"), ro, "Keep committed offsets of an empty group this long.", atLeast(1)),
	bk("offsets.retention.check.interval.ms", TypeLong, v("600000"), ro, "How often stale offsets are expired.", atLeast(1)),
	bk("offsets.commit.timeout.ms", TypeInt, v("5000"), ro, "Longest an offset commit waits for replication.", atLeast(1)),
	bk("offsets.load.buffer.size", TypeInt, v("5242880"), ro, "Read size when loading __consumer_offsets.", atLeast(1)),
	bk("offset.metadata.max.bytes", TypeInt, v("4096"), ro, "Longest metadata string kept with a committed offset."),
	bk("group.min.session.timeout.ms", TypeInt, v("6000"), ro, "Shortest session timeout a classic group member may ask for."),
	bk("group.max.session.timeout.ms", TypeInt, v("1800000"), ro, "Longest session timeout a classic group member may ask for."),
	bk("group.initial.rebalance.delay.ms", TypeInt, v("3000"), ro, "Wait for more members before the first rebalance of an empty classic group."),
	bk("group.max.size", TypeInt, v(maxInt32), ro, "Most members of a classic group.", atLeast(1)),
	bk("group.coordinator.rebalance.protocols", TypeList, v("classic,consumer"), ro, "Group protocols enabled.", eachOf("classic", "consumer", "share")),
	bk("group.coordinator.threads", TypeInt, v("1"), ro, "Accepted; no effect in sluice.", atLeast(1)),
	bk("group.coordinator.append.linger.ms", TypeInt, v("10"), ro, "Accepted; no effect in sluice.", atLeast(0)),
	bk("group.consumer.session.timeout.ms", TypeInt, v("45000"), ro, "Session timeout of consumer group (KIP-848) members.", atLeast(1)),
	bk("group.consumer.min.session.timeout.ms", TypeInt, v("45000"), ro, "Shortest consumer group session timeout.", atLeast(1)),
	bk("group.consumer.max.session.timeout.ms", TypeInt, v("60000"), ro, "Longest consumer group session timeout.", atLeast(1)),
	bk("group.consumer.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Heartbeat interval given to consumer group members.", atLeast(1)),
	bk("group.consumer.min.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Shortest consumer group heartbeat interval.", atLeast(1)),
	bk("group.consumer.max.heartbeat.interval.ms", TypeInt, v("15000"), ro, "Longest consumer group heartbeat interval.", atLeast(1)),
	bk("group.consumer.max.size", TypeInt, v(maxInt32), ro, "Most members of a consumer group.", atLeast(1)),
	bk("group.consumer.assignors", TypeList, v("range,uniform"), ro, "Server-side assignors by name (range, uniform), the first is the default. Kafka lists the class names of the same two with uniform first; sluice defaults to range.", nonEmpty, eachOf("range", "uniform")),
	bk("group.consumer.migration.policy", TypeString, v("bidirectional"), ro, "Conversion between classic and consumer groups.", oneOf("disabled", "downgrade", "upgrade", "bidirectional")),

	// Transactions and producer ids.
	bk("transaction.state.log.num.partitions", TypeInt, v("50"), ro, "Partitions of __transaction_state; do not change after it exists.", atLeast(1)),
	bk("transaction.state.log.replication.factor", TypeShort, v("3"), ro, "Replication factor of __transaction_state, capped by the live brokers when it is created (Kafka fails instead).", atLeast(1)),
	bk("transaction.state.log.min.isr", TypeInt, v("2"), ro, "min.insync.replicas of __transaction_state, capped by its replication factor.", atLeast(1)),
	bk("transaction.state.log.segment.bytes", TypeInt, v("104857600"), ro, "Segment size of __transaction_state.", atLeast(1)),
	bk("transaction.state.log.load.buffer.size", TypeInt, v("5242880"), ro, "Read size when loading __transaction_state.", atLeast(1)),
	bk("transaction.max.timeout.ms", TypeInt, v("900000"), ro, "Longest transaction timeout a producer may ask for.", atLeast(1)),
	bk("transactional.id.expiration.ms", TypeInt, v("604800000"), ro, "Forget a transactional id unused for this long.", atLeast(1)),
	bk("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, v("1000"), ro, "How often timed-out transactions are aborted (sluice default 1000; Kafka 10000).", atLeast(1)),
	bk("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, v("3600000"), ro, "How often expired transactional ids are removed.", atLeast(1)),
	bk("transaction.partition.verification.enable", TypeBoolean, v("true"), cw, "Check that a transactional produce's partition was added to the transaction (KIP-890)."),
	bk("producer.id.expiration.ms", TypeInt, v("86400000"), cw, "Forget an idle producer id's state after this long.", atLeast(1)),
	bk("producer.id.expiration.check.interval.ms", TypeInt, v("600000"), ro, "How often idle producer ids are expired.", atLeast(1)),
}

// gzipLevel accepts -1 (default) or 1..9.
func gzipLevel(s string) string {
	if s == "-1" {
		return ""
	}
	return between(1, 9)(s)
}
