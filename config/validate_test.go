package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		overrides []string
		want      string // exact error text; "" for success
	}{
		{"defaults with a temp dir", nil, ""},
		{"log dir under a file", []string{"log.dirs=" + filepath.Join(file, "sub")},
			"config: log.dirs: cannot create " + filepath.Join(file, "sub") + ": " + file + ": not a directory"},
		{"log dir listed twice", []string{"log.dirs=" + dir + "/x," + dir + "/x"}, "config: log.dirs: " + dir + "/x is listed twice"},
		{"advertised listener not in listeners", []string{"advertised.listeners=OTHER://h:1"}, "config: advertised.listeners: listener OTHER is not in listeners"},
		{"advertised meta-address", []string{"listeners=PLAINTEXT://0.0.0.0:9092"}, "config: advertised.listeners: cannot advertise the meta-address 0.0.0.0 for listener PLAINTEXT"},
		{"advertised explicit host", []string{"listeners=PLAINTEXT://0.0.0.0:9092", "advertised.listeners=PLAINTEXT://h:9092"}, ""},
		{"listener without protocol", []string{"listeners=INTERNAL://:1"}, "config: listeners: listener INTERNAL has no entry in listener.security.protocol.map"},
		{"broker.id differs", []string{"broker.id=2"}, "config: broker.id: 2 differs from node.id 1"},
		{"broker.id equal", []string{"broker.id=1"}, ""},
		{"group session bounds", []string{"group.min.session.timeout.ms=10", "group.max.session.timeout.ms=5"}, "config: group.min.session.timeout.ms: 10 is larger than group.max.session.timeout.ms 5"},
		{"consumer session below min", []string{"group.consumer.session.timeout.ms=1000"}, "config: group.consumer.session.timeout.ms: 1000 is smaller than group.consumer.min.session.timeout.ms 45000"},
		{"consumer heartbeat above max", []string{"group.consumer.heartbeat.interval.ms=20000"}, "config: group.consumer.heartbeat.interval.ms: 20000 is larger than group.consumer.max.heartbeat.interval.ms 15000"},
		{"consumer heartbeat not below session", []string{"group.consumer.min.session.timeout.ms=100", "group.consumer.session.timeout.ms=1000", "group.consumer.min.heartbeat.interval.ms=100", "group.consumer.heartbeat.interval.ms=1000"}, "config: group.consumer.heartbeat.interval.ms: 1000 must be smaller than group.consumer.session.timeout.ms 1000"},
		{"consumer timings lowered", []string{"group.consumer.min.session.timeout.ms=1000", "group.consumer.session.timeout.ms=2000", "group.consumer.min.heartbeat.interval.ms=50", "group.consumer.heartbeat.interval.ms=200"}, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Load("", append([]string{"log.dirs=" + filepath.Join(dir, "ok", string(rune('a'+i)))}, tt.overrides...))
			if err != nil {
				t.Fatal(err)
			}
			err = b.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate error\n got: %v\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidValue) {
				t.Errorf("error does not wrap ErrInvalidValue")
			}
		})
	}
}

func TestLogDirIsCreatedAndLeftClean(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	b := Default()
	b.LogDirs = []string{dir}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 0 {
		t.Errorf("log dir after Validate: %v, %v", entries, err)
	}
}

func TestSet(t *testing.T) {
	b := Default()
	if err := b.Set("log.segment.bytes", "1024"); err != nil {
		t.Fatal(err)
	}
	if b.LogSegmentBytes != 1024 {
		t.Errorf("LogSegmentBytes = %d", b.LogSegmentBytes)
	}
	err := b.Set("log.segment.bytes", "x")
	if err == nil || err.Error() != `config: log.segment.bytes: "x" is not a valid int` {
		t.Errorf("Set bad value: %v", err)
	}
	if err := b.Set("nope", "1"); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("Set unknown key: %v", err)
	}
	// A field assigned directly survives a later Set of another key.
	b.NumPartitions = 9
	if err := b.Set("min.insync.replicas", "2"); err != nil {
		t.Fatal(err)
	}
	if b.NumPartitions != 9 || b.MinInsyncReplicas != 2 {
		t.Errorf("after Set: NumPartitions %d, MinInsyncReplicas %d", b.NumPartitions, b.MinInsyncReplicas)
	}
}

func TestValidateTopicConfig(t *testing.T) {
	tests := []struct {
		key, value string
		want       string
		kind       error
	}{
		{"retention.ms", "1000", "", nil},
		{"retention.ms", "-1", "", nil},
		{"retention.ms", "-2", "config: retention.ms: -2 is out of range: must be at least -1", ErrInvalidValue},
		{"segment.bytes", "1024", "", nil},
		{"segment.bytes", "13", "config: segment.bytes: 13 is out of range: must be at least 14", ErrInvalidValue},
		{"segment.bytes", "big", `config: segment.bytes: "big" is not a valid int`, ErrInvalidValue},
		{"cleanup.policy", "compact,delete", "", nil},
		{"cleanup.policy", "compact, delete", "", nil},
		{"cleanup.policy", "shred", `config: cleanup.policy: "shred" is not one of compact, delete`, ErrInvalidValue},
		{"compression.type", "uncompressed", "", nil},
		{"compression.type", "zstd", "", nil},
		{"compression.zstd.level", "19", "", nil},
		{"flush.ms", "1000", "", nil},
		{"flush.messages", "1", "", nil},
		{"flush.messages", "0", "config: flush.messages: 0 is out of range: must be at least 1", ErrInvalidValue},
		{"compression.type", "brotli", `config: compression.type: "brotli" is not one of uncompressed, zstd, lz4, snappy, gzip, producer`, ErrInvalidValue},
		{"min.cleanable.dirty.ratio", "0.1", "", nil},
		{"delete.retention.ms", "0", "", nil},
		{"min.compaction.lag.ms", "60000", "", nil},
		{"max.compaction.lag.ms", "3600000", "", nil},
		{"max.compaction.lag.ms", "0", "config: max.compaction.lag.ms: 0 is out of range: must be at least 1", ErrInvalidValue},
		{"remote.storage.enable", "true", "config: remote.storage.enable: not supported yet (tiered storage (KIP-405); no issue filed yet); only the default false is accepted", ErrInvalidValue},
		{"min.cleanable.dirty.ratio", "1.5", "config: min.cleanable.dirty.ratio: 1.5 is out of range: must be between 0 and 1", ErrInvalidValue},
		{"min.insync.replicas", "0", "config: min.insync.replicas: 0 is out of range: must be at least 1", ErrInvalidValue},
		{"unclean.leader.election.enable", "yes", `config: unclean.leader.election.enable: "yes" is not a valid boolean`, ErrInvalidValue},
		{"message.timestamp.type", "LogAppendTime", "", nil},
		{"leader.replication.throttled.replicas", "0:1,1:2", "", nil},
		{"leader.replication.throttled.replicas", "*", "", nil},
		{"leader.replication.throttled.replicas", "0-1", `config: leader.replication.throttled.replicas: "0-1" is not "*" or a list of partition:broker`, ErrInvalidValue},
		{"compression.gzip.level", "-1", "", nil},
		{"compression.gzip.level", "0", "config: compression.gzip.level: 0 is out of range: must be between 1 and 9", ErrInvalidValue},
		{"retention.hours", "1", `config: unknown key "retention.hours"`, ErrUnknownKey},
		{"message.format.version", "3.0", `config: unknown key "message.format.version"`, ErrUnknownKey},
	}
	for _, tt := range tests {
		err := ValidateTopicConfig(tt.key, tt.value)
		if tt.want == "" {
			if err != nil {
				t.Errorf("ValidateTopicConfig(%s, %s): %v", tt.key, tt.value, err)
			}
			continue
		}
		if err == nil || err.Error() != tt.want || !errors.Is(err, tt.kind) {
			t.Errorf("ValidateTopicConfig(%s, %s)\n got: %v\nwant: %s", tt.key, tt.value, err, tt.want)
		}
	}
}

func TestValidateBrokerDynamic(t *testing.T) {
	tests := []struct {
		key, value     string
		perBroker      error // error kind for a per-broker resource
		clusterDefault error // error kind for the cluster-default resource
	}{
		{"log.retention.ms", "1000", nil, nil},
		{"min.insync.replicas", "2", nil, nil},
		{"min.insync.replicas", "0", ErrInvalidValue, ErrInvalidValue},
		{"log.retention.hours", "1", ErrNotDynamic, ErrNotDynamic},
		{"num.partitions", "3", ErrNotDynamic, ErrNotDynamic},
		{"listeners", "PLAINTEXT://:9093", ErrNotDynamic, ErrNotDynamic},
		{"sasl.kerberos.min.time.before.relogin", "3600000", nil, ErrPerBrokerOnly},
		{"sasl.kerberos.min.time.before.relogin", "soon", ErrInvalidValue, ErrInvalidValue},
		{"ssl.keystore.location", "/etc/kafka/broker.p12", ErrNotDynamic, ErrNotDynamic},
		{"ssl.provider", "SunJSSE", ErrInvalidValue, ErrInvalidValue},
		{"log.cleaner.threads", "2", nil, nil},
		{"log.cleaner.threads", "0", ErrInvalidValue, ErrInvalidValue},
		{"log.cleaner.io.buffer.load.factor", "1.5", ErrInvalidValue, ErrInvalidValue},
		{"log.retentoin.ms", "1", ErrUnknownKey, ErrUnknownKey},
	}
	for _, tt := range tests {
		if err := ValidateBrokerDynamic(tt.key, tt.value); !errors.Is(err, tt.perBroker) || (err == nil) != (tt.perBroker == nil) {
			t.Errorf("ValidateBrokerDynamic(%s, %s) = %v, want %v", tt.key, tt.value, err, tt.perBroker)
		}
		if err := ValidateClusterDefault(tt.key, tt.value); !errors.Is(err, tt.clusterDefault) || (err == nil) != (tt.clusterDefault == nil) {
			t.Errorf("ValidateClusterDefault(%s, %s) = %v, want %v", tt.key, tt.value, err, tt.clusterDefault)
		}
	}
	err := ValidateBrokerDynamic("num.partitions", "3")
	if want := "config: num.partitions: cannot be updated dynamically (read-only; set it in the file and restart)"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}
