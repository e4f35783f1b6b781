package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Rows for kafka-leader-election.sh against a three-node cluster
// (cluster_test.go), the notes' leader-balance story: a broker killed with
// kill -9 and restarted leads nothing until the tool moves leadership back
// to the preferred replicas; and an unclean election of a partition whose
// in-sync replicas are all down.

func javaLeaderElectionRow() row {
	return javaClusterRow("kafka-leader-election", 5*time.Minute, runJavaLeaderElection)
}

func javaLeaderElectionUncleanRow() row {
	return javaClusterRow("kafka-leader-election-unclean", 5*time.Minute, runJavaLeaderElectionUnclean)
}

// electionStoryPlacement is topic test's assignment: each node the
// preferred replica of one partition, node 1 of test-2.
const electionStoryPlacement = "2:3:1,3:1:2,1:2:3"

// runJavaLeaderElection creates test (3 partitions, 3 replicas) with
// kafka-topics.sh, kills node 1 and later node 3 with kill -9, restarting
// each once the others lead its partitions; then node 1 leads nothing and
// test-1, preferred by node 3, is led elsewhere too. kafka-leader-election.sh
// --topic test --partition=2 must report success for test-2 and
// kafka-topics.sh --describe show node 1 leading it; --all-topic-partitions
// must report test-1 and leave every preferred replica leading; a second
// --all-topic-partitions run has nothing to elect and prints nothing (KRaft
// leaves partitions that need no election out of the answer), while
// --partition=2 and --path-to-json-file naming all three partitions report
// "Valid replica already elected".
func runJavaLeaderElection(ctx context.Context, env *rowEnv) error {
	const topic = "test"
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", env.nodes[0].addr,
		"--create", "--topic", topic, "--replica-assignment", electionStoryPlacement)
	if err != nil {
		return err
	}
	if want := "Created topic " + topic + "."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--create printed %q, want %q", firstLine(out), want)
	}
	if err := waitLeaders(ctx, env, topic, "every preferred replica leading with a full ISR", func(p kmsg.MetadataResponseTopicPartition) error {
		return wantPreferredFullISR(p)
	}); err != nil {
		return err
	}

	for _, id := range []int32{1, 3} {
		if err := killAndRestart(ctx, env, topic, id); err != nil {
			return err
		}
	}
	if err := waitLeaders(ctx, env, topic, "test-1 and test-2 led by a replica that is not preferred", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Partition != 0 && p.Leader == p.Replicas[0] {
			return fmt.Errorf("leader %d is the preferred replica already", p.Leader)
		}
		return nil
	}); err != nil {
		return err
	}

	election := func(args ...string) (string, error) {
		return kafkaTool(ctx, env, nil, "kafka-leader-election.sh",
			append([]string{"--bootstrap-server", strings.Join(env.bootstrap, ",")}, args...)...)
	}
	out, err = election("--topic", topic, "--partition=2", "--election-type", "preferred")
	if err != nil {
		return err
	}
	if err := wantElectionLine(out, "Successfully completed leader election (PREFERRED) for partitions ", "test-2"); err != nil {
		return fmt.Errorf("--partition=2: %w", err)
	}
	if err := waitLeaders(ctx, env, topic, "node 1 leading test-2", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Partition == 2 && p.Leader != 1 {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := describeLeaders(ctx, env, topic, map[string]string{"2": "1"}); err != nil {
		return err
	}

	out, err = election("--all-topic-partitions", "--election-type", "preferred")
	if err != nil {
		return err
	}
	if err := wantElectionLine(out, "Successfully completed leader election (PREFERRED) for partitions ", "test-1"); err != nil {
		return fmt.Errorf("--all-topic-partitions: %w", err)
	}
	if err := waitLeaders(ctx, env, topic, "every preferred replica leading", wantPreferredFullISR); err != nil {
		return err
	}
	if err := describeLeaders(ctx, env, topic, map[string]string{"0": "2", "1": "3", "2": "1"}); err != nil {
		return err
	}

	out, err = election("--all-topic-partitions", "--election-type", "preferred")
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) != "" {
		return fmt.Errorf("second --all-topic-partitions printed %q, want nothing (no partition needs an election)", firstLine(out))
	}
	out, err = election("--topic", topic, "--partition=2", "--election-type", "preferred")
	if err != nil {
		return err
	}
	if err := wantElectionLine(out, "Valid replica already elected for partitions ", "test-2"); err != nil {
		return fmt.Errorf("second --partition=2: %w", err)
	}
	jsonPath := filepath.Join(env.dir, "election.json")
	if err := os.WriteFile(jsonPath, []byte(`{"partitions": [{"topic": "test", "partition": 0}, {"topic": "test", "partition": 1}, {"topic": "test", "partition": 2}]}`), 0o644); err != nil {
		return err
	}
	out, err = election("--path-to-json-file", jsonPath, "--election-type", "preferred")
	if err != nil {
		return err
	}
	if err := wantElectionLine(out, "Valid replica already elected for partitions ", "test-0", "test-1", "test-2"); err != nil {
		return fmt.Errorf("--path-to-json-file: %w", err)
	}
	return nil
}

// runJavaLeaderElectionUnclean makes a partition on nodes 2 and 3 (node 2
// preferred) lose every in-sync replica while node 3 is out of sync: node 3
// is killed, node 2 takes 20 acks=1 records alone and is killed too, node 3
// comes back. With unclean.leader.election.enable off the partition stays
// offline; kafka-leader-election.sh --election-type preferred must fail for
// it, --election-type unclean must report success and leave node 3 leading
// with an ISR of itself, and once node 2 returns it rejoins the ISR with the
// records node 3 had.
func runJavaLeaderElectionUnclean(ctx context.Context, env *rowEnv) error {
	const topic = "ct-unclean"
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.MetadataMinAge(100*time.Millisecond), kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	out, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", env.nodes[0].addr,
		"--create", "--topic", topic, "--replica-assignment", "2:3")
	if err != nil {
		return err
	}
	if want := "Created topic " + topic + "."; strings.TrimSpace(out) != want {
		return fmt.Errorf("--create printed %q, want %q", firstLine(out), want)
	}
	if err := waitLeaders(ctx, env, topic, "node 2 leading with a full ISR", wantPreferredFullISR); err != nil {
		return err
	}
	// The first records reach both replicas (acks=all); the others are
	// acks=1, taken by whichever replica leads.
	all, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer all.Close()
	if err := produceN(ctx, all, topic, "a", 10); err != nil {
		return err
	}

	env.nodes[2].kill()
	if err := waitLeaders(ctx, env, topic, "ISR [2]", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := produceN(ctx, cl, topic, "lost", 20); err != nil {
		return err
	}
	// With node 3 down, killing node 2 leaves node 1 alone without a
	// quorum; node 3's return restores it, and the controller then fences
	// node 2, leaving the partition without a leader. With eligible
	// leader replicas (KIP-966, on by default) node 2 leaves the ISR,
	// which empties, for the ELR, as on Kafka 4.4.
	env.nodes[1].kill()
	if err := env.restartNode(ctx, 3); err != nil {
		return err
	}
	if err := waitLeaders(ctx, env, topic, "offline with an empty ISR", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != -1 || len(p.ISR) != 0 {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}); err != nil {
		return err
	}

	election := func(typ string) (string, string, error) {
		return kafkaToolOutput(ctx, env, nil, "kafka-leader-election.sh", "--bootstrap-server", env.nodes[0].addr,
			"--topic", topic, "--partition", "0", "--election-type", typ)
	}
	stdout, stderr, err := election("preferred")
	if err == nil {
		return fmt.Errorf("--election-type preferred of the offline partition succeeded: %q", firstLine(stdout))
	}
	if want := "Error completing leader election (PREFERRED) for partition: " + topic + "-0: org.apache.kafka.common.errors.PreferredLeaderNotAvailableException"; !strings.Contains(stdout+stderr, want) {
		return fmt.Errorf("--election-type preferred: output lacks %q: %v", want, err)
	}
	if !strings.Contains(stderr, "1 replica(s) could not be elected") {
		return fmt.Errorf("--election-type preferred: stderr lacks %q: %q", "1 replica(s) could not be elected", firstLine(stderr))
	}

	stdout, _, err = election("unclean")
	if err != nil {
		return err
	}
	if err := wantElectionLine(stdout, "Successfully completed leader election (UNCLEAN) for partitions ", topic+"-0"); err != nil {
		return fmt.Errorf("--election-type unclean: %w", err)
	}
	if err := waitLeaders(ctx, env, topic, "node 3 leading alone", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != 3 || !slices.Equal(p.ISR, []int32{3}) {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := produceN(ctx, cl, topic, "c", 5); err != nil {
		return err
	}
	if err := env.restartNode(ctx, 2); err != nil {
		return err
	}
	if err := waitLeaders(ctx, env, topic, "node 2 back in the ISR", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != 3 || len(p.ISR) != 2 {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}); err != nil {
		return err
	}
	// Node 3 never had the 20 records node 2 took alone: the log holds the
	// 10 before and the 5 after the unclean election.
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	if o, ok := ends.Lookup(topic, 0); !ok || o.Err != nil || o.Offset != 15 {
		return fmt.Errorf("end offset of %s-0 after the unclean election is %d (err %v), want 15", topic, o.Offset, o.Err)
	}
	return nil
}

// killAndRestart kills node id with kill -9, waits until other replicas
// lead every partition of topic, restarts it and waits for full ISRs.
func killAndRestart(ctx context.Context, env *rowEnv, topic string, id int32) error {
	i := slices.IndexFunc(env.nodes, func(b *broker) bool { return b.id == id })
	env.nodes[i].kill()
	if err := waitLeaders(ctx, env, topic, fmt.Sprintf("node %d leading nothing after kill -9", id), func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader < 0 || p.Leader == id {
			return fmt.Errorf("leader %d", p.Leader)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := env.restartNode(ctx, id); err != nil {
		return err
	}
	return waitLeaders(ctx, env, topic, fmt.Sprintf("full ISRs after node %d returned", id), func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader < 0 || len(p.ISR) != len(p.Replicas) {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	})
}

// waitLeaders polls Metadata from every running node until each reports
// every partition of topic satisfying check.
func waitLeaders(ctx context.Context, env *rowEnv, topic, what string, check func(p kmsg.MetadataResponseTopicPartition) error) error {
	err := pollUntil(ctx, 60*time.Second, func() error {
		for _, b := range env.nodes {
			select {
			case <-b.exited:
				continue // killed on purpose
			default:
			}
			md, err := metadataFrom(ctx, b, topic)
			if err != nil {
				return fmt.Errorf("node %d: %w", b.id, err)
			}
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) == 0 {
				return fmt.Errorf("node %d does not know %s", b.id, topic)
			}
			for _, p := range md.Topics[0].Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil && !(p.Leader == -1 && err == kerr.LeaderNotAvailable) {
					return fmt.Errorf("node %d: %s-%d: %w", b.id, topic, p.Partition, err)
				}
				if err := check(p); err != nil {
					return fmt.Errorf("node %d: %s-%d: %w", b.id, topic, p.Partition, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// wantPreferredFullISR checks that a partition's preferred replica leads
// and every replica is in sync.
func wantPreferredFullISR(p kmsg.MetadataResponseTopicPartition) error {
	if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] || len(p.ISR) != len(p.Replicas) {
		return fmt.Errorf("leader %d replicas %v ISR %v", p.Leader, p.Replicas, p.ISR)
	}
	return nil
}

// wantElectionLine checks that out is exactly one line: prefix followed by
// the partitions, comma-separated in any order (the tool prints a set).
func wantElectionLine(out, prefix string, partitions ...string) error {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], prefix) {
		return fmt.Errorf("printed %q, want one line %q followed by %v", strings.TrimSpace(out), prefix, partitions)
	}
	got := strings.Split(strings.TrimPrefix(lines[0], prefix), ", ")
	slices.Sort(got)
	want := slices.Sorted(slices.Values(partitions))
	if !slices.Equal(got, want) {
		return fmt.Errorf("printed %q: partitions %v, want %v", lines[0], got, want)
	}
	return nil
}

// describeLeaders runs kafka-topics.sh --describe and checks the Leader of
// the listed partitions (partition → node id) and that each is its
// partition's preferred replica, the first of Replicas.
func describeLeaders(ctx context.Context, env *rowEnv, topic string, want map[string]string) error {
	topics, out, err := describeTopics(ctx, env, strings.Join(env.bootstrap, ","), topic)
	if err != nil {
		return err
	}
	d, ok := topics[topic]
	if !ok {
		return fmt.Errorf("--describe --topic %s did not describe it: %q", topic, firstLine(out))
	}
	found := 0
	for _, p := range d.partitions {
		leader, ok := want[p["Partition"]]
		if !ok {
			continue
		}
		found++
		preferred, _, _ := strings.Cut(p["Replicas"], ",")
		if p["Leader"] != leader || preferred != leader {
			return fmt.Errorf("describe %s partition %s: Leader %s Replicas %s, want leader %s, the preferred replica", topic, p["Partition"], p["Leader"], p["Replicas"], leader)
		}
	}
	if found != len(want) {
		return fmt.Errorf("describe %s: %d of the partitions %v described", topic, found, want)
	}
	return nil
}

// produceN writes n records value prefix0..prefix(n-1) and waits for their
// acknowledgement.
func produceN(ctx context.Context, cl *kgo.Client, topic, prefix string, n int) error {
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s%d", prefix, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("produce %d records to %s: %w", n, topic, err)
	}
	return nil
}
