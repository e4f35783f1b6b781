package compat

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rows for Kafka's administrative tools: kafka-broker-api-versions.sh,
// kafka-topics.sh and kafka-configs.sh.

func javaAPIVersionsRow() row {
	return javaRow("kafka-api-versions", 2*time.Minute, runJavaAPIVersions)
}

// apiVersionLine is one API in kafka-broker-api-versions.sh's output:
// "Produce(0): 3 to 13 [usable: 13]," or "DescribeTopicPartitions(75): 0
// [usable: 0]," or "OffsetCommit(8): UNSUPPORTED,", or, for an API the
// broker serves at versions this client cannot use (ControlledShutdown,
// which Kafka 4 clients no longer speak but sluice's brokers use among
// themselves), "ControlledShutdown(7): 1 to 3 [unusable: node too new],".
var apiVersionLine = regexp.MustCompile(`^\s*(\w+)\((\d+)\): (UNSUPPORTED|(\d+)(?: to (\d+))? \[(?:usable: (\d+)|unusable: [a-z ]+)\]),?$`)

// unknownAPIVersionLine is the tool's line for a key newer than the tool
// itself (Kafka 4.1.1's tool and UnregisterController, 94): "UNKNOWN(94):
// 0," with no usable part. Its groups 1-5 are apiVersionLine's.
var unknownAPIVersionLine = regexp.MustCompile(`^\s*(UNKNOWN)\((\d+)\): ((\d+)(?: to (\d+))?),?$`)

// matchAPIVersionLine matches line against apiVersionLine, then against
// unknownAPIVersionLine; nil if neither matches.
func matchAPIVersionLine(line string) []string {
	if m := apiVersionLine.FindStringSubmatch(line); m != nil {
		return m
	}
	return unknownAPIVersionLine.FindStringSubmatch(line)
}

// runJavaAPIVersions checks that the tool lists, for the broker with node id
// 1 at the row's address, exactly the version ranges the broker advertises
// to franz-go, and UNSUPPORTED for every other API the tool knows.
func runJavaAPIVersions(ctx context.Context, env *rowEnv) error {
	cl, _, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("franz-go ApiVersions: %w", err)
	}
	advertised := map[int]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		advertised[int(k.ApiKey)] = k
	}

	out, err := kafkaTool(ctx, env, nil, "kafka-broker-api-versions.sh", "--bootstrap-server", env.broker.addr)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	header := env.broker.addr + " (id: " + javaNodeID + " rack: null isFenced: false) -> ("
	if len(lines) == 0 || lines[0] != header {
		return fmt.Errorf("first line %q, want %q", lines[0], header)
	}
	listed := map[int]bool{}
	for _, line := range lines[1:] {
		if line == ")" {
			break
		}
		m := matchAPIVersionLine(line)
		if m == nil {
			return fmt.Errorf("cannot parse line %q", line)
		}
		name := m[1]
		key, _ := strconv.Atoi(m[2])
		listed[key] = true
		want, ok := advertised[key]
		if m[3] == "UNSUPPORTED" {
			if ok {
				return fmt.Errorf("%s(%d): tool says UNSUPPORTED, broker advertises %d to %d", name, key, want.MinVersion, want.MaxVersion)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("%s(%d): tool lists %q, broker does not advertise it", name, key, m[3])
		}
		lo, _ := strconv.Atoi(m[4])
		hi := lo
		if m[5] != "" {
			hi, _ = strconv.Atoi(m[5])
		}
		if lo != int(want.MinVersion) || hi != int(want.MaxVersion) {
			return fmt.Errorf("%s(%d): tool lists %d to %d, broker advertises %d to %d", name, key, lo, hi, want.MinVersion, want.MaxVersion)
		}
	}
	// The core APIs must be listed. (An API the broker advertises that the
	// tool leaves out is not an error by itself: the tool lists only the
	// APIs Kafka serves on a client listener.)
	for _, key := range []int{0, 1, 2, 3, 18, 19, 20, 32} {
		if _, ok := advertised[key]; !ok {
			return fmt.Errorf("the broker does not advertise api key %d", key)
		}
		if !listed[key] {
			return fmt.Errorf("api key %d missing from the tool's output", key)
		}
	}
	return nil
}

func javaTopicsRow() row {
	return javaRow("kafka-topics", 3*time.Minute, runJavaTopics)
}

// topicDescription is kafka-topics.sh --describe's output for one topic:
// the header line's fields and one field map per partition line.
type topicDescription struct {
	header     map[string]string
	partitions []map[string]string
}

// describeTopics runs kafka-topics.sh --describe --topic topic against
// bootstrap and returns the topics it described, and its output for error
// messages.
func describeTopics(ctx context.Context, env *rowEnv, bootstrap, topic string) (map[string]*topicDescription, string, error) {
	out, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
	if err != nil {
		return nil, out, err
	}
	topics, err := parseTopicDescribe(out)
	return topics, out, err
}

// parseTopicDescribe parses "Topic: t\tTopicId: ...\tPartitionCount: 3..."
// followed by "\tTopic: t\tPartition: 0\tLeader: 1\t..." lines.
func parseTopicDescribe(out string) (map[string]*topicDescription, error) {
	topics := map[string]*topicDescription{}
	var cur *topicDescription
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Split(strings.TrimLeft(line, "\t"), "\t") {
			k, v, ok := strings.Cut(f, ":")
			if !ok {
				return nil, fmt.Errorf("describe: field %q without a colon in line %q", f, line)
			}
			fields[k] = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "\t") {
			if cur == nil || fields["Topic"] != cur.header["Topic"] {
				return nil, fmt.Errorf("describe: partition line %q outside its topic", line)
			}
			cur.partitions = append(cur.partitions, fields)
			continue
		}
		cur = &topicDescription{header: fields}
		topics[fields["Topic"]] = cur
	}
	return topics, nil
}

// checkTopicDescription compares a description with what the broker was
// told: the topic id franz-go sees, the partition count, replication factor
// 1, and node 1 as every partition's leader, only replica and only ISR
// member.
func checkTopicDescription(d *topicDescription, topicID string, partitions int, config string) error {
	h := d.header
	if h["TopicId"] != topicID {
		return fmt.Errorf("describe %s: TopicId %q, franz-go sees %q", h["Topic"], h["TopicId"], topicID)
	}
	if h["PartitionCount"] != strconv.Itoa(partitions) || h["ReplicationFactor"] != "1" {
		return fmt.Errorf("describe %s: PartitionCount %q ReplicationFactor %q, want %d and 1", h["Topic"], h["PartitionCount"], h["ReplicationFactor"], partitions)
	}
	if config != "" && !slices.Contains(strings.Split(h["Configs"], ","), config) {
		return fmt.Errorf("describe %s: Configs %q lack %s", h["Topic"], h["Configs"], config)
	}
	if len(d.partitions) != partitions {
		return fmt.Errorf("describe %s: %d partition lines, want %d", h["Topic"], len(d.partitions), partitions)
	}
	for i, p := range d.partitions {
		if p["Partition"] != strconv.Itoa(i) {
			return fmt.Errorf("describe %s: partition line %d is for Partition %q", h["Topic"], i, p["Partition"])
		}
		for _, col := range []string{"Leader", "Replicas", "Isr"} {
			if p[col] != javaNodeID {
				return fmt.Errorf("describe %s partition %d: %s %s, want %s (the only broker)", h["Topic"], i, strings.ToLower(col), p[col], javaNodeID)
			}
		}
	}
	return nil
}

// runJavaTopics creates, lists, describes, grows and deletes a topic with
// kafka-topics.sh, checking each answer against the broker through
// franz-go.
func runJavaTopics(ctx context.Context, env *rowEnv) error {
	const topic, other = "compat-topics", "compat-topics-other"
	addr := env.broker.addr
	cl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := createTopic(ctx, addr, other, 1); err != nil {
		return err
	}

	out, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", addr,
		"--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=3600000")
	if err != nil {
		return err
	}
	if want := "Created topic " + topic + "."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--create printed %q, want %q", firstLine(out), want)
	}
	details, err := waitTopic(ctx, adm, topic, 3)
	if err != nil {
		return err
	}
	// Kafka prints topic ids in URL-safe base64 without padding.
	topicID := base64.RawURLEncoding.EncodeToString(details.ID[:])

	out, err = kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", addr, "--list")
	if err != nil {
		return err
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{topic, other}) {
		return fmt.Errorf("--list printed %q, want %q", got, []string{topic, other})
	}

	describe := func(partitions int) error {
		topics, out, err := describeTopics(ctx, env, addr, topic)
		if err != nil {
			return err
		}
		d, ok := topics[topic]
		if !ok || len(topics) != 1 {
			return fmt.Errorf("--describe --topic %s described %d topics, not just it: %q", topic, len(topics), firstLine(out))
		}
		return checkTopicDescription(d, topicID, partitions, "retention.ms=3600000")
	}
	if err := describe(3); err != nil {
		return err
	}

	if _, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", addr,
		"--alter", "--topic", topic, "--partitions", "5"); err != nil {
		return err
	}
	if _, err := waitTopic(ctx, adm, topic, 5); err != nil {
		return fmt.Errorf("after --alter --partitions 5: %w", err)
	}
	if err := describe(5); err != nil {
		return fmt.Errorf("after --alter --partitions 5: %w", err)
	}

	if _, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", addr,
		"--delete", "--topic", topic); err != nil {
		return err
	}
	if err := pollUntil(ctx, 30*time.Second, func() error {
		// All topics, not the one: franz-go retries a metadata request
		// for a topic that does not exist.
		d, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if _, ok := d[topic]; ok {
			return errors.New("still listed")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("after --delete, franz-go metadata: %s %w", topic, err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", addr, "--list")
	if err != nil {
		return err
	}
	if got := strings.Fields(out); !slices.Equal(got, []string{other}) {
		return fmt.Errorf("--list after --delete printed %q, want %q", got, []string{other})
	}
	return nil
}

// waitTopic polls franz-go's metadata until topic has the given number of
// partitions, each with a leader, and returns its details.
func waitTopic(ctx context.Context, adm *kadm.Client, topic string, partitions int32) (kadm.TopicDetail, error) {
	var detail kadm.TopicDetail
	err := pollUntil(ctx, 30*time.Second, func() error {
		details, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return err
		}
		if err := topicReady(details, topic, partitions); err != nil {
			return err
		}
		detail = details[topic]
		return nil
	})
	if err != nil {
		return detail, fmt.Errorf("topic %s: %w", topic, err)
	}
	return detail, nil
}

// pollUntil calls check until it returns nil, ctx ends or limit passes; it
// returns check's last error.
func pollUntil(ctx context.Context, limit time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func javaConfigsRow() row {
	return javaRow("kafka-configs", 3*time.Minute, runJavaConfigs)
}

// configLine is one entry in kafka-configs.sh --describe's output:
// "  retention.ms=12345 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:...}".
var configLine = regexp.MustCompile(`^  ([a-z0-9._-]+)=(.*) sensitive=(true|false) synonyms=\{(.*)\}$`)

// configEntry is one parsed configLine.
type configEntry struct {
	value    string
	synonyms string
}

// parseConfigs parses kafka-configs.sh --describe output for one entity: a
// heading that must equal heading, then one line per config.
func parseConfigs(out, heading string) (map[string]configEntry, error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if lines[0] != heading {
		return nil, fmt.Errorf("--describe printed %q, want heading %q", lines[0], heading)
	}
	entries := map[string]configEntry{}
	for _, line := range lines[1:] {
		m := configLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("--describe: cannot parse %q", line)
		}
		entries[m[1]] = configEntry{value: m[2], synonyms: m[4]}
	}
	return entries, nil
}

// wantConfigs checks that entries holds exactly want (key to value) when
// exact, or at least want otherwise; what names the entity in errors.
func wantConfigs(what string, entries map[string]configEntry, want map[string]string, exact bool) error {
	for k, v := range want {
		e, ok := entries[k]
		if !ok {
			return fmt.Errorf("%s: %s missing from --describe", what, k)
		}
		if e.value != v {
			return fmt.Errorf("%s: %s=%s, want %s", what, k, e.value, v)
		}
	}
	if exact && len(entries) != len(want) {
		var keys []string
		for k := range entries {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Errorf("%s: --describe lists %v, want only %d entries", what, keys, len(want))
	}
	return nil
}

// runJavaConfigs alters and describes a topic's configs, broker 1's and the
// cluster-wide broker default's with kafka-configs.sh, and checks that the
// broker and topic see the results with the right sources (synonyms).
func runJavaConfigs(ctx context.Context, env *rowEnv) error {
	const topic = "compat-configs"
	addr := env.broker.addr
	if err := createTopic(ctx, addr, topic, 1); err != nil {
		return err
	}
	configs := func(args ...string) (string, error) {
		return kafkaTool(ctx, env, nil, "kafka-configs.sh", append([]string{"--bootstrap-server", addr}, args...)...)
	}
	expect := func(out, want string) error {
		if strings.TrimSpace(out) != want {
			return fmt.Errorf("kafka-configs.sh printed %q, want %q", firstLine(out), want)
		}
		return nil
	}
	topicEntity := []string{"--entity-type", "topics", "--entity-name", topic}
	brokerEntity := []string{"--entity-type", "brokers", "--entity-name", javaNodeID}
	defaultEntity := []string{"--entity-type", "brokers", "--entity-default"}

	// Topic: add two configs, delete one.
	out, err := configs(append(topicEntity, "--alter", "--add-config", "retention.ms=12345,max.message.bytes=65536")...)
	if err == nil {
		err = expect(out, "Completed updating config for topic "+topic+".")
	}
	if err != nil {
		return err
	}
	out, err = configs(append(topicEntity, "--describe")...)
	if err != nil {
		return err
	}
	entries, err := parseConfigs(out, "Dynamic configs for topic "+topic+" are:")
	if err == nil {
		err = wantConfigs("topic", entries, map[string]string{"retention.ms": "12345", "max.message.bytes": "65536"}, true)
	}
	if err != nil {
		return err
	}
	if s := entries["retention.ms"].synonyms; !strings.HasPrefix(s, "DYNAMIC_TOPIC_CONFIG:retention.ms=12345") {
		return fmt.Errorf("topic retention.ms synonyms {%s}, want DYNAMIC_TOPIC_CONFIG:retention.ms=12345 first", s)
	}
	out, err = configs(append(topicEntity, "--alter", "--delete-config", "retention.ms")...)
	if err == nil {
		err = expect(out, "Completed updating config for topic "+topic+".")
	}
	if err != nil {
		return err
	}

	// Broker 1 and the cluster-wide default.
	out, err = configs(append(brokerEntity, "--alter", "--add-config", "log.retention.ms=7200000")...)
	if err == nil {
		err = expect(out, "Completed updating config for broker "+javaNodeID+".")
	}
	if err != nil {
		return err
	}
	out, err = configs(append(brokerEntity, "--describe")...)
	if err != nil {
		return err
	}
	entries, err = parseConfigs(out, "Dynamic configs for broker "+javaNodeID+" are:")
	if err == nil {
		err = wantConfigs("broker "+javaNodeID, entries, map[string]string{"log.retention.ms": "7200000"}, true)
	}
	if err != nil {
		return err
	}
	out, err = configs(append(defaultEntity, "--alter", "--add-config", "log.segment.bytes=104857600")...)
	if err == nil {
		err = expect(out, "Completed updating default config for brokers in the cluster.")
	}
	if err != nil {
		return err
	}
	out, err = configs(append(defaultEntity, "--describe")...)
	if err != nil {
		return err
	}
	entries, err = parseConfigs(out, "Default configs for brokers in the cluster are:")
	if err == nil {
		err = wantConfigs("broker default", entries, map[string]string{"log.segment.bytes": "104857600"}, true)
	}
	if err != nil {
		return err
	}

	// The topic now inherits retention.ms from broker 1 and segment.bytes
	// from the cluster default, and keeps its own max.message.bytes.
	out, err = configs(append(topicEntity, "--describe", "--all")...)
	if err != nil {
		return err
	}
	entries, err = parseConfigs(out, "All configs for topic "+topic+" are:")
	if err == nil {
		err = wantConfigs("topic --all", entries, map[string]string{
			"retention.ms": "7200000", "segment.bytes": "104857600", "max.message.bytes": "65536",
		}, false)
	}
	if err != nil {
		return err
	}
	for key, source := range map[string]string{
		"retention.ms":      "DYNAMIC_BROKER_CONFIG:log.retention.ms=7200000",
		"segment.bytes":     "DYNAMIC_DEFAULT_BROKER_CONFIG:log.segment.bytes=104857600",
		"max.message.bytes": "DYNAMIC_TOPIC_CONFIG:max.message.bytes=65536",
	} {
		if s := entries[key].synonyms; !strings.HasPrefix(s, source) {
			return fmt.Errorf("topic --all: %s synonyms {%s}, want %s first", key, s, source)
		}
	}
	return nil
}
