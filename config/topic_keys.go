package config

import (
	"slices"
	"strconv"
)

// synonym is a broker key that supplies a topic config's default, with the
// factor that converts its unit to the topic config's (hours to ms, ...).
type synonym struct {
	name  string
	scale int64 // 0 or 1: same unit
}

const (
	minuteMs = 60 * 1000
	hourMs   = 60 * minuteMs
)

// TopicKey describes one topic config.
type TopicKey struct {
	Name string
	// BrokerKey is the broker key whose value is the topic's default
	// (retention.ms <- log.retention.ms); empty when there is none.
	BrokerKey string
	// Synonyms are every broker key that can supply the default, in
	// precedence order (log.retention.ms, log.retention.minutes, log.retention.hours).
	Synonyms []string
	Type     int8 // TypeBoolean, TypeLong, ...
	Default  string
	Doc      string
	// Status is what sluice does with the key; Issue (for NotYet, 0 when
	// none is filed) and Why say more. A key with a broker synonym takes
	// its synonym's status unless set here.
	Status Status
	Issue  int
	Why    string
	// Extra is non-empty for a key Kafka 4.4 does not have: why sluice
	// keeps it.
	Extra string

	synonyms     []synonym
	checks       []checker
	accept       []string // NotYet: values besides Default that are accepted
	negUnlimited bool     // a negative broker value means unlimited (-1)
}

func tk(name string, typ int8, def string, syns []synonym, doc string, checks ...checker) TopicKey {
	k := TopicKey{Name: name, Type: typ, Default: def, Doc: doc, synonyms: syns, checks: checks}
	for _, s := range syns {
		k.Synonyms = append(k.Synonyms, s.name)
	}
	if len(syns) > 0 {
		k.BrokerKey = syns[0].name
	}
	return k
}

func same(name string) []synonym { return []synonym{{name: name}} }

// later marks a topic key without a broker synonym refused until issue
// builds what; keys with a synonym inherit it in init.
func (k TopicKey) later(issue int, what string) TopicKey {
	k.Status, k.Issue, k.Why = NotYet, issue, what
	return k
}

// topicKeyList is the table of topic configs: Kafka 4.4's names, types,
// defaults and ranges (segment.bytes aside, see MinSegmentBytes), plus
// message.downconversion.enable, which Kafka 4.4 dropped. A key whose
// feature sluice does not have yet is described with its default and only
// that is accepted (its broker synonym's status, or later).
var topicKeyList = []TopicKey{
	tk("cleanup.policy", TypeList, "delete", same("log.cleanup.policy"), "delete, compact, or both.", eachOf("compact", "delete")),
	tk("compression.gzip.level", TypeInt, "-1", same("compression.gzip.level"), "gzip level of batches the leader recompresses (-1: gzip's default, 6).", gzipLevel),
	tk("compression.lz4.level", TypeInt, "9", same("compression.lz4.level"), "lz4 level of batches the leader recompresses: 1 is lz4's fast compressor, 2 to 17 its high-compression levels (sluice's encoder stops at 9).", between(1, 17)),
	tk("compression.type", TypeString, "producer", same("compression.type"), "Codec of stored batches: producer keeps the producer's; any other makes the leader rewrite each batch in another codec with this one (records, producer ids, sequences and timestamps unchanged), except uncompressed transaction markers.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	tk("compression.zstd.level", TypeInt, "3", same("compression.zstd.level"), "zstd level of batches the leader recompresses (sluice's encoder maps levels to four speeds: below 3, 3 to 5, 6 to 9, 10 and up).", between(-131072, 22)),
	tk("delete.retention.ms", TypeLong, "86400000", same("log.cleaner.delete.retention.ms"), "Keep tombstones this long in a compacted topic.", atLeast(0)),
	tk("file.delete.delay.ms", TypeLong, "60000", same("log.segment.delete.delay.ms"), "Wait before deleting a segment's files.", atLeast(0)),
	tk("flush.messages", TypeLong, maxInt64, same("log.flush.interval.messages"), "fsync the log when this many records were appended since its last flush (leader and follower appends).", atLeast(1)),
	tk("flush.ms", TypeLong, maxInt64, []synonym{{name: "log.flush.interval.ms"}, {name: "log.flush.scheduler.interval.ms"}}, "fsync the log when its last flush is this old; checked every log.flush.scheduler.interval.ms, at least once a second.", atLeast(0)),
	tk("follower.replication.throttled.replicas", TypeList, "", nil, "Replicas (partition:broker, or *) whose follower fetches are throttled.", validThrottledReplicas),
	tk("index.interval.bytes", TypeInt, "4096", same("log.index.interval.bytes"), "Bytes of records between offset index entries.", atLeast(0)),
	tk("leader.replication.throttled.replicas", TypeList, "", nil, "Replicas (partition:broker, or *) whose leader-side replication is throttled.", validThrottledReplicas),
	tk("max.compaction.lag.ms", TypeLong, maxInt64, same("log.cleaner.max.compaction.lag.ms"), "Records older than this are compacted even below the dirty ratio.", atLeast(1)),
	tk("max.message.bytes", TypeInt, "1048588", same("message.max.bytes"), "Largest record batch accepted.", atLeast(0)),
	tk("local.retention.bytes", TypeLong, "-2", same("log.local.retention.bytes"), "Bytes of a tiered partition kept on local disk; -2: retention.bytes."),
	tk("local.retention.ms", TypeLong, "-2", same("log.local.retention.ms"), "Age up to which a tiered partition's segments stay on local disk; -2: retention.ms."),
	tk("errors.deadletterqueue.group.enable", TypeBoolean, "false", nil, "Enable this topic to be used as a dead-letter queue for share groups (KIP-1191): when false (the default), share groups' writes to it are refused."),
	tk("max.decompressed.message.bytes", TypeInt, "2147483639", same("max.decompressed.message.bytes"), "Largest decompressed size of a record batch accepted."),
	tk("message.downconversion.enable", TypeBoolean, "true", same("log.message.downconversion.enable"), "Down-convert fetched batches for old clients."),
	tk("message.timestamp.after.max.ms", TypeLong, "3600000", same("log.message.timestamp.after.max.ms"), "Reject a batch whose timestamp is further than this in the future.", atLeast(0)),
	tk("message.timestamp.before.max.ms", TypeLong, maxInt64, same("log.message.timestamp.before.max.ms"), "Reject a batch whose timestamp is further than this in the past.", atLeast(0)),
	tk("message.timestamp.type", TypeString, "CreateTime", same("log.message.timestamp.type"), "CreateTime keeps the producer's timestamp; LogAppendTime replaces it.", oneOf("CreateTime", "LogAppendTime")),
	tk("min.cleanable.dirty.ratio", TypeDouble, "0.5", same("log.cleaner.min.cleanable.ratio"), "Dirty share of a log that triggers cleaning.", between(0, 1)),
	tk("min.compaction.lag.ms", TypeLong, "0", same("log.cleaner.min.compaction.lag.ms"), "Records younger than this are not compacted.", atLeast(0)),
	tk("min.insync.replicas", TypeInt, "1", same("min.insync.replicas"), "Fewest in-sync replicas an acks=all produce needs.", atLeast(1)),
	tk("preallocate", TypeBoolean, "false", same("log.preallocate"), "Preallocate segment files."),
	tk("remote.copy.lag.bytes", TypeLong, "-1", same("log.remote.copy.lag.bytes"), "Bytes a tiered partition may hold before its segments must be copied to remote storage."),
	tk("remote.copy.lag.ms", TypeLong, "0", same("log.remote.copy.lag.ms"), "Time a segment may wait before it must be copied to remote storage."),
	tk("remote.log.copy.disable", TypeBoolean, "false", nil, "Stop copying this topic's segments to remote storage.").later(0, "tiered storage (KIP-405)"),
	tk("remote.log.delete.on.disable", TypeBoolean, "false", nil, "Delete the remote segments when tiered storage is turned off for the topic.").later(0, "tiered storage (KIP-405)"),
	tk("remote.storage.enable", TypeBoolean, "false", nil, "Tier this topic's segments to remote storage (KIP-405).").later(0, "tiered storage (KIP-405)"),
	tk("retention.bytes", TypeLong, "-1", same("log.retention.bytes"), "Delete old segments while a partition is larger than this; -1 is unlimited."),
	{}, // retention.ms, filled in init
	tk("segment.bytes", TypeInt, "1073741824", same("log.segment.bytes"), "Largest segment file before a new one is rolled.", atLeast(MinSegmentBytes)),
	tk("segment.index.bytes", TypeInt, "10485760", same("log.index.size.max.bytes"), "Size of a segment's offset index.", atLeast(4)),
	tk("segment.jitter.ms", TypeLong, "0", []synonym{{name: "log.roll.jitter.ms"}, {name: "log.roll.jitter.hours", scale: hourMs}}, "Most random time subtracted from segment.ms.", atLeast(0)),
	tk("segment.ms", TypeLong, "604800000", []synonym{{name: "log.roll.ms"}, {name: "log.roll.hours", scale: hourMs}}, "Roll a new segment after this long.", atLeast(1)),
	tk("unclean.leader.election.enable", TypeBoolean, "false", same("unclean.leader.election.enable"), "Elect an out-of-sync replica when no in-sync one is alive, losing data."),
}

func init() {
	ret := tk("retention.ms", TypeLong, "604800000",
		[]synonym{{name: "log.retention.ms"}, {name: "log.retention.minutes", scale: minuteMs}, {name: "log.retention.hours", scale: hourMs}},
		"Delete segments older than this; -1 keeps them forever.", atLeast(-1))
	ret.negUnlimited = true
	i := slices.IndexFunc(topicKeyList, func(k TopicKey) bool { return k.Name == "" })
	topicKeyList[i] = ret
	brokerKeyList = append(brokerKeyList, kafkaOnlyKeys...)
	for i := range brokerKeyList {
		k := &brokerKeyList[i]
		if k.typ == TypePassword {
			k.sensitive = true
		}
		brokerKeyIndex[k.name] = i
	}
	for i := range topicKeyList {
		k := &topicKeyList[i]
		topicKeyIndex[k.Name] = i
		if k.BrokerKey != "" && k.Status == Supported {
			b := brokerKeyList[brokerKeyIndex[k.BrokerKey]]
			k.Status, k.Issue, k.Why, k.accept = b.status, b.issue, b.why, b.accept
			if b.extra != "" {
				k.Extra = "Kafka 4.4 dropped it with its broker synonym " + b.name
			}
		}
		if k.Status == NotYet {
			k.checks = append(slices.Clone(k.checks), notYet(k.Default, notYetWhat(k.Issue, k.Why), k.accept...))
		}
	}
}

var (
	topicKeyIndex  = map[string]int{}
	brokerKeyIndex = map[string]int{}
)

// TopicKeys returns every topic config sluice knows, sorted by name. The
// slice is a fresh copy the caller may keep.
func TopicKeys() []TopicKey {
	return slices.Clone(topicKeyList)
}

// ValidateTopicConfig checks one topic config as CreateTopics and
// AlterConfigs receive it. The error wraps ErrUnknownKey or ErrInvalidValue;
// the broker answers both with INVALID_CONFIG and the error's text.
func ValidateTopicConfig(key, value string) error {
	i, ok := topicKeyIndex[key]
	if !ok {
		return &KeyError{Key: key, Kind: ErrUnknownKey}
	}
	k := topicKeyList[i]
	if _, bad := checkValue(k.Type, k.checks, value); bad != "" {
		return &KeyError{Key: key, Detail: bad, Kind: ErrInvalidValue}
	}
	return nil
}

// convert turns a broker synonym's value into the topic config's unit.
func (k *TopicKey) convert(s synonym, value string) string {
	if s.scale <= 1 && !k.negUnlimited {
		return value
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return value
	}
	if s.scale > 1 {
		n *= s.scale
	}
	if k.negUnlimited && n < 0 {
		n = -1
	}
	return strconv.FormatInt(n, 10)
}
