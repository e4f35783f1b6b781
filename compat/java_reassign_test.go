package compat

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The notes' second operator story with Kafka's kafka-reassign-partitions.sh
// (java_reassign_test.go): a one-node cluster holding topic tp_re_01 (5
// partitions, replication factor 1, 100,000 records) grows by a second
// node, and the tool's --generate, --execute (with --throttle), --list and
// --verify move partitions onto it while a franz-go producer (acks=all)
// keeps writing; kafka-topics.sh --describe shows the new placement and
// every record is read back. Then a throttled move of tp_re_02 is
// cancelled with --cancel and executed again without a throttle.

const (
	reassignTopic       = "tp_re_01"
	reassignRecords     = 100000
	reassignCancelTopic = "tp_re_02"
)

func javaReassignRow() row {
	r := javaRow("kafka-reassign-partitions", 6*time.Minute, runJavaReassign)
	r.cluster = true
	return r
}

// reassignPlan is the tool's reassignment JSON.
type reassignPlan struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string   `json:"topic"`
		Partition int32    `json:"partition"`
		Replicas  []int32  `json:"replicas"`
		LogDirs   []string `json:"log_dirs,omitempty"`
	} `json:"partitions"`
}

// throttleKeys are the configs kafka-reassign-partitions.sh --throttle sets.
var (
	throttleBrokerKeys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	throttleTopicKeys  = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

func runJavaReassign(ctx context.Context, env *rowEnv) error {
	cl, adm, err := newAdmin(env, kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := adm.CreateTopic(ctx, 5, 1, nil, reassignTopic); err != nil {
		return fmt.Errorf("franz-go create %s: %w", reassignTopic, err)
	}
	if err := produceNumbered(ctx, cl, reassignTopic, "rec", reassignRecords); err != nil {
		return err
	}
	if _, err := env.addNode(ctx); err != nil {
		return fmt.Errorf("adding node 2: %w", err)
	}
	if err := waitClusterMetadata(ctx, env.nodes[1], env.nodes); err != nil {
		return err
	}
	// The new broker holds no replica until one is moved to it.
	if err := checkPlacementOnly(ctx, env, reassignTopic, 1); err != nil {
		return fmt.Errorf("before any move: %w", err)
	}

	bp, err := startBackgroundProducer(env, reassignTopic)
	if err != nil {
		return err
	}
	defer bp.stop()

	// --generate for both brokers.
	moveFile := filepath.Join(env.dir, "topics-to-move.json")
	if err := os.WriteFile(moveFile, []byte(`{"topics":[{"topic":"`+reassignTopic+`"}],"version":1}`), 0o644); err != nil {
		return err
	}
	boot := env.nodes[0].addr
	out, err := kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
		"--topics-to-move-json-file", moveFile, "--broker-list", "1,2", "--generate")
	if err != nil {
		return err
	}
	plan, err := parseGenerate(out)
	if err != nil {
		return err
	}
	planFile := filepath.Join(env.dir, "plan.json")
	if err := writePlan(planFile, plan); err != nil {
		return err
	}

	// --execute with a throttle (high enough not to slow the row down),
	// which the tool sets as broker and topic configs.
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
		"--reassignment-json-file", planFile, "--execute", "--throttle", "50000000")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Successfully started partition reassignments for ") {
		return fmt.Errorf("--execute --throttle printed %q, want \"Successfully started partition reassignments for ...\"", lastLine(out))
	}
	if !strings.Contains(out, "The inter-broker throttle limit was set to 50000000 B/s") {
		return fmt.Errorf("--execute --throttle did not report the throttle: %q", out)
	}
	if err := checkThrottleConfigs(ctx, adm, reassignTopic, true); err != nil {
		return fmt.Errorf("after --execute --throttle: %w", err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--list")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "Current partition reassignments:") && !strings.Contains(out, "No partition reassignments found.") {
		return fmt.Errorf("--list printed %q", firstLine(out))
	}

	// --verify until every move is complete; the run that says so removes
	// the throttle.
	if err := verifyUntilComplete(ctx, env, planFile, plan, boot); err != nil {
		return err
	}
	if err := checkThrottleConfigs(ctx, adm, reassignTopic, false); err != nil {
		return fmt.Errorf("after --verify reported completion: %w", err)
	}
	if err := describeShowsPlan(ctx, env, plan); err != nil {
		return err
	}

	acked, err := bp.finish()
	if err != nil {
		return err
	}
	if len(acked) == 0 {
		return fmt.Errorf("the producer running during the move got no acknowledgement")
	}
	if err := readBackAll(ctx, env, reassignTopic, 5, "rec", reassignRecords, acked); err != nil {
		return err
	}
	return runReassignCancel(ctx, env, adm, cl, boot)
}

// runReassignCancel moves tp_re_02 (3 MB on node 1) to node 2 under a
// 1,000 B/s throttle, so the move stays in progress, lists and cancels it,
// then executes it again without a throttle and verifies it.
func runReassignCancel(ctx context.Context, env *rowEnv, adm *kadm.Client, cl *kgo.Client, boot string) error {
	// Partition 0 on node 1, whatever placement would choose.
	creq := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = reassignCancelTopic, -1, -1
	ca := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ca.Partition, ca.Replicas = 0, []int32{1}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ca)
	creq.Topics = append(creq.Topics, ct)
	cresp, err := creq.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(cresp.Topics[0].ErrorCode)
	}
	if err != nil {
		return fmt.Errorf("franz-go create %s on node 1: %w", reassignCancelTopic, err)
	}
	var recs []*kgo.Record
	buf := make([]byte, 750)
	for i := range 3000 {
		rand.Read(buf)
		recs = append(recs, &kgo.Record{Topic: reassignCancelTopic, Value: fmt.Appendf(nil, "c-%d-%s", i, base64.StdEncoding.EncodeToString(buf))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce to %s: %w", reassignCancelTopic, err)
	}
	if err := checkPlacementOnly(ctx, env, reassignCancelTopic, 1); err != nil {
		return err
	}
	planFile := filepath.Join(env.dir, "cancel-plan.json")
	plan := `{"version":1,"partitions":[{"topic":"` + reassignCancelTopic + `","partition":0,"replicas":[2]}]}`
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		return err
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
		"--reassignment-json-file", planFile, "--execute", "--throttle", "1000")
	if err != nil {
		return err
	}
	if want := "Successfully started partition reassignment for " + reassignCancelTopic + "-0"; !strings.Contains(out, want) {
		return fmt.Errorf("--execute --throttle 1000 printed %q, want %q", lastLine(out), want)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--list")
	if err != nil {
		return err
	}
	if want := reassignCancelTopic + "-0: replicas: 2,1. adding: 2. removing: 1."; !strings.Contains(out, want) {
		return fmt.Errorf("--list during the throttled move printed %q, want a line %q", out, want)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
		"--reassignment-json-file", planFile, "--cancel")
	if err != nil {
		return err
	}
	if want := "Successfully cancelled partition reassignment for: " + reassignCancelTopic + "-0"; !strings.Contains(out, want) {
		return fmt.Errorf("--cancel printed %q, want %q", out, want)
	}
	if err := checkThrottleConfigs(ctx, adm, reassignCancelTopic, false); err != nil {
		return fmt.Errorf("after --cancel: %w", err)
	}
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot, "--list")
	if err != nil {
		return err
	}
	if !strings.Contains(out, "No partition reassignments found.") {
		return fmt.Errorf("--list after --cancel printed %q", out)
	}
	if err := checkPlacementOnly(ctx, env, reassignCancelTopic, 1); err != nil {
		return fmt.Errorf("after --cancel: %w", err)
	}

	// The same move without a throttle completes.
	out, err = kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
		"--reassignment-json-file", planFile, "--execute")
	if err != nil {
		return err
	}
	if strings.Contains(out, "throttle limit") {
		return fmt.Errorf("--execute without --throttle reported a throttle: %q", out)
	}
	var p reassignPlan
	if err := json.Unmarshal([]byte(plan), &p); err != nil {
		return err
	}
	if err := verifyUntilComplete(ctx, env, planFile, p, boot); err != nil {
		return err
	}
	if err := describeShowsPlan(ctx, env, p); err != nil {
		return err
	}
	recsBack, err := consumeAll(ctx, env, reassignCancelTopic, 1)
	if err != nil {
		return err
	}
	if len(recsBack) != 3000 {
		return fmt.Errorf("read %d records of %s after the move, want 3000", len(recsBack), reassignCancelTopic)
	}
	return nil
}

// produceNumbered writes count records "<prefix>-<i>" round-robin over
// the topic's partitions and waits for every ack.
func produceNumbered(ctx context.Context, cl *kgo.Client, topic, prefix string, count int) error {
	recs := make([]*kgo.Record, 0, count)
	for i := range count {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", prefix, i)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("franz-go produce to %s: %w", topic, err)
	}
	return nil
}

// parseGenerate reads --generate's proposed plan and checks it places each
// of tp_re_01's 5 partitions on one of brokers 1 and 2, using both.
func parseGenerate(out string) (reassignPlan, error) {
	var plan reassignPlan
	const head = "Proposed partition reassignment configuration"
	i := strings.Index(out, head)
	if i < 0 || !strings.Contains(out[:i], "Current partition replica assignment") {
		return plan, fmt.Errorf("--generate printed %q, want the current and the proposed assignment", firstLine(out))
	}
	body := strings.TrimSpace(out[i+len(head):])
	if err := json.Unmarshal([]byte(firstLine(body)), &plan); err != nil {
		return plan, fmt.Errorf("--generate's proposed plan %q: %w", firstLine(body), err)
	}
	used := map[int32]bool{}
	seen := map[int32]bool{}
	for _, p := range plan.Partitions {
		if p.Topic != reassignTopic || len(p.Replicas) != 1 || (p.Replicas[0] != 1 && p.Replicas[0] != 2) || seen[p.Partition] {
			return plan, fmt.Errorf("--generate proposed %s-%d on %v", p.Topic, p.Partition, p.Replicas)
		}
		seen[p.Partition] = true
		used[p.Replicas[0]] = true
	}
	if len(seen) != 5 || len(used) != 2 {
		return plan, fmt.Errorf("--generate proposed %d partitions over brokers %v, want 5 over 1 and 2", len(seen), used)
	}
	return plan, nil
}

func writePlan(path string, plan reassignPlan) error {
	data, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

var verifyLine = regexp.MustCompile(`(?m)^Reassignment of partition (\S+)-(\d+) is (.*)\.$`)

// verifyUntilComplete runs --verify until it reports every partition of
// the plan "is completed.", and checks that run removed the throttle.
func verifyUntilComplete(ctx context.Context, env *rowEnv, planFile string, plan reassignPlan, boot string) error {
	var last string
	err := pollUntil(ctx, 90*time.Second, func() error {
		out, err := kafkaTool(ctx, env, nil, "kafka-reassign-partitions.sh", "--bootstrap-server", boot,
			"--reassignment-json-file", planFile, "--verify")
		if err != nil {
			return err
		}
		last = out
		done := map[string]bool{}
		for _, m := range verifyLine.FindAllStringSubmatch(out, -1) {
			if m[3] == "completed" {
				done[m[1]+"-"+m[2]] = true
			}
		}
		for _, p := range plan.Partitions {
			name := p.Topic + "-" + strconv.Itoa(int(p.Partition))
			if !done[name] {
				return fmt.Errorf("--verify does not report %s complete: %q", name, out)
			}
			if !strings.Contains(out, "Reassignment of partition "+name+" is completed.") {
				return fmt.Errorf("--verify wording for %s: %q", name, out)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !strings.Contains(last, "Clearing broker-level throttles on brokers ") || !strings.Contains(last, "Clearing topic-level throttles on topic ") {
		return fmt.Errorf("--verify reported completion without clearing the throttles: %q", last)
	}
	return nil
}

// checkThrottleConfigs checks that the throttle configs --throttle sets
// are (set true) or are not (set false) explicitly set on both brokers and
// the topic, as DescribeConfigs reports them.
func checkThrottleConfigs(ctx context.Context, adm *kadm.Client, topic string, set bool) error {
	return pollUntil(ctx, 10*time.Second, func() error {
		check := func(what string, rcs kadm.ResourceConfigs, keys []string) error {
			if len(rcs) != 1 || rcs[0].Err != nil {
				return fmt.Errorf("DescribeConfigs %s: %v", what, rcs)
			}
			for _, key := range keys {
				dynamic := false
				for _, c := range rcs[0].Configs {
					if c.Key == key && c.Value != nil && *c.Value != "" && c.Source != 5 /* default */ {
						dynamic = true
					}
				}
				if dynamic != set {
					return fmt.Errorf("%s: %s explicitly set %v, want %v", what, key, dynamic, set)
				}
			}
			return nil
		}
		for _, id := range []int32{1, 2} {
			rcs, err := adm.DescribeBrokerConfigs(ctx, id)
			if err != nil {
				return err
			}
			if err := check(fmt.Sprintf("broker %d", id), rcs, throttleBrokerKeys); err != nil {
				return err
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			return err
		}
		return check("topic "+topic, rcs, throttleTopicKeys)
	})
}

// checkPlacementOnly checks that Metadata places every partition of topic
// on broker id alone.
func checkPlacementOnly(ctx context.Context, env *rowEnv, topic string, id int32) error {
	return pollUntil(ctx, 15*time.Second, func() error {
		resp, err := metadataFrom(ctx, env.nodes[0], topic)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) == 0 {
			return fmt.Errorf("Metadata for %s: %d topics", topic, len(resp.Topics))
		}
		for _, p := range resp.Topics[0].Partitions {
			if !slices.Equal(p.Replicas, []int32{id}) || p.Leader != id {
				return fmt.Errorf("%s-%d: replicas %v leader %d, want only %d", topic, p.Partition, p.Replicas, p.Leader, id)
			}
		}
		return nil
	})
}

// describeShowsPlan checks kafka-topics.sh --describe against the plan:
// each partition's Replicas, Isr and Leader are its target broker.
func describeShowsPlan(ctx context.Context, env *rowEnv, plan reassignPlan) error {
	topic := plan.Partitions[0].Topic
	topics, out, err := describeTopics(ctx, env, env.nodes[1].addr, topic)
	if err != nil {
		return err
	}
	d := topics[topic]
	if d == nil || len(d.partitions) != len(plan.Partitions) {
		return fmt.Errorf("--describe %s: %q", topic, firstLine(out))
	}
	for _, want := range plan.Partitions {
		p := d.partitions[want.Partition]
		ids := joinIDs(want.Replicas)
		if p["Replicas"] != ids || p["Isr"] != ids || p["Leader"] != strconv.Itoa(int(want.Replicas[0])) {
			return fmt.Errorf("--describe %s partition %d: Leader %s Replicas %s Isr %s, want all %s",
				topic, want.Partition, p["Leader"], p["Replicas"], p["Isr"], ids)
		}
	}
	return nil
}

// bgProducer is a franz-go producer (acks=all, idempotent) writing
// "live-<i>" records until finished, remembering every acknowledged value.
type bgProducer struct {
	cl    *kgo.Client
	quit  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	acked map[string]bool
	err   error
	once  sync.Once
}

func startBackgroundProducer(env *rowEnv, topic string) (*bgProducer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.nodes[0].addr), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(60*time.Second))
	if err != nil {
		return nil, err
	}
	bp := &bgProducer{cl: cl, quit: make(chan struct{}), done: make(chan struct{}), acked: map[string]bool{}}
	go func() {
		defer close(bp.done)
		var wg sync.WaitGroup
		defer wg.Wait()
		for i := 0; ; i++ {
			select {
			case <-bp.quit:
				return
			default:
			}
			v := fmt.Sprintf("live-%d", i)
			wg.Add(1)
			cl.Produce(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				bp.mu.Lock()
				defer bp.mu.Unlock()
				if err != nil && bp.err == nil {
					bp.err = fmt.Errorf("the producer running during the move lost %q: %w", v, err)
				} else if err == nil {
					bp.acked[v] = true
				}
			})
			if i%100 == 99 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	return bp, nil
}

// finish stops producing, waits for every outstanding record and returns
// the acknowledged values, or the first lost record.
func (bp *bgProducer) finish() (map[string]bool, error) {
	bp.stop()
	bp.mu.Lock()
	defer bp.mu.Unlock()
	return bp.acked, bp.err
}

func (bp *bgProducer) stop() {
	bp.once.Do(func() {
		close(bp.quit)
		<-bp.done
		bp.cl.Close()
	})
}

// readBackAll reads every partition of topic and checks that each of the
// count numbered records and each acknowledged value is there exactly once.
func readBackAll(ctx context.Context, env *rowEnv, topic string, partitions int32, prefix string, count int, acked map[string]bool) error {
	recs, err := consumeAll(ctx, env, topic, partitions)
	if err != nil {
		return err
	}
	got := make(map[string]int, len(recs))
	for _, r := range recs {
		got[string(r.Value)]++
	}
	for i := range count {
		if v := fmt.Sprintf("%s-%d", prefix, i); got[v] != 1 {
			return fmt.Errorf("record %q read %d times after the move", v, got[v])
		}
	}
	for v := range acked {
		if got[v] != 1 {
			return fmt.Errorf("acknowledged record %q read %d times after the move", v, got[v])
		}
	}
	if len(recs) != count+len(acked) {
		return fmt.Errorf("read %d records, want %d written before and %d acknowledged during the move", len(recs), count, len(acked))
	}
	env.t.Logf("read back %d records: %d written before the move, %d acknowledged during it", len(recs), count, len(acked))
	return nil
}
