package compat

// The kafka-streams-protocol row (issue 20, acceptance 4): the Kafka
// Streams app of the kafka-streams row (compat/streams/, SumApp), built
// against Kafka Streams 4.4.0, with group.protocol=streams (KIP-1071: the
// broker's streams group coordinator assigns its tasks and creates its
// changelog) and processing.guarantee=exactly_once_v2, on three sluice
// nodes with replication factor 3. The row sums a first round of input,
// starts a second instance of the app (the coordinator moves a task to it
// once the first released it: the group is Stable with two members that
// both have tasks), then kills the group's coordinator with kill -9
// (which also leads some of the input, output and changelog partitions),
// writes a second round while that node is down, waits until the apps
// have committed all input, brings the node back and checks every key's
// sum and that the output holds exactly one committed record per input
// record.
//
// The coordinator's successor loads the streams group from
// __consumer_offsets (groups/streams_records.go), so the member keeps its
// epoch and tasks; the row counts the app's rebalances around the kill
// (a rebalance can still come from the transaction coordinator's or a
// partition leader's move fencing the producer).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	streamsProtocolVersion = "4.4.0"
	streamsProtocolRound1  = 20 // records per key before the kill
	streamsProtocolRound2  = 10 // records per key while a node is down
)

func kafkaStreamsProtocolRow() row {
	return row{
		name:    "kafka-streams-protocol",
		tools:   []string{"java", "mvn"},
		timeout: 4 * time.Minute,
		nodes:   3,
		run:     func(ctx context.Context, env *rowEnv) error { return runStreamsProtocol(ctx, env, 3) },
	}
}

// kafkaStreamsProtocolOneNodeRow is the same app on one node, without a
// kill: exact results, kafka-streams-groups.sh --list and --describe, and
// --delete of the group once the app has left it.
func kafkaStreamsProtocolOneNodeRow() row {
	return row{
		name:    "kafka-streams-protocol-1",
		tools:   []string{"java", "mvn"},
		timeout: 3 * time.Minute,
		run:     func(ctx context.Context, env *rowEnv) error { return runStreamsProtocol(ctx, env, 1) },
	}
}

func runStreamsProtocol(ctx context.Context, env *rowEnv, nodes int) error {
	s := &streamsRun{
		bootstrap: env.bootstrap,
		rf:        int16(nodes),
		root:      env.root,
		dir:       env.dir,
		logf:      env.t.Logf,
		version:   streamsProtocolVersion,
		config:    []string{"group.protocol=streams"},
	}
	start := time.Now()
	libs, err := s.build(ctx)
	if err != nil {
		return err
	}
	s.libs = libs
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	s.adm = kadm.NewClient(cl)
	// A run again in a kept SLUICE_COMPAT_LOGDIR finds the last run's
	// group, topics and state directories: they go first.
	_, _ = s.adm.DeleteGroup(ctx, streamsAppID)
	_, _ = s.adm.DeleteTopics(ctx, streamsInput, streamsOutput, streamsChangelog)
	for _, d := range []string{"streams-state", "streams-state-2"} {
		if err := os.RemoveAll(filepath.Join(s.dir, d)); err != nil {
			return err
		}
	}
	for _, topic := range []string{streamsInput, streamsOutput} {
		err := pollUntil(ctx, 30*time.Second, func() error {
			resp, err := s.adm.CreateTopic(ctx, streamsPartitions, s.rf, nil, topic)
			if err == nil {
				err = resp.Err
			}
			return err // TOPIC_ALREADY_EXISTS while a deletion completes
		})
		if err != nil {
			return fmt.Errorf("franz-go CreateTopic %s: %w", topic, err)
		}
	}
	if s.producer, err = kgo.NewClient(kgo.SeedBrokers(s.bootstrap...), kgo.RequiredAcks(kgo.AllISRAcks())); err != nil {
		return err
	}
	defer s.producer.Close()
	s.want = map[string]int64{}
	s.inputs = map[int32]int{}

	if err := s.produce(ctx, streamsProtocolRound1); err != nil {
		return err
	}
	app, err := s.startApp(ctx, "app", filepath.Join(s.dir, "streams-state"))
	if err != nil {
		return err
	}
	defer app.kill()
	if err := s.waitCaughtUp(ctx, app); err != nil {
		return err
	}
	caughtUp := time.Since(start)
	group, _, _, err := describeStreamsGroup(ctx, cl, streamsAppID)
	if err != nil {
		return err
	}
	env.t.Logf("one app: %s", group)
	if err := streamsGroupsTool(ctx, env); err != nil {
		return err
	}
	if nodes == 1 {
		return finishStreamsProtocolOneNode(ctx, env, s, app, caughtUp)
	}

	// A second instance joins: the coordinator moves a task to it once
	// the first has released it.
	app2, err := s.startApp(ctx, "app-2", filepath.Join(s.dir, "streams-state-2"))
	if err != nil {
		return err
	}
	defer app2.kill()
	err = app2.pollUntil(ctx, streamsCatchUp, func() error {
		if err := app.running(); err != nil {
			return err
		}
		summary, g, busy, err := describeStreamsGroup(ctx, cl, streamsAppID)
		if err != nil {
			return err
		}
		if g.State != "Stable" || len(g.Members) != 2 || busy != 2 {
			return fmt.Errorf("waiting for two members with tasks: %s", summary)
		}
		group = summary
		return nil
	})
	if err != nil {
		return fmt.Errorf("second instance: %w", err)
	}
	env.t.Logf("two apps, before the kill: %s", group)

	// kill -9 the group's coordinator, then write while it is down.
	coord, err := groupCoordinator(ctx, cl, streamsAppID)
	if err != nil {
		return err
	}
	idx := slices.IndexFunc(env.nodes, func(b *broker) bool { return b.id == coord })
	if idx < 0 {
		return fmt.Errorf("the coordinator %d of %s is not one of the row's nodes", coord, streamsAppID)
	}
	rebalancesBefore := app.rebalances() + app2.rebalances()
	env.nodes[idx].kill()
	killedAt := time.Now()
	env.t.Logf("killed node %d (the coordinator of %s) with kill -9", coord, streamsAppID)
	if err := s.produce(ctx, streamsProtocolRound2); err != nil {
		return err
	}
	if err := s.waitCaughtUp(ctx, app); err != nil {
		return fmt.Errorf("with node %d down: %w", coord, err)
	}
	recovered := time.Since(killedAt)
	rebalances := app.rebalances() + app2.rebalances() - rebalancesBefore
	if err := env.restartNode(ctx, coord); err != nil {
		return err
	}
	for _, a := range []*streamsApp{app2, app} {
		if err := a.stop(ctx); err != nil {
			return err
		}
	}
	if err := s.checkOutput(ctx); err != nil {
		return fmt.Errorf("after the kill -9 of node %d: %w", coord, err)
	}
	if err := s.checkChangelogConfig(ctx); err != nil {
		return err
	}
	fmt.Printf("kafka-streams-protocol against sluice (3 nodes, Kafka Streams %s, group.protocol=streams, exactly_once_v2): "+
		"results correct for %d keys over %d input records (one output record each); first round consumed %.1fs after start; "+
		"a second instance took a task over; coordinator node %d killed with kill -9, all input committed %.1fs later, %d rebalances across the kill\n",
		streamsProtocolVersion, streamsKeys, s.produced, caughtUp.Seconds(), coord, recovered.Seconds(), rebalances)
	return nil
}

// finishStreamsProtocolOneNode stops the app, checks its output, and
// deletes its (then empty) group with kafka-streams-groups.sh --delete.
func finishStreamsProtocolOneNode(ctx context.Context, env *rowEnv, s *streamsRun, app *streamsApp, caughtUp time.Duration) error {
	if err := app.stop(ctx); err != nil {
		return err
	}
	if err := s.checkOutput(ctx); err != nil {
		return err
	}
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	addr := env.bootstrap[0]
	// Streams leaves its group on close; the delete needs it empty.
	err = pollUntil(ctx, 30*time.Second, func() error {
		_, err := kafka44Tool(ctx, env, libs, "kafka-streams-groups.sh", "--bootstrap-server", addr, "--delete", "--group", streamsAppID)
		return err
	})
	if err != nil {
		return fmt.Errorf("kafka-streams-groups.sh --delete: %w", err)
	}
	out, err := kafka44Tool(ctx, env, libs, "kafka-streams-groups.sh", "--bootstrap-server", addr, "--list")
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(out), streamsAppID) {
		return fmt.Errorf("kafka-streams-groups.sh --list after --delete still lists %s: %q", streamsAppID, strings.TrimSpace(out))
	}
	fmt.Printf("kafka-streams-protocol against sluice (1 node, Kafka Streams %s, group.protocol=streams, exactly_once_v2): "+
		"results correct for %d keys over %d input records (one output record each), consumed %.1fs after start; "+
		"kafka-streams-groups.sh listed, described and deleted the group\n",
		streamsProtocolVersion, streamsKeys, s.produced, caughtUp.Seconds())
	return nil
}

// streamsGroupsTool runs Kafka 4.4's kafka-streams-groups.sh --list and
// --describe (members, then state) against the running app's group: the
// group is listed and described Stable with one member and its tasks.
func streamsGroupsTool(ctx context.Context, env *rowEnv) error {
	libs, err := fetchKafka44(ctx, env)
	if err != nil {
		return err
	}
	addr := env.bootstrap[0]
	out, err := kafka44Tool(ctx, env, libs, "kafka-streams-groups.sh", "--bootstrap-server", addr, "--list")
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Fields(out), streamsAppID) {
		return fmt.Errorf("kafka-streams-groups.sh --list printed %q, want %s", strings.TrimSpace(out), streamsAppID)
	}
	for _, what := range [][]string{{"--members", "--verbose"}, {"--state"}, {"--offsets"}} {
		args := append([]string{"--bootstrap-server", addr, "--describe", "--group", streamsAppID}, what...)
		out, err := kafka44Tool(ctx, env, libs, "kafka-streams-groups.sh", args...)
		if err != nil {
			return err
		}
		env.t.Logf("kafka-streams-groups.sh --describe %s:\n%s", strings.Join(what, " "), out)
		if !strings.Contains(out, streamsAppID) {
			return fmt.Errorf("kafka-streams-groups.sh --describe %s printed %q, want the group %s", strings.Join(what, " "), strings.TrimSpace(out), streamsAppID)
		}
		if what[0] == "--state" && !strings.Contains(out, "Stable") {
			return fmt.Errorf("kafka-streams-groups.sh --describe --state printed %q, want Stable", strings.TrimSpace(out))
		}
	}
	return nil
}

// rebalances counts the app's RUNNING→REBALANCING transitions so far.
func (a *streamsApp) rebalances() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, l := range a.lines {
		if strings.HasPrefix(l, "state RUNNING REBALANCING ") {
			n++
		}
	}
	return n
}

// groupCoordinator asks for a group's coordinator.
func groupCoordinator(ctx context.Context, cl *kgo.Client, group string) (int32, error) {
	var id int32
	err := pollUntil(ctx, 30*time.Second, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			return fmt.Errorf("FindCoordinator %s: %+v", group, resp.Coordinators)
		}
		id = resp.Coordinators[0].NodeID
		return nil
	})
	return id, err
}

// describeStreamsGroup sends StreamsGroupDescribe to the group's
// coordinator and summarizes the answer; busy counts the members with at
// least one active task.
func describeStreamsGroup(ctx context.Context, cl *kgo.Client, group string) (summary string, g kmsg.StreamsGroupDescribeResponseGroup, busy int, err error) {
	coord, err := groupCoordinator(ctx, cl, group)
	if err != nil {
		return "", g, 0, err
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	kresp, err := cl.Broker(int(coord)).Request(ctx, req)
	if err != nil {
		return "", g, 0, fmt.Errorf("StreamsGroupDescribe %s: %w", group, err)
	}
	resp := kresp.(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
		return "", g, 0, fmt.Errorf("StreamsGroupDescribe %s: %+v", group, resp.Groups)
	}
	g = resp.Groups[0]
	var members []string
	for _, m := range g.Members {
		n := 0
		for _, t := range m.Assignment.ActiveTasks {
			n += len(t.Partitions)
		}
		if n > 0 {
			busy++
		}
		members = append(members, fmt.Sprintf("%s epoch %d, %d active tasks", m.MemberID, m.MemberEpoch, n))
	}
	return fmt.Sprintf("streams group %s on node %d: %s, epoch %d, %d members [%s]", group, coord, g.State, g.Epoch, len(g.Members), strings.Join(members, "; ")), g, busy, nil
}
