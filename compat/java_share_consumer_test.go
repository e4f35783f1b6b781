package compat

// The kafka-share-consumer row (issue 20, acceptance 3): Kafka 4.4's Java
// KafkaShareConsumer (KIP-932) on three sluice nodes, several members of
// one share group consuming a topic while one member and then a broker are
// killed with SIGKILL.
//
//  1. share.version finalized at 1 (enableShareGroups, kgo_share_test.go);
//     the row skips while this build's supported max is 0.
//  2. Topic compat-share, 6 partitions, replication factor 3; the group's
//     share.auto.offset.reset=earliest and share.record.lock.duration.ms
//     15000 (Kafka's minimum) set with IncrementalAlterConfigs, as
//     kafka-configs.sh --entity-type groups would.
//  3. Three members, each a process of compat/share/ (ShareConsumerApp,
//     explicit acknowledgement: every record printed with its delivery
//     count, then acknowledged ACCEPT and committed with commitSync). The
//     third, the victim, waits 2 s between a poll and its
//     acknowledgements. Once ShareGroupDescribe shows all three with
//     partitions, round 1 (1,000 records) is produced and the victim is
//     killed with SIGKILL as soon as it has printed a record, so it dies
//     holding acquired records it never acknowledged.
//  4. Once the survivors have acknowledged round 1, round 2 (1,000
//     records) is produced in the background, and half-way through the
//     broker that holds the share state of partition 0 is killed with
//     SIGKILL: the share coordinator of the key "group:topicId:0"
//     (FindCoordinator key type 2), or, while the cluster does not answer
//     that, the leader of partition 0 (whose memory is where the
//     share-partition state lives then, share/doc.go). It is restarted once
//     round 2 is written, and round 3 (1,000 records) follows.
//  5. kafka-share-groups.sh (4.4.0) --describe --members and --state while
//     the survivors run, and --describe --offsets (which needs
//     DescribeShareGroupOffsets) when the cluster advertises API 90; then
//     the survivors are stopped with SIGTERM (they close their consumers).
//
// Checks: every one of the 3,000 records was delivered (with the value
// produced at its offset) and acknowledged by some member: its commitSync
// succeeded, or it failed (the leader died after taking the
// acknowledgement and before answering: the Java client reports
// UnknownServerException) and DescribeShareGroupOffsets shows the
// partition's start offset past the record, so the broker took it and
// will not deliver it again; every record the victim held unacknowledged was delivered again to a
// survivor; the describe output lists the two survivors' client ids and
// not the victim's, the group Stable with 2 members, and each of the six
// partitions at START-OFFSET its end offset with LAG 0. Reported, not
// asserted (KIP-932 promises at-least-once): deliveries in all,
// redeliveries (a delivery count above 1), records delivered more than
// once, records acknowledged more than once, failed acknowledgements and
// the records whose only acknowledgement failed.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	shareRowTopic      = "compat-share"
	shareRowGroup      = "compat-share-group"
	shareRowPartitions = 6
	shareRowPerRound   = 1000 // records per round; three rounds
	shareRowRounds     = 3
)

func javaShareConsumerRow() row {
	r := javaClusterRow("kafka-share-consumer", 5*time.Minute, runJavaShareConsumer)
	r.tools = append(r.tools, "mvn")
	// A dead member's partitions go to the others once its session
	// times out: 6 s rather than Kafka's 45 s keeps the row short.
	r.overrides = []string{
		"group.share.min.session.timeout.ms=6000",
		"group.share.session.timeout.ms=6000",
		"group.share.min.heartbeat.interval.ms=1000",
		"group.share.heartbeat.interval.ms=1000",
	}
	return r
}

// sharePO is a partition and offset.
type sharePO struct {
	p   int32
	off int64
}

// shareDelivery is one REC line of a member.
type shareDelivery struct {
	member string
	count  int
	value  string
}

// shareMember is one ShareConsumerApp process.
type shareMember struct {
	name string
	proc *bgProcess
}

// shareOutput is what a member printed so far.
type shareOutput struct {
	recs     map[sharePO][]shareDelivery
	acks     map[sharePO]int
	ackFails map[sharePO]int // commitSync failed for the record's ACCEPT
	errs     []string
}

// newShareOutput is an empty shareOutput.
func newShareOutput() *shareOutput {
	return &shareOutput{recs: map[sharePO][]shareDelivery{}, acks: map[sharePO]int{}, ackFails: map[sharePO]int{}}
}

// parseShareOutput reads a member's stdout (ShareConsumerApp's lines) into
// into.
func parseShareOutput(member, out string, into *shareOutput) error {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "REC", "ACK", "ACKFAIL":
			if len(f) < 3 {
				return fmt.Errorf("%s printed %q", member, line)
			}
			p, err1 := strconv.ParseInt(f[1], 10, 32)
			off, err2 := strconv.ParseInt(f[2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return fmt.Errorf("%s printed %q: %w", member, line, err)
			}
			po := sharePO{int32(p), off}
			switch f[0] {
			case "REC":
				if len(f) != 5 {
					return fmt.Errorf("%s printed %q", member, line)
				}
				count, err := strconv.Atoi(f[3])
				if err != nil {
					return fmt.Errorf("%s printed %q: no delivery count", member, line)
				}
				into.recs[po] = append(into.recs[po], shareDelivery{member, count, f[4]})
			case "ACK":
				into.acks[po]++
			case "ACKFAIL":
				into.ackFails[po]++
			}
		case "ERR":
			into.errs = append(into.errs, member+": "+line)
		}
	}
	return nil
}

// shareRun is the row's state.
type shareRun struct {
	env     *rowEnv
	adm     *kadm.Client
	cl      *kgo.Client
	libs    string // the share consumer's jars
	kafka44 string // Kafka 4.4.0's jars
	members []*shareMember

	mu       sync.Mutex
	produced map[sharePO]string
}

func (s *shareRun) output() (*shareOutput, error) {
	out := newShareOutput()
	for _, m := range s.members {
		if err := parseShareOutput(m.name, m.proc.stdout.String(), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func runJavaShareConsumer(ctx context.Context, env *rowEnv) error {
	support, err := enableShareGroups(ctx, env)
	if err != nil {
		return err
	}
	if !support.enabled() {
		return rowSkipped{support.why() + "; the row runs once it is 1"}
	}
	s := &shareRun{env: env, produced: map[sharePO]string{}}
	start := time.Now()
	if s.libs, err = runBuildScript(ctx, env.root, "compat/share/build.sh"); err != nil {
		return err
	}
	env.t.Logf("share consumer in %s (%.1fs)", s.libs, time.Since(start).Seconds())
	if s.kafka44, err = fetchKafka44(ctx, env); err != nil {
		return err
	}

	if s.cl, err = kgo.NewClient(kgo.SeedBrokers(env.bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(shareRowTopic)); err != nil {
		return err
	}
	defer s.cl.Close()
	s.adm = kadm.NewClient(s.cl)
	resp, err := s.adm.CreateTopic(ctx, shareRowPartitions, 3, nil, shareRowTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("CreateTopic %s: %w", shareRowTopic, err)
	}
	if err := s.setGroupConfigs(ctx, map[string]string{
		"share.auto.offset.reset":       "earliest",
		"share.record.lock.duration.ms": "15000",
	}); err != nil {
		return err
	}

	defer func() {
		for _, m := range s.members {
			m.proc.stop()
		}
	}()
	for i, name := range []string{"share-c1", "share-c2", "share-victim"} {
		delay := "0"
		if i == 2 {
			delay = "2000"
		}
		if err := s.startMember(name, delay); err != nil {
			return err
		}
	}
	if err := s.waitMembers(ctx, 3); err != nil {
		return err
	}

	// Round 1; the victim dies holding what it was given.
	if err := s.produce(ctx, 0, shareRowPerRound, nil); err != nil {
		return err
	}
	victim := s.members[2]
	var held []sharePO
	err = pollUntil(ctx, 60*time.Second, func() error {
		o := newShareOutput()
		if err := parseShareOutput(victim.name, victim.proc.stdout.String(), o); err != nil {
			return err
		}
		if len(o.recs) == 0 {
			return fmt.Errorf("%s has printed no record", victim.name)
		}
		_ = victim.proc.cmd.Process.Kill()
		<-victim.proc.exited
		if err := parseShareOutput(victim.name, victim.proc.stdout.String(), o); err != nil {
			return err
		}
		for po := range o.recs {
			if o.acks[po] == 0 {
				held = append(held, po)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	victim.proc.signalled, victim.proc.early = true, nil // killed on purpose; stop only writes its log
	env.t.Logf("%s killed (SIGKILL) holding %d unacknowledged records", victim.name, len(held))
	if err := s.waitAcked(ctx, 90*time.Second, support.apis[90]); err != nil {
		return fmt.Errorf("after the member was killed: %w", err)
	}
	env.t.Logf("round 1 acknowledged (%.1fs into the row)", time.Since(start).Seconds())

	// Round 2, with the share-state broker killed half-way.
	target, how, err := s.shareStateBroker(ctx)
	if err != nil {
		return err
	}
	half := make(chan struct{})
	produced := make(chan error, 1)
	go func() { produced <- s.produce(ctx, 1, shareRowPerRound, half) }()
	select {
	case <-half:
	case err := <-produced:
		if err != nil {
			return err
		}
	}
	i := -1
	for j, n := range env.nodes {
		if n.id == target {
			i = j
		}
	}
	if i < 0 {
		return fmt.Errorf("node %d (%s) is not one of the row's", target, how)
	}
	env.nodes[i].kill()
	env.t.Logf("node %d, %s, killed (SIGKILL) half-way through round 2", target, how)
	if err := <-produced; err != nil {
		return fmt.Errorf("round 2, node %d down: %w", target, err)
	}
	if err := env.restartNode(ctx, target); err != nil {
		return err
	}
	env.t.Logf("node %d restarted", target)
	if err := s.produce(ctx, 2, shareRowPerRound, nil); err != nil {
		return err
	}
	if err := s.waitAcked(ctx, 120*time.Second, support.apis[90]); err != nil {
		// What the group's state says of the records left over.
		if support.apis[90] {
			out, derr := kafka44Tool(ctx, env, s.kafka44, "kafka-share-groups.sh", "--bootstrap-server", env.bootstrap[0], "--describe", "--group", shareRowGroup, "--offsets")
			env.t.Logf("kafka-share-groups.sh --describe --offsets (%v):\n%s", derr, out)
		}
		return fmt.Errorf("after node %d was killed and restarted: %w", target, err)
	}
	env.t.Logf("all %d records acknowledged (%.1fs into the row)", shareRowRounds*shareRowPerRound, time.Since(start).Seconds())

	if err := s.describe(ctx, support); err != nil {
		return err
	}
	for _, m := range s.members[:2] {
		m.proc.terminate()
	}
	for _, m := range s.members[:2] {
		if err := m.proc.stop(); err != nil {
			return err
		}
	}
	return s.report(held)
}

// startMember starts a ShareConsumerApp process named name.
func (s *shareRun) startMember(name, ackDelayMs string) error {
	log4j := filepath.Join(s.env.root, "compat", "kafkatools", "log4j2.properties")
	p, err := startBackground(s.env, name, "java",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dlog4j2.configurationFile="+log4j,
		"-cp", filepath.Join(s.libs, "*"),
		"dev.sluice.compat.share.ShareConsumerApp",
		"--bootstrap", strings.Join(s.env.bootstrap, ","),
		"--group", shareRowGroup, "--topic", shareRowTopic,
		"--client-id", name, "--ack-delay-ms", ackDelayMs)
	if err != nil {
		return err
	}
	s.members = append(s.members, &shareMember{name: name, proc: p})
	return nil
}

// setGroupConfigs sets the group's configs with IncrementalAlterConfigs.
func (s *shareRun) setGroupConfigs(ctx context.Context, configs map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = shareRowGroup
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, s.cl)
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs group %s: %w", shareRowGroup, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("IncrementalAlterConfigs group %s: %w: %s", shareRowGroup, err, strOr(r.ErrorMessage))
		}
	}
	return nil
}

// waitMembers waits until ShareGroupDescribe shows n members, each with
// partitions, and every member process running.
func (s *shareRun) waitMembers(ctx context.Context, n int) error {
	return pollUntil(ctx, 60*time.Second, func() error {
		for _, m := range s.members {
			if err := m.proc.running(); err != nil {
				return err
			}
		}
		groups, err := s.adm.DescribeShareGroups(ctx, shareRowGroup)
		if err != nil {
			return err
		}
		g := groups[shareRowGroup]
		if g.Err != nil {
			return g.Err
		}
		if len(g.Members) != n {
			return fmt.Errorf("group %s has %d members, want %d", shareRowGroup, len(g.Members), n)
		}
		for _, m := range g.Members {
			if len(m.Assignment[shareRowTopic]) == 0 {
				return fmt.Errorf("member %s (%s) has no partition", m.MemberID, m.ClientID)
			}
		}
		return nil
	})
}

// produce writes round's n records, partition i%6, value r<round>-<i>,
// acks=all; it closes half (if not nil) once n/2 are acknowledged.
func (s *shareRun) produce(ctx context.Context, round, n int, half chan struct{}) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	acked := 0
	for i := range n {
		r := &kgo.Record{Partition: int32(i % shareRowPartitions), Value: []byte(fmt.Sprintf("r%d-%04d", round, i))}
		wg.Add(1)
		s.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			s.mu.Lock()
			s.produced[sharePO{r.Partition, r.Offset}] = string(r.Value)
			s.mu.Unlock()
			acked++
			if acked == n/2 && half != nil {
				close(half)
			}
		})
		if half != nil && i%50 == 49 {
			// Spread the round, so that the kill lands while members
			// fetch and acknowledge.
			time.Sleep(20 * time.Millisecond)
		}
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("produce round %d: %w", round+1, first)
	}
	return nil
}

// waitAcked waits until a member has acknowledged every produced record:
// commitSync succeeded for it, or (withState: the cluster serves
// DescribeShareGroupOffsets) its commitSync failed, as when the partition
// leader dies between taking an acknowledgement and answering it, and the
// group's share-partition start offset has passed it: the broker took the
// acknowledgement, so the record is not delivered again.
func (s *shareRun) waitAcked(ctx context.Context, limit time.Duration, withState bool) error {
	return pollUntil(ctx, limit, func() error {
		for _, m := range s.members[:2] {
			if err := m.proc.running(); err != nil {
				return err
			}
		}
		o, err := s.output()
		if err != nil {
			return err
		}
		var spso map[int32]int64
		if withState {
			if spso, err = s.startOffsets(ctx); err != nil {
				return err
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		var missing []sharePO
		for po := range s.produced {
			taken := o.ackFails[po] > 0 && spso != nil && po.off < spso[po.p]
			if o.acks[po] == 0 && !taken {
				missing = append(missing, po)
			}
		}
		if len(missing) > 0 {
			sort.Slice(missing, func(i, j int) bool {
				return missing[i].p < missing[j].p || missing[i].p == missing[j].p && missing[i].off < missing[j].off
			})
			return fmt.Errorf("%d of %d records not acknowledged, first %s-%d at offset %d", len(missing), len(s.produced), shareRowTopic, missing[0].p, missing[0].off)
		}
		return nil
	})
}

// startOffsets returns the group's share-partition start offset of each
// partition (DescribeShareGroupOffsets).
func (s *shareRun) startOffsets(ctx context.Context) (map[int32]int64, error) {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	described, err := s.adm.DescribeShareGroupOffsets(rctx, shareRowGroup)
	if err != nil {
		return nil, err
	}
	d := described[shareRowGroup]
	if d.Err != nil {
		return nil, d.Err
	}
	out := map[int32]int64{}
	for p, o := range d.Offsets[shareRowTopic] {
		if o.Err == nil {
			out[p] = o.StartOffset
		}
	}
	return out, nil
}

// shareStateBroker names the broker that holds the share state of the
// group's partition 0: its share coordinator (FindCoordinator key type 2,
// key "group:topicId:0"), or the partition's leader while the cluster does
// not answer that lookup.
func (s *shareRun) shareStateBroker(ctx context.Context) (int32, string, error) {
	topics, err := s.adm.ListTopics(ctx, shareRowTopic)
	if err != nil {
		return 0, "", err
	}
	td := topics[shareRowTopic]
	if td.Err != nil {
		return 0, "", td.Err
	}
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	// Kafka's Uuid.toString: URL-safe base64 without padding.
	key := fmt.Sprintf("%s:%s:0", shareRowGroup, base64.RawURLEncoding.EncodeToString(td.ID[:]))
	req.CoordinatorKeys = []string{key}
	resp, err := req.RequestWith(ctx, s.cl)
	if err == nil && len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
		return resp.Coordinators[0].NodeID, "share coordinator of " + key, nil
	}
	why := fmt.Sprint(err)
	if err == nil && len(resp.Coordinators) == 1 {
		why = fmt.Sprint(kerr.ErrorForCode(resp.Coordinators[0].ErrorCode))
	}
	leader := td.Partitions[0].Leader
	s.env.t.Logf("FindCoordinator key type 2 for %s: %s; killing the leader of partition 0 instead", key, why)
	return leader, fmt.Sprintf("leader of %s-0", shareRowTopic), nil
}

// describe runs kafka-share-groups.sh (4.4.0) --describe on the group and
// checks that the survivors, not the victim, are its members.
func (s *shareRun) describe(ctx context.Context, support *shareSupport) error {
	addr := s.env.bootstrap[0]
	var outs []string
	run := func(args ...string) (string, error) {
		out, err := kafka44Tool(ctx, s.env, s.kafka44, "kafka-share-groups.sh",
			append([]string{"--bootstrap-server", addr, "--describe", "--group", shareRowGroup}, args...)...)
		outs = append(outs, "$ kafka-share-groups.sh --describe --group "+shareRowGroup+" "+strings.Join(args, " ")+"\n"+out)
		return out, err
	}
	defer func() { s.env.t.Logf("kafka-share-groups.sh output:\n%s", strings.Join(outs, "\n")) }()
	// table runs --describe with flag and parses the table it prints.
	table := func(flag string) (string, []groupTableRow, error) {
		out, err := run(flag)
		if err != nil {
			return out, nil, err
		}
		rows, err := parseGroupTables(out)
		if err != nil {
			return out, nil, fmt.Errorf("%s: %w", flag, err)
		}
		return out, rows, nil
	}

	// The victim leaves the group once its session times out.
	var members string
	err := pollUntil(ctx, 30*time.Second, func() error {
		out, err := run("--members")
		if err != nil {
			return err
		}
		members = out
		if strings.Contains(out, "share-victim") {
			return fmt.Errorf("--members still lists share-victim")
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range s.members[:2] {
		if !strings.Contains(members, m.name) {
			return fmt.Errorf("--members does not list %s:\n%s", m.name, members)
		}
	}
	state, rows, err := table("--state")
	if err != nil {
		return err
	}
	if len(rows) != 1 || rows[0]["STATE"] != "Stable" || rows[0]["#MEMBERS"] != "2" {
		return fmt.Errorf("--state printed %q, want the group Stable with 2 members", strings.TrimSpace(state))
	}
	if !support.apis[90] {
		outs = append(outs, "(--describe --offsets left out: the cluster does not advertise DescribeShareGroupOffsets, API 90)")
		return nil
	}
	// Every record acknowledged: each partition's start offset is its
	// end offset, lag 0, once the state is written.
	ends := map[string]string{}
	s.mu.Lock()
	for po := range s.produced {
		p := strconv.Itoa(int(po.p))
		if n, _ := strconv.ParseInt(ends[p], 10, 64); po.off+1 > n {
			ends[p] = strconv.FormatInt(po.off+1, 10)
		}
	}
	s.mu.Unlock()
	return pollUntil(ctx, 20*time.Second, func() error {
		offsets, rows, err := table("--offsets")
		if err != nil {
			return err
		}
		if len(rows) != shareRowPartitions {
			return fmt.Errorf("--offsets printed %d partitions, want %d:\n%s", len(rows), shareRowPartitions, offsets)
		}
		for _, r := range rows {
			if r["TOPIC"] != shareRowTopic || r["START-OFFSET"] != ends[r["PARTITION"]] || r["LAG"] != "0" {
				return fmt.Errorf("--offsets printed %s-%s at START-OFFSET %s LAG %s, want its end offset %s and 0:\n%s",
					r["TOPIC"], r["PARTITION"], r["START-OFFSET"], r["LAG"], ends[r["PARTITION"]], offsets)
			}
		}
		return nil
	})
}

// report checks that every record was delivered with its value and
// acknowledged, that the victim's held records went to a survivor, and
// logs the figures.
func (s *shareRun) report(held []sharePO) error {
	o, err := s.output()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.produced) != shareRowRounds*shareRowPerRound {
		return fmt.Errorf("%d records produced, want %d", len(s.produced), shareRowRounds*shareRowPerRound)
	}
	deliveries, redeliveries, multi, multiAck, maxCount, takenDespiteError := 0, 0, 0, 0, 0, 0
	for po, want := range s.produced {
		recs := o.recs[po]
		if len(recs) == 0 {
			return fmt.Errorf("%s-%d at offset %d was never delivered", shareRowTopic, po.p, po.off)
		}
		if o.acks[po] == 0 && o.ackFails[po] == 0 {
			return fmt.Errorf("%s-%d at offset %d was never acknowledged", shareRowTopic, po.p, po.off)
		}
		if o.acks[po] == 0 {
			takenDespiteError++
		}
		for _, r := range recs {
			if r.value != want {
				return fmt.Errorf("%s got %q at %s-%d offset %d, produced %q", r.member, r.value, shareRowTopic, po.p, po.off, want)
			}
			if r.count > 1 {
				redeliveries++
			}
			maxCount = max(maxCount, r.count)
		}
		deliveries += len(recs)
		if len(recs) > 1 {
			multi++
		}
		if o.acks[po] > 1 {
			multiAck++
		}
	}
	for po := range o.recs {
		if _, ok := s.produced[po]; !ok {
			return fmt.Errorf("a member got %s-%d offset %d, which was not produced", shareRowTopic, po.p, po.off)
		}
	}
	for _, po := range held {
		again := false
		for _, r := range o.recs[po] {
			again = again || r.member != "share-victim"
		}
		if !again {
			return fmt.Errorf("%s-%d offset %d, held by the killed member, was not delivered again", shareRowTopic, po.p, po.off)
		}
	}
	ackFails := 0
	for _, n := range o.ackFails {
		ackFails += n
	}
	perMember := map[string]int{}
	for _, recs := range o.recs {
		for _, r := range recs {
			perMember[r.member]++
		}
	}
	s.env.t.Logf("kafka-share-consumer figures: %d records, each delivered and acknowledged; %d deliveries in all (per member %v), "+
		"%d redeliveries (delivery count > 1, highest %d), %d records delivered more than once, %d acknowledged more than once, "+
		"%d failed acknowledgements (%d records whose only ACCEPT failed, taken by the broker as the group's start offsets show), "+
		"%d records held by the killed member delivered again; %d client errors logged",
		len(s.produced), deliveries, perMember, redeliveries, maxCount, multi, multiAck, ackFails, takenDespiteError, len(held), len(o.errs))
	for i, e := range o.errs {
		if i == 5 {
			break
		}
		s.env.t.Logf("  %s", e)
	}
	return nil
}
