package config

// This file is the table of the broker keys sluice acts on or has its own
// reason to list; kafka_keys.go holds the rest of Kafka 4.4's. Names, types,
// defaults, ranges and update modes follow Kafka 4.4 (config/keyset_test.go
// checks them against compat/testdata/kafka-4.4.0-configs.txt); the doc
// strings are sluice's own. A key marked .inert loads and describes but
// changes nothing, because its feature cannot apply in sluice; a key marked
// .later accepts only its default until the named issue builds its feature.

import (
	"fmt"
	"strconv"
)

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
	bk("process.roles", TypeList, v("broker,controller"), ro, "Roles of this node. Every sluice node is a broker and a raft member, so this is accepted for compatibility.", eachOf("broker", "controller")).inert("every sluice node is both a broker and a raft voter; there is no separate controller role"),
	bk("controller.quorum.voters", TypeList, v(""), ro, "Raft voters as id@host:port. Empty: the first nodes to form the cluster become voters."),
	bk("controller.quorum.bootstrap.servers", TypeList, v(""), ro, "KRaft controllers to contact at start.").inert("sluice nodes find each other through gossip.join (serf), not KRaft's bootstrap servers"),
	bk("controller.listener.names", TypeList, nil, ro, "Names of the listeners that carry the raft metadata quorum (controller.quorum.voters), not Kafka clients. Empty: CONTROLLER."),
	bk("gossip.listener", TypeString, v(""), ro, "sluice: host:port serf binds to for membership gossip. Empty: chosen by the controller package.").sluiceOnly("sluice's membership gossip (serf)"),
	bk("gossip.join", TypeList, v(""), ro, "sluice: serf addresses (host:port) of existing members to join at start. Empty: start a new cluster.").sluiceOnly("sluice's membership gossip (serf)"),
	bk("metrics.listener", TypeString, v(""), ro, "sluice: host:port of the HTTP listener serving Prometheus metrics (/metrics), /healthz and /readyz, e.g. 127.0.0.1:9404; port 0 picks a free one. Empty: off (no HTTP port is opened).", validMetricsListener).sluiceOnly("sluice's Prometheus metrics listener"),
	bk("console.enable", TypeBoolean, v("true"), ro, "sluice: serve the web console (cluster, topics, message browser, consumer groups, live charts) at / on metrics.listener, next to /metrics. false: the listener serves only /metrics, /healthz and /readyz. Nothing is served while metrics.listener is empty.").sluiceOnly("sluice's built-in web console"),
	bk("console.read.only", TypeBoolean, v("false"), ro, "sluice: the web console only shows: creating and deleting topics and resetting a group's offsets are refused (403) and their buttons hidden.").sluiceOnly("sluice's built-in web console"),
	bk("gossip.encryption.key", TypePassword, nil, ro, "sluice: base64 keys (16, 24 or 32 bytes; openssl rand -base64 32) that encrypt and authenticate membership gossip, comma separated: the first encrypts, any decrypts, for rotation by rolling restarts. Every node needs one of them; a node without is not admitted. Empty: gossip in plaintext.", validGossipKeys).sluiceOnly("sluice's membership gossip (serf)"),
	bk("broker.rack", TypeString, nil, ro, "Rack of this broker, used for rack-aware replica placement."),
	bk("broker.heartbeat.interval.ms", TypeInt, v("500"), ro, "How often this broker heartbeats to the active controller (Kafka: 2000). sluice's default is 500 so a session of 3000 survives several lost heartbeats.", atLeast(1)),
	bk("broker.session.timeout.ms", TypeInt, v("3000"), ro, "How long the active controller waits without a heartbeat before fencing a broker, and how long a broker that cannot reach the controller keeps leading for acks=all (Kafka: 9000). A killed broker is fenced at once when its heartbeat connection closes; this timeout only bounds silence, such as a network cut or a stalled process.", atLeast(1)),
	bk("initial.broker.registration.timeout.ms", TypeInt, v("60000"), ro, "How long a starting broker waits to join the cluster once its logs are loaded: the metadata quorum started and caught up, this broker registered and unfenced by the active controller. When it runs out the broker exits with an error naming this key. Loading the log dirs before it is not timed: a broker with many partitions on a slow disk takes as long as its logs take.", atLeast(1)),
	bk("metadata.log.dir", TypeString, nil, ro, "Directory for the raft metadata log. Empty: the first log dir.").later(0, "a raft log directory apart from the first log dir"),
	bk("controlled.shutdown.enable", TypeBoolean, v("true"), ro, "Move leadership away from this broker before it shuts down."),

	// Authorization: the settings Kafka's StandardAuthorizer reads (authorizer.class.name turns it on).
	bk("super.users", TypeString, nil, ro, "Principals allowed everything whatever the ACLs say, separated by semicolons (User:admin;User:ops); read when authorizer.class.name is set.", validSuperUsers).sluiceOnly("a setting of Kafka's StandardAuthorizer, which Kafka's DescribeConfigs does not list"),
	bk("allow.everyone.if.no.acl.found", TypeBoolean, v("false"), ro, "With authorizer.class.name set: allow an action on a resource no ACL applies to (false: deny it, as Kafka does by default).").sluiceOnly("a setting of Kafka's StandardAuthorizer, which Kafka's DescribeConfigs does not list"),

	// Listeners and sockets.
	bk("listeners", TypeList, v("PLAINTEXT://127.0.0.1:9092"), ro, "Comma list of NAME://host:port to listen on. sluice binds loopback by default; an empty host binds all interfaces.", nonEmpty, validListeners),
	bk("advertised.listeners", TypeList, nil, ro, "Listeners published to clients in Metadata. Defaults to listeners.", validListeners),
	bk("listener.security.protocol.map", TypeString, v("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"), ro, "Maps each listener name to its security protocol: PLAINTEXT, SSL (TLS, the ssl.* keys), SASL_PLAINTEXT (SASL, the sasl.* keys) or SASL_SSL (both). A listener's own settings are listener.name.<listener>.<key>.", validProtocolMap),
	bk("inter.broker.listener.name", TypeString, nil, ro, "Listener brokers connect to each other on: replica fetches, transaction markers and forwarded requests dial the peer's advertised endpoint of it, with its security protocol. Unset: the listener named by security.inter.broker.protocol, as in Kafka (when that key is unset too and no listener is named PLAINTEXT, sluice takes the first listener). Only one of the two keys may be set."),
	bk("security.inter.broker.protocol", TypeString, v("PLAINTEXT"), ro, "Security protocol between brokers, naming the inter-broker listener by its protocol (the listener of that name) when inter.broker.listener.name is unset.", oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
	bk("num.network.threads", TypeInt, v("3"), cw, "Threads receiving requests and sending responses.", atLeast(1)).inert("sluice serves each connection on its own goroutine; there is no network thread pool"),
	bk("num.io.threads", TypeInt, v("8"), cw, "Threads processing requests.", atLeast(1)).inert("sluice has no request handler thread pool; requests run on their connection's goroutine"),
	bk("background.threads", TypeInt, v("10"), cw, "Threads for background tasks.", atLeast(1)).inert("sluice runs background work on goroutines, not a thread pool"),
	bk("socket.send.buffer.bytes", TypeInt, v("102400"), ro, "SO_SNDBUF for client sockets; -1 uses the OS default.").later(0, "setting SO_SNDBUF on client sockets"),
	bk("socket.receive.buffer.bytes", TypeInt, v("102400"), ro, "SO_RCVBUF for client sockets; -1 uses the OS default.").later(0, "setting SO_RCVBUF on client sockets"),
	bk("socket.request.max.bytes", TypeInt, v("104857600"), ro, "Largest request frame accepted; checked before the frame is read.", atLeast(1)),
	bk("socket.listen.backlog.size", TypeInt, v("50"), ro, "Pending connections a listener queues.", atLeast(1)).inert("Go's net.Listen takes the operating system's backlog (somaxconn) and offers no per-listener setting"),
	bk("max.connections", TypeInt, v(maxInt32), cw, "Most connections this broker has open at once. At the limit a new connection is held on probation until its first request: a sluice peer (client id sluice-broker-… or sluice-replica-fetcher-…) is admitted and the least recently active client connection closed, as Kafka protects its inter-broker listener; a client is closed.", atLeast(0)),
	bk("max.connections.per.ip", TypeInt, v(maxInt32), cw, "Most connections open at once from one IP address; a new connection over it is closed at once. 0 is allowed only with max.connections.per.ip.overrides.", atLeast(0)),
	bk("max.connections.per.ip.overrides", TypeString, v(""), cw, "Per-IP or per-host overrides of max.connections.per.ip, as comma-separated host:count pairs (hostName:100,127.0.0.1:200).", validConnOverrides),
	bk("max.connection.creation.rate", TypeInt, v(maxInt32), cw, "Most new connections a second the broker accepts (KIP-612), measured over quota.window.num samples of quota.window.size.seconds. Over it the broker waits (at most quota.window.size.seconds) before accepting the next connection, so excess connects queue in the listen backlog: delayed, not refused. listener.name.<listener>.max.connection.creation.rate sets a listener's own limit (default: this value).", atLeast(0)),
	bk("quota.window.num", TypeInt, v("11"), ro, "Samples a client quota rate (producer_byte_rate, consumer_byte_rate, request_percentage) or a connection creation rate (connection_creation_rate, max.connection.creation.rate) is measured over: the rate is the sum of the samples over the time since the oldest began, at least quota.window.num-1 windows.", atLeast(1)),
	bk("quota.window.size.seconds", TypeInt, v("1"), ro, "Seconds each sample of a client quota rate or connection creation rate spans; also the longest a connection is delayed or held for a throttled close.", atLeast(1)),
	bk("controller.quota.window.num", TypeInt, v("11"), ro, "controller_mutation_rate (KIP-599): its token bucket holds controller.quota.window.num × controller.quota.window.size.seconds of the quota.", atLeast(1)),
	bk("controller.quota.window.size.seconds", TypeInt, v("1"), ro, "controller_mutation_rate (KIP-599): seconds per window of its burst (see controller.quota.window.num).", atLeast(1)),
	bk("connections.max.idle.ms", TypeLong, v("600000"), ro, "Close a connection that sends nothing for this long after its last answer, and one whose request frame has not fully arrived this long after its first byte (a slow client). -1: never."),
	bk("queued.max.request.bytes", TypeLong, v("536870912"), ro, "Memory budget, shared by all connections, for requests being read and served: each is charged its frame and what decoding it may cost; a connection waits (is muted) while the budget is exhausted, and a request that could never fit is refused by closing its connection. Kafka's default is -1 (unbounded); sluice's is 512 MiB. Must be at least socket.request.max.bytes, or -1."),
	bk("queued.max.requests", TypeInt, v("500"), ro, "Requests queued for the handler threads before the network threads stop reading.", atLeast(1)).inert("sluice has no request queue between network and handler threads; queued.max.request.bytes bounds the memory instead"),
	bk("request.timeout.ms", TypeInt, v("30000"), ro, "Timeout for requests this broker sends to other brokers.", atLeast(0)),
	bk("fetch.max.bytes", TypeInt, v("57671680"), ro, "Most bytes returned for one Fetch request.", atLeast(1024)),
	bk("max.incremental.fetch.session.cache.slots", TypeInt, v("1000"), ro, "Most incremental fetch sessions (KIP-227) the broker keeps. When the cache is full, a full fetch opening a session evicts, as Kafka does, a session idle for over 120 s, or else the least valuable evictable one if it is worth less (a follower's session is worth more than a client's, then more partitions; a session is evictable by a follower's when it is a client's, and by any when created over 120 s ago); if none, the fetch gets no session (SessionID 0). 0 offers no sessions.", atLeast(0)),
	bk("telemetry.max.bytes", TypeInt, v("1048576"), ro, "Largest metrics payload a client may send in one PushTelemetry (KIP-714); a larger one is TELEMETRY_TOO_LARGE. GetTelemetrySubscriptions tells clients this limit.", atLeast(1)),

	// Topics and replication.
	bk("auto.create.topics.enable", TypeBoolean, v("true"), ro, "Create a topic when a client asks for its metadata and it does not exist (a Metadata request that allows auto-creation); that request is answered UNKNOWN_TOPIC_OR_PARTITION and the topic shows on the next."),
	bk("delete.topic.enable", TypeBoolean, v("true"), ro, "Allow DeleteTopics."),
	bk("num.partitions", TypeInt, v("1"), ro, "Partitions of an auto-created topic or a CreateTopics request that asks for the default.", atLeast(1)),
	bk("default.replication.factor", TypeInt, v("1"), ro, "Replication factor of an auto-created topic or a CreateTopics request that asks for the default.", between(1, 32767)),
	bk("max.broker.partitions", TypeInt, v(maxInt32), ro, "sluice (KIP-578's name, not a Kafka key): most partition replicas the active controller places on one broker; CreateTopics and CreatePartitions beyond it get POLICY_VIOLATION. The open-file limit does not lower it: segment files are opened through a file cache of half the limit and closed when cold, so a replica at rest holds no descriptor.", atLeast(1)).sluiceOnly("sluice's cap on replicas per broker (KIP-578's name)"),
	bk("min.insync.replicas", TypeInt, v("1"), cw, "Fewest in-sync replicas an acks=all produce needs.", atLeast(1)),
	bk("unclean.leader.election.enable", TypeBoolean, v("false"), cw, "Elect an out-of-sync replica when no in-sync one is alive, losing data."),
	bk("unclean.leader.election.interval.ms", TypeLong, v("300000"), ro, "How often the controller looks for partitions needing an unclean election.", atLeast(1)).sluiceOnly("a Kafka internal key (not listed by Kafka's DescribeConfigs)").later(0, "a periodic unclean-election check; sluice elects when a partition loses its last in-sync replica"),
	bk("replica.lag.time.max.ms", TypeLong, v("30000"), ro, "A follower that has not caught up for this long leaves the ISR.", atLeast(1)),
	bk("replica.fetch.max.bytes", TypeInt, v("1048576"), ro, "Bytes a follower asks for per partition.", atLeast(0)),
	bk("replica.fetch.min.bytes", TypeInt, v("1"), ro, "Bytes a follower fetch waits for.", atLeast(0)),
	bk("replica.fetch.wait.max.ms", TypeInt, v("500"), ro, "Longest a follower fetch waits on the leader.", atLeast(0)),
	bk("replica.fetch.backoff.ms", TypeInt, v("100"), ro, "Pause after a follower fetch error. sluice's default is 100 ms (Kafka's 1000): a follower that fetched from a leader that has just lost or gained leadership is back in the ISR sooner, which acks=all waits for.", atLeast(0)),
	bk("replica.fetch.response.max.bytes", TypeInt, v("10485760"), ro, "Bytes a follower asks for in one fetch.", atLeast(0)),
	bk("replica.socket.timeout.ms", TypeInt, v("30000"), ro, "Socket timeout of follower fetches.").later(0, "a socket timeout on follower fetches; request.timeout.ms bounds them"),
	bk("replica.high.watermark.checkpoint.interval.ms", TypeLong, v("5000"), ro, "How often high watermarks are checkpointed to disk.", atLeast(1)).later(0, "a high-watermark checkpoint interval of its own; sluice writes replication-offset-checkpoint every log.flush.offset.checkpoint.interval.ms"),
	bk("num.replica.fetchers", TypeInt, v("1"), cw, "Fetcher threads per source broker.", atLeast(1)).later(0, "more than one fetcher per source broker"),
	bk("leader.replication.throttled.rate", TypeLong, v(maxInt64), cw, "Bytes per second this broker sends, as leader, to followers of the replicas named in leader.replication.throttled.replicas (kafka-reassign-partitions.sh --throttle).", atLeast(0)).sluiceOnly("a Kafka dynamic broker key that Kafka's DescribeConfigs lists only once set"),
	bk("follower.replication.throttled.rate", TypeLong, v(maxInt64), cw, "Bytes per second this broker fetches, as follower, for the replicas named in follower.replication.throttled.replicas (kafka-reassign-partitions.sh --throttle).", atLeast(0)).sluiceOnly("a Kafka dynamic broker key that Kafka's DescribeConfigs lists only once set"),
	bk("replica.alter.log.dirs.io.max.bytes.per.second", TypeLong, v(maxInt64), cw, "Bytes per second all replica moves between this broker's log dirs (AlterReplicaLogDirs) copy together (kafka-reassign-partitions.sh --replica-alter-log-dirs-throttle), measured over alter.log.dirs.replication.quota.window.num samples of alter.log.dirs.replication.quota.window.size.seconds; a move over it waits before its next chunk. The last step of a move, under the log's append lock, is not throttled.", atLeast(0)).sluiceOnly("a Kafka dynamic broker key that Kafka's DescribeConfigs lists only once set"),
	bk("auto.leader.rebalance.enable", TypeBoolean, v("true"), ro, "Move leadership back to preferred replicas when imbalance passes leader.imbalance.per.broker.percentage."),
	bk("leader.imbalance.check.interval.seconds", TypeLong, v("300"), ro, "How often the controller checks leader balance.", atLeast(1)),
	bk("leader.imbalance.per.broker.percentage", TypeInt, v("10"), ro, "Share of a broker's partitions not led by their preferred replica that triggers a rebalance.", between(0, 100)).sluiceOnly("a Kafka key up to 4.1, dropped from Kafka 4.4's DescribeConfigs; sluice still uses it"),

	// Log storage: these are the broker synonyms of topic configs.
	bk("log.dirs", TypeList, nil, ro, "Comma list (or TOML array) of data directories. Defaults to log.dir."),
	bk("log.dir", TypeList, v("./sluice-data"), ro, "Data directory used when log.dirs is not set."),
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
	bk("log.flush.interval.messages", TypeLong, v(maxInt64), cw, "fsync a log when this many records were appended since its last flush (leader and follower appends).", atLeast(1)),
	bk("log.flush.interval.ms", TypeLong, nil, cw, "fsync a log whose last flush is this old. Defaults to log.flush.scheduler.interval.ms."),
	bk("log.flush.scheduler.interval.ms", TypeLong, v(maxInt64), ro, "How often logs are checked for a flush due by flush.ms. sluice checks at least once a second, so a topic's flush.ms takes effect without this key (at Kafka's default Kafka never checks)."),
	bk("log.flush.offset.checkpoint.interval.ms", TypeInt, v("60000"), ro, "How often the recovery point checkpoint is written.", atLeast(0)),
	bk("log.flush.start.offset.checkpoint.interval.ms", TypeInt, v("60000"), ro, "How often the log start offset checkpoint is written.", atLeast(0)).later(0, "a log-start-offset checkpoint interval of its own; sluice writes the file with the other checkpoints"),
	bk("log.segment.delete.delay.ms", TypeLong, v("60000"), cw, "Wait before deleting a segment's files.", atLeast(0)),
	bk("log.preallocate", TypeBoolean, v("false"), cw, "Preallocate segment files.").later(0, "preallocated segment files"),
	bk("log.message.timestamp.type", TypeString, v("CreateTime"), cw, "CreateTime keeps the producer's timestamp; LogAppendTime replaces it.", oneOf("CreateTime", "LogAppendTime")),
	bk("log.message.timestamp.before.max.ms", TypeLong, v(maxInt64), cw, "Reject a batch whose timestamp is further than this in the past.", atLeast(0)),
	bk("log.message.timestamp.after.max.ms", TypeLong, v("3600000"), cw, "Reject a batch whose timestamp is further than this in the future (Kafka 4 default: one hour).", atLeast(0)),
	bk("log.message.downconversion.enable", TypeBoolean, v("true"), cw, "Down-convert fetched batches for old clients.").sluiceOnly("a Kafka key up to 4.1, removed in Kafka 4.4; kept so older files load").inert("sluice never down-converts (Kafka 4 dropped message formats v0 and v1, KIP-724)"),
	bk("message.max.bytes", TypeInt, v("1048588"), cw, "Largest record batch accepted.", atLeast(0)),
	bk("compression.type", TypeString, v("producer"), cw, "Codec of stored batches: producer keeps the producer's; any other makes the leader rewrite each batch in another codec with this one (records, producer ids, sequences and timestamps unchanged), except uncompressed transaction markers.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	bk("compression.gzip.level", TypeInt, v("-1"), cw, "gzip level of batches the leader recompresses (-1: gzip's default, 6).", gzipLevel),
	bk("compression.lz4.level", TypeInt, v("9"), cw, "lz4 level of batches the leader recompresses: 1 is lz4's fast compressor, 2 to 17 its high-compression levels (sluice's encoder stops at 9).", between(1, 17)),
	bk("compression.zstd.level", TypeInt, v("3"), cw, "zstd level of batches the leader recompresses (sluice's encoder maps levels to four speeds: below 3, 3 to 5, 6 to 9, 10 and up).", between(-131072, 22)),
	bk("num.recovery.threads.per.data.dir", TypeInt, v("2"), cw, "Goroutines per log dir loading the partition logs at start, and recovering those a crash left unflushed (each checked batch by batch from its recovery point, torn tails cut); a log that fails to load is offline, its files kept. Read when the log dirs open, before the metadata log: a dynamic update is refused.", atLeast(1)).startOnly("the log dirs open before the metadata log holding dynamic values is read"),
	bk("log.cleaner.enable", TypeBoolean, v("true"), ro, "Run the log cleaner, which compacts the logs of topics whose cleanup.policy includes compact. false: no cleaner goroutine runs and compacted topics are never compacted (their tombstones and old values stay); read-only, as in Kafka."),
	bk("log.cleaner.threads", TypeInt, v("1"), cw, "Cleaner goroutines, each cleaning one log at a time with its own key map; two never clean the same log. A dynamic change restarts the cleaners (a pass in progress stops and is redone, losing nothing) and, as in Kafka, may at most double or halve the current count. Kafka's range starts at 0, but 0 fails Kafka's start (it divides by it) and its dynamic check; sluice refuses it.", atLeast(1)),
	bk("log.cleaner.backoff.ms", TypeLong, v("15000"), cw, "How long a cleaner goroutine sleeps when no log needs cleaning.", atLeast(0)),
	bk("log.cleaner.dedupe.buffer.size", TypeLong, v("134217728"), cw, "Memory for the cleaners' key maps across all threads: each thread's map takes this divided by log.cleaner.threads (at most 2 GiB, as Kafka caps it), allocated when its first log needs cleaning. Must leave more than 1 MiB per thread (Kafka's check); a log whose dirty section has more keys than a map holds is cleaned in several passes."),
	bk("log.cleaner.io.buffer.size", TypeInt, v("524288"), cw, "Cleaner I/O buffer memory across all threads. As in Kafka each thread gets this divided by log.cleaner.threads, half for reading and half for writing; sluice uses the write half: cleaned batches gather in a buffer of that size before they are written to the new segment (a larger batch is written alone). Reads are one batch at a time, each read whole at its own size, so the read half is unused.", atLeast(0)),
	bk("log.cleaner.io.buffer.load.factor", TypeDouble, v("0.9"), cw, "How full a cleaner's key map may get (its share of slots in use) before the pass stops mapping and cleans what it mapped. Kafka takes any number; sluice refuses values outside (0, 1], with which the map could hold no key or never stop filling.", loadFactorRange),
	bk("log.cleaner.io.max.bytes.per.second", TypeDouble, v(maxFloat), cw, "Limit on the bytes all cleaner threads together read and write per second (one throttle shared by every thread, as Kafka's): a pass over the limit sleeps, and the others wait with it. A change applies at once, without restarting the cleaners. Must be positive (Kafka would sleep forever at 0).", positiveRate),
	bk("log.cleaner.delete.retention.ms", TypeLong, v("86400000"), cw, "Keep tombstones this long in compacted topics.", atLeast(0)),
	bk("log.cleaner.min.compaction.lag.ms", TypeLong, v("0"), cw, "Records younger than this are not compacted.", atLeast(0)),
	bk("log.cleaner.max.compaction.lag.ms", TypeLong, v(maxInt64), cw, "Records older than this are compacted even below the dirty ratio.", atLeast(1)),
	bk("log.cleaner.min.cleanable.ratio", TypeDouble, v("0.5"), cw, "Dirty share of a log that triggers cleaning.", between(0, 1)),

	// Groups and committed offsets.
	bk("offsets.topic.num.partitions", TypeInt, v("50"), ro, "Partitions of __consumer_offsets; do not change after it exists.", atLeast(1)),
	bk("offsets.topic.replication.factor", TypeShort, v("3"), ro, "Replication factor of __consumer_offsets, capped by the live brokers when it is created (Kafka fails instead).", atLeast(1)),
	bk("offsets.topic.segment.bytes", TypeInt, v("104857600"), ro, "Segment size of __consumer_offsets.", atLeast(1)),
	bk("offsets.topic.compression.codec", TypeInt, v("0"), ro, "Compression codec id of offset commits written to __consumer_offsets.").later(0, "compressed offset commits in __consumer_offsets"),
	bk("offsets.retention.minutes", TypeInt, v("10080"), ro, "Keep committed offsets of an empty group this long.", atLeast(1)),
	bk("offsets.retention.check.interval.ms", TypeLong, v("600000"), ro, "How often stale offsets are expired.", atLeast(1)),
	bk("offsets.commit.timeout.ms", TypeInt, v("5000"), ro, "Longest an offset commit waits for replication.", atLeast(1)),
	bk("offsets.load.buffer.size", TypeInt, v("5242880"), ro, "Read size when loading __consumer_offsets.", atLeast(1)).inert("sluice loads __consumer_offsets through its log reader, which sizes its own reads"),
	bk("offset.metadata.max.bytes", TypeInt, v("4096"), ro, "Longest metadata string kept with a committed offset."),
	bk("group.min.session.timeout.ms", TypeInt, v("6000"), ro, "Shortest session timeout a classic group member may ask for."),
	bk("group.max.session.timeout.ms", TypeInt, v("1800000"), ro, "Longest session timeout a classic group member may ask for."),
	bk("group.initial.rebalance.delay.ms", TypeInt, v("3000"), ro, "Wait for more members before the first rebalance of an empty classic group."),
	bk("group.max.size", TypeInt, v(maxInt32), ro, "Most members of a classic group.", atLeast(1)),
	bk("group.coordinator.rebalance.protocols", TypeList, v("classic,consumer,streams"), ro, "Group protocols enabled: classic, consumer (KIP-848) and streams (KIP-1071), Kafka 4.4's default. Streams groups are served while this lists streams and the streams.version feature is finalized at 1 or more (below, their APIs answer UNSUPPORTED_VERSION, as in Kafka). share is accepted and, as in Kafka 4.4 (where this key is deprecated), changes nothing: share groups are on when the share.version feature is finalized at 1 or more.", eachOf("classic", "consumer", "share", "streams")),
	bk("group.coordinator.threads", TypeInt, v("4"), ro, "Threads of the group coordinator.", atLeast(1)).inert("sluice's group coordinator runs on goroutines, not a thread pool"),
	bk("group.coordinator.append.linger.ms", TypeInt, v("-1"), ro, "How long the group coordinator waits to batch writes; -1: adaptively.", atLeast(-1)).inert("sluice's group coordinator appends each write at once; there is no write batching to linger for"),
	bk("group.consumer.session.timeout.ms", TypeInt, v("45000"), ro, "Session timeout of consumer group (KIP-848) members.", atLeast(1)),
	bk("group.consumer.min.session.timeout.ms", TypeInt, v("45000"), ro, "Shortest consumer group session timeout.", atLeast(1)),
	bk("group.consumer.max.session.timeout.ms", TypeInt, v("60000"), ro, "Longest consumer group session timeout.", atLeast(1)),
	bk("group.consumer.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Heartbeat interval given to consumer group members.", atLeast(1)),
	bk("group.consumer.min.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Shortest consumer group heartbeat interval.", atLeast(1)),
	bk("group.consumer.max.heartbeat.interval.ms", TypeInt, v("15000"), ro, "Longest consumer group heartbeat interval.", atLeast(1)),
	bk("group.consumer.max.size", TypeInt, v(maxInt32), ro, "Most members of a consumer group.", atLeast(1)),
	bk("group.consumer.assignors", TypeList, v("range,uniform"), ro, "Server-side assignors by name (range, uniform), the first is the default. Kafka lists the class names of the same two with uniform first; sluice defaults to range.", nonEmpty, eachOf("range", "uniform")),
	bk("group.share.session.timeout.ms", TypeInt, v("45000"), ro, "Session timeout of share group (KIP-932) members: a member silent this long is removed.", atLeast(1)),
	bk("group.share.min.session.timeout.ms", TypeInt, v("45000"), ro, "Shortest share group session timeout.", atLeast(1)),
	bk("group.share.max.session.timeout.ms", TypeInt, v("60000"), ro, "Longest share group session timeout.", atLeast(1)),
	bk("group.share.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Heartbeat interval given to share group members.", atLeast(1)),
	bk("group.share.min.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Shortest share group heartbeat interval.", atLeast(1)),
	bk("group.share.max.heartbeat.interval.ms", TypeInt, v("15000"), ro, "Longest share group heartbeat interval.", atLeast(1)),
	bk("group.share.max.size", TypeInt, v("200"), ro, "Most members of a share group (GROUP_MAX_SIZE_REACHED beyond).", atLeast(1)),
	bk("group.share.record.lock.duration.ms", TypeInt, v("30000"), ro, "How long a share group member holds the records a ShareFetch acquired for it before they are released for redelivery: the value of share.record.lock.duration.ms for a group that does not set it. It must lie within group.share.min.record.lock.duration.ms and group.share.max.record.lock.duration.ms.", between(1000, 3600000)),
	bk("group.share.min.record.lock.duration.ms", TypeInt, v("15000"), ro, "Smallest share.record.lock.duration.ms a share group may set, and the smallest group.share.record.lock.duration.ms.", between(1000, 30000)),
	bk("group.share.max.record.lock.duration.ms", TypeInt, v("60000"), ro, "Largest share.record.lock.duration.ms a share group may set, and the largest group.share.record.lock.duration.ms.", between(30000, 3600000)),
	bk("group.share.delivery.count.limit", TypeInt, v("5"), ro, "How many times a record is delivered to a share group before it is archived (or dead-lettered): the value of share.delivery.count.limit for a group that does not set it. It must lie within group.share.min.delivery.count.limit and group.share.max.delivery.count.limit.", between(2, 10)),
	bk("group.share.min.delivery.count.limit", TypeInt, v("2"), ro, "Smallest share.delivery.count.limit a share group may set, and the smallest group.share.delivery.count.limit.", between(2, 5)),
	bk("group.share.max.delivery.count.limit", TypeInt, v("10"), ro, "Largest share.delivery.count.limit a share group may set, and the largest group.share.delivery.count.limit.", between(5, 25)),
	bk("group.share.partition.max.record.locks", TypeInt, v("2000"), ro, "Most records of a share-partition acquired (in flight) at once: ShareFetch acquires no more until some are acknowledged or released. The value of share.partition.max.record.locks for a group that does not set it; it must lie within group.share.min.partition.max.record.locks and group.share.max.partition.max.record.locks.", between(100, 10000)),
	bk("group.share.min.partition.max.record.locks", TypeInt, v("100"), ro, "Smallest share.partition.max.record.locks a share group may set, and the smallest group.share.partition.max.record.locks.", between(100, 10000)),
	bk("group.share.assignors", TypeList, v("simple"), ro, "The server-side assignor of every share group, by name or class name: exactly one entry. sluice has Kafka's simple assignor (simple, or org.apache.kafka.coordinator.group.assignor.SimpleAssignor), which ShareGroupDescribe names; Kafka loads any other class as a custom assignor, which sluice cannot do, so any other value is refused at start.", nonEmpty, noDuplicates, shareAssignors),
	bk("group.share.assignment.interval.ms", TypeInt, v("1000"), cw, "Least time between two runs of a share group's assignor (KIP-1263's assignment batching): a member joining or leaving, a subscription or a topic changing moves the group epoch at once, and the target assignment is computed again at the first heartbeat once this long has passed since the last computation; members keep the last target meanwhile. 0: at every change. The value of share.assignment.interval.ms for a group that does not set it; a value outside group.share.min.assignment.interval.ms and group.share.max.assignment.interval.ms is capped to them, as Kafka does.", atLeast(0)),
	bk("group.share.min.assignment.interval.ms", TypeInt, v("0"), ro, "Smallest group.share.assignment.interval.ms and share.assignment.interval.ms.", atLeast(0)),
	bk("group.share.max.assignment.interval.ms", TypeInt, v("15000"), ro, "Largest group.share.assignment.interval.ms and share.assignment.interval.ms.", atLeast(0)),
	bk("group.share.max.share.sessions", TypeInt, v("2000"), ro, "Most share sessions this broker holds at once (one per share group member fetching from it, closed with its connection); a ShareFetch opening one more is refused with SHARE_SESSION_LIMIT_REACHED. It must be at least group.share.max.size.", atLeast(1)),
	bk("group.share.max.partition.max.record.locks", TypeInt, v("4000"), ro, "Largest share.partition.max.record.locks a share group may set, and the largest group.share.partition.max.record.locks.", between(100, 10000)),
	bk("group.streams.session.timeout.ms", TypeInt, v("45000"), ro, "Session timeout of streams group (KIP-1071) members: a member silent this long is removed.", atLeast(1)),
	bk("group.streams.min.session.timeout.ms", TypeInt, v("45000"), ro, "Shortest streams group session timeout.", atLeast(1)),
	bk("group.streams.max.session.timeout.ms", TypeInt, v("60000"), ro, "Longest streams group session timeout.", atLeast(1)),
	bk("group.streams.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Heartbeat interval given to streams group members.", atLeast(1)),
	bk("group.streams.min.heartbeat.interval.ms", TypeInt, v("5000"), ro, "Shortest streams group heartbeat interval.", atLeast(1)),
	bk("group.streams.max.heartbeat.interval.ms", TypeInt, v("15000"), ro, "Longest streams group heartbeat interval.", atLeast(1)),
	bk("group.streams.max.size", TypeInt, v(maxInt32), ro, "Most members of a streams group (GROUP_MAX_SIZE_REACHED beyond).", atLeast(1)),
	bk("group.streams.num.standby.replicas", TypeInt, v("0"), ro, "Standby replicas of each task the streams group assignor places (the application's num.standby.replicas is not used with group.protocol=streams).", atLeast(0)),
	bk("group.streams.max.standby.replicas", TypeInt, v("2"), ro, "Largest group.streams.num.standby.replicas (and streams.num.standby.replicas group config) allowed.", atLeast(0)),
	bk("group.streams.assignors", TypeList, v("sticky"), ro, "Task assignors of streams groups, by name or class name; the first is the default. sluice has Kafka's sticky assignor (sticky, or org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor) and cannot load an assignor class of its own (KIP-1357), so any other value is refused at start.", nonEmpty, noDuplicates, streamsAssignors),
	bk("group.streams.initial.rebalance.delay.ms", TypeInt, v("3000"), ro, "How long a streams group that a member joins while it has none waits for more members before its first assignment; meanwhile its members get no tasks and the ASSIGNMENT_DELAYED status. The default of a group's streams.initial.rebalance.delay.ms. 0: assign at once.", atLeast(0)),
	bk("group.streams.assignment.interval.ms", TypeInt, v("1000"), cw, "Least time between two target assignments of a streams group: changes within it (members joining or leaving) are assigned together when it has passed, and members are told ASSIGNMENT_DELAYED meanwhile. A dynamic value outside group.streams.min/max.assignment.interval.ms is clamped to them, as in Kafka. The default of a group's streams.assignment.interval.ms. 0: assign every change at once.", atLeast(0)),
	bk("group.streams.min.assignment.interval.ms", TypeInt, v("0"), ro, "Smallest group.streams.assignment.interval.ms, and smallest streams.assignment.interval.ms a group may set.", atLeast(0)),
	bk("group.streams.max.assignment.interval.ms", TypeInt, v("15000"), ro, "Largest group.streams.assignment.interval.ms, and largest streams.assignment.interval.ms a group may set.", atLeast(0)),
	bk("group.streams.rack.aware.assignment.tags", TypeList, v(""), ro, "Client tag keys (a Streams application's client.tag.<key>) over which the streams group assignor spreads each task's standbys: a standby goes to a process whose tag values differ from those of the task's other copies where one can take it, and a member that lacks one of the tags is told MISSING_CLIENT_TAGS (heartbeat v1). The default of a group's streams.rack.aware.assignment.tags. Empty: standbys are placed by load only.", noDuplicates),
	bk("group.consumer.migration.policy", TypeString, v("bidirectional"), ro, "Conversion between classic and consumer groups.", oneOf("disabled", "downgrade", "upgrade", "bidirectional")).later(0, "online migration between classic and consumer groups; an empty group converts either way"),

	// Transactions and producer ids.
	bk("share.coordinator.state.topic.num.partitions", TypeInt, v("50"), ro, "Partitions of __share_group_state; do not change after it exists.", atLeast(1)),
	bk("share.coordinator.state.topic.replication.factor", TypeShort, v("3"), ro, "Replication factor of __share_group_state, capped by the live brokers when it is created (Kafka fails instead).", atLeast(1)),
	bk("share.coordinator.state.topic.min.isr", TypeShort, v("2"), ro, "min.insync.replicas of __share_group_state, capped by its replication factor.", atLeast(1)),
	bk("share.coordinator.state.topic.segment.bytes", TypeInt, v("104857600"), ro, "Segment size of __share_group_state.", atLeast(1)),
	bk("share.coordinator.state.topic.compression.codec", TypeInt, v("0"), ro, "Codec of the batches the share coordinator writes to __share_group_state, by Kafka's id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (at Kafka's default level). Batches written before a change keep their codec; the state is read back whatever codec it was written with.", compressionCodecID),
	bk("share.coordinator.snapshot.update.records.per.snapshot", TypeInt, v("500"), ro, "ShareUpdate records of a share-partition between two ShareSnapshot records in __share_group_state (0: a snapshot at every write).", atLeast(0)),
	bk("share.coordinator.write.timeout.ms", TypeInt, v("5000"), ro, "How long a share coordinator write waits to be replicated (then COORDINATOR_NOT_AVAILABLE, and the state partition is loaded again).", atLeast(1)),
	bk("share.coordinator.load.buffer.size", TypeInt, v("5242880"), ro, "Read size when loading __share_group_state.", atLeast(1)),
	bk("share.coordinator.threads", TypeInt, v("1"), ro, "Share coordinator threads.", atLeast(1)).inert("sluice's share coordinator runs on the request goroutines"),
	bk("share.coordinator.append.linger.ms", TypeInt, v("-1"), ro, "How long the share coordinator lingers to batch writes.", atLeast(-1)).inert("sluice's share coordinator writes each change at once, one record per write"),
	bk("share.coordinator.cached.buffer.max.bytes", TypeInt, v("1048588"), cw, "The share coordinator's cached write buffer.", atLeast(1)).inert("sluice's share coordinator keeps no write buffer"),
	bk("transaction.state.log.num.partitions", TypeInt, v("50"), ro, "Partitions of __transaction_state; do not change after it exists.", atLeast(1)),
	bk("transaction.state.log.replication.factor", TypeShort, v("3"), ro, "Replication factor of __transaction_state, capped by the live brokers when it is created (Kafka fails instead).", atLeast(1)),
	bk("transaction.state.log.min.isr", TypeInt, v("2"), ro, "min.insync.replicas of __transaction_state, capped by its replication factor.", atLeast(1)),
	bk("transaction.state.log.segment.bytes", TypeInt, v("104857600"), ro, "Segment size of __transaction_state.", atLeast(1)),
	bk("transaction.state.log.load.buffer.size", TypeInt, v("5242880"), ro, "Read size when loading __transaction_state.", atLeast(1)).inert("sluice loads __transaction_state through its log reader, which sizes its own reads"),
	bk("transaction.max.timeout.ms", TypeInt, v("900000"), ro, "Longest transaction timeout a producer may ask for.", atLeast(1)),
	bk("transactional.id.expiration.ms", TypeInt, v("604800000"), ro, "Forget a transactional id unused for this long.", atLeast(1)),
	bk("transaction.abort.timed.out.transaction.cleanup.interval.ms", TypeInt, v("1000"), ro, "How often timed-out transactions are aborted (sluice default 1000; Kafka 10000).", atLeast(1)),
	bk("transaction.remove.expired.transaction.cleanup.interval.ms", TypeInt, v("3600000"), ro, "How often expired transactional ids are removed.", atLeast(1)),
	bk("add.partitions.to.txn.retry.backoff.ms", TypeInt, v("20"), ro, "How long the partition leader waits before asking the transaction coordinator again when it answered CONCURRENT_TRANSACTIONS to adding or verifying the partition of a transactional batch (KIP-890).", atLeast(1)),
	bk("add.partitions.to.txn.retry.backoff.max.ms", TypeInt, v("100"), ro, "How long the partition leader keeps asking the transaction coordinator again while it answers CONCURRENT_TRANSACTIONS, before the batch is refused with NOT_ENOUGH_REPLICAS (which clients retry); 0 asks once. Kafka applies it to adding a partition (transaction version 2) only and answers a verification at once; sluice retries both.", atLeast(0)),
	bk("transaction.partition.verification.enable", TypeBoolean, v("true"), cw, "Before appending a transactional batch (Produce before v12, TxnOffsetCommit before v5), the partition leader asks the transaction coordinator whether the partition is in the producer's transaction and refuses it with INVALID_TXN_STATE if not (KIP-890). Produce v12+ and TxnOffsetCommit v5+ (transaction version 2) always have the leader add the partition."),
	bk("producer.id.expiration.ms", TypeInt, v("86400000"), ro, "Forget an idle producer id's state after this long.", atLeast(1)),
	bk("producer.id.expiration.check.interval.ms", TypeInt, v("600000"), ro, "How often idle producer ids are expired (producer.id.expiration.ms); the log cleaner then drops the last batches of the expired ones.", atLeast(1)).sluiceOnly("a Kafka internal key (not listed by Kafka's DescribeConfigs)"),
}

// gzipLevel accepts -1 (default) or 1..9.
func gzipLevel(s string) string {
	if s == "-1" {
		return ""
	}
	return between(1, 9)(s)
}

// loadFactorRange accepts log.cleaner.io.buffer.load.factor in (0, 1].
func loadFactorRange(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return fmt.Sprintf("%s is out of range: must be above 0 and at most 1", s)
	}
	return ""
}

// positiveRate accepts a byte rate above 0.
func positiveRate(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f > 0) {
		return fmt.Sprintf("%s is out of range: must be above 0", s)
	}
	return ""
}
