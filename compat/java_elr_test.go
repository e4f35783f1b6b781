package compat

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A row for KIP-966's eligible leader replicas as kafka-topics.sh
// --describe shows them (Kafka 4.x reads them with DescribeTopicPartitions
// and prints "Elr:" and "LastKnownElr:") on three nodes: topic elr has 3
// replicas and min.insync.replicas=3, so when node 3 is killed with kill -9
// the ISR [1,2] is below min ISR and 3, which held every committed record,
// is its eligible leader replica; when 3 returns (after an unclean
// shutdown it leaves the ELR) and catches up, the ISR is full and the ELR
// empty again.

func javaELRRow() row {
	return javaClusterRow("kafka-topics-elr", 3*time.Minute, runJavaELR)
}

func runJavaELR(ctx context.Context, env *rowEnv) error {
	const topic = "elr"
	if len(env.nodes) != 3 {
		return fmt.Errorf("row needs 3 nodes, has %d", len(env.nodes))
	}
	bootstrap := strings.Join(env.bootstrap, ",")
	if _, err := kafkaTool(ctx, env, nil, "kafka-topics.sh", "--bootstrap-server", bootstrap,
		"--create", "--topic", topic, "--replica-assignment", "1:2:3", "--config", "min.insync.replicas=3"); err != nil {
		return err
	}
	full := func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != 1 || len(p.ISR) != 3 {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}
	if err := waitLeaders(ctx, env, topic, "leader 1 with a full ISR", full); err != nil {
		return err
	}
	if err := wantELRDescribe(ctx, env, bootstrap, topic, "1,2,3", "", ""); err != nil {
		return err
	}

	i := slices.IndexFunc(env.nodes, func(b *broker) bool { return b.id == 3 })
	env.nodes[i].kill()
	if err := waitLeaders(ctx, env, topic, "ISR [1,2] after node 3's kill -9", func(p kmsg.MetadataResponseTopicPartition) error {
		if p.Leader != 1 || len(p.ISR) != 2 {
			return fmt.Errorf("leader %d ISR %v", p.Leader, p.ISR)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := wantELRDescribe(ctx, env, env.bootstrap[0], topic, "1,2", "3", ""); err != nil {
		return err
	}

	if err := env.restartNode(ctx, 3); err != nil {
		return err
	}
	if err := waitLeaders(ctx, env, topic, "a full ISR after node 3 returned", full); err != nil {
		return err
	}
	return wantELRDescribe(ctx, env, bootstrap, topic, "1,2,3", "", "")
}

// wantELRDescribe runs kafka-topics.sh --describe until partition 0 of
// topic shows the ISR (as a set), Elr and LastKnownElr given; it returns
// the last difference when the row's deadline passes.
func wantELRDescribe(ctx context.Context, env *rowEnv, bootstrap, topic, isr, elr, lastKnown string) error {
	set := func(s string) string {
		f := strings.Split(s, ",")
		slices.Sort(f)
		return strings.Join(f, ",")
	}
	err := pollUntil(ctx, 30*time.Second, func() error {
		topics, out, err := describeTopics(ctx, env, bootstrap, topic)
		if err != nil {
			return err
		}
		d, ok := topics[topic]
		if !ok || len(d.partitions) != 1 {
			return fmt.Errorf("--describe --topic %s: %q", topic, firstLine(out))
		}
		p := d.partitions[0]
		gotELR, okELR := p["Elr"]
		gotLast, okLast := p["LastKnownElr"]
		if !okELR || !okLast {
			return fmt.Errorf("no Elr or LastKnownElr field in %q", strings.TrimSpace(out))
		}
		if set(p["Isr"]) != set(isr) || gotELR != elr || gotLast != lastKnown {
			return fmt.Errorf("Isr %q Elr %q LastKnownElr %q, want %q %q %q", p["Isr"], gotELR, gotLast, isr, elr, lastKnown)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kafka-topics.sh --describe: %w", err)
	}
	return nil
}
