package compat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The kcat-group row runs two kcat balanced consumers (-G, librdkafka's
// KafkaConsumer) in one group on one topic.

const (
	kcatGroupTopic      = "compat-kcat-group"
	kcatGroupName       = "compat-kcat-group"
	kcatGroupPartitions = 6
	kcatGroupPerPart    = 100
	kcatGroupMembers    = 2
)

func kcatGroupRow() row {
	return row{
		name:    "kcat-group",
		tools:   []string{"kcat"},
		timeout: 2 * time.Minute,
		run:     runKcatGroup,
	}
}

// kcatGroupValue is the value of record i of partition p.
func kcatGroupValue(p int32, i int64) string { return fmt.Sprintf("kg-p%d-%d", p, i) }

// runKcatGroup starts two `kcat -G` consumers, waits until DescribeGroups
// shows them Stable with librdkafka's range assignor sharing the topic's
// six partitions, produces 100 records to each partition and, once the two
// have printed 600 lines between them, stops one (kcat closes its consumer
// on SIGTERM, which commits), waits for the other to take over all six
// partitions, and stops that one too. Every record must have been printed
// exactly once, each kcat printing the partitions DescribeGroups first gave
// it, and the group must be left Empty with the end of every partition
// committed.
func runKcatGroup(ctx context.Context, env *rowEnv) error {
	addr := env.broker.addr
	if err := createTopic(ctx, addr, kcatGroupTopic, kcatGroupPartitions); err != nil {
		return err
	}
	cl, adm, err := newAdmin(env, manualPartitions())
	if err != nil {
		return err
	}
	defer cl.Close()

	var consumers []*bgProcess
	defer func() { stopBackground(consumers) }()
	for i := range kcatGroupMembers {
		c, err := startBackground(env, fmt.Sprintf("kcat-%d", i+1), "kcat", "-u", "-b", addr, "-G", kcatGroupName,
			"-X", "auto.offset.reset=earliest", "-f", `%p %o %s\n`, kcatGroupTopic)
		if err != nil {
			return err
		}
		consumers = append(consumers, c)
	}
	g, err := waitStableGroup(ctx, adm, kcatGroupName, kcatGroupTopic, kcatGroupMembers, kcatGroupPartitions)
	if err != nil {
		for _, c := range consumers {
			if cerr := c.running(); cerr != nil {
				return cerr
			}
		}
		return err
	}
	if g.Protocol != "range" {
		return fmt.Errorf("group %s chose assignor %q, want range (librdkafka's first)", kcatGroupName, g.Protocol)
	}
	var assigned []string
	for _, m := range g.Members {
		assigned = append(assigned, partitionBlock(memberPartitions(m, kcatGroupTopic)))
	}
	slices.Sort(assigned)
	if want := []string{"0-2", "3-5"}; !slices.Equal(assigned, want) {
		return fmt.Errorf("DescribeGroups: the kcat members hold partitions %v, want %v", assigned, want)
	}

	for p := range int32(kcatGroupPartitions) {
		recs := make([]*kgo.Record, 0, kcatGroupPerPart)
		for i := range int64(kcatGroupPerPart) {
			recs = append(recs, &kgo.Record{Topic: kcatGroupTopic, Partition: p, Value: []byte(kcatGroupValue(p, i))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("franz-go produce to %s-%d: %w", kcatGroupTopic, p, err)
		}
	}
	const total = kcatGroupPartitions * kcatGroupPerPart
	lines := func(c *bgProcess) []string {
		out := strings.TrimRight(c.stdout.String(), "\n")
		if out == "" {
			return nil
		}
		return strings.Split(out, "\n")
	}
	err = pollUntil(ctx, groupWaitLimit, func() error {
		n := 0
		for _, c := range consumers {
			if err := c.running(); err != nil {
				return err
			}
			n += len(lines(c))
		}
		if n < total {
			return fmt.Errorf("the kcat consumers printed %d of %d records", n, total)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := stopOneByOne(ctx, adm, kcatGroupName, kcatGroupTopic, kcatGroupPartitions, consumers); err != nil {
		return err
	}
	for _, c := range consumers {
		if bad := kcatErrorLine([]byte(c.stderr.String())); bad != "" {
			return fmt.Errorf("%s: %s", c.name, bad)
		}
	}

	seen := map[string]string{}
	var printed []string
	for _, c := range consumers {
		var ps []int32
		for _, l := range lines(c) {
			f := strings.Fields(l)
			if len(f) != 3 {
				return fmt.Errorf("%s printed %q, not \"partition offset value\"", c.name, l)
			}
			p, err1 := strconv.ParseInt(f[0], 10, 32)
			o, err2 := strconv.ParseInt(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s printed %q, not \"partition offset value\"", c.name, l)
			}
			if want := kcatGroupValue(int32(p), o); f[2] != want {
				return fmt.Errorf("%s printed %q for partition %d offset %d, want %q", c.name, f[2], p, o, want)
			}
			if other, ok := seen[f[2]]; ok {
				return fmt.Errorf("%s printed %s, which %s printed too", c.name, f[2], other)
			}
			seen[f[2]] = c.name
			if !slices.Contains(ps, int32(p)) {
				ps = append(ps, int32(p))
			}
		}
		slices.Sort(ps)
		printed = append(printed, partitionBlock(ps))
	}
	if len(seen) != total {
		return fmt.Errorf("the kcat consumers printed %d distinct records, want %d", len(seen), total)
	}
	slices.Sort(printed)
	if !slices.Equal(printed, assigned) {
		return fmt.Errorf("the kcat consumers printed the partitions %v, want one each of %v", printed, assigned)
	}

	want := map[int32]int64{}
	for p := range int32(kcatGroupPartitions) {
		want[p] = kcatGroupPerPart
	}
	return wantCommitted(ctx, adm, kcatGroupName, kcatGroupTopic, want)
}
