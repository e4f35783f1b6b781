// Package config holds sluice's broker configuration: the table of Kafka
// broker property names sluice understands, loading them from a TOML file and
// --override flags, validating them, and the topic-config table used by
// CreateTopics, AlterConfigs and DescribeConfigs.
//
// # File format
//
// sluice.toml uses Kafka's property names as they are. Kafka names are valid
// TOML dotted keys, so
//
//	num.partitions = 3
//	log.retention.hours = 24
//	"log.dirs" = ["/data/a", "/data/b"]
//
// all work: nested tables are flattened back to dotted names, quoted keys are
// taken as written, and a TOML array is the same as Kafka's comma list. TOML
// cannot hold both a value and a table at one name, so when two Kafka names
// nest (max.connections and max.connections.per.ip, broker.id and
// broker.id.generation.enable) quote the longer one:
// "max.connections.per.ip" = 100. Overrides are key=value strings with the
// value written as in server.properties; they win over the file.
//
// # Errors
//
// Every problem is reported as one error that names the key and where it came
// from, for example
//
//	config: log.segment.bytes: "abc" is not a valid int (in sluice.toml)
//	config: unknown key "log.segmnt.bytes" (in sluice.toml)
//
// Errors wrap ErrUnknownKey, ErrInvalidValue, ErrNotDynamic or
// ErrPerBrokerOnly so callers map them with errors.Is. Kafka answers a bad
// broker AlterConfigs with INVALID_REQUEST (KAFKA-13609 keeps it that way for
// compatibility) and a bad topic config with INVALID_CONFIG.
//
// Unknown keys are an error. Every broker and topic config key Kafka 4.4
// defines is in the table, with Kafka's type, default and update mode, and
// one of three statuses (KEYS.md lists them all; `go generate ./config`
// rewrites it from the table):
//
//   - supported: enforced.
//   - no effect in sluice (inert): accepted, stored and described, for keys
//     whose feature cannot apply in sluice — thread pools and purgatories of
//     a design sluice does not have, Kerberos (no SASL/GSSAPI), KRaft's own
//     quorum and metadata log (sluice uses hashicorp/raft).
//   - not supported yet: described with Kafka's default; any other value is
//     refused at start-up and by AlterConfigs / IncrementalAlterConfigs
//     with "not supported yet (<feature>; issue N)", or "no issue filed
//     yet" where no issue plans the feature (tiered storage, KIP-405,
//     Java plugin classes such as metric.reporters, and Kafka's windowed
//     metric sensors, among them).
//
// The log cleaner's keys (log.cleaner.threads, .dedupe.buffer.size,
// .io.buffer.size, .io.buffer.load.factor, .io.max.bytes.per.second,
// .backoff.ms) are cluster-wide dynamic, as in Kafka (cleaner.go resolves
// them; broker/cleaner.go applies a change without a restart). A change is
// checked as Kafka's LogCleaner.validateReconfiguration and KafkaConfig
// do: threads at least 1, at most double and at least half the running
// count, and more than 1 MiB of key map per thread. sluice refuses 0
// threads, a load factor outside (0, 1] and a non-positive byte rate,
// which Kafka's key definitions accept but its cleaner cannot run with.
// log.cleaner.io.buffer.size sizes the write buffer only (the key's doc
// says why).
//
// A few keys are sluice's own or ones Kafka 4.4 no longer lists (gossip.*,
// max.broker.partitions, log.message.downconversion.enable); KEYS.md marks
// them "sluice only". Where sluice applies a key only at start although
// Kafka can alter it dynamically (listeners, listener.security.protocol.map,
// producer.id.expiration.ms), it is read-only here, so an AlterConfigs that
// would change nothing is refused.
//
// # Defaults
//
// Defaults are Kafka 4.4's except where a developer running one node with no
// file needs something else:
//
//   - node.id 1 (Kafka requires it), process.roles "broker,controller".
//   - listeners PLAINTEXT://127.0.0.1:9092 (Kafka binds all interfaces).
//   - log.dir ./sluice-data (Kafka /tmp/kafka-logs); log.dirs, when set, wins.
//   - offsets.topic.replication.factor is Kafka's 3, but __consumer_offsets
//     is created with no more replicas than there are live brokers (Kafka
//     refuses to create it instead), so one node needs no setting and a
//     cluster gets min(3, brokers).
//   - transaction.state.log.replication.factor (3) and
//     transaction.state.log.min.isr (2) are Kafka's, capped the same way when
//     __transaction_state is created: min(3, brokers) replicas and a
//     min.insync.replicas no larger than that.
//   - transaction.abort.timed.out.transaction.cleanup.interval.ms is 1000
//     (Kafka 10000), so a transaction left open by a dead producer is aborted
//     within a second of its transaction.timeout.ms.
//
// Kafka 4.0 (KIP-1030) requires log.segment.bytes >= 1 MiB and Kafka 4.1 puts
// the same floor on the topic's segment.bytes, with an internal key
// (internal.segment.bytes) for tests. sluice instead accepts any segment size
// of at least MinSegmentBytes (14, Kafka's old floor) for both, so tests and
// local experiments can roll segments after a few records without a hidden
// key.
//
// message.downconversion.enable and log.message.downconversion.enable are
// accepted and ignored: sluice never down-converts (Kafka 4 dropped message
// formats v0 and v1, KIP-724, and Kafka 4.4 the keys themselves).
//
// group.coordinator.rebalance.protocols defaults to classic,consumer,streams,
// as in Kafka 4.4.
//
// # Sources
//
// DescribeConfigs sources and types use Kafka's numbering (kmsg.ConfigSource,
// kmsg.ConfigType); the constants here mirror them so this package does not
// depend on the protocol library. A broker key's value comes from, in order:
// the per-broker dynamic config, the cluster-default dynamic config, the file
// or an override (static), Kafka's or sluice's default. A topic config's value
// comes from the topic itself, else from its broker synonyms in that same
// source order.
package config

//go:generate go test -run TestKeysDocUpToDate -count=1 . -args -update
