package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Rows for Kafka's load and verification tools: kafka-producer-perf-test.sh,
// kafka-consumer-perf-test.sh, kafka-verifiable-producer.sh and
// kafka-verifiable-consumer.sh. The consumer-side tools subscribe through a
// consumer group (java_groups_test.go).

const (
	perfTopic      = "compat-perf"
	perfRecords    = 20000
	perfPartitions = 3

	verifiableTopic    = "compat-verifiable"
	verifiableMessages = 1000
)

func javaProducerPerfRow() row {
	return javaRow("kafka-producer-perf", 2*time.Minute, func(ctx context.Context, env *rowEnv) error {
		return runProducerPerf(ctx, env)
	})
}

// perfSummary is the final line of kafka-producer-perf-test.sh: "20000
// records sent, 32520.3 records/sec (3.10 MB/sec), 40.48 ms avg latency, ...".
var perfSummary = regexp.MustCompile(`^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, [\d.]+ ms max latency`)

// runProducerPerf sends perfRecords 100-byte records with acks=all through
// kafka-producer-perf-test.sh and checks its summary line and that the
// partitions' end offsets add up to exactly that many records.
func runProducerPerf(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, perfTopic, perfPartitions); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-producer-perf-test.sh",
		"--topic", perfTopic, "--num-records", strconv.Itoa(perfRecords), "--record-size", "100",
		"--throughput", "-1", "--producer-props", "bootstrap.servers="+addr, "acks=all", "linger.ms=5")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	m := perfSummary.FindStringSubmatch(last)
	if m == nil {
		return fmt.Errorf("last line %q is not a summary (\"N records sent, ...\")", last)
	}
	if m[1] != strconv.Itoa(perfRecords) {
		return fmt.Errorf("summary says %s records sent, want %d", m[1], perfRecords)
	}
	return checkEndOffsets(ctx, env, perfTopic, perfRecords)
}

// checkEndOffsets checks that topic's partitions hold total records in all.
func checkEndOffsets(ctx context.Context, env *rowEnv, topic string, total int64) error {
	cl, adm, err := newAdmin(env)
	if err != nil {
		return err
	}
	defer cl.Close()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("franz-go ListEndOffsets: %w", err)
	}
	var sum int64
	var perr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			perr = fmt.Errorf("franz-go ListEndOffsets %s-%d: %w", o.Topic, o.Partition, o.Err)
		}
		sum += o.Offset
	})
	if perr != nil {
		return perr
	}
	if sum != total {
		return fmt.Errorf("the broker holds %d records in %s, the tool reported %d sent", sum, topic, total)
	}
	return nil
}

func javaVerifiableProducerRow() row {
	return javaRow("kafka-verifiable-producer", 2*time.Minute, func(ctx context.Context, env *rowEnv) error {
		acked, err := runVerifiableProducer(ctx, env)
		if err != nil {
			return err
		}
		// Every acknowledged value is where the producer was told it is.
		recs, err := consumeAll(ctx, env, verifiableTopic, perfPartitions)
		if err != nil {
			return err
		}
		at := map[partitionOffset]string{}
		for _, r := range recs {
			at[partitionOffset{r.Partition, r.Offset}] = string(r.Value)
		}
		if len(recs) != len(acked) {
			return fmt.Errorf("the topic holds %d records, the producer had %d acked", len(recs), len(acked))
		}
		for po, v := range acked {
			if at[po] != v {
				return fmt.Errorf("acked value %q at partition %d offset %d; franz-go reads %q there", v, po.partition, po.offset, at[po])
			}
		}
		return nil
	})
}

type partitionOffset struct {
	partition int32
	offset    int64
}

// verifiableEvent is one JSON line of the verifiable producer or consumer.
type verifiableEvent struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Partition int32   `json:"partition"`
	Offset    int64   `json:"offset"`
	Exception string  `json:"exception"`
	Message   string  `json:"message"`
	Sent      int     `json:"sent"`
	Acked     int     `json:"acked"`
}

// parseVerifiable parses the tools' JSON lines; a line that is not JSON is
// an error.
func parseVerifiable(out string) ([]verifiableEvent, error) {
	var events []verifiableEvent
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		var e verifiableEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			return nil, fmt.Errorf("not a JSON event: %q", line)
		}
		events = append(events, e)
	}
	return events, nil
}

// runVerifiableProducer sends verifiableMessages values with acks=all
// through kafka-verifiable-producer.sh and returns each acked value by
// partition and offset. It fails on any send error, a missing shutdown, or
// sent and acked counts other than verifiableMessages.
func runVerifiableProducer(ctx context.Context, env *rowEnv) (map[partitionOffset]string, error) {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, verifiableTopic, perfPartitions); err != nil {
		return nil, err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-verifiable-producer.sh", "--bootstrap-server", addr,
		"--topic", verifiableTopic, "--max-messages", strconv.Itoa(verifiableMessages), "--acks", "-1")
	if err != nil {
		return nil, err
	}
	events, err := parseVerifiable(out)
	if err != nil {
		return nil, err
	}
	acked := map[partitionOffset]string{}
	var shutdown, toolData bool
	for _, e := range events {
		switch e.Name {
		case "producer_send_success":
			po := partitionOffset{e.Partition, e.Offset}
			if e.Value == nil {
				return nil, fmt.Errorf("producer_send_success without a value at partition %d offset %d", e.Partition, e.Offset)
			}
			if prev, dup := acked[po]; dup {
				return nil, fmt.Errorf("partition %d offset %d acked twice: %q and %q", e.Partition, e.Offset, prev, *e.Value)
			}
			acked[po] = *e.Value
		case "producer_send_error":
			return nil, fmt.Errorf("producer_send_error: %s: %s", e.Exception, e.Message)
		case "shutdown_complete":
			shutdown = true
		case "tool_data":
			toolData = true
			if e.Sent != verifiableMessages || e.Acked != verifiableMessages {
				return nil, fmt.Errorf("tool_data: sent %d acked %d, want %d each", e.Sent, e.Acked, verifiableMessages)
			}
		}
	}
	if !shutdown || !toolData {
		return nil, fmt.Errorf("no shutdown_complete and tool_data events among %d events", len(events))
	}
	if len(acked) != verifiableMessages {
		return nil, fmt.Errorf("%d values acked, want %d", len(acked), verifiableMessages)
	}
	return acked, nil
}
