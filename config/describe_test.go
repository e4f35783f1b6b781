package config

import (
	"reflect"
	"strings"
	"testing"
)

func entryByName(t *testing.T, entries []Entry, name string) Entry {
	t.Helper()
	for _, e := range entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no entry %s", name)
	return Entry{}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

type syn struct {
	name, value string
	source      int8
}

func syns(e Entry) []syn {
	var out []syn
	for _, s := range e.Synonyms {
		out = append(out, syn{s.Name, deref(s.Value), s.Source})
	}
	return out
}

func TestDescribeTopicSources(t *testing.T) {
	static, err := Load("", []string{"log.retention.hours=24", "log.segment.bytes=2048", "min.insync.replicas=2"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name                     string
		topic, perBroker, defaul map[string]string
		key                      string
		value                    string
		source                   int8
		synonyms                 []syn
	}{
		{
			name: "default", key: "cleanup.policy", value: "delete", source: SourceDefault,
			synonyms: []syn{{"log.cleanup.policy", "delete", SourceDefault}},
		},
		{
			name: "static hours converted to ms", key: "retention.ms", value: "86400000", source: SourceStaticBroker,
			synonyms: []syn{{"log.retention.hours", "24", SourceStaticBroker}, {"log.retention.hours", "168", SourceDefault}},
		},
		{
			name: "topic wins", topic: map[string]string{"retention.ms": "1000"}, perBroker: map[string]string{"log.retention.ms": "5"},
			key: "retention.ms", value: "1000", source: SourceDynamicTopic,
			synonyms: []syn{
				{"retention.ms", "1000", SourceDynamicTopic},
				{"log.retention.ms", "5", SourceDynamicBroker},
				{"log.retention.hours", "24", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "per-broker dynamic beats cluster default and static", perBroker: map[string]string{"log.segment.bytes": "4096"},
			defaul: map[string]string{"log.segment.bytes": "8192"}, key: "segment.bytes", value: "4096", source: SourceDynamicBroker,
			synonyms: []syn{
				{"log.segment.bytes", "4096", SourceDynamicBroker},
				{"log.segment.bytes", "8192", SourceDynamicDefaultBroker},
				{"log.segment.bytes", "2048", SourceStaticBroker},
				{"log.segment.bytes", "1073741824", SourceDefault},
			},
		},
		{
			name: "cluster default beats static", defaul: map[string]string{"min.insync.replicas": "3"},
			key: "min.insync.replicas", value: "3", source: SourceDynamicDefaultBroker,
			synonyms: []syn{
				{"min.insync.replicas", "3", SourceDynamicDefaultBroker},
				{"min.insync.replicas", "2", SourceStaticBroker},
				{"min.insync.replicas", "1", SourceDefault},
			},
		},
		{
			name: "dynamic ms beats static hours", defaul: map[string]string{"log.retention.ms": "-1"},
			key: "retention.ms", value: "-1", source: SourceDynamicDefaultBroker,
			synonyms: []syn{
				{"log.retention.ms", "-1", SourceDynamicDefaultBroker},
				{"log.retention.hours", "24", SourceStaticBroker},
				{"log.retention.hours", "168", SourceDefault},
			},
		},
		{
			name: "flush.ms falls back to the scheduler interval", key: "flush.ms", value: maxInt64, source: SourceDefault,
			synonyms: []syn{{"log.flush.scheduler.interval.ms", maxInt64, SourceDefault}},
		},
		{
			name: "no broker synonym", key: "leader.replication.throttled.replicas", value: "", source: SourceDefault,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries := static.DescribeTopic(tt.topic, tt.perBroker, tt.defaul)
			if len(entries) != len(topicKeyList) {
				t.Errorf("%d entries, want %d", len(entries), len(topicKeyList))
			}
			e := entryByName(t, entries, tt.key)
			if deref(e.Value) != tt.value || e.Source != tt.source {
				t.Errorf("%s = %s (source %d), want %s (source %d)", tt.key, deref(e.Value), e.Source, tt.value, tt.source)
			}
			if got := syns(e); !reflect.DeepEqual(got, tt.synonyms) {
				t.Errorf("synonyms\n got: %v\nwant: %v", got, tt.synonyms)
			}
			eff := static.EffectiveTopicConfig(tt.topic, tt.perBroker, tt.defaul)
			if eff[tt.key] != tt.value {
				t.Errorf("EffectiveTopicConfig[%s] = %s, want %s", tt.key, eff[tt.key], tt.value)
			}
		})
	}
}

func TestDescribeBroker(t *testing.T) {
	b, err := Load("", []string{"num.partitions=3", "log.retention.hours=24"})
	if err != nil {
		t.Fatal(err)
	}
	b.LogDirs = []string{"/direct"} // assigned directly, as tests do
	entries := b.DescribeBroker(map[string]string{"log.retention.ms": "99"}, map[string]string{"log.retention.ms": "77", "min.insync.replicas": "2"})
	if len(entries) != len(brokerKeyList) {
		t.Errorf("%d entries, want %d", len(entries), len(brokerKeyList))
	}
	for i := 1; i < len(entries); i++ {
		if entries[i-1].Name >= entries[i].Name {
			t.Fatalf("entries not sorted: %s before %s", entries[i-1].Name, entries[i].Name)
		}
	}
	tests := []struct {
		key      string
		value    string
		source   int8
		readOnly bool
	}{
		{"num.partitions", "3", SourceStaticBroker, true},
		{"num.io.threads", "8", SourceDefault, false},
		{"log.retention.hours", "24", SourceStaticBroker, true},
		{"log.retention.ms", "99", SourceDynamicBroker, false},
		{"log.retention.minutes", "<nil>", SourceDefault, true},
		{"min.insync.replicas", "2", SourceDynamicDefaultBroker, false},
		{"log.dirs", "/direct", SourceStaticBroker, true},
		{"log.dir", "./sluice-data", SourceDefault, true},
		{"listeners", "PLAINTEXT://127.0.0.1:9092", SourceDefault, true},
		{"sasl.kerberos.min.time.before.relogin", "60000", SourceDefault, false},
		{"ssl.keystore.password", "<nil>", SourceDefault, true},
		{"node.id", "1", SourceDefault, true},
	}
	for _, tt := range tests {
		e := entryByName(t, entries, tt.key)
		if deref(e.Value) != tt.value || e.Source != tt.source || e.ReadOnly != tt.readOnly {
			t.Errorf("%s = %s (source %d, read-only %v), want %s (source %d, read-only %v)",
				tt.key, deref(e.Value), e.Source, e.ReadOnly, tt.value, tt.source, tt.readOnly)
		}
		if e.Doc == "" || e.Type == 0 {
			t.Errorf("%s: missing doc or type", tt.key)
		}
	}
	wantSyns := []syn{
		{"log.retention.ms", "99", SourceDynamicBroker},
		{"log.retention.ms", "77", SourceDynamicDefaultBroker},
		{"log.retention.hours", "24", SourceStaticBroker},
		{"log.retention.hours", "168", SourceDefault},
	}
	if got := syns(entryByName(t, entries, "log.retention.ms")); !reflect.DeepEqual(got, wantSyns) {
		t.Errorf("log.retention.ms synonyms\n got: %v\nwant: %v", got, wantSyns)
	}
}

// TestDescribeDocsSayStatus checks that DescribeConfigs' documentation of
// a key says what sluice does with it when it does not enforce it, and
// marks sluice's own keys.
func TestDescribeDocsSayStatus(t *testing.T) {
	b := Default()
	entries := b.DescribeBroker(nil, nil)
	for name, want := range map[string]string{
		"sasl.kerberos.min.time.before.relogin": "No effect in sluice: sluice has no SASL/GSSAPI (Kerberos) mechanism",
		"ssl.engine.factory.class":              "Not supported yet in sluice (a Java plugin class or provider",
		"gossip.join":                           "Not a Kafka 4.4 key: sluice's membership gossip (serf).",
	} {
		if doc := entryByName(t, entries, name).Doc; !strings.Contains(doc, want) {
			t.Errorf("%s doc %q does not say %q", name, doc, want)
		}
	}
	if doc := entryByName(t, entries, "log.segment.bytes").Doc; strings.Contains(doc, "sluice") {
		t.Errorf("log.segment.bytes doc %q mentions a status, want none: it is enforced", doc)
	}
	topic := b.DescribeTopic(nil, nil, nil)
	if doc := entryByName(t, topic, "remote.storage.enable").Doc; !strings.Contains(doc, "Not supported yet in sluice (tiered storage (KIP-405); no issue filed yet)") {
		t.Errorf("remote.storage.enable doc %q does not say no issue is filed yet", doc)
	}
	if doc := entryByName(t, topic, "min.compaction.lag.ms").Doc; strings.Contains(doc, "sluice") {
		t.Errorf("min.compaction.lag.ms doc %q mentions a status, want none: the cleaner enforces it", doc)
	}
}
