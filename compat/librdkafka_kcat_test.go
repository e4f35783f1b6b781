package compat

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The kcat-meta row asks librdkafka, through kcat, what the broker says about
// a topic: Metadata (`kcat -L -J`) and ListOffsets by timestamp, earliest and
// latest (`kcat -Q -J`). kcat exits 0 even when a query comes back with an
// error or a value nobody asked for, so everything is checked on its output.

const (
	kcatMetaTopic      = "compat-kcat-meta"
	kcatMetaPartitions = 3
	// kcatMetaRecords is how many records each partition gets.
	kcatMetaRecords = 10
	// kcatMetaTrimmed is the partition whose records before
	// kcatMetaTrimOffset are deleted (DeleteRecords), so that "earliest"
	// and a timestamp before the log start are not trivially 0.
	kcatMetaTrimmed    = 2
	kcatMetaTrimOffset = 3
	// kcatBrokerID is the node.id every row's broker runs with.
	kcatBrokerID = 1
)

func kcatMetadataRow() row {
	return row{
		name:    "kcat-meta",
		tools:   []string{"kcat"},
		timeout: 2 * time.Minute,
		run:     runKcatMetadata,
	}
}

// kcatMetaTimestamp is the CreateTime of record i of partition p, relative to
// base: 10 ms apart, except that records 4 and 5 share one, so that a query
// for it must answer the first of the two. Partitions are offset from one
// another so that a query answered from the wrong partition shows.
func kcatMetaTimestamp(base int64, p int32, i int) int64 {
	if i == 5 {
		i = 4
	}
	return base + int64(p)*1000 + int64(i)*10
}

// runKcatMetadata creates the topic, checks `kcat -L -J` for it and for the
// whole cluster, produces records with chosen timestamps (franz-go, so the
// timestamps are exact), trims one partition and checks `kcat -Q` answers for
// earliest, latest and timestamp queries against what was produced.
func runKcatMetadata(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, kcatMetaTopic, kcatMetaPartitions); err != nil {
		return err
	}
	// Metadata first: if it lies, producing below may hang on a leader
	// that does not exist, and the lie is the failure worth reporting.
	for _, args := range [][]string{{"-t", kcatMetaTopic}, nil} {
		out, err := kcatRun(ctx, append([]string{"-L", "-J", "-b", addr}, args...)...)
		if err != nil {
			return err
		}
		if err := checkKcatMetadata(out, addr, kcatMetaTopic, kcatMetaPartitions); err != nil {
			return fmt.Errorf("kcat -L -J %s: %w", strings.Join(args, " "), err)
		}
	}

	base := time.Now().Add(-time.Hour).UnixMilli()
	if err := produceTimestamped(ctx, addr, base); err != nil {
		return err
	}

	// Each query: a timestamp (or -1 latest, -2 earliest) per partition,
	// and the offset each partition must answer. One kcat call per query,
	// because kcat -Q with one partition twice answers nonsense.
	type query struct {
		what string
		ts   func(p int32) int64
		want func(p int32) int64
	}
	logStart := func(p int32) int64 {
		if p == kcatMetaTrimmed {
			return kcatMetaTrimOffset
		}
		return 0
	}
	queries := []query{
		{"latest (-1)", func(int32) int64 { return -1 }, func(int32) int64 { return kcatMetaRecords }},
		{"earliest (-2)", func(int32) int64 { return -2 }, logStart},
		{"timestamp of record 0", func(p int32) int64 { return kcatMetaTimestamp(base, p, 0) }, logStart},
		{"timestamp of record 7", func(p int32) int64 { return kcatMetaTimestamp(base, p, 7) }, func(int32) int64 { return 7 }},
		{"timestamp shared by records 4 and 5", func(p int32) int64 { return kcatMetaTimestamp(base, p, 5) }, func(int32) int64 { return 4 }},
		{"timestamp between records 2 and 3", func(p int32) int64 { return kcatMetaTimestamp(base, p, 2) + 5 }, func(p int32) int64 { return max(3, logStart(p)) }},
		{"timestamp after the last record", func(p int32) int64 { return kcatMetaTimestamp(base, p, kcatMetaRecords-1) + 1 }, func(int32) int64 { return -1 }},
	}
	for _, q := range queries {
		args := []string{"-Q", "-J", "-b", addr}
		for p := range int32(kcatMetaPartitions) {
			args = append(args, "-t", fmt.Sprintf("%s:%d:%d", kcatMetaTopic, p, q.ts(p)))
		}
		out, err := kcatRun(ctx, args...)
		if err != nil {
			return err
		}
		got, err := parseKcatOffsets(out, kcatMetaTopic)
		if err != nil {
			return fmt.Errorf("kcat -Q %s: %w", q.what, err)
		}
		for p := range int32(kcatMetaPartitions) {
			if want := q.want(p); got[p] != want {
				return fmt.Errorf("kcat -Q %s: partition %d offset %d, want %d\n%s", q.what, p, got[p], want, out)
			}
		}
	}
	return nil
}

// kcatRun runs kcat and returns its stdout; a non-zero exit or an error line
// on stderr is an error.
func kcatRun(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "kcat", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kcat %s: %v: %s", strings.Join(args, " "), err, firstLine(stderr.String()))
	}
	if bad := kcatErrorLine(stderr.Bytes()); bad != "" {
		return nil, fmt.Errorf("kcat %s: %s", strings.Join(args, " "), bad)
	}
	return out, nil
}

// kcatMetadataJSON is what `kcat -L -J` prints.
type kcatMetadataJSON struct {
	OriginatingBroker struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"originating_broker"`
	ControllerID int32 `json:"controllerid"`
	Brokers      []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Error      string `json:"error"`
		Partitions []struct {
			Partition int32                `json:"partition"`
			Leader    int32                `json:"leader"`
			Error     string               `json:"error"`
			Replicas  []struct{ ID int32 } `json:"replicas"`
			ISRs      []struct{ ID int32 } `json:"isrs"`
		} `json:"partitions"`
	} `json:"topics"`
}

// checkKcatMetadata checks kcat's view of a single-node cluster: one broker,
// kcatBrokerID at addr, the controller; topic present without error, with
// partitions 0..partitions-1, each led by that broker, which is its only
// replica and its only in-sync replica.
func checkKcatMetadata(out []byte, addr, topic string, partitions int32) error {
	var md kcatMetadataJSON
	if err := json.Unmarshal(out, &md); err != nil {
		return fmt.Errorf("output is not kcat's JSON: %v: %.200q", err, out)
	}
	if md.OriginatingBroker.ID != kcatBrokerID {
		return fmt.Errorf("answered by broker %d (%s), want %d", md.OriginatingBroker.ID, md.OriginatingBroker.Name, kcatBrokerID)
	}
	if md.ControllerID != kcatBrokerID {
		return fmt.Errorf("controller id %d, want %d", md.ControllerID, kcatBrokerID)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].ID != kcatBrokerID || md.Brokers[0].Name != addr {
		return fmt.Errorf("brokers %+v, want exactly [{ID:%d Name:%s}]", md.Brokers, kcatBrokerID, addr)
	}
	found := false
	for _, t := range md.Topics {
		if t.Topic != topic {
			continue
		}
		found = true
		if t.Error != "" {
			return fmt.Errorf("topic %s: error %q", topic, t.Error)
		}
		if int32(len(t.Partitions)) != partitions {
			return fmt.Errorf("topic %s has %d partitions, want %d", topic, len(t.Partitions), partitions)
		}
		for i, p := range t.Partitions {
			replicas, isr := kcatIDs(p.Replicas), kcatIDs(p.ISRs)
			switch {
			case p.Partition != int32(i):
				return fmt.Errorf("topic %s: partition %d listed at position %d", topic, p.Partition, i)
			case p.Error != "":
				return fmt.Errorf("topic %s partition %d: error %q", topic, p.Partition, p.Error)
			case p.Leader != kcatBrokerID:
				return fmt.Errorf("topic %s partition %d: leader %d, want %d", topic, p.Partition, p.Leader, kcatBrokerID)
			case !slices.Equal(replicas, []int32{kcatBrokerID}):
				return fmt.Errorf("topic %s partition %d: replicas %v, want [%d]", topic, p.Partition, replicas, kcatBrokerID)
			case !slices.Equal(isr, []int32{kcatBrokerID}):
				return fmt.Errorf("topic %s partition %d: isr %v, want [%d]", topic, p.Partition, isr, kcatBrokerID)
			}
		}
	}
	if !found {
		return fmt.Errorf("topic %s not in the answer", topic)
	}
	return nil
}

func kcatIDs(ids []struct{ ID int32 }) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = id.ID
	}
	return out
}

// parseKcatOffsets reads `kcat -Q -J` output for one topic,
// {"TOPIC":{"topic":"TOPIC","0":{"partition":0,"offset":N},...}}, into
// partition → offset. A partition answered with an error is an error.
func parseKcatOffsets(out []byte, topic string) (map[int32]int64, error) {
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("output is not kcat's JSON: %v: %.200q", err, out)
	}
	t, ok := doc[topic]
	if !ok {
		return nil, fmt.Errorf("topic %s not in the answer: %.200q", topic, out)
	}
	got := make(map[int32]int64)
	for key, raw := range t {
		if key == "topic" {
			continue
		}
		var p struct {
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
			Error     string `json:"error"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("partition %s: %v", key, err)
		}
		if n, err := strconv.ParseInt(key, 10, 32); err != nil || int32(n) != p.Partition {
			return nil, fmt.Errorf("partition key %q holds partition %d", key, p.Partition)
		}
		if p.Error != "" {
			return nil, fmt.Errorf("partition %d: error %q", p.Partition, p.Error)
		}
		got[p.Partition] = p.Offset
	}
	return got, nil
}

// produceTimestamped writes kcatMetaRecords records to each partition with
// the CreateTimes of kcatMetaTimestamp, then deletes the records of partition
// kcatMetaTrimmed before kcatMetaTrimOffset.
func produceTimestamped(ctx context.Context, addr string, base int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for p := range int32(kcatMetaPartitions) {
		for i := range kcatMetaRecords {
			recs = append(recs, &kgo.Record{
				Topic:     kcatMetaTopic,
				Partition: p,
				Value:     []byte(fmt.Sprintf("p%d-r%d", p, i)),
				Timestamp: time.UnixMilli(kcatMetaTimestamp(base, p, i)),
			})
		}
	}
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err != nil {
			return fmt.Errorf("franz-go produce to %s[%d]: %w", kcatMetaTopic, r.Record.Partition, r.Err)
		}
	}
	adm := kadm.NewClient(cl)
	var trim kadm.Offsets
	trim.Add(kadm.Offset{Topic: kcatMetaTopic, Partition: kcatMetaTrimmed, At: kcatMetaTrimOffset})
	resp, err := adm.DeleteRecords(ctx, trim)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("kadm DeleteRecords %s[%d] before %d: %w", kcatMetaTopic, kcatMetaTrimmed, kcatMetaTrimOffset, err)
	}
	return nil
}
