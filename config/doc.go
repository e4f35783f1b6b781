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
// Unknown keys are an error. Kafka keys sluice accepts but does not act on
// (thread counts, socket buffers, KRaft settings, most group and transaction
// tuning) are listed in the table with Kafka's defaults, so they load without
// complaint and DescribeConfigs reports them.
//
// # Defaults
//
// Defaults are Kafka 4.0's except where a developer running one node with no
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
// formats v0 and v1, KIP-724).
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
