package compat

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rows for Kafka tools that consume through a consumer group: they need
// FindCoordinator, JoinGroup, SyncGroup, Heartbeat, OffsetCommit and
// OffsetFetch from the broker's group coordinator.

func javaConsumerPerfRow() row {
	return javaRow("kafka-consumer-perf", 3*time.Minute, runJavaConsumerPerf)
}

// runJavaConsumerPerf fills a topic with kafka-producer-perf-test.sh, reads
// it with kafka-consumer-perf-test.sh --messages N, and checks the count of
// messages the consumer reports in its data.consumed.in.nMsg column.
func runJavaConsumerPerf(ctx context.Context, env *rowEnv) error {
	if err := runProducerPerf(ctx, env); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-consumer-perf-test.sh", "--bootstrap-server", env.broker.addr,
		"--topic", perfTopic, "--messages", strconv.Itoa(perfRecords), "--timeout", "60000")
	if err != nil {
		return err
	}
	// A header line of comma-separated column names, then one data line.
	var header, data []string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		cols := strings.Split(line, ",")
		for i := range cols {
			cols[i] = strings.TrimSpace(cols[i])
		}
		switch {
		case len(cols) > 1 && cols[0] == "start.time":
			header = cols
		case header != nil && len(cols) == len(header):
			data = cols
		}
	}
	if header == nil || data == nil {
		return fmt.Errorf("no header and data line in the output; it starts %q", firstLine(out))
	}
	for i, name := range header {
		if name == "data.consumed.in.nMsg" {
			if data[i] != strconv.Itoa(perfRecords) {
				return fmt.Errorf("consumer perf test consumed %s messages, want %d", data[i], perfRecords)
			}
			return nil
		}
	}
	return fmt.Errorf("no data.consumed.in.nMsg column in %q", strings.Join(header, ","))
}

func javaVerifiableConsumerRow() row {
	return javaRow("kafka-verifiable-consumer", 3*time.Minute, runJavaVerifiableConsumer)
}

// runJavaVerifiableConsumer acks values with kafka-verifiable-producer.sh,
// consumes them in a group with kafka-verifiable-consumer.sh --verbose and
// checks that every acked value was consumed at its partition and offset.
func runJavaVerifiableConsumer(ctx context.Context, env *rowEnv) error {
	acked, err := runVerifiableProducer(ctx, env)
	if err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-verifiable-consumer.sh", "--bootstrap-server", env.broker.addr,
		"--topic", verifiableTopic, "--group-id", "compat-verifiable-consumer",
		"--max-messages", strconv.Itoa(verifiableMessages), "--reset-policy", "earliest", "--verbose")
	if err != nil {
		return err
	}
	events, err := parseVerifiable(out)
	if err != nil {
		return err
	}
	consumed := map[partitionOffset]string{}
	for _, e := range events {
		if e.Name == "record_data" && e.Value != nil {
			consumed[partitionOffset{e.Partition, e.Offset}] = *e.Value
		}
	}
	for po, v := range acked {
		got, ok := consumed[po]
		if !ok {
			return fmt.Errorf("acked value %q at partition %d offset %d was not consumed (%d of %d consumed)", v, po.partition, po.offset, len(consumed), len(acked))
		}
		if got != v {
			return fmt.Errorf("partition %d offset %d: consumed %q, acked %q", po.partition, po.offset, got, v)
		}
	}
	return nil
}
