package compat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Transactions v2 (KIP-890 part 2) with Kafka's Java producer: the
// cluster finalizes transaction.version 2, and a 4.x producer then sends
// no AddPartitionsToTxn (Produce v12+ has the partition leader add each
// partition) and ends each transaction with EndTxn v5, which bumps its
// epoch. kafka-producer-perf-test.sh with --transactional-id runs such a
// producer, committing a transaction every --transaction-duration-ms.

const (
	txnV2Topic   = "compat-txn-v2"
	txnV2ID      = "compat-txn-v2"
	txnV2Records = 3000
)

// javaTxnV2Row runs the transactional perf producer against one node.
func javaTxnV2Row() row {
	return javaRow("kafka-txn-v2", 2*time.Minute, runJavaTxnV2)
}

// javaTxnV2RF3Row runs it against three nodes, the topic with
// replication factor 3.
func javaTxnV2RF3Row() row {
	return javaClusterRow("kafka-txn-v2-rf3", 2*time.Minute, runJavaTxnV2)
}

func runJavaTxnV2(ctx context.Context, env *rowEnv) error {
	cl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()
	level, err := finalizedLevel(ctx, cl, "transaction.version")
	if err != nil {
		return err
	}
	if level < 2 {
		return fmt.Errorf("transaction.version is finalized at %d, want 2 (the Java producer would use transactions v1)", level)
	}
	rf := int16(len(env.nodes))
	if err := createTopicRF(ctx, env, txnV2Topic, 3, rf); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-producer-perf-test.sh",
		"--topic", txnV2Topic, "--num-records", strconv.Itoa(txnV2Records), "--record-size", "50",
		"--throughput", "-1", "--transactional-id", txnV2ID, "--transaction-duration-ms", "100",
		"--producer-props", "bootstrap.servers="+strings.Join(env.bootstrap, ","), "acks=all", "linger.ms=5")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	m := perfSummary.FindStringSubmatch(last)
	if m == nil || m[1] != strconv.Itoa(txnV2Records) {
		return fmt.Errorf("last line %q does not say %d records sent", last, txnV2Records)
	}
	recs, err := readTopic(ctx, env, txnV2Topic, kgo.ReadCommitted(), txnV2Records)
	if err != nil {
		return err
	}
	if len(recs) != txnV2Records {
		return fmt.Errorf("read_committed: %d records, the producer committed %d", len(recs), txnV2Records)
	}
	// Every EndTxn v5 bumped the epoch: a producer of transactions v1
	// would still be at epoch 0 (one InitProducerId), one of v2 is at
	// one more per transaction it ended.
	described, err := adm.DescribeTransactions(ctx, txnV2ID)
	if err != nil {
		return fmt.Errorf("franz-go DescribeTransactions: %w", err)
	}
	d, ok := described[txnV2ID]
	if !ok || d.Err != nil {
		return fmt.Errorf("franz-go DescribeTransactions %s: %v", txnV2ID, d.Err)
	}
	if d.State != "CompleteCommit" || d.ProducerEpoch < 1 {
		return fmt.Errorf("%s is %s at epoch %d, want CompleteCommit at a bumped epoch (transactions v2)", txnV2ID, d.State, d.ProducerEpoch)
	}
	env.t.Logf("%s: %d records committed; the producer ended at epoch %d", txnV2ID, len(recs), d.ProducerEpoch)
	return nil
}

// finalizedLevel is the level of feature the broker reports finalized in
// ApiVersions (0 when it reports none).
func finalizedLevel(ctx context.Context, cl *kgo.Client, feature string) (int16, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("franz-go ApiVersions: %w", err)
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == feature {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// txnV1MaxVersions caps a franz-go client below transactions v2 (Produce
// v11, EndTxn v4, TxnOffsetCommit v4): franz-go then runs the classic
// protocol whatever transaction.version the cluster finalizes, as a
// client from before KIP-890 part 2 does.
func txnV1MaxVersions() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(0, 11)
	v.SetMaxKeyVersion(26, 4)
	v.SetMaxKeyVersion(28, 4)
	return kgo.MaxVersions(v)
}
