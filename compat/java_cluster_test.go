package compat

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rows for Kafka's tools against a three-node cluster (cluster_test.go):
// replicated topics as kafka-topics.sh and kafka-broker-api-versions.sh see
// them, and an acks=all round trip through the console producer and
// consumer. kafka-metadata-quorum.sh has its rows in java_quorum_test.go.

func javaTopicsRF3Row() row {
	return javaClusterRow("java-topics-rf3", 3*time.Minute, runJavaTopicsRF3)
}

// runJavaTopicsRF3 creates a 3-partition topic with replication factor 3
// through node 1 with kafka-topics.sh and describes it through node 2: each
// partition must have all three nodes as replicas and in the ISR, and the
// three partitions three different leaders, as every node's Metadata
// reports them. Then kafka-broker-api-versions.sh, bootstrapped with all
// three nodes, must list each node once at its address.
func runJavaTopicsRF3(ctx context.Context, env *rowEnv) error {
	const topic = "compat-topics-rf3"
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	ids := nodeIDs(env.nodes)
	out, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", env.nodes[0].addr,
		"--create", "--topic", topic, "--partitions", "3", "--replication-factor", "3")
	if err != nil {
		return err
	}
	if want := "Created topic " + topic + "."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--create via node 1 printed %q, want %q", firstLine(out), want)
	}

	// Node 2 applies the new topic a moment after node 1 answers, as a
	// Kafka broker does; describe through it once it knows the topic.
	// Every node must then report the same placement.
	var placement []kmsg.MetadataResponseTopicPartition
	var topicID [16]byte
	for _, b := range []*broker{env.nodes[1], env.nodes[2], env.nodes[0]} {
		err := pollUntil(ctx, 30*time.Second, func() error {
			resp, err := metadataFrom(ctx, b, topic)
			if err != nil {
				return err
			}
			if len(resp.Topics) != 1 {
				return fmt.Errorf("%d topics", len(resp.Topics))
			}
			t := resp.Topics[0]
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return err
			}
			if len(t.Partitions) != 3 {
				return fmt.Errorf("%d partitions", len(t.Partitions))
			}
			parts := slices.Clone(t.Partitions)
			slices.SortFunc(parts, func(a, b kmsg.MetadataResponseTopicPartition) int { return int(a.Partition - b.Partition) })
			for _, p := range parts {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return fmt.Errorf("partition %d: %w", p.Partition, err)
				}
				if p.Leader < 0 || len(p.ISR) != 3 {
					return fmt.Errorf("partition %d: leader %d, ISR %v", p.Partition, p.Leader, p.ISR)
				}
			}
			if placement == nil {
				placement, topicID = parts, t.TopicID
				return nil
			}
			if t.TopicID != topicID {
				return fmt.Errorf("topic id %x, node 2 said %x", t.TopicID, topicID)
			}
			for i, p := range parts {
				q := placement[i]
				if p.Leader != q.Leader || !slices.Equal(p.Replicas, q.Replicas) || !slices.Equal(p.ISR, q.ISR) {
					return fmt.Errorf("partition %d: leader %d replicas %v ISR %v; node 2 said leader %d replicas %v ISR %v",
						p.Partition, p.Leader, p.Replicas, p.ISR, q.Leader, q.Replicas, q.ISR)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("Metadata from node %d for %s: %w", b.id, topic, err)
		}
	}

	topics, out, err := describeTopics(ctx, env, env.nodes[1].addr, topic)
	if err != nil {
		return err
	}
	d, ok := topics[topic]
	if !ok || len(topics) != 1 {
		return fmt.Errorf("--describe --topic %s via node 2 described %d topics, not just it: %q", topic, len(topics), firstLine(out))
	}
	h := d.header
	if id := base64.RawURLEncoding.EncodeToString(topicID[:]); h["TopicId"] != id {
		return fmt.Errorf("describe %s: TopicId %q, Metadata says %q", topic, h["TopicId"], id)
	}
	if h["PartitionCount"] != "3" || h["ReplicationFactor"] != "3" {
		return fmt.Errorf("describe %s: PartitionCount %q ReplicationFactor %q, want 3 and 3", topic, h["PartitionCount"], h["ReplicationFactor"])
	}
	if len(d.partitions) != 3 {
		return fmt.Errorf("describe %s: %d partition lines, want 3", topic, len(d.partitions))
	}
	var leaders []string
	for i, p := range d.partitions {
		if p["Partition"] != strconv.Itoa(i) {
			return fmt.Errorf("describe %s: partition line %d is for Partition %q", topic, i, p["Partition"])
		}
		for _, col := range []string{"Replicas", "Isr"} {
			got := strings.Split(p[col], ",")
			if sorted := slices.Sorted(slices.Values(got)); !slices.Equal(sorted, ids) {
				return fmt.Errorf("describe %s partition %d: %s %q, want the three nodes %s", topic, i, col, p[col], strings.Join(ids, ","))
			}
		}
		want := placement[i]
		if p["Leader"] != strconv.Itoa(int(want.Leader)) || p["Replicas"] != joinIDs(want.Replicas) {
			return fmt.Errorf("describe %s partition %d: Leader %s Replicas %s; Metadata says leader %d replicas %v",
				topic, i, p["Leader"], p["Replicas"], want.Leader, want.Replicas)
		}
		leaders = append(leaders, p["Leader"])
	}
	slices.Sort(leaders)
	if !slices.Equal(leaders, ids) {
		return fmt.Errorf("describe %s: leaders %v, want three different nodes", topic, leaders)
	}

	return checkAPIVersionsCluster(ctx, env)
}

// joinIDs prints node ids as kafka-topics.sh does: "1,2,3".
func joinIDs(ids []int32) string {
	var s []string
	for _, id := range ids {
		s = append(s, strconv.Itoa(int(id)))
	}
	return strings.Join(s, ",")
}

// apiVersionsHeader is the line kafka-broker-api-versions.sh prints before
// each broker's APIs: "127.0.0.1:9092 (id: 1 rack: null isFenced: false) -> (".
var apiVersionsHeader = regexp.MustCompile(`^(\S+) \(id: (\d+) rack: null isFenced: false\) -> \($`)

// checkAPIVersionsCluster runs kafka-broker-api-versions.sh bootstrapped
// with every node and checks that it lists each node exactly once, at its
// address, each with the same APIs (the nodes run one binary).
func checkAPIVersionsCluster(ctx context.Context, env *rowEnv) error {
	out, err := kafkaTool(ctx, env, nil, "kafka-broker-api-versions.sh", "--bootstrap-server", strings.Join(env.bootstrap, ","))
	if err != nil {
		return err
	}
	want := map[string]string{}
	for _, b := range env.nodes {
		want[strconv.Itoa(int(b.id))] = b.addr
	}
	got := map[string]string{}
	apis := map[string][]string{} // node id -> its API lines
	var cur string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if m := apiVersionsHeader.FindStringSubmatch(line); m != nil {
			if _, dup := got[m[2]]; dup {
				return fmt.Errorf("kafka-broker-api-versions.sh lists node %s twice", m[2])
			}
			got[m[2]], cur = m[1], m[2]
			continue
		}
		if line == ")" {
			cur = ""
			continue
		}
		if cur == "" {
			return fmt.Errorf("kafka-broker-api-versions.sh: line %q outside a broker's list", line)
		}
		// Each broker's last API line has no trailing comma.
		apis[cur] = append(apis[cur], strings.TrimSuffix(strings.TrimSpace(line), ","))
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("kafka-broker-api-versions.sh lists brokers %v, want %v", got, want)
	}
	for id, lines := range apis {
		if !slices.Equal(lines, apis["1"]) {
			return fmt.Errorf("kafka-broker-api-versions.sh: node %s lists %d APIs, node 1 %d, or they differ", id, len(lines), len(apis["1"]))
		}
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Produce(0): ") }) {
			return fmt.Errorf("kafka-broker-api-versions.sh: node %s lists no Produce(0)", id)
		}
	}
	return nil
}

func javaConsoleRF3Row() row {
	return javaClusterRow("java-console-rf3", 3*time.Minute, runJavaConsoleRF3)
}

// consoleRF3Count is how many records the acks=all round trip sends.
const consoleRF3Count = 500

// runJavaConsoleRF3 creates a 1-partition topic with replication factor 3
// and min.insync.replicas=2, produces keyed records through
// kafka-console-producer.sh with acks=all, bootstrapped with all three
// nodes, and reads them back with kafka-console-consumer.sh bootstrapped
// with a node that is not the partition's leader. An acks=all write is acknowledged
// only once every ISR member has it, so afterwards every node's replica must
// hold the same records: the row checks that each node reports the same
// log end offset and, with kafka-log-dirs.sh, the same partition size.
func runJavaConsoleRF3(ctx context.Context, env *rowEnv) error {
	const topic = "compat-console-rf3"
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kmsg.StringPtr("2")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("kadm CreateTopic %s: %w", topic, err)
	}
	var leader int32 = -1
	if err := pollUntil(ctx, 30*time.Second, func() error {
		// Every node must know the topic before the tools ask any.
		for _, b := range env.nodes {
			md, err := metadataFrom(ctx, b, topic)
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
				return fmt.Errorf("node %d does not know %s yet", b.id, topic)
			}
			p := md.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil || p.Leader < 0 || len(p.ISR) != 3 {
				return fmt.Errorf("node %d: %s-0 error %v leader %d ISR %v", b.id, topic, err, p.Leader, p.ISR)
			}
			leader = p.Leader
		}
		return nil
	}); err != nil {
		return err
	}

	var input strings.Builder
	for i := range consoleRF3Count {
		fmt.Fprintf(&input, "key-%d\tvalue-%d\n", i, i)
	}
	if _, err := kafkaTool(ctx, env, strings.NewReader(input.String()), "kafka-console-producer.sh",
		"--bootstrap-server", strings.Join(env.bootstrap, ","), "--topic", topic,
		"--producer-property", "acks=all", "--property", "parse.key=true"); err != nil {
		return err
	}

	// The tool exits 0 even when a send fails (it logs the error), so
	// count what arrived.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("franz-go ListEndOffsets: %w", err)
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != consoleRF3Count {
		return fmt.Errorf("after the acks=all console producer, franz-go sees end offset %d (err %v) for %s-0, want %d", o.Offset, o.Err, topic, consoleRF3Count)
	}
	if err := checkReplicaSizes(ctx, env, adm, topic); err != nil {
		return err
	}

	var via *broker
	for _, b := range env.nodes {
		if b.id != leader {
			via = b
			break
		}
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-console-consumer.sh",
		"--bootstrap-server", via.addr, "--topic", topic, "--partition", "0", "--from-beginning",
		"--max-messages", strconv.Itoa(consoleRF3Count), "--timeout-ms", "30000",
		"--property", "print.key=true", "--property", "print.offset=true")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != consoleRF3Count {
		return fmt.Errorf("console consumer via node %d printed %d lines, want %d; first %q", via.id, len(lines), consoleRF3Count, lines[0])
	}
	for i, line := range lines {
		if want := fmt.Sprintf("Offset:%d\tkey-%d\tvalue-%d", i, i, i); line != want {
			return fmt.Errorf("console consumer via node %d, line %d: %q, want %q", via.id, i+1, line, want)
		}
	}
	return nil
}

// checkReplicaSizes waits until franz-go's DescribeLogDirs shows the one
// partition of topic on every node with the same non-zero size (a follower
// that had dropped out of the ISR may still be catching up), then checks
// that kafka-log-dirs.sh reports the same.
func checkReplicaSizes(ctx context.Context, env *rowEnv, adm *kadm.Client, topic string) error {
	want := map[int32]int64{}
	err := pollUntil(ctx, 30*time.Second, func() error {
		all, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err != nil {
			return err
		}
		clear(want)
		all.Each(func(d kadm.DescribedLogDir) {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				want[p.Broker] += p.Size
			})
		})
		return sameSizes(want, len(env.nodes))
	})
	if err != nil {
		return fmt.Errorf("franz-go DescribeLogDirs for %s-0: %w", topic, err)
	}

	out, err := kafkaTool(ctx, env, nil, "kafka-log-dirs.sh", "--bootstrap-server", strings.Join(env.bootstrap, ","),
		"--describe", "--topic-list", topic)
	if err != nil {
		return err
	}
	desc, err := parseLogDirs(out)
	if err != nil {
		return err
	}
	got := map[int32]int64{}
	for _, br := range desc.Brokers {
		for _, dir := range br.LogDirs {
			for _, p := range dir.Partitions {
				if p.Partition == topic+"-0" {
					got[int32(br.Broker)] += p.Size
				}
			}
		}
	}
	if !maps.Equal(got, want) {
		return fmt.Errorf("kafka-log-dirs.sh reports sizes %v for %s-0 by node, franz-go %v", got, topic, want)
	}
	return nil
}

// sameSizes checks that sizes has n entries, all equal and non-zero.
func sameSizes(sizes map[int32]int64, n int) error {
	if len(sizes) != n {
		return fmt.Errorf("on %d nodes %v, want %d", len(sizes), sizes, n)
	}
	var first int64 = -1
	for _, size := range sizes {
		if first < 0 {
			first = size
		}
		if size == 0 || size != first {
			return fmt.Errorf("replica sizes by node %v, want all equal and non-zero", sizes)
		}
	}
	return nil
}
