package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// Listener is one endpoint from listeners or advertised.listeners, parsed from
// "NAME://host:port". An empty Host binds all interfaces.
type Listener struct {
	Name string
	Host string
	Port int32
}

// String formats l as Kafka writes it.
func (l Listener) String() string {
	host := l.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s://%s:%d", l.Name, host, l.Port)
}

// Broker is one node's configuration. The typed fields are what the rest of
// sluice reads; the keys behind them, and every other key that was set, are
// kept so DescribeConfigs can report them. Change a Broker with Set, which
// validates and updates both; fields assigned directly are still reported
// correctly by DescribeBroker (as static values). A Broker is not safe for
// concurrent use while it is being changed; treat a running node's Broker as
// read-only and keep dynamic changes in the maps passed to the Describe
// methods. Change listeners with Set rather than by assignment:
// AdvertisedListeners follows listeners only through Load and Set.
type Broker struct {
	NodeID                   int32      // node.id
	Listeners                []Listener // listeners
	AdvertisedListeners      []Listener // advertised.listeners, defaulting to listeners
	InterBrokerListenerName  string     // inter.broker.listener.name; empty: the first listener
	BrokerRack               string     // broker.rack
	ControllerQuorumVoters   []string   // controller.quorum.voters
	GossipListener           string     // gossip.listener
	GossipJoin               []string   // gossip.join
	MetricsListener          string     // metrics.listener; empty: off
	ConsoleEnable            bool       // console.enable: the web console on metrics.listener
	ConsoleReadOnly          bool       // console.read.only
	MetadataLogDir           string     // metadata.log.dir; empty: the first log dir
	LogDirs                  []string   // log.dirs, else log.dir
	NumPartitions            int32      // num.partitions
	DefaultReplicationFactor int16      // default.replication.factor
	AutoCreateTopics         bool       // auto.create.topics.enable
	DeleteTopicEnable        bool       // delete.topic.enable
	MinInsyncReplicas        int32      // min.insync.replicas
	UncleanLeaderElection    bool       // unclean.leader.election.enable

	LogSegmentBytes                    int64  // log.segment.bytes
	LogRollMs                          int64  // log.roll.ms, else log.roll.hours
	LogRollJitterMs                    int64  // log.roll.jitter.ms, else log.roll.jitter.hours
	LogRetentionMs                     int64  // log.retention.ms > .minutes > .hours; -1 unlimited
	LogRetentionBytes                  int64  // log.retention.bytes; -1 unlimited
	LogRetentionCheckIntervalMs        int64  // log.retention.check.interval.ms
	LogSegmentDeleteDelayMs            int64  // log.segment.delete.delay.ms
	LogIndexIntervalBytes              int32  // log.index.interval.bytes
	LogIndexSizeMaxBytes               int32  // log.index.size.max.bytes
	LogFlushIntervalMessages           int64  // log.flush.interval.messages
	LogFlushIntervalMs                 int64  // log.flush.interval.ms, else log.flush.scheduler.interval.ms
	LogFlushOffsetCheckpointIntervalMs int64  // log.flush.offset.checkpoint.interval.ms
	LogPreallocate                     bool   // log.preallocate
	LogMessageTimestampType            string // log.message.timestamp.type
	LogMessageTimestampBeforeMaxMs     int64  // log.message.timestamp.before.max.ms
	LogMessageTimestampAfterMaxMs      int64  // log.message.timestamp.after.max.ms
	MessageMaxBytes                    int32  // message.max.bytes
	LogCleanupPolicy                   string // log.cleanup.policy (comma list)
	CompressionType                    string // compression.type
	LogCleanerEnable                   bool   // log.cleaner.enable
	// Static values of the cleaner's dynamic keys; CleanerSettings
	// resolves the dynamic ones.
	LogCleanerThreads             int32   // log.cleaner.threads
	LogCleanerBackoffMs           int64   // log.cleaner.backoff.ms
	LogCleanerDedupeBufferSize    int64   // log.cleaner.dedupe.buffer.size
	LogCleanerIOBufferSize        int32   // log.cleaner.io.buffer.size
	LogCleanerIOBufferLoadFactor  float64 // log.cleaner.io.buffer.load.factor
	LogCleanerIOMaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second
	NumRecoveryThreadsPerDataDir  int32   // num.recovery.threads.per.data.dir

	// Authorization (authorizer_keys.go): AuthorizerClassName empty
	// means no authorizer.
	AuthorizerClassName       string // authorizer.class.name
	SuperUsers                string // super.users (semicolon list)
	AllowEveryoneIfNoACLFound bool   // allow.everyone.if.no.acl.found

	SocketRequestMaxBytes int32 // socket.request.max.bytes
	// SASL sessions: connections.max.reauth.ms (KIP-368, 0: forever) and
	// connection.failed.authentication.delay.ms.
	ConnectionsMaxReauthMs      int64
	ConnectionFailedAuthDelayMs int32
	ConnectionsMaxIdleMs        int64 // connections.max.idle.ms
	QueuedMaxRequestBytes       int64 // queued.max.request.bytes; -1 unbounded
	QuotaWindowNum              int32 // quota.window.num
	QuotaWindowSizeSecs         int32 // quota.window.size.seconds
	// controller.quota.window.num and .size.seconds: the burst of
	// controller_mutation_rate.
	ControllerQuotaWindowNum      int32
	ControllerQuotaWindowSizeSecs int32

	// Static values of the connection limits; ConnectionLimits resolves
	// the dynamic ones.
	MaxConnections               int32  // max.connections
	MaxConnectionsPerIP          int32  // max.connections.per.ip
	MaxConnectionsPerIPOverrides string // max.connections.per.ip.overrides
	MaxConnectionCreationRate    int32  // max.connection.creation.rate
	FetchMaxBytes                int32  // fetch.max.bytes
	TelemetryMaxBytes            int32  // telemetry.max.bytes (KIP-714 PushTelemetry)
	RequestTimeoutMs             int32  // request.timeout.ms

	// max.incremental.fetch.session.cache.slots: most fetch sessions
	// (KIP-227) cached.
	MaxIncrementalFetchSessionCacheSlots int32

	ReplicaLagTimeMaxMs                 int64 // replica.lag.time.max.ms
	ReplicaFetchMaxBytes                int32 // replica.fetch.max.bytes
	ReplicaFetchMinBytes                int32 // replica.fetch.min.bytes
	ReplicaFetchWaitMaxMs               int32 // replica.fetch.wait.max.ms
	ReplicaFetchBackoffMs               int32 // replica.fetch.backoff.ms
	ReplicaFetchResponseMaxBytes        int32 // replica.fetch.response.max.bytes
	NumReplicaFetchers                  int32 // num.replica.fetchers
	ReplicaHighWatermarkCheckpointMs    int64 // replica.high.watermark.checkpoint.interval.ms
	AutoLeaderRebalanceEnable           bool  // auto.leader.rebalance.enable
	LeaderImbalanceCheckIntervalSeconds int64 // leader.imbalance.check.interval.seconds
	LeaderImbalancePerBrokerPercentage  int32 // leader.imbalance.per.broker.percentage
	ControlledShutdownEnable            bool  // controlled.shutdown.enable
	BrokerHeartbeatIntervalMs           int32 // broker.heartbeat.interval.ms
	BrokerSessionTimeoutMs              int32 // broker.session.timeout.ms
	InitialBrokerRegistrationTimeoutMs  int32 // initial.broker.registration.timeout.ms

	OffsetsTopicReplicationFactor    int16    // offsets.topic.replication.factor
	OffsetsTopicNumPartitions        int32    // offsets.topic.num.partitions
	OffsetsTopicSegmentBytes         int32    // offsets.topic.segment.bytes
	OffsetsRetentionMinutes          int32    // offsets.retention.minutes
	OffsetsRetentionCheckMs          int64    // offsets.retention.check.interval.ms
	OffsetsCommitTimeoutMs           int32    // offsets.commit.timeout.ms
	OffsetMetadataMaxBytes           int32    // offset.metadata.max.bytes
	GroupMinSessionTimeoutMs         int32    // group.min.session.timeout.ms
	GroupMaxSessionTimeoutMs         int32    // group.max.session.timeout.ms
	GroupInitialRebalanceDelayMs     int32    // group.initial.rebalance.delay.ms
	GroupMaxSize                     int32    // group.max.size
	GroupRebalanceProtocols          []string // group.coordinator.rebalance.protocols
	ConsumerGroupSessionTimeoutMs    int32    // group.consumer.session.timeout.ms
	ConsumerGroupMinSessionTimeoutMs int32    // group.consumer.min.session.timeout.ms
	ConsumerGroupMaxSessionTimeoutMs int32    // group.consumer.max.session.timeout.ms
	ConsumerGroupHeartbeatMs         int32    // group.consumer.heartbeat.interval.ms
	ConsumerGroupMinHeartbeatMs      int32    // group.consumer.min.heartbeat.interval.ms
	ConsumerGroupMaxHeartbeatMs      int32    // group.consumer.max.heartbeat.interval.ms
	ConsumerGroupMaxSize             int32    // group.consumer.max.size
	ConsumerGroupAssignors           []string // group.consumer.assignors
	ShareGroupSessionTimeoutMs       int32    // group.share.session.timeout.ms
	ShareGroupMinSessionTimeoutMs    int32    // group.share.min.session.timeout.ms
	ShareGroupMaxSessionTimeoutMs    int32    // group.share.max.session.timeout.ms
	ShareGroupHeartbeatMs            int32    // group.share.heartbeat.interval.ms
	ShareGroupMinHeartbeatMs         int32    // group.share.min.heartbeat.interval.ms
	ShareGroupMaxHeartbeatMs         int32    // group.share.max.heartbeat.interval.ms
	ShareGroupMaxSize                int32    // group.share.max.size
	StreamsGroupSessionTimeoutMs     int32    // group.streams.session.timeout.ms
	StreamsGroupMinSessionTimeoutMs  int32    // group.streams.min.session.timeout.ms
	StreamsGroupMaxSessionTimeoutMs  int32    // group.streams.max.session.timeout.ms
	StreamsGroupHeartbeatMs          int32    // group.streams.heartbeat.interval.ms
	StreamsGroupMinHeartbeatMs       int32    // group.streams.min.heartbeat.interval.ms
	StreamsGroupMaxHeartbeatMs       int32    // group.streams.max.heartbeat.interval.ms
	StreamsGroupMaxSize              int32    // group.streams.max.size
	StreamsGroupNumStandbyReplicas   int32    // group.streams.num.standby.replicas
	StreamsGroupMaxStandbyReplicas   int32    // group.streams.max.standby.replicas
	StreamsGroupInitialDelayMs       int32    // group.streams.initial.rebalance.delay.ms
	StreamsGroupAssignmentIntervalMs int32    // group.streams.assignment.interval.ms (static value)
	StreamsGroupMinAssignmentMs      int32    // group.streams.min.assignment.interval.ms
	StreamsGroupMaxAssignmentMs      int32    // group.streams.max.assignment.interval.ms
	StreamsGroupRackAwareTags        []string // group.streams.rack.aware.assignment.tags

	// The share-partition defaults and the bounds of them and of the
	// share.* group configs of the same name (Kafka's ShareGroupConfig).
	ShareGroupRecordLockDurationMs       int32 // group.share.record.lock.duration.ms
	ShareGroupMinRecordLockDurationMs    int32 // group.share.min.record.lock.duration.ms
	ShareGroupMaxRecordLockDurationMs    int32 // group.share.max.record.lock.duration.ms
	ShareGroupDeliveryCountLimit         int32 // group.share.delivery.count.limit
	ShareGroupMinDeliveryCountLimit      int32 // group.share.min.delivery.count.limit
	ShareGroupMaxDeliveryCountLimit      int32 // group.share.max.delivery.count.limit
	ShareGroupPartitionMaxRecordLocks    int32 // group.share.partition.max.record.locks
	ShareGroupMinPartitionMaxRecordLocks int32 // group.share.min.partition.max.record.locks
	ShareGroupMaxPartitionMaxRecordLocks int32 // group.share.max.partition.max.record.locks
	ShareGroupMaxShareSessions           int32 // group.share.max.share.sessions
	ShareGroupAssignmentIntervalMs       int32 // group.share.assignment.interval.ms (static value)
	ShareGroupMinAssignmentIntervalMs    int32 // group.share.min.assignment.interval.ms
	ShareGroupMaxAssignmentIntervalMs    int32 // group.share.max.assignment.interval.ms

	ShareCoordinatorStateTopicNumPartitions     int32 // share.coordinator.state.topic.num.partitions
	ShareCoordinatorStateTopicReplicationFactor int16 // share.coordinator.state.topic.replication.factor
	ShareCoordinatorStateTopicMinIsr            int16 // share.coordinator.state.topic.min.isr
	ShareCoordinatorStateTopicSegmentBytes      int32 // share.coordinator.state.topic.segment.bytes
	ShareCoordinatorStateTopicCompressionCodec  int32 // share.coordinator.state.topic.compression.codec
	ShareCoordinatorSnapshotUpdateRecords       int32 // share.coordinator.snapshot.update.records.per.snapshot
	ShareCoordinatorWriteTimeoutMs              int32 // share.coordinator.write.timeout.ms
	ShareCoordinatorLoadBufferSize              int32 // share.coordinator.load.buffer.size

	TransactionStateLogNumPartitions       int32 // transaction.state.log.num.partitions
	TransactionStateLogReplicationFactor   int16 // transaction.state.log.replication.factor
	TransactionStateLogMinIsr              int32 // transaction.state.log.min.isr
	TransactionStateLogSegmentBytes        int32 // transaction.state.log.segment.bytes
	TransactionMaxTimeoutMs                int32 // transaction.max.timeout.ms
	TransactionalIDExpirationMs            int32 // transactional.id.expiration.ms
	TransactionAbortTimedOutIntervalMs     int32 // transaction.abort.timed.out.transaction.cleanup.interval.ms
	TransactionRemoveExpiredIntervalMs     int32 // transaction.remove.expired.transaction.cleanup.interval.ms
	TransactionPartitionVerificationEnable bool  // transaction.partition.verification.enable
	TransactionTwoPhaseCommitEnable        bool  // transaction.two.phase.commit.enable (KIP-939)
	AddPartitionsToTxnRetryBackoffMs       int32 // add.partitions.to.txn.retry.backoff.ms
	AddPartitionsToTxnRetryBackoffMaxMs    int32 // add.partitions.to.txn.retry.backoff.max.ms
	ProducerIDExpirationMs                 int32 // producer.id.expiration.ms
	ProducerIDExpirationCheckIntervalMs    int32 // producer.id.expiration.check.interval.ms

	// static holds every key set by the file or an override, normalized.
	static map[string]string
}

// binding ties a typed field to the key (or synonym group) it comes from.
type binding struct {
	key   string
	field func(b *Broker) any // pointer to the field
	// resolve computes the field's string from the static keys; nil means
	// the key's own value or default.
	resolve func(static map[string]string) string
}

func fieldFor(key string, f func(b *Broker) any) binding { return binding{key: key, field: f} }

// fromTopicSynonyms resolves a field the way its topic config's default is
// resolved: first set synonym, else the first default, converted to ms.
func fromTopicSynonyms(topic string) func(map[string]string) string {
	return func(static map[string]string) string {
		val, _, _ := topicKeyList[topicKeyIndex[topic]].resolveBroker(nil, nil, static)
		return val
	}
}

func firstSet(keys ...string) func(map[string]string) string {
	return func(static map[string]string) string {
		for _, k := range keys[:len(keys)-1] {
			if s, ok := static[k]; ok {
				return s
			}
		}
		s, _ := staticOrDefault(static, keys[len(keys)-1])
		return s
	}
}

var bindings = []binding{
	fieldFor("node.id", func(b *Broker) any { return &b.NodeID }),
	fieldFor("listeners", func(b *Broker) any { return &b.Listeners }),
	{key: "advertised.listeners", field: func(b *Broker) any { return &b.AdvertisedListeners }, resolve: firstSet("advertised.listeners", "listeners")},
	fieldFor("inter.broker.listener.name", func(b *Broker) any { return &b.InterBrokerListenerName }),
	fieldFor("broker.rack", func(b *Broker) any { return &b.BrokerRack }),
	fieldFor("controller.quorum.voters", func(b *Broker) any { return &b.ControllerQuorumVoters }),
	fieldFor("gossip.listener", func(b *Broker) any { return &b.GossipListener }),
	fieldFor("gossip.join", func(b *Broker) any { return &b.GossipJoin }),
	fieldFor("metrics.listener", func(b *Broker) any { return &b.MetricsListener }),
	fieldFor("console.enable", func(b *Broker) any { return &b.ConsoleEnable }),
	fieldFor("console.read.only", func(b *Broker) any { return &b.ConsoleReadOnly }),
	fieldFor("metadata.log.dir", func(b *Broker) any { return &b.MetadataLogDir }),
	{key: "log.dirs", field: func(b *Broker) any { return &b.LogDirs }, resolve: firstSet("log.dirs", "log.dir")},
	fieldFor("num.partitions", func(b *Broker) any { return &b.NumPartitions }),
	fieldFor("default.replication.factor", func(b *Broker) any { return &b.DefaultReplicationFactor }),
	fieldFor("auto.create.topics.enable", func(b *Broker) any { return &b.AutoCreateTopics }),
	fieldFor("delete.topic.enable", func(b *Broker) any { return &b.DeleteTopicEnable }),
	fieldFor("min.insync.replicas", func(b *Broker) any { return &b.MinInsyncReplicas }),
	fieldFor("unclean.leader.election.enable", func(b *Broker) any { return &b.UncleanLeaderElection }),
	fieldFor("log.segment.bytes", func(b *Broker) any { return &b.LogSegmentBytes }),
	{key: "log.roll.ms", field: func(b *Broker) any { return &b.LogRollMs }, resolve: fromTopicSynonyms("segment.ms")},
	{key: "log.roll.jitter.ms", field: func(b *Broker) any { return &b.LogRollJitterMs }, resolve: fromTopicSynonyms("segment.jitter.ms")},
	{key: "log.retention.ms", field: func(b *Broker) any { return &b.LogRetentionMs }, resolve: fromTopicSynonyms("retention.ms")},
	fieldFor("log.retention.bytes", func(b *Broker) any { return &b.LogRetentionBytes }),
	fieldFor("log.retention.check.interval.ms", func(b *Broker) any { return &b.LogRetentionCheckIntervalMs }),
	fieldFor("log.segment.delete.delay.ms", func(b *Broker) any { return &b.LogSegmentDeleteDelayMs }),
	fieldFor("log.index.interval.bytes", func(b *Broker) any { return &b.LogIndexIntervalBytes }),
	fieldFor("log.index.size.max.bytes", func(b *Broker) any { return &b.LogIndexSizeMaxBytes }),
	fieldFor("log.flush.interval.messages", func(b *Broker) any { return &b.LogFlushIntervalMessages }),
	{key: "log.flush.interval.ms", field: func(b *Broker) any { return &b.LogFlushIntervalMs }, resolve: fromTopicSynonyms("flush.ms")},
	fieldFor("log.flush.offset.checkpoint.interval.ms", func(b *Broker) any { return &b.LogFlushOffsetCheckpointIntervalMs }),
	fieldFor("log.preallocate", func(b *Broker) any { return &b.LogPreallocate }),
	fieldFor("log.message.timestamp.type", func(b *Broker) any { return &b.LogMessageTimestampType }),
	fieldFor("log.message.timestamp.before.max.ms", func(b *Broker) any { return &b.LogMessageTimestampBeforeMaxMs }),
	fieldFor("log.message.timestamp.after.max.ms", func(b *Broker) any { return &b.LogMessageTimestampAfterMaxMs }),
	fieldFor("message.max.bytes", func(b *Broker) any { return &b.MessageMaxBytes }),
	fieldFor("log.cleanup.policy", func(b *Broker) any { return &b.LogCleanupPolicy }),
	fieldFor("compression.type", func(b *Broker) any { return &b.CompressionType }),
	fieldFor("log.cleaner.enable", func(b *Broker) any { return &b.LogCleanerEnable }),
	fieldFor("log.cleaner.threads", func(b *Broker) any { return &b.LogCleanerThreads }),
	fieldFor("log.cleaner.backoff.ms", func(b *Broker) any { return &b.LogCleanerBackoffMs }),
	fieldFor("log.cleaner.dedupe.buffer.size", func(b *Broker) any { return &b.LogCleanerDedupeBufferSize }),
	fieldFor("log.cleaner.io.buffer.size", func(b *Broker) any { return &b.LogCleanerIOBufferSize }),
	fieldFor("log.cleaner.io.buffer.load.factor", func(b *Broker) any { return &b.LogCleanerIOBufferLoadFactor }),
	fieldFor("log.cleaner.io.max.bytes.per.second", func(b *Broker) any { return &b.LogCleanerIOMaxBytesPerSecond }),
	fieldFor("num.recovery.threads.per.data.dir", func(b *Broker) any { return &b.NumRecoveryThreadsPerDataDir }),
	fieldFor("authorizer.class.name", func(b *Broker) any { return &b.AuthorizerClassName }),
	fieldFor("super.users", func(b *Broker) any { return &b.SuperUsers }),
	fieldFor("allow.everyone.if.no.acl.found", func(b *Broker) any { return &b.AllowEveryoneIfNoACLFound }),
	fieldFor("socket.request.max.bytes", func(b *Broker) any { return &b.SocketRequestMaxBytes }),
	fieldFor("connections.max.reauth.ms", func(b *Broker) any { return &b.ConnectionsMaxReauthMs }),
	fieldFor("connection.failed.authentication.delay.ms", func(b *Broker) any { return &b.ConnectionFailedAuthDelayMs }),
	fieldFor("connections.max.idle.ms", func(b *Broker) any { return &b.ConnectionsMaxIdleMs }),
	fieldFor("queued.max.request.bytes", func(b *Broker) any { return &b.QueuedMaxRequestBytes }),
	fieldFor("quota.window.num", func(b *Broker) any { return &b.QuotaWindowNum }),
	fieldFor("quota.window.size.seconds", func(b *Broker) any { return &b.QuotaWindowSizeSecs }),
	fieldFor("controller.quota.window.num", func(b *Broker) any { return &b.ControllerQuotaWindowNum }),
	fieldFor("controller.quota.window.size.seconds", func(b *Broker) any { return &b.ControllerQuotaWindowSizeSecs }),
	fieldFor("max.connections", func(b *Broker) any { return &b.MaxConnections }),
	fieldFor("max.connections.per.ip", func(b *Broker) any { return &b.MaxConnectionsPerIP }),
	fieldFor("max.connections.per.ip.overrides", func(b *Broker) any { return &b.MaxConnectionsPerIPOverrides }),
	fieldFor("max.connection.creation.rate", func(b *Broker) any { return &b.MaxConnectionCreationRate }),
	fieldFor("fetch.max.bytes", func(b *Broker) any { return &b.FetchMaxBytes }),
	fieldFor("max.incremental.fetch.session.cache.slots", func(b *Broker) any { return &b.MaxIncrementalFetchSessionCacheSlots }),
	fieldFor("telemetry.max.bytes", func(b *Broker) any { return &b.TelemetryMaxBytes }),
	fieldFor("request.timeout.ms", func(b *Broker) any { return &b.RequestTimeoutMs }),
	fieldFor("replica.lag.time.max.ms", func(b *Broker) any { return &b.ReplicaLagTimeMaxMs }),
	fieldFor("replica.fetch.max.bytes", func(b *Broker) any { return &b.ReplicaFetchMaxBytes }),
	fieldFor("replica.fetch.min.bytes", func(b *Broker) any { return &b.ReplicaFetchMinBytes }),
	fieldFor("replica.fetch.wait.max.ms", func(b *Broker) any { return &b.ReplicaFetchWaitMaxMs }),
	fieldFor("replica.fetch.backoff.ms", func(b *Broker) any { return &b.ReplicaFetchBackoffMs }),
	fieldFor("replica.fetch.response.max.bytes", func(b *Broker) any { return &b.ReplicaFetchResponseMaxBytes }),
	fieldFor("num.replica.fetchers", func(b *Broker) any { return &b.NumReplicaFetchers }),
	fieldFor("replica.high.watermark.checkpoint.interval.ms", func(b *Broker) any { return &b.ReplicaHighWatermarkCheckpointMs }),
	fieldFor("auto.leader.rebalance.enable", func(b *Broker) any { return &b.AutoLeaderRebalanceEnable }),
	fieldFor("leader.imbalance.check.interval.seconds", func(b *Broker) any { return &b.LeaderImbalanceCheckIntervalSeconds }),
	fieldFor("leader.imbalance.per.broker.percentage", func(b *Broker) any { return &b.LeaderImbalancePerBrokerPercentage }),
	fieldFor("controlled.shutdown.enable", func(b *Broker) any { return &b.ControlledShutdownEnable }),
	fieldFor("offsets.topic.replication.factor", func(b *Broker) any { return &b.OffsetsTopicReplicationFactor }),
	fieldFor("offsets.topic.num.partitions", func(b *Broker) any { return &b.OffsetsTopicNumPartitions }),
	fieldFor("offsets.topic.segment.bytes", func(b *Broker) any { return &b.OffsetsTopicSegmentBytes }),
	fieldFor("offsets.retention.minutes", func(b *Broker) any { return &b.OffsetsRetentionMinutes }),
	fieldFor("offsets.retention.check.interval.ms", func(b *Broker) any { return &b.OffsetsRetentionCheckMs }),
	fieldFor("offsets.commit.timeout.ms", func(b *Broker) any { return &b.OffsetsCommitTimeoutMs }),
	fieldFor("broker.heartbeat.interval.ms", func(b *Broker) any { return &b.BrokerHeartbeatIntervalMs }),
	fieldFor("broker.session.timeout.ms", func(b *Broker) any { return &b.BrokerSessionTimeoutMs }),
	fieldFor("initial.broker.registration.timeout.ms", func(b *Broker) any { return &b.InitialBrokerRegistrationTimeoutMs }),
	fieldFor("offset.metadata.max.bytes", func(b *Broker) any { return &b.OffsetMetadataMaxBytes }),
	fieldFor("group.min.session.timeout.ms", func(b *Broker) any { return &b.GroupMinSessionTimeoutMs }),
	fieldFor("group.max.session.timeout.ms", func(b *Broker) any { return &b.GroupMaxSessionTimeoutMs }),
	fieldFor("group.initial.rebalance.delay.ms", func(b *Broker) any { return &b.GroupInitialRebalanceDelayMs }),
	fieldFor("group.max.size", func(b *Broker) any { return &b.GroupMaxSize }),
	fieldFor("group.coordinator.rebalance.protocols", func(b *Broker) any { return &b.GroupRebalanceProtocols }),
	fieldFor("group.consumer.session.timeout.ms", func(b *Broker) any { return &b.ConsumerGroupSessionTimeoutMs }),
	fieldFor("group.consumer.min.session.timeout.ms", func(b *Broker) any { return &b.ConsumerGroupMinSessionTimeoutMs }),
	fieldFor("group.consumer.max.session.timeout.ms", func(b *Broker) any { return &b.ConsumerGroupMaxSessionTimeoutMs }),
	fieldFor("group.consumer.heartbeat.interval.ms", func(b *Broker) any { return &b.ConsumerGroupHeartbeatMs }),
	fieldFor("group.consumer.min.heartbeat.interval.ms", func(b *Broker) any { return &b.ConsumerGroupMinHeartbeatMs }),
	fieldFor("group.consumer.max.heartbeat.interval.ms", func(b *Broker) any { return &b.ConsumerGroupMaxHeartbeatMs }),
	fieldFor("group.consumer.max.size", func(b *Broker) any { return &b.ConsumerGroupMaxSize }),
	fieldFor("group.consumer.assignors", func(b *Broker) any { return &b.ConsumerGroupAssignors }),
	fieldFor("group.share.session.timeout.ms", func(b *Broker) any { return &b.ShareGroupSessionTimeoutMs }),
	fieldFor("group.share.min.session.timeout.ms", func(b *Broker) any { return &b.ShareGroupMinSessionTimeoutMs }),
	fieldFor("group.share.max.session.timeout.ms", func(b *Broker) any { return &b.ShareGroupMaxSessionTimeoutMs }),
	fieldFor("group.share.heartbeat.interval.ms", func(b *Broker) any { return &b.ShareGroupHeartbeatMs }),
	fieldFor("group.share.min.heartbeat.interval.ms", func(b *Broker) any { return &b.ShareGroupMinHeartbeatMs }),
	fieldFor("group.share.max.heartbeat.interval.ms", func(b *Broker) any { return &b.ShareGroupMaxHeartbeatMs }),
	fieldFor("group.share.max.size", func(b *Broker) any { return &b.ShareGroupMaxSize }),
	fieldFor("group.share.record.lock.duration.ms", func(b *Broker) any { return &b.ShareGroupRecordLockDurationMs }),
	fieldFor("group.share.min.record.lock.duration.ms", func(b *Broker) any { return &b.ShareGroupMinRecordLockDurationMs }),
	fieldFor("group.share.max.record.lock.duration.ms", func(b *Broker) any { return &b.ShareGroupMaxRecordLockDurationMs }),
	fieldFor("group.share.delivery.count.limit", func(b *Broker) any { return &b.ShareGroupDeliveryCountLimit }),
	fieldFor("group.share.min.delivery.count.limit", func(b *Broker) any { return &b.ShareGroupMinDeliveryCountLimit }),
	fieldFor("group.share.max.delivery.count.limit", func(b *Broker) any { return &b.ShareGroupMaxDeliveryCountLimit }),
	fieldFor("group.share.partition.max.record.locks", func(b *Broker) any { return &b.ShareGroupPartitionMaxRecordLocks }),
	fieldFor("group.share.min.partition.max.record.locks", func(b *Broker) any { return &b.ShareGroupMinPartitionMaxRecordLocks }),
	fieldFor("group.share.max.partition.max.record.locks", func(b *Broker) any { return &b.ShareGroupMaxPartitionMaxRecordLocks }),
	fieldFor("group.share.max.share.sessions", func(b *Broker) any { return &b.ShareGroupMaxShareSessions }),
	fieldFor("group.share.assignment.interval.ms", func(b *Broker) any { return &b.ShareGroupAssignmentIntervalMs }),
	fieldFor("group.share.min.assignment.interval.ms", func(b *Broker) any { return &b.ShareGroupMinAssignmentIntervalMs }),
	fieldFor("group.share.max.assignment.interval.ms", func(b *Broker) any { return &b.ShareGroupMaxAssignmentIntervalMs }),
	fieldFor("group.streams.session.timeout.ms", func(b *Broker) any { return &b.StreamsGroupSessionTimeoutMs }),
	fieldFor("group.streams.min.session.timeout.ms", func(b *Broker) any { return &b.StreamsGroupMinSessionTimeoutMs }),
	fieldFor("group.streams.max.session.timeout.ms", func(b *Broker) any { return &b.StreamsGroupMaxSessionTimeoutMs }),
	fieldFor("group.streams.heartbeat.interval.ms", func(b *Broker) any { return &b.StreamsGroupHeartbeatMs }),
	fieldFor("group.streams.min.heartbeat.interval.ms", func(b *Broker) any { return &b.StreamsGroupMinHeartbeatMs }),
	fieldFor("group.streams.max.heartbeat.interval.ms", func(b *Broker) any { return &b.StreamsGroupMaxHeartbeatMs }),
	fieldFor("group.streams.max.size", func(b *Broker) any { return &b.StreamsGroupMaxSize }),
	fieldFor("group.streams.num.standby.replicas", func(b *Broker) any { return &b.StreamsGroupNumStandbyReplicas }),
	fieldFor("group.streams.max.standby.replicas", func(b *Broker) any { return &b.StreamsGroupMaxStandbyReplicas }),
	fieldFor("group.streams.initial.rebalance.delay.ms", func(b *Broker) any { return &b.StreamsGroupInitialDelayMs }),
	fieldFor("group.streams.assignment.interval.ms", func(b *Broker) any { return &b.StreamsGroupAssignmentIntervalMs }),
	fieldFor("group.streams.min.assignment.interval.ms", func(b *Broker) any { return &b.StreamsGroupMinAssignmentMs }),
	fieldFor("group.streams.max.assignment.interval.ms", func(b *Broker) any { return &b.StreamsGroupMaxAssignmentMs }),
	fieldFor("group.streams.rack.aware.assignment.tags", func(b *Broker) any { return &b.StreamsGroupRackAwareTags }),
	fieldFor("share.coordinator.state.topic.num.partitions", func(b *Broker) any { return &b.ShareCoordinatorStateTopicNumPartitions }),
	fieldFor("share.coordinator.state.topic.replication.factor", func(b *Broker) any { return &b.ShareCoordinatorStateTopicReplicationFactor }),
	fieldFor("share.coordinator.state.topic.min.isr", func(b *Broker) any { return &b.ShareCoordinatorStateTopicMinIsr }),
	fieldFor("share.coordinator.state.topic.compression.codec", func(b *Broker) any { return &b.ShareCoordinatorStateTopicCompressionCodec }),
	fieldFor("share.coordinator.state.topic.segment.bytes", func(b *Broker) any { return &b.ShareCoordinatorStateTopicSegmentBytes }),
	fieldFor("share.coordinator.snapshot.update.records.per.snapshot", func(b *Broker) any { return &b.ShareCoordinatorSnapshotUpdateRecords }),
	fieldFor("share.coordinator.write.timeout.ms", func(b *Broker) any { return &b.ShareCoordinatorWriteTimeoutMs }),
	fieldFor("share.coordinator.load.buffer.size", func(b *Broker) any { return &b.ShareCoordinatorLoadBufferSize }),
	fieldFor("transaction.state.log.num.partitions", func(b *Broker) any { return &b.TransactionStateLogNumPartitions }),
	fieldFor("transaction.state.log.replication.factor", func(b *Broker) any { return &b.TransactionStateLogReplicationFactor }),
	fieldFor("transaction.state.log.min.isr", func(b *Broker) any { return &b.TransactionStateLogMinIsr }),
	fieldFor("transaction.state.log.segment.bytes", func(b *Broker) any { return &b.TransactionStateLogSegmentBytes }),
	fieldFor("transaction.max.timeout.ms", func(b *Broker) any { return &b.TransactionMaxTimeoutMs }),
	fieldFor("transactional.id.expiration.ms", func(b *Broker) any { return &b.TransactionalIDExpirationMs }),
	fieldFor("transaction.abort.timed.out.transaction.cleanup.interval.ms", func(b *Broker) any { return &b.TransactionAbortTimedOutIntervalMs }),
	fieldFor("transaction.remove.expired.transaction.cleanup.interval.ms", func(b *Broker) any { return &b.TransactionRemoveExpiredIntervalMs }),
	fieldFor("transaction.partition.verification.enable", func(b *Broker) any { return &b.TransactionPartitionVerificationEnable }),
	fieldFor("transaction.two.phase.commit.enable", func(b *Broker) any { return &b.TransactionTwoPhaseCommitEnable }),
	fieldFor("add.partitions.to.txn.retry.backoff.ms", func(b *Broker) any { return &b.AddPartitionsToTxnRetryBackoffMs }),
	fieldFor("add.partitions.to.txn.retry.backoff.max.ms", func(b *Broker) any { return &b.AddPartitionsToTxnRetryBackoffMaxMs }),
	fieldFor("producer.id.expiration.ms", func(b *Broker) any { return &b.ProducerIDExpirationMs }),
	fieldFor("producer.id.expiration.check.interval.ms", func(b *Broker) any { return &b.ProducerIDExpirationCheckIntervalMs }),
}

// staticOrDefault returns a key's static value, else its default; ok is false
// when the key is unset and has no default.
func staticOrDefault(static map[string]string, key string) (string, bool) {
	if s, ok := static[key]; ok {
		return s, true
	}
	if d := brokerKeyList[brokerKeyIndex[key]].def; d != nil {
		return *d, true
	}
	return "", false
}

func (bd binding) value(static map[string]string) string {
	if bd.resolve != nil {
		return bd.resolve(static)
	}
	s, _ := staticOrDefault(static, bd.key)
	return s
}

// Default returns the configuration of a broker started with no file and no
// overrides.
func Default() *Broker {
	b := &Broker{static: map[string]string{}}
	if err := b.apply(); err != nil {
		panic("config: defaults do not parse: " + err.Error())
	}
	return b
}

// apply sets every typed field from the static keys and defaults.
func (b *Broker) apply() error {
	for _, bd := range bindings {
		if err := assign(bd.field(b), bd.value(b.static)); err != nil {
			return &KeyError{Key: bd.key, Detail: err.Error(), Kind: ErrInvalidValue}
		}
	}
	return nil
}

// assign parses s into the field ptr points to.
func assign(ptr any, s string) error {
	switch p := ptr.(type) {
	case *string:
		*p = s
	case *bool:
		*p = s == "true"
	case *int16, *int32, *int64:
		bits := map[reflect.Kind]int{reflect.Int16: 16, reflect.Int32: 32, reflect.Int64: 64}[reflect.TypeOf(ptr).Elem().Kind()]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return fmt.Errorf("%q does not fit this field", s)
		}
		reflect.ValueOf(ptr).Elem().SetInt(n)
	case *float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		*p = f
	case *[]string:
		*p = splitList(s)
	case *[]Listener:
		ls, err := ParseListeners(s)
		if err != nil {
			return err
		}
		*p = ls
	default:
		panic(fmt.Sprintf("config: no assign for %T", ptr))
	}
	return nil
}

// format writes the field ptr points to as a config value.
func format(ptr any) string {
	switch p := ptr.(type) {
	case *[]string:
		return strings.Join(*p, ",")
	case *[]Listener:
		parts := make([]string, len(*p))
		for i, l := range *p {
			parts[i] = l.String()
		}
		return strings.Join(parts, ",")
	default:
		return fmt.Sprint(reflect.ValueOf(ptr).Elem().Interface())
	}
}

// staticValues returns the static keys, plus any typed field that was
// assigned directly and no longer matches them, reported under its key.
func (b *Broker) staticValues() map[string]string {
	out := make(map[string]string, len(b.static))
	for k, v := range b.static {
		out[k] = v
	}
	probe := &Broker{}
	for _, bd := range bindings {
		want := bd.field(probe)
		if err := assign(want, bd.value(b.static)); err != nil {
			continue
		}
		got := bd.field(b)
		if !reflect.DeepEqual(reflect.ValueOf(want).Elem().Interface(), reflect.ValueOf(got).Elem().Interface()) {
			out[bd.key] = format(got)
		}
	}
	return out
}

// Get returns the static value of key (from the file, an override or Set, or
// a typed field assigned directly) and whether it is set.
func (b *Broker) Get(key string) (string, bool) {
	s, ok := b.staticValues()[key]
	return s, ok
}

// Set validates value for key, records it as a static value and updates the
// typed fields. Tests use it to shrink segments or timeouts.
func (b *Broker) Set(key, value string) error {
	return b.setFrom(key, value, "")
}

func (b *Broker) setFrom(key, value, where string) error {
	norm, err := checkBrokerValue(key, value)
	if err != nil {
		err.Where = where
		return err
	}
	// Fold in fields assigned directly, so apply does not undo them.
	b.static = b.staticValues()
	b.static[key] = norm
	return b.apply()
}

// checkBrokerValue normalizes and checks one broker key's value.
func checkBrokerValue(key, value string) (string, *KeyError) {
	k, ok := lookupBrokerKey(key)
	if !ok {
		return "", &KeyError{Key: key, Kind: ErrUnknownKey}
	}
	norm, bad := checkValue(k.typ, k.checks, value)
	if bad != "" {
		return "", &KeyError{Key: key, Detail: bad, Kind: ErrInvalidValue}
	}
	return norm, nil
}

func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// ParseListeners parses a comma list of NAME://host:port. The host may be
// empty (all interfaces) or a bracketed IPv6 address. Names must be unique.
func ParseListeners(s string) ([]Listener, error) {
	var out []Listener
	seen := map[string]bool{}
	for _, item := range splitList(s) {
		name, rest, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("listener %q is not NAME://host:port", item)
		}
		for _, r := range name {
			if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				return nil, fmt.Errorf("listener %q: name %q may hold only letters, digits, _ and -", item, name)
			}
		}
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			return nil, fmt.Errorf("listener %q has no port", item)
		}
		host, portStr := rest[:i], rest[i+1:]
		if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
			host = host[1 : len(host)-1]
		} else if strings.ContainsAny(host, "[]:") {
			return nil, fmt.Errorf("listener %q: IPv6 hosts must be in brackets", item)
		}
		port, err := strconv.ParseInt(portStr, 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("listener %q: port %q is not 0-65535", item, portStr)
		}
		name = strings.ToUpper(name)
		if seen[name] {
			return nil, fmt.Errorf("listener name %s appears twice", name)
		}
		seen[name] = true
		out = append(out, Listener{Name: name, Host: host, Port: int32(port)})
	}
	return out, nil
}

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func parseProtocolMap(s string) (map[string]string, error) {
	m := map[string]string{}
	for _, item := range splitList(s) {
		name, proto, ok := strings.Cut(item, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not LISTENER_NAME:PROTOCOL", item)
		}
		proto = strings.ToUpper(strings.TrimSpace(proto))
		if err := oneOf(securityProtocols...)(proto); err != "" {
			return nil, fmt.Errorf("listener %s: %s", name, err)
		}
		m[strings.ToUpper(strings.TrimSpace(name))] = proto
	}
	return m, nil
}

// ControllerListenerNames returns controller.listener.names, upper case;
// CONTROLLER when unset. Those listeners carry raft, not Kafka clients.
func (b *Broker) ControllerListenerNames() []string {
	s, ok := b.Get("controller.listener.names")
	if !ok || strings.TrimSpace(s) == "" {
		return []string{"CONTROLLER"}
	}
	var names []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.ToUpper(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	return names
}

// SecurityProtocol returns the security protocol of the named listener from
// listener.security.protocol.map.
func (b *Broker) SecurityProtocol(listener string) string {
	s, _ := staticOrDefault(b.staticValues(), "listener.security.protocol.map")
	m, _ := parseProtocolMap(s)
	return m[strings.ToUpper(listener)]
}

// Validate checks what no single key can: listener names against each other
// and the protocol map, broker.id against node.id, bounds that depend on two
// keys, and that every log dir can be created and written. It is the only
// function in this package that touches the disk.
func (b *Broker) Validate() error {
	static := b.staticValues()
	invalid := func(key, format string, args ...any) error {
		return &KeyError{Key: key, Detail: fmt.Sprintf(format, args...), Kind: ErrInvalidValue}
	}
	if b.NodeID < 0 {
		return invalid("node.id", "%d is out of range: must be at least 0", b.NodeID)
	}
	if s, ok := static["broker.id"]; ok && s != "-1" && s != strconv.Itoa(int(b.NodeID)) {
		return invalid("broker.id", "%s differs from node.id %d", s, b.NodeID)
	}
	if len(b.Listeners) == 0 {
		return invalid("listeners", "must not be empty")
	}
	protoMap, _ := staticOrDefault(static, "listener.security.protocol.map")
	protocols, err := parseProtocolMap(protoMap)
	if err != nil {
		return invalid("listener.security.protocol.map", "%v", err)
	}
	// As in KRaft, a controller listener missing from the map speaks
	// PLAINTEXT, so listeners = "PLAINTEXT://…,CONTROLLER://…" needs no map.
	for _, n := range b.ControllerListenerNames() {
		if protocols[n] == "" {
			protocols[n] = "PLAINTEXT"
		}
	}
	names := map[string]bool{}
	for _, l := range b.Listeners {
		if protocols[l.Name] == "" {
			return invalid("listeners", "listener %s has no entry in listener.security.protocol.map", l.Name)
		}
		names[l.Name] = true
	}
	for _, l := range b.AdvertisedListeners {
		if !names[l.Name] {
			return invalid("advertised.listeners", "listener %s is not in listeners", l.Name)
		}
		if l.Host == "0.0.0.0" || l.Host == "::" {
			return invalid("advertised.listeners", "cannot advertise the meta-address %s for listener %s", l.Host, l.Name)
		}
	}
	if n := b.InterBrokerListenerName; n != "" && !names[strings.ToUpper(n)] {
		return invalid("inter.broker.listener.name", "listener %s is not in listeners", n)
	}
	if err := b.validateSecurity(static, protocols); err != nil {
		return err
	}
	if b.GroupMinSessionTimeoutMs > b.GroupMaxSessionTimeoutMs {
		return invalid("group.min.session.timeout.ms", "%d is larger than group.max.session.timeout.ms %d", b.GroupMinSessionTimeoutMs, b.GroupMaxSessionTimeoutMs)
	}
	// Kafka's GroupCoordinatorConfig checks: each consumer group timing
	// lies within its own bounds, and a member heartbeats more often than
	// its session expires.
	for _, c := range []struct {
		key, minKey, maxKey string
		value, lo, hi       int32
	}{
		{"group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms", b.ConsumerGroupSessionTimeoutMs, b.ConsumerGroupMinSessionTimeoutMs, b.ConsumerGroupMaxSessionTimeoutMs},
		{"group.consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms", b.ConsumerGroupHeartbeatMs, b.ConsumerGroupMinHeartbeatMs, b.ConsumerGroupMaxHeartbeatMs},
		{"group.share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms", b.ShareGroupSessionTimeoutMs, b.ShareGroupMinSessionTimeoutMs, b.ShareGroupMaxSessionTimeoutMs},
		{"group.share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms", b.ShareGroupHeartbeatMs, b.ShareGroupMinHeartbeatMs, b.ShareGroupMaxHeartbeatMs},
		{"group.streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms", b.StreamsGroupSessionTimeoutMs, b.StreamsGroupMinSessionTimeoutMs, b.StreamsGroupMaxSessionTimeoutMs},
		{"group.streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms", b.StreamsGroupHeartbeatMs, b.StreamsGroupMinHeartbeatMs, b.StreamsGroupMaxHeartbeatMs},
		{"group.streams.num.standby.replicas", "group.streams.num.standby.replicas", "group.streams.max.standby.replicas", b.StreamsGroupNumStandbyReplicas, 0, b.StreamsGroupMaxStandbyReplicas},
	} {
		switch {
		case c.lo > c.hi:
			return invalid(c.minKey, "%d is larger than %s %d", c.lo, c.maxKey, c.hi)
		case c.value < c.lo:
			return invalid(c.key, "%d is smaller than %s %d", c.value, c.minKey, c.lo)
		case c.value > c.hi:
			return invalid(c.key, "%d is larger than %s %d", c.value, c.maxKey, c.hi)
		}
	}
	// A broker heartbeats more often than its session expires, as Kafka's
	// KafkaConfig checks.
	if b.BrokerHeartbeatIntervalMs >= b.BrokerSessionTimeoutMs {
		return invalid("broker.heartbeat.interval.ms", "%d must be smaller than broker.session.timeout.ms %d", b.BrokerHeartbeatIntervalMs, b.BrokerSessionTimeoutMs)
	}
	if b.ConsumerGroupHeartbeatMs >= b.ConsumerGroupSessionTimeoutMs {
		return invalid("group.consumer.heartbeat.interval.ms", "%d must be smaller than group.consumer.session.timeout.ms %d", b.ConsumerGroupHeartbeatMs, b.ConsumerGroupSessionTimeoutMs)
	}
	if b.ShareGroupHeartbeatMs >= b.ShareGroupSessionTimeoutMs {
		return invalid("group.share.heartbeat.interval.ms", "%d must be smaller than group.share.session.timeout.ms %d", b.ShareGroupHeartbeatMs, b.ShareGroupSessionTimeoutMs)
	}
	if err := b.validateStreamsGroupKeys(); err != nil { // group_streams.go
		return err
	}
	if b.StreamsGroupHeartbeatMs >= b.StreamsGroupSessionTimeoutMs {
		return invalid("group.streams.heartbeat.interval.ms", "%d must be smaller than group.streams.session.timeout.ms %d", b.StreamsGroupHeartbeatMs, b.StreamsGroupSessionTimeoutMs)
	}
	if err := b.validateShareGroupKeys(); err != nil {
		return err
	}
	// Kafka's KafkaConfig checks: a budget smaller than the largest frame
	// could never serve that frame, and a per-IP limit of 0 would refuse
	// every connection without an override.
	if q := b.QueuedMaxRequestBytes; q > 0 && q < int64(b.SocketRequestMaxBytes) {
		return invalid("queued.max.request.bytes", "%d must be at least socket.request.max.bytes %d (or -1 for unbounded)", q, b.SocketRequestMaxBytes)
	}
	if err := b.cleanerSettingsStatic().check(); err != nil {
		return err
	}
	if b.MaxConnectionsPerIP == 0 && strings.TrimSpace(b.MaxConnectionsPerIPOverrides) == "" {
		return invalid("max.connections.per.ip", "can be 0 only if max.connections.per.ip.overrides is set")
	}
	for key, rf := range map[string]int16{
		"default.replication.factor":               b.DefaultReplicationFactor,
		"offsets.topic.replication.factor":         b.OffsetsTopicReplicationFactor,
		"transaction.state.log.replication.factor": b.TransactionStateLogReplicationFactor,
	} {
		if rf < 1 {
			return invalid(key, "%d is out of range: must be at least 1", rf)
		}
	}
	return checkLogDirs(b.LogDirs)
}

// checkLogDirs creates each log dir and writes and removes a probe file in
// it. Only the first directory (it holds the metadata log) must pass, as
// Kafka requires of metadata.log.dir: another one that fails is left to the
// broker, which starts with it offline (JBOD, KIP-858), as Kafka's
// LogManager does with a directory that fails at start.
func checkLogDirs(dirs []string) error {
	logDirErr := func(format string, args ...any) error {
		return &KeyError{Key: "log.dirs", Detail: fmt.Sprintf(format, args...), Kind: ErrInvalidValue}
	}
	if len(dirs) == 0 {
		return logDirErr("no log directory configured")
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return logDirErr("%s: %v", dir, err)
		}
		if seen[abs] {
			return logDirErr("%s is listed twice", dir)
		}
		seen[abs] = true
	}
	for i, dir := range dirs {
		if err := probeLogDir(dir); err != nil {
			if i == 0 {
				return logDirErr("%v", err)
			}
		}
	}
	return nil
}

// probeLogDir creates dir and writes and removes a probe file in it.
func probeLogDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %v", dir, unwrapPath(err))
	}
	f, err := os.CreateTemp(dir, ".sluice-probe-*")
	if err != nil {
		return fmt.Errorf("cannot write in %s: %v", dir, unwrapPath(err))
	}
	name := f.Name()
	_, werr := f.Write([]byte("probe"))
	cerr := f.Close()
	os.Remove(name)
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("cannot write in %s: %v", dir, unwrapPath(err))
	}
	return nil
}

// unwrapPath drops the *PathError wrapper, whose path the message already has.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// ConnectionLimits returns max.connections, max.connections.per.ip and
// max.connections.per.ip.overrides in force, given the dynamic broker
// configs stored in metadata for this broker and for the cluster: the
// per-broker value, else the cluster default, else the static one. The
// three keys are cluster-wide dynamic, as in Kafka.
func (b *Broker) ConnectionLimits(perBroker, clusterDefault map[string]string) (maxConns, perIP int32, overrides string) {
	maxConns, perIP, overrides = b.MaxConnections, b.MaxConnectionsPerIP, b.MaxConnectionsPerIPOverrides
	dynamic := func(key string) (string, bool) {
		if v, ok := perBroker[key]; ok {
			return v, true
		}
		v, ok := clusterDefault[key]
		return v, ok
	}
	for key, dst := range map[string]*int32{"max.connections": &maxConns, "max.connections.per.ip": &perIP} {
		if v, ok := dynamic(key); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil && n >= 0 {
				*dst = int32(n)
			}
		}
	}
	if v, ok := dynamic("max.connections.per.ip.overrides"); ok && validConnOverrides(v) == "" {
		overrides = v
	}
	return maxConns, perIP, overrides
}

// validConnOverrides checks max.connections.per.ip.overrides: comma-
// separated host:count pairs, count at least 0, an IPv6 host in brackets.
func validConnOverrides(s string) string {
	for _, item := range splitList(s) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return fmt.Sprintf("%q is not host:count", item)
		}
		host := item[:i]
		if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
			return fmt.Sprintf("%q: an IPv6 host must be in brackets", item)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(item[i+1:])); err != nil || n < 0 {
			return fmt.Sprintf("%q: the count must be a number of at least 0", item)
		}
	}
	return ""
}
