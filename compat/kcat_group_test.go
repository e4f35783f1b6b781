package compat

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
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
	g, err := waitStableConsumers(ctx, adm, kcatGroupName, kcatGroupTopic, kcatGroupPartitions, consumers)
	if err != nil {
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

	if err := produceToEachPartition(ctx, cl, kcatGroupTopic, kcatGroupPartitions, kcatGroupPerPart, kcatGroupValue); err != nil {
		return err
	}
	const total = kcatGroupPartitions * kcatGroupPerPart
	if err := waitPrinted(ctx, consumers, total, "kcat"); err != nil {
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

	printed, err := checkPrintedOnce(consumers, total, "kcat", `"partition offset value"`, parseKcatLine, kcatGroupValue)
	if err != nil {
		return err
	}
	if !slices.Equal(printed, assigned) {
		return fmt.Errorf("the kcat consumers printed the partitions %v, want one each of %v", printed, assigned)
	}

	want := everyPartitionAt(kcatGroupPartitions, kcatGroupPerPart)
	return wantCommitted(ctx, adm, kcatGroupName, kcatGroupTopic, want)
}

// parseKcatLine reads a line kcat printed with -f '%p %o %s\n'.
func parseKcatLine(l string) (printedRecord, bool) {
	f := strings.Fields(l)
	if len(f) != 3 {
		return printedRecord{}, false
	}
	p, err1 := strconv.ParseInt(f[0], 10, 32)
	o, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return printedRecord{}, false
	}
	return printedRecord{partition: int32(p), offset: o, value: f[2]}, true
}
