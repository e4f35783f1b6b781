package compat

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Rows for classic consumer groups seen through Kafka's tools:
// kafka-consumer-groups.sh listing, describing, resetting and deleting a
// group, and three kafka-console-consumer.sh processes sharing a topic.

const (
	cgTopic = "compat-consumer-groups"
	cgGroup = "compat-cg"
	// cgClientID is the client id of the franz-go member the tool sees.
	cgClientID = "compat-cg-member"
)

// cgProduced is how many records each partition of cgTopic gets, and
// cgCommitted the offsets the group commits before the tool looks at it.
var (
	cgProduced  = map[int32]int64{0: 20, 1: 30, 2: 40}
	cgCommitted = map[int32]int64{0: 5, 1: 10, 2: 15}
)

func javaConsumerGroupsRow() row {
	r := javaRow("kafka-consumer-groups", 3*time.Minute, runJavaConsumerGroups)
	// The row's franz-go and console consumers join one at a time; Kafka's
	// 3 s wait for more members of a new group would only slow it down.
	r.overrides = append(r.overrides, "group.initial.rebalance.delay.ms=0")
	return r
}

// cgValue is the value of record offset of partition p of cgTopic, as
// produceTo writes it.
func cgValue(p int32, offset int64) string { return fmt.Sprintf("p%d-value-%d", p, offset) }

// runJavaConsumerGroups produces 20, 30 and 40 records to three partitions,
// consumes part of them with a franz-go group member that commits offsets
// 5, 10 and 15, and then drives kafka-consumer-groups.sh: --list,
// --describe while the member is active (its member id, host and client id
// on every partition; CURRENT-OFFSET, LOG-END-OFFSET and LAG), --delete
// refused while it is, --describe once it left, --reset-offsets with
// --dry-run, --to-earliest, --to-offset (past the end of a partition) and
// --shift-by, each checked on the NEW-OFFSET lines, on the offsets
// committed afterwards and on where the group's next consumer starts (a
// franz-go member, and at the end kafka-console-consumer.sh --group), then
// --delete and --list again.
func runJavaConsumerGroups(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, cgTopic, int32(len(cgProduced))); err != nil {
		return err
	}
	cl, adm, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()
	for p := range int32(len(cgProduced)) {
		if err := produceTo(ctx, cl, cgTopic, p, int(cgProduced[p]), fmt.Sprintf("p%d", p), time.Now()); err != nil {
			return err
		}
	}

	member, err := commitWithMember(ctx, env, adm)
	if err != nil {
		return err
	}
	memberClosed := false
	defer func() {
		if !memberClosed {
			member.Close()
		}
	}()
	memberID, _ := member.GroupMetadata()
	if _, err := waitStableGroup(ctx, adm, cgGroup, cgTopic, 1, int32(len(cgProduced))); err != nil {
		return err
	}

	tool := func(args ...string) (string, string, error) {
		return kafkaToolOutput(ctx, env, nil, "kafka-consumer-groups.sh", append([]string{"--bootstrap-server", addr}, args...)...)
	}
	if err := checkGroupList(tool, []string{cgGroup}); err != nil {
		return err
	}
	if err := checkGroupDescribe(tool, "with the member active", cgCommitted, memberID, "/127.0.0.1", cgClientID); err != nil {
		return err
	}

	// Kafka refuses to delete a group with members: DeleteGroups answers
	// GROUP_NOT_EMPTY, which the tool reports and still exits 0.
	stdout, stderr, err := tool("--delete", "--group", cgGroup)
	if err != nil {
		return err
	}
	out := stdout + stderr
	for _, want := range []string{
		"Error: Deletion of some consumer groups failed:",
		"* Group '" + cgGroup + "' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
	} {
		if !strings.Contains(out, want) {
			return fmt.Errorf("--delete of a group with a member: output lacks %q; it is %q", want, strings.TrimSpace(out))
		}
	}
	if err := wantCommitted(ctx, adm, cgGroup, cgTopic, cgCommitted); err != nil {
		return fmt.Errorf("after the refused --delete: %w", err)
	}

	member.Close() // leaves the group
	memberClosed = true
	if err := waitEmptyGroup(ctx, adm, cgGroup); err != nil {
		return err
	}
	if err := checkGroupDescribe(tool, "after the member left", cgCommitted, "-", "-", "-"); err != nil {
		return err
	}

	resets := []struct {
		args []string
		// want is the NEW-OFFSET of each partition; committed is what
		// the group has afterwards (unchanged by a dry run).
		want, committed map[int32]int64
		// check, if set, is how the next consumer of the group checks
		// where it starts.
		check func(want map[int32]int64) error
	}{
		{[]string{"--to-earliest", "--dry-run"}, map[int32]int64{0: 0, 1: 0, 2: 0}, cgCommitted, nil},
		{[]string{"--to-earliest", "--execute"}, map[int32]int64{0: 0, 1: 0, 2: 0}, nil,
			func(want map[int32]int64) error { return groupReadsFrom(ctx, env, adm, want) }},
		// 25 is past partition 0's end: the tool resets it to the end.
		{[]string{"--to-offset", "25", "--execute"}, map[int32]int64{0: 20, 1: 25, 2: 25}, nil,
			func(want map[int32]int64) error { return groupReadsFrom(ctx, env, adm, want) }},
		{[]string{"--shift-by", "-4", "--execute"}, map[int32]int64{0: 16, 1: 21, 2: 21}, nil,
			func(want map[int32]int64) error { return consoleGroupReadsFrom(ctx, env, want) }},
	}
	for _, c := range resets {
		what := "--reset-offsets " + strings.Join(c.args, " ")
		out, _, err := tool(append([]string{"--group", cgGroup, "--topic", cgTopic, "--reset-offsets"}, c.args...)...)
		if err != nil {
			return err
		}
		rows, err := parseGroupTables(out)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		got := map[int32]int64{}
		for _, r := range rows {
			p, err := partitionColumn(r)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			o, err := strconv.ParseInt(r["NEW-OFFSET"], 10, 64)
			if err != nil || r["GROUP"] != cgGroup || r["TOPIC"] != cgTopic {
				return fmt.Errorf("%s: cannot read row %v", what, r)
			}
			got[p] = o
		}
		if len(rows) != len(c.want) || !maps.Equal(got, c.want) {
			return fmt.Errorf("%s printed NEW-OFFSET %v in %d rows, want %v", what, got, len(rows), c.want)
		}
		committed := c.committed
		if committed == nil {
			committed = c.want
		}
		if err := wantCommitted(ctx, adm, cgGroup, cgTopic, committed); err != nil {
			return fmt.Errorf("after %s: %w", what, err)
		}
		if c.check != nil {
			if err := c.check(c.want); err != nil {
				return fmt.Errorf("after %s: %w", what, err)
			}
			if err := waitEmptyGroup(ctx, adm, cgGroup); err != nil {
				return err
			}
		}
	}

	// The console consumer read to the end of every partition and
	// committed on close: no lag is left.
	if err := checkGroupDescribe(tool, "after the console consumer", cgProduced, "-", "-", "-"); err != nil {
		return err
	}
	out, _, err = tool("--delete", "--group", cgGroup)
	if err != nil {
		return err
	}
	if want := "Deletion of requested consumer groups ('" + cgGroup + "') was successful."; !strings.Contains(out, want) {
		return fmt.Errorf("--delete printed %q, want %q", strings.TrimSpace(out), want)
	}
	return checkGroupList(tool, nil)
}

// commitWithMember joins cgGroup with a franz-go consumer that reads
// cgTopic up to the offsets in cgCommitted, commits exactly those and stays
// in the group, polling no more. The caller closes the client.
func commitWithMember(ctx context.Context, env *rowEnv, adm *kadm.Client) (*kgo.Client, error) {
	member, err := kgo.NewClient(kgo.SeedBrokers(env.broker.addr), kgo.ClientID(cgClientID),
		kgo.ConsumerGroup(cgGroup), kgo.ConsumeTopics(cgTopic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	last := map[int32]*kgo.Record{}
	for len(last) < len(cgCommitted) {
		fetches := member.PollFetches(ctx)
		if ctx.Err() != nil {
			member.Close()
			return nil, fmt.Errorf("franz-go group member: reached %d of %d commit points: %w", len(last), len(cgCommitted), ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			member.Close()
			return nil, fmt.Errorf("franz-go group member: fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset == cgCommitted[r.Partition]-1 {
				last[r.Partition] = r
			}
		})
	}
	if err := member.CommitRecords(ctx, slices.Collect(maps.Values(last))...); err != nil {
		member.Close()
		return nil, fmt.Errorf("franz-go group member: commit: %w", err)
	}
	if err := wantCommitted(ctx, adm, cgGroup, cgTopic, cgCommitted); err != nil {
		member.Close()
		return nil, err
	}
	return member, nil
}

// groupsTool runs kafka-consumer-groups.sh with the broker's address and
// args, and returns its stdout and stderr.
type groupsTool func(args ...string) (stdout, stderr string, err error)

// checkGroupList runs --list and checks that it prints exactly want.
func checkGroupList(tool groupsTool, want []string) error {
	out, _, err := tool("--list")
	if err != nil {
		return err
	}
	got := strings.Fields(out)
	if !slices.Equal(got, want) {
		return fmt.Errorf("--list printed %q, want %q", got, want)
	}
	return nil
}

// checkGroupDescribe runs --describe for cgGroup and checks one line per
// partition of cgTopic: the committed offset, the log end offset, their
// difference as LAG, and the consumer, host and client columns ("-" when
// no member has the partition).
func checkGroupDescribe(tool groupsTool, when string, committed map[int32]int64, consumer, host, client string) error {
	out, stderr, err := tool("--describe", "--group", cgGroup)
	if err != nil {
		return err
	}
	rows, err := parseGroupTables(out)
	if err != nil {
		return fmt.Errorf("--describe %s: %w", when, err)
	}
	if len(rows) != len(cgProduced) {
		return fmt.Errorf("--describe %s printed %d partition lines, want %d:\n%s", when, len(rows), len(cgProduced), out)
	}
	seen := map[int32]bool{}
	for _, r := range rows {
		p, err := partitionColumn(r)
		if err != nil {
			return fmt.Errorf("--describe %s: %w", when, err)
		}
		seen[p] = true
		want := groupTableRow{
			"GROUP":          cgGroup,
			"TOPIC":          cgTopic,
			"PARTITION":      strconv.Itoa(int(p)),
			"CURRENT-OFFSET": strconv.FormatInt(committed[p], 10),
			"LOG-END-OFFSET": strconv.FormatInt(cgProduced[p], 10),
			"LAG":            strconv.FormatInt(cgProduced[p]-committed[p], 10),
			"CONSUMER-ID":    consumer,
			"HOST":           host,
			"CLIENT-ID":      client,
		}
		if !maps.Equal(r, want) {
			return fmt.Errorf("--describe %s: partition %d printed %v, want %v", when, p, r, want)
		}
	}
	if len(seen) != len(cgProduced) {
		return fmt.Errorf("--describe %s printed partitions %v, want each of %d once", when, slices.Sorted(maps.Keys(seen)), len(cgProduced))
	}
	if consumer == "-" && !strings.Contains(out+stderr, "Consumer group '"+cgGroup+"' has no active members.") {
		return fmt.Errorf("--describe %s does not say the group has no active members:\n%s%s", when, out, stderr)
	}
	return nil
}

// groupReadsFrom joins cgGroup with a franz-go consumer that commits
// nothing and checks that it reads each partition of cgTopic from the
// offset in from to the end: first record at from[p], no gaps.
func groupReadsFrom(ctx context.Context, env *rowEnv, adm *kadm.Client, from map[int32]int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.broker.addr), kgo.ClientID("compat-cg-reader"),
		kgo.ConsumerGroup(cgGroup), kgo.ConsumeTopics(cgTopic), kgo.DisableAutoCommit(),
		// A partition without a committed offset would start at the
		// end, so that reading from the start shows up as an error.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		return err
	}
	defer cl.Close()
	next := maps.Clone(from)
	done := func() bool {
		for p, end := range cgProduced {
			if next[p] != end {
				return false
			}
		}
		return true
	}
	for !done() {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("the group's next consumer (franz-go) stopped at %v of %v: %w", next, cgProduced, ctx.Err())
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			return fmt.Errorf("the group's next consumer (franz-go): fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		var bad error
		fetches.EachRecord(func(r *kgo.Record) {
			if bad == nil && (r.Offset != next[r.Partition] || string(r.Value) != cgValue(r.Partition, r.Offset)) {
				bad = fmt.Errorf("the group's next consumer (franz-go) read partition %d offset %d (%q), want offset %d (it should start at %v)",
					r.Partition, r.Offset, r.Value, next[r.Partition], from)
			}
			next[r.Partition]++
		})
		if bad != nil {
			return bad
		}
	}
	return nil
}

// consoleGroupReadsFrom reads what is left after the offsets in from with
// kafka-console-consumer.sh --group cgGroup --max-messages, which commits
// what it read when it exits, and checks that it printed each partition's
// records from from[p] to the end.
func consoleGroupReadsFrom(ctx context.Context, env *rowEnv, from map[int32]int64) error {
	var want []string
	for p := range int32(len(cgProduced)) {
		for o := from[p]; o < cgProduced[p]; o++ {
			want = append(want, fmt.Sprintf("Partition:%d\tOffset:%d\t%s", p, o, cgValue(p, o)))
		}
	}
	out, err := kafkaTool(ctx, env, nil, "kafka-console-consumer.sh", "--bootstrap-server", env.broker.addr,
		"--topic", cgTopic, "--group", cgGroup, "--max-messages", strconv.Itoa(len(want)), "--timeout-ms", "30000",
		"--property", "print.partition=true", "--property", "print.offset=true")
	if err != nil {
		return err
	}
	got := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// Partitions are fetched in any order; each one's records in order.
	byPartition := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines {
			p, _, _ := strings.Cut(l, "\t")
			m[p] = append(m[p], l)
		}
		return m
	}
	gotBy, wantBy := byPartition(got), byPartition(want)
	for p, lines := range wantBy {
		if !slices.Equal(gotBy[p], lines) {
			return fmt.Errorf("kafka-console-consumer.sh --group printed for %s %q ..., want %q ... (%d lines, want %d)",
				p, firstN(gotBy[p], 2), firstN(lines, 2), len(gotBy[p]), len(lines))
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("kafka-console-consumer.sh --group printed %d lines, want %d", len(got), len(want))
	}
	return nil
}

// firstN returns the first n elements of s, or all of them.
func firstN(s []string, n int) []string {
	return s[:min(n, len(s))]
}

const (
	consoleGroupTopic      = "compat-console-group"
	consoleGroupName       = "compat-console-group"
	consoleGroupPartitions = 10
	consoleGroupPerPart    = 10
	consoleGroupMembers    = 3
)

func javaConsoleGroupRow() row {
	return javaRow("kafka-console-group", 3*time.Minute, runJavaConsoleGroup)
}

// consoleGroupValue is the value of record i of partition p.
func consoleGroupValue(p int32, i int64) string { return fmt.Sprintf("cg-p%d-%d", p, i) }

// runJavaConsoleGroup starts three kafka-console-consumer.sh --group
// processes with Kafka's RangeAssignor on a 10-partition topic, waits until
// DescribeGroups shows the group Stable with the three of them, and checks
// with kafka-consumer-groups.sh --describe --members --verbose that they
// hold the contiguous blocks 0-3, 4-6 and 7-9 (which member gets which
// depends on the member ids). Then it produces ten records to each
// partition, and once the consumers have printed 100 lines between them
// stops them one by one, each time waiting for the others to take over its
// partitions: every record must have been printed exactly once, by the
// consumer that first held its partition, and the offsets committed on
// close must be the ends of the partitions.
func runJavaConsoleGroup(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, consoleGroupTopic, consoleGroupPartitions); err != nil {
		return err
	}
	cl, adm, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()

	launcher := filepath.Join(env.root, "compat", "bin", "kafka-console-consumer.sh")
	var consumers []*bgProcess
	defer func() { stopBackground(consumers) }()
	for i := range consoleGroupMembers {
		c, err := startBackground(env, fmt.Sprintf("kafka-console-consumer-%d", i+1), launcher,
			"--bootstrap-server", addr, "--topic", consoleGroupTopic, "--group", consoleGroupName, "--from-beginning",
			"--consumer-property", "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor",
			"--property", "print.partition=true", "--property", "print.offset=true")
		if err != nil {
			return err
		}
		consumers = append(consumers, c)
	}
	g, err := waitStableConsumers(ctx, adm, consoleGroupName, consoleGroupTopic, consoleGroupPartitions, consumers)
	if err != nil {
		return err
	}
	if g.Protocol != "range" {
		return fmt.Errorf("group %s chose assignor %q, want range", consoleGroupName, g.Protocol)
	}
	wantBlocks := []string{"0-3", "4-6", "7-9"}
	var blocks []string
	for _, m := range g.Members {
		blocks = append(blocks, partitionBlock(memberPartitions(m, consoleGroupTopic)))
	}
	slices.Sort(blocks)
	if !slices.Equal(blocks, wantBlocks) {
		return fmt.Errorf("DescribeGroups: the members hold partitions %v, want the blocks %v", blocks, wantBlocks)
	}

	out, err := kafkaTool(ctx, env, nil, "kafka-consumer-groups.sh", "--bootstrap-server", addr,
		"--describe", "--group", consoleGroupName, "--members", "--verbose")
	if err != nil {
		return err
	}
	rows, err := parseGroupTables(out)
	if err != nil {
		return fmt.Errorf("--describe --members: %w", err)
	}
	memberBlocks := map[string]string{}
	for _, m := range g.Members {
		memberBlocks[m.MemberID] = partitionBlock(memberPartitions(m, consoleGroupTopic))
	}
	printed := map[string]string{}
	for _, r := range rows {
		ps, err := parseAssignment(r["CURRENT-ASSIGNMENT"], consoleGroupTopic)
		if err != nil {
			return fmt.Errorf("--describe --members: %w", err)
		}
		if r["#PARTITIONS"] != strconv.Itoa(len(ps)) {
			return fmt.Errorf("--describe --members: #PARTITIONS %s for assignment %s", r["#PARTITIONS"], r["CURRENT-ASSIGNMENT"])
		}
		printed[r["CONSUMER-ID"]] = partitionBlock(ps)
	}
	if !maps.Equal(printed, memberBlocks) {
		return fmt.Errorf("--describe --members printed member: partitions %v; DescribeGroups says %v", printed, memberBlocks)
	}

	if err := produceToEachPartition(ctx, cl, consoleGroupTopic, consoleGroupPartitions, consoleGroupPerPart, consoleGroupValue); err != nil {
		return err
	}
	const total = consoleGroupPartitions * consoleGroupPerPart
	if err := waitPrinted(ctx, consumers, total, "console"); err != nil {
		return err
	}
	if err := stopOneByOne(ctx, adm, consoleGroupName, consoleGroupTopic, consoleGroupPartitions, consumers); err != nil {
		return err
	}

	// Every record once; each consumer prints the partitions of one block.
	consumerBlocks, err := checkPrintedOnce(consumers, total, "console", `Partition:P\tOffset:O\tvalue`, parseConsoleLine, consoleGroupValue)
	if err != nil {
		return err
	}
	if !slices.Equal(consumerBlocks, wantBlocks) {
		return fmt.Errorf("the console consumers printed the partitions %v, want one each of the blocks %v", consumerBlocks, wantBlocks)
	}
	want := everyPartitionAt(consoleGroupPartitions, consoleGroupPerPart)
	return wantCommitted(ctx, adm, consoleGroupName, consoleGroupTopic, want)
}

// parseConsoleLine reads a line kafka-console-consumer.sh printed with
// print.partition and print.offset.
func parseConsoleLine(l string) (printedRecord, bool) {
	var r printedRecord
	if n, _ := fmt.Sscanf(l, "Partition:%d\tOffset:%d\t%s", &r.partition, &r.offset, &r.value); n != 3 {
		return printedRecord{}, false
	}
	return r, true
}

// partitionBlock names a sorted partition list: "4-6" when it is the
// contiguous range 4,5,6, else the list itself, such as "[1 3]".
func partitionBlock(ps []int32) string {
	if len(ps) == 0 {
		return "[]"
	}
	for i := 1; i < len(ps); i++ {
		if ps[i] != ps[i-1]+1 {
			return fmt.Sprint(ps)
		}
	}
	return fmt.Sprintf("%d-%d", ps[0], ps[len(ps)-1])
}

// parseAssignment reads the CURRENT-ASSIGNMENT column of --describe
// --members --verbose, "topic:0,1,2" ("-" for none), and returns topic's
// partitions, sorted.
func parseAssignment(s, topic string) ([]int32, error) {
	if s == "-" {
		return nil, nil
	}
	name, list, ok := strings.Cut(s, ":")
	if !ok || name != topic {
		return nil, fmt.Errorf("assignment %q is not %s:partitions", s, topic)
	}
	var ps []int32
	for _, f := range strings.Split(list, ",") {
		p, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("assignment %q: %w", s, err)
		}
		ps = append(ps, int32(p))
	}
	slices.Sort(ps)
	return ps, nil
}
