package config

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// kafkaKey is one line of compat/testdata/kafka-4.4.0-configs.txt: a key
// Apache Kafka 4.4.0's DescribeConfigs lists for a broker or a topic.
type kafkaKey struct {
	name, typ, update, def string
}

// readKafkaKeys reads the golden file the kafka-configs-keyset compat row
// writes from a live Kafka 4.4.0 broker, by resource (broker, topic).
func readKafkaKeys(t *testing.T) map[string]map[string]kafkaKey {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "compat", "testdata", "kafka-4.4.0-configs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[string]kafkaKey{"broker": {}, "topic": {}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 5 || out[f[0]] == nil {
			t.Fatalf("golden file: cannot parse %q", line)
		}
		out[f[0]][f[1]] = kafkaKey{name: f[1], typ: f[2], update: f[3], def: f[4]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBrokerKeySetIsKafka44s checks that every broker key Kafka 4.4.0's
// DescribeConfigs lists is in sluice's table (TestBrokerKeysAreKafka44s
// checks their types, modes and defaults, and sluice's extras).
func TestBrokerKeySetIsKafka44s(t *testing.T) {
	ours := map[string]bool{}
	for _, k := range BrokerKeys() {
		ours[k.Name] = true
	}
	var missing []string
	for name := range readKafkaKeys(t)["broker"] {
		if !ours[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%d broker keys of Kafka 4.4 are unknown to sluice: %s", len(missing), strings.Join(missing, " "))
	}
}

// TestTopicKeySetIsKafka44s is TestBrokerKeySetIsKafka44s for topic configs.
func TestTopicKeySetIsKafka44s(t *testing.T) {
	ours := map[string]bool{}
	for _, k := range TopicKeys() {
		ours[k.Name] = true
	}
	var missing []string
	for name := range readKafkaKeys(t)["topic"] {
		if !ours[name] {
			missing = append(missing, name)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("%d topic configs of Kafka 4.4 are unknown to sluice: %s", len(missing), strings.Join(missing, " "))
	}
}
