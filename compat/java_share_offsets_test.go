package compat

// The kafka-share-offsets row (issue 20): Kafka 4.4's kafka-share-groups.sh
// (ShareGroupCommand, from the 4.4.0 jars) managing a share group's
// offsets on one sluice node through DescribeShareGroupOffsets (90),
// AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92).
//
//  1. Share groups are enabled as a user enables them: kafka-features.sh
//     describe; while it shows share.version with a supported max of 0
//     (or not at all) the row skips, saying so, and runs as soon as the
//     build supports level 1; a level finalized below 1 is raised with
//     kafka-features.sh upgrade --feature share.version=1.
//  2. Topic compat-share-offsets, 2 partitions, 10 records in each.
//  3. --reset-offsets --to-earliest --execute on a group that does not
//     exist yet (Kafka 4.4 creates it): NEW-OFFSET 0 for both partitions;
//     --describe: START-OFFSET 0 and LAG 10 for both.
//  4. A franz-go share consumer of the group reads and accepts all 20
//     records and leaves; --describe: START-OFFSET 10, LAG 0.
//  5. --reset-offsets --to-earliest --execute again: the next consumer is
//     delivered all 20 records again (the reset reaches the share-partitions
//     already loaded).
//  6. --delete-offsets --topic: the topic's line says Successful, and
//     --describe then says the group has no offset information.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	shareOffsetsTopic = "compat-share-offsets"
	shareOffsetsGroup = "compat-share-offsets-group"
)

func javaShareOffsetsRow() row {
	return javaRow("kafka-share-offsets", 2*time.Minute, runJavaShareOffsets)
}

// shareOffsetLine is one line of kafka-share-groups.sh --describe.
type shareOffsetLine struct {
	start, lag string
}

// describeShareOffsetsTool runs --describe on the group and returns its
// lines by partition of the row's topic, and the whole output.
func describeShareOffsetsTool(ctx context.Context, env *rowEnv, libs string) (map[int32]shareOffsetLine, string, error) {
	out, err := kafka44Tool(ctx, env, libs, "kafka-share-groups.sh", "--bootstrap-server", env.broker.addr, "--describe", "--group", shareOffsetsGroup)
	if err != nil {
		return nil, out, err
	}
	lines := make(map[int32]shareOffsetLine)
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		// GROUP TOPIC PARTITION START-OFFSET LAG
		if len(f) != 5 || f[0] != shareOffsetsGroup || f[1] != shareOffsetsTopic {
			continue
		}
		p, err := strconv.ParseInt(f[2], 10, 32)
		if err != nil {
			return nil, out, fmt.Errorf("kafka-share-groups.sh --describe printed %q", l)
		}
		lines[int32(p)] = shareOffsetLine{start: f[3], lag: f[4]}
	}
	return lines, out, nil
}

// wantShareOffsetLines checks both partitions' START-OFFSET and LAG.
func wantShareOffsetLines(ctx context.Context, env *rowEnv, libs, when, start, lag string) error {
	lines, out, err := describeShareOffsetsTool(ctx, env, libs)
	if err != nil {
		return err
	}
	for p := int32(0); p < 2; p++ {
		if got := lines[p]; got.start != start || got.lag != lag {
			return fmt.Errorf("%s: kafka-share-groups.sh --describe shows partition %d at START-OFFSET %q LAG %q, want %s and %s; it printed:\n%s", when, p, got.start, got.lag, start, lag, out)
		}
	}
	return nil
}

// resetShareOffsetsToEarliest runs --reset-offsets --to-earliest --execute
// and checks NEW-OFFSET 0 for both partitions.
func resetShareOffsetsToEarliest(ctx context.Context, env *rowEnv, libs string) error {
	out, err := kafka44Tool(ctx, env, libs, "kafka-share-groups.sh", "--bootstrap-server", env.broker.addr,
		"--reset-offsets", "--to-earliest", "--execute", "--group", shareOffsetsGroup, "--topic", shareOffsetsTopic)
	if err != nil {
		return err
	}
	seen := 0
	for _, l := range strings.Split(out, "\n") {
		// GROUP TOPIC PARTITION NEW-OFFSET
		if f := strings.Fields(l); len(f) == 4 && f[0] == shareOffsetsGroup && f[1] == shareOffsetsTopic {
			if f[3] != "0" {
				return fmt.Errorf("kafka-share-groups.sh --reset-offsets --to-earliest printed %q, want NEW-OFFSET 0", l)
			}
			seen++
		}
	}
	if seen != 2 {
		return fmt.Errorf("kafka-share-groups.sh --reset-offsets --to-earliest printed %d partitions, want 2:\n%s", seen, out)
	}
	return nil
}

// consumeShareOffsetsTopic reads the row's topic with a franz-go share
// consumer of the group, accepting every record, until all 20 came, and
// closes it (the member leaves).
func consumeShareOffsetsTopic(ctx context.Context, env *rowEnv) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.ConsumeTopics(shareOffsetsTopic), kgo.ShareGroup(shareOffsetsGroup))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seen := make(map[string]bool)
	for len(seen) < 20 && ctx.Err() == nil {
		for _, r := range cl.PollRecords(ctx, 100).Records() {
			r.Ack(kgo.AckAccept)
			seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
		}
	}
	if len(seen) < 20 {
		return fmt.Errorf("the share consumer of %s was delivered %d of the 20 records", shareOffsetsGroup, len(seen))
	}
	return cl.FlushAcks(ctx)
}

func runJavaShareOffsets(ctx context.Context, env *rowEnv) error {
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	features, err := describeFeatures(ctx, env, libs, env.broker.addr)
	if err != nil {
		return err
	}
	sv, listed := features["share.version"]
	if !listed || sv.max == "0" {
		return rowSkipped{"kafka-features.sh describe shows share.version at supported max 0 (or not at all): share groups cannot be enabled yet; the row runs once the build supports level 1"}
	}
	if n, _ := strconv.Atoi(sv.finalized); n < 1 {
		if err := featuresTool(ctx, env, libs, env.broker.addr, "share.version was upgraded to 1.", "upgrade", "--feature", "share.version=1"); err != nil {
			return err
		}
		err := pollUntil(ctx, 20*time.Second, func() error {
			s, err := readShareSupport(ctx, env.broker.addr)
			if err == nil && s.finalized < 1 {
				err = fmt.Errorf("ApiVersions reports share.version at %d after kafka-features.sh upgrade", s.finalized)
			}
			return err
		})
		if err != nil {
			return err
		}
	}

	if _, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", env.broker.addr,
		"--create", "--topic", shareOffsetsTopic, "--partitions", "2", "--replication-factor", "1"); err != nil {
		return err
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	var rs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := range 10 {
			rs = append(rs, &kgo.Record{Topic: shareOffsetsTopic, Partition: p, Value: []byte(fmt.Sprintf("%d-%d", p, i))})
		}
	}
	err = producer.ProduceSync(ctx, rs...).FirstErr()
	producer.Close()
	if err != nil {
		return fmt.Errorf("produce: %w", err)
	}

	if err := resetShareOffsetsToEarliest(ctx, env, libs); err != nil {
		return err
	}
	if err := wantShareOffsetLines(ctx, env, libs, "after --reset-offsets --to-earliest", "0", "10"); err != nil {
		return err
	}
	if err := consumeShareOffsetsTopic(ctx, env); err != nil {
		return err
	}
	err = pollUntil(ctx, 20*time.Second, func() error {
		return wantShareOffsetLines(ctx, env, libs, "after every record was accepted", "10", "0")
	})
	if err != nil {
		return err
	}
	// The member left when its consumer closed; the reset needs the
	// group empty.
	if err := pollUntil(ctx, 20*time.Second, func() error { return resetShareOffsetsToEarliest(ctx, env, libs) }); err != nil {
		return err
	}
	if err := consumeShareOffsetsTopic(ctx, env); err != nil {
		return fmt.Errorf("after the second reset to earliest: %w", err)
	}

	var out string
	err = pollUntil(ctx, 20*time.Second, func() error {
		var err error
		out, err = kafka44Tool(ctx, env, libs, "kafka-share-groups.sh", "--bootstrap-server", env.broker.addr,
			"--delete-offsets", "--group", shareOffsetsGroup, "--topic", shareOffsetsTopic)
		return err
	})
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Successful") {
		return fmt.Errorf("kafka-share-groups.sh --delete-offsets printed %q, want the topic Successful", strings.TrimSpace(out))
	}
	_, out, err = describeShareOffsetsTool(ctx, env, libs)
	if err != nil {
		return err
	}
	if !strings.Contains(out, "has no offset information") {
		return fmt.Errorf("after --delete-offsets kafka-share-groups.sh --describe printed %q, want no offset information", strings.TrimSpace(out))
	}
	return nil
}
