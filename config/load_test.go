package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func writeTOML(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	b := Default()
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"node.id", b.NodeID, int32(1)},
		{"listeners", b.Listeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		{"advertised.listeners", b.AdvertisedListeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		{"log.dirs", b.LogDirs, []string{"./sluice-data"}},
		{"num.partitions", b.NumPartitions, int32(1)},
		{"default.replication.factor", b.DefaultReplicationFactor, int16(1)},
		{"auto.create.topics.enable", b.AutoCreateTopics, true},
		{"delete.topic.enable", b.DeleteTopicEnable, true},
		{"min.insync.replicas", b.MinInsyncReplicas, int32(1)},
		{"unclean.leader.election.enable", b.UncleanLeaderElection, false},
		{"log.segment.bytes", b.LogSegmentBytes, int64(1 << 30)},
		{"log.roll", b.LogRollMs, int64(168 * hourMs)},
		{"log.retention", b.LogRetentionMs, int64(168 * hourMs)},
		{"log.retention.bytes", b.LogRetentionBytes, int64(-1)},
		{"log.retention.check.interval.ms", b.LogRetentionCheckIntervalMs, int64(300000)},
		{"log.segment.delete.delay.ms", b.LogSegmentDeleteDelayMs, int64(60000)},
		{"log.index.interval.bytes", b.LogIndexIntervalBytes, int32(4096)},
		{"log.index.size.max.bytes", b.LogIndexSizeMaxBytes, int32(10485760)},
		{"log.message.timestamp.type", b.LogMessageTimestampType, "CreateTime"},
		{"message.max.bytes", b.MessageMaxBytes, int32(1048588)},
		{"log.cleanup.policy", b.LogCleanupPolicy, "delete"},
		{"socket.request.max.bytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"log.flush.offset.checkpoint.interval.ms", b.LogFlushOffsetCheckpointIntervalMs, int64(60000)},
		{"log.flush.interval.ms", b.LogFlushIntervalMs, int64(9223372036854775807)},
		{"offsets.topic.replication.factor", b.OffsetsTopicReplicationFactor, int16(3)},
		{"offsets.topic.num.partitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"transaction.state.log.num.partitions", b.TransactionStateLogNumPartitions, int32(50)},
		{"replica.lag.time.max.ms", b.ReplicaLagTimeMaxMs, int64(30000)},
		{"group.consumer.assignors", b.ConsumerGroupAssignors, []string{"range", "uniform"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if l, err := Load("", nil); err != nil || !reflect.DeepEqual(l, Default()) {
		t.Errorf("Load(\"\", nil) = %+v, %v; want Default()", l, err)
	}
}

func TestEveryDefaultIsValid(t *testing.T) {
	for _, k := range brokerKeyList {
		if k.def == nil {
			continue
		}
		if _, err := checkBrokerValue(k.name, *k.def); err != nil {
			t.Errorf("broker key default: %v", err)
		}
	}
	for _, k := range topicKeyList {
		if err := ValidateTopicConfig(k.Name, k.Default); err != nil {
			t.Errorf("topic key default: %v", err)
		}
		for _, s := range k.Synonyms {
			if _, ok := brokerKeyIndex[s]; !ok {
				t.Errorf("topic key %s: synonym %s is not a broker key", k.Name, s)
			}
		}
	}
	for _, bd := range bindings {
		if _, ok := brokerKeyIndex[bd.key]; !ok {
			t.Errorf("binding %s is not a broker key", bd.key)
		}
	}
	// The topic defaults must agree with what the broker defaults resolve to.
	eff := Default().EffectiveTopicConfig(nil, nil, nil)
	for _, k := range topicKeyList {
		if eff[k.Name] != k.Default {
			t.Errorf("topic %s: default %q, broker resolves %q", k.Name, k.Default, eff[k.Name])
		}
	}
}

func TestLoadTOML(t *testing.T) {
	tests := []struct {
		name      string
		toml      string
		overrides []string
		check     func(t *testing.T, b *Broker)
	}{
		{
			name: "dotted keys",
			toml: "num.partitions = 3\nmin.insync.replicas = 2\nunclean.leader.election.enable = true\nlog.segment.bytes = 1024\n",
			check: func(t *testing.T, b *Broker) {
				if b.NumPartitions != 3 || b.MinInsyncReplicas != 2 || !b.UncleanLeaderElection || b.LogSegmentBytes != 1024 {
					t.Errorf("got %d %d %v %d", b.NumPartitions, b.MinInsyncReplicas, b.UncleanLeaderElection, b.LogSegmentBytes)
				}
			},
		},
		{
			name: "quoted keys and table headers",
			toml: "\"log.dirs\" = \"/a, /b\"\n\"node.id\" = 7\n[log.retention]\nbytes = 100\n",
			check: func(t *testing.T, b *Broker) {
				if !reflect.DeepEqual(b.LogDirs, []string{"/a", "/b"}) || b.NodeID != 7 || b.LogRetentionBytes != 100 {
					t.Errorf("got %v %d %d", b.LogDirs, b.NodeID, b.LogRetentionBytes)
				}
			},
		},
		{
			name: "array for log.dirs",
			toml: "log.dirs = [\"/data/a\", \"/data/b\"]\n",
			check: func(t *testing.T, b *Broker) {
				if !reflect.DeepEqual(b.LogDirs, []string{"/data/a", "/data/b"}) {
					t.Errorf("LogDirs = %v", b.LogDirs)
				}
				if s, _ := b.Get("log.dirs"); s != "/data/a,/data/b" {
					t.Errorf("Get(log.dirs) = %q", s)
				}
			},
		},
		{
			name: "log.dir alias",
			toml: "log.dir = \"/one\"\n",
			check: func(t *testing.T, b *Broker) {
				if !reflect.DeepEqual(b.LogDirs, []string{"/one"}) {
					t.Errorf("LogDirs = %v", b.LogDirs)
				}
			},
		},
		{
			name: "log.dirs wins over log.dir",
			toml: "log.dir = \"/one\"\nlog.dirs = \"/two\"\n",
			check: func(t *testing.T, b *Broker) {
				if !reflect.DeepEqual(b.LogDirs, []string{"/two"}) {
					t.Errorf("LogDirs = %v", b.LogDirs)
				}
			},
		},
		{
			name:      "overrides win",
			toml:      "num.partitions = 3\nlog.retention.hours = 1\n",
			overrides: []string{"num.partitions=5", "log.retention.ms=1000"},
			check: func(t *testing.T, b *Broker) {
				if b.NumPartitions != 5 || b.LogRetentionMs != 1000 {
					t.Errorf("got %d %d", b.NumPartitions, b.LogRetentionMs)
				}
			},
		},
		{
			name: "listeners and advertised listeners",
			toml: "listeners = \"PLAINTEXT://:9092,INTERNAL://[::1]:9093\"\nadvertised.listeners = \"PLAINTEXT://kafka.example:19092\"\n" +
				"listener.security.protocol.map = \"PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT\"\n",
			check: func(t *testing.T, b *Broker) {
				want := []Listener{{"PLAINTEXT", "", 9092}, {"INTERNAL", "::1", 9093}}
				if !reflect.DeepEqual(b.Listeners, want) {
					t.Errorf("Listeners = %v", b.Listeners)
				}
				if !reflect.DeepEqual(b.AdvertisedListeners, []Listener{{"PLAINTEXT", "kafka.example", 19092}}) {
					t.Errorf("AdvertisedListeners = %v", b.AdvertisedListeners)
				}
				if b.SecurityProtocol("internal") != "PLAINTEXT" {
					t.Errorf("SecurityProtocol(internal) = %q", b.SecurityProtocol("internal"))
				}
			},
		},
		{
			name: "accepted but unused keys",
			toml: "process.roles = \"broker,controller\"\nnum.io.threads = 16\nsasl.kerberos.kinit.cmd = \"/opt/kinit\"\ngroup.initial.rebalance.delay.ms = 0\ngossip.join = [\"10.0.0.1:7946\"]\n",
			check: func(t *testing.T, b *Broker) {
				if s, ok := b.Get("num.io.threads"); !ok || s != "16" {
					t.Errorf("num.io.threads = %q %v", s, ok)
				}
				if b.GroupInitialRebalanceDelayMs != 0 || !reflect.DeepEqual(b.GossipJoin, []string{"10.0.0.1:7946"}) {
					t.Errorf("got %d %v", b.GroupInitialRebalanceDelayMs, b.GossipJoin)
				}
			},
		},
		{
			name: "booleans as strings, case-insensitive",
			toml: "auto.create.topics.enable = \"FALSE\"\n",
			check: func(t *testing.T, b *Broker) {
				if b.AutoCreateTopics {
					t.Error("AutoCreateTopics = true")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load(writeTOML(t, tt.toml), tt.overrides)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, b)
		})
	}
}

func TestRetentionPrecedence(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want int64
	}{
		{"default 168 hours", nil, 168 * hourMs},
		{"hours", []string{"log.retention.hours=2"}, 2 * hourMs},
		{"minutes beat hours", []string{"log.retention.hours=2", "log.retention.minutes=3"}, 3 * minuteMs},
		{"ms beats minutes and hours", []string{"log.retention.hours=2", "log.retention.minutes=3", "log.retention.ms=4"}, 4},
		{"ms -1 is unlimited", []string{"log.retention.ms=-1"}, -1},
		{"negative hours are unlimited", []string{"log.retention.hours=-1"}, -1},
		{"negative ms are unlimited", []string{"log.retention.ms=-5"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if b.LogRetentionMs != tt.want {
				t.Errorf("LogRetentionMs = %d, want %d", b.LogRetentionMs, tt.want)
			}
			if got := b.EffectiveTopicConfig(nil, nil, nil)["retention.ms"]; got != itoa(tt.want) {
				t.Errorf("topic retention.ms = %s, want %d", got, tt.want)
			}
		})
	}
	b, err := Load("", []string{"log.roll.hours=2"})
	if err != nil || b.LogRollMs != 2*hourMs {
		t.Errorf("log.roll.hours=2: LogRollMs = %d, %v", b.LogRollMs, err)
	}
	b, err = Load("", []string{"log.roll.hours=2", "log.roll.ms=50"})
	if err != nil || b.LogRollMs != 50 {
		t.Errorf("log.roll.ms wins: LogRollMs = %d, %v", b.LogRollMs, err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name      string
		toml      string
		overrides []string
		want      string // the exact error text
		kind      error
	}{
		{"unknown key in file", "log.segmnt.bytes = 5\n", nil, `config: unknown key "log.segmnt.bytes" (in sluice.toml)`, ErrUnknownKey},
		{"unknown quoted key", "\"num.partition\" = 5\n", nil, `config: unknown key "num.partition" (in sluice.toml)`, ErrUnknownKey},
		{"unknown override", "", []string{"nope=1"}, `config: unknown key "nope" (in --override)`, ErrUnknownKey},
		{"wrong type string for int", "log.segment.bytes = \"abc\"\n", nil, `config: log.segment.bytes: "abc" is not a valid int (in sluice.toml)`, ErrInvalidValue},
		{"wrong type float for long", "log.retention.ms = 1.5\n", nil, `config: log.retention.ms: "1.5" is not a valid long (in sluice.toml)`, ErrInvalidValue},
		{"wrong type for boolean", "delete.topic.enable = 1\n", nil, `config: delete.topic.enable: "1" is not a valid boolean (in sluice.toml)`, ErrInvalidValue},
		{"int overflow", "", []string{"num.partitions=3000000000"}, `config: num.partitions: "3000000000" is not a valid int (in --override)`, ErrInvalidValue},
		{"out of range", "num.partitions = 0\n", nil, `config: num.partitions: 0 is out of range: must be at least 1 (in sluice.toml)`, ErrInvalidValue},
		{"segment too small", "", []string{"log.segment.bytes=10"}, `config: log.segment.bytes: 10 is out of range: must be at least 14 (in --override)`, ErrInvalidValue},
		{"not one of", "log.message.timestamp.type = \"Now\"\n", nil, `config: log.message.timestamp.type: "Now" is not one of CreateTime, LogAppendTime (in sluice.toml)`, ErrInvalidValue},
		{"bad listener", "listeners = \"PLAINTEXT//localhost:9092\"\n", nil, `config: listeners: listener "PLAINTEXT//localhost:9092" is not NAME://host:port (in sluice.toml)`, ErrInvalidValue},
		{"listener port", "", []string{"listeners=PLAINTEXT://h:99999"}, `config: listeners: listener "PLAINTEXT://h:99999": port "99999" is not 0-65535 (in --override)`, ErrInvalidValue},
		{"listener without port", "", []string{"listeners=PLAINTEXT://h"}, `config: listeners: listener "PLAINTEXT://h" has no port (in --override)`, ErrInvalidValue},
		{"duplicate listener", "", []string{"listeners=A://:1,a://:2"}, `config: listeners: listener name A appears twice (in --override)`, ErrInvalidValue},
		{"set twice", "log.retention.ms = 1\n\"log.retention.ms\" = 2\n", nil, `config: log.retention.ms: is set twice (dotted and quoted forms name the same key) (in sluice.toml)`, ErrInvalidValue},
		{"override without =", "", []string{"num.partitions"}, `config: num.partitions: expected key=value (in --override)`, ErrInvalidValue},
		{"override value trimmed and checked", "", []string{"num.partitions= x "}, `config: num.partitions: "x" is not a valid int (in --override)`, ErrInvalidValue},
		{"Java plugin", "", []string{"ssl.engine.factory.class=com.example.Engine"}, `config: ssl.engine.factory.class: not supported yet (a Java plugin class or provider, which sluice cannot load; a built-in equivalent has no issue yet; no issue filed yet); only the default (none) is accepted (in --override)`, ErrInvalidValue},
		{"unknown SASL mechanism", "", []string{"sasl.enabled.mechanisms=PLAIN,DIGEST-MD5"}, `config: sasl.enabled.mechanisms: "DIGEST-MD5" is not one of GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (in --override)`, ErrInvalidValue},
		{"feature not built yet", "", []string{"remote.log.manager.copy.quota.window.num=5"}, `config: remote.log.manager.copy.quota.window.num: not supported yet (tiered storage (KIP-405); no issue filed yet); only the default 11 is accepted (in --override)`, ErrInvalidValue},
		{"datetime value", "log.dir = 1979-05-27T07:32:00Z\n", nil, `config: log.dir: a TOML time.Time is not a valid config value (in sluice.toml)`, ErrInvalidValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := ""
			if tt.toml != "" {
				path = writeTOML(t, tt.toml)
			}
			_, err := Load(path, tt.overrides)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("error does not wrap %v", tt.kind)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml"), nil); err == nil || !strings.Contains(err.Error(), "missing.toml") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Load(writeTOML(t, "num.partitions = \n"), nil); err == nil || !strings.HasPrefix(err.Error(), "config: sluice.toml:") {
		t.Errorf("TOML syntax error: %v", err)
	}
}

func TestParseListeners(t *testing.T) {
	tests := []struct {
		in   string
		want []Listener
		err  bool
	}{
		{"PLAINTEXT://127.0.0.1:9092", []Listener{{"PLAINTEXT", "127.0.0.1", 9092}}, false},
		{"PLAINTEXT://:9092", []Listener{{"PLAINTEXT", "", 9092}}, false},
		{"plaintext://localhost:0", []Listener{{"PLAINTEXT", "localhost", 0}}, false},
		{"A://[::1]:1, B://0.0.0.0:2", []Listener{{"A", "::1", 1}, {"B", "0.0.0.0", 2}}, false},
		{"A://::1:1", nil, true},
		{"://h:1", nil, true},
		{"A://h:x", nil, true},
		{"A B://h:1", nil, true},
	}
	for _, tt := range tests {
		got, err := ParseListeners(tt.in)
		if (err != nil) != tt.err || (!tt.err && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("ParseListeners(%q) = %v, %v", tt.in, got, err)
		}
		if err == nil {
			for i, l := range got {
				if again, _ := ParseListeners(l.String()); !reflect.DeepEqual(again[0], got[i]) {
					t.Errorf("round trip of %v gave %v", l, again)
				}
			}
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
