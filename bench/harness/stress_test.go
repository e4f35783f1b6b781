package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// view builds a clusterView from brokers and, per partition, its leader
// followed by its ISR.
func view(brokers []int32, parts map[int32][]int32) clusterView {
	v := clusterView{brokers: brokers, leaders: map[int32]int32{}, isrs: map[int32][]int32{}}
	for p, li := range parts {
		v.partitions++
		v.leaders[p] = li[0]
		v.isrs[p] = li[1:]
	}
	return v
}

// TestCountFencings counts what workload 13 takes for false fencings
// between two metadata answers of one node.
func TestCountFencings(t *testing.T) {
	all := []int32{1, 2, 3}
	steady := map[int32][]int32{0: {1, 1, 2, 3}, 1: {2, 2, 3, 1}, 2: {3, 3, 1, 2}}
	for _, tc := range []struct {
		name      string
		prev, cur clusterView
		want      fencingCounts
	}{
		{"nothing changed", view(all, steady), view(all, steady), fencingCounts{polls: 1}},
		{"ISR order changed only", view(all, steady), view(all, map[int32][]int32{0: {1, 3, 2, 1}, 1: {2, 2, 3, 1}, 2: {3, 3, 1, 2}}), fencingCounts{polls: 1}},
		{"broker 3 fenced", view(all, steady), view([]int32{1, 2}, map[int32][]int32{0: {1, 1, 2}, 1: {2, 2, 1}, 2: {1, 1, 2}}),
			fencingCounts{polls: 1, fenced: 1, isrShrinks: 3, leaderChanges: 1}},
		{"one ISR shrink", view(all, steady), view(all, map[int32][]int32{0: {1, 1, 2}, 1: {2, 2, 3, 1}, 2: {3, 3, 1, 2}}),
			fencingCounts{polls: 1, isrShrinks: 1}},
		{"ISR expands", view(all, map[int32][]int32{0: {1, 1, 2}}), view(all, map[int32][]int32{0: {1, 1, 2, 3}}), fencingCounts{polls: 1}},
		{"leader moved, ISR kept", view(all, steady), view(all, map[int32][]int32{0: {2, 1, 2, 3}, 1: {2, 2, 3, 1}, 2: {3, 3, 1, 2}}),
			fencingCounts{polls: 1, leaderChanges: 1}},
		{"partition missing from the answer", view(all, steady), view(all, map[int32][]int32{1: {2, 2, 3, 1}, 2: {3, 3, 1, 2}}), fencingCounts{polls: 1}},
		{"a broker joins", view([]int32{1, 2}, steady), view(all, steady), fencingCounts{polls: 1}},
		{"a new partition gets its leader", view(all, map[int32][]int32{0: {-1, 1, 2, 3}}), view(all, map[int32][]int32{0: {1, 1, 2, 3}}), fencingCounts{polls: 1}},
		{"a partition loses its leader", view(all, map[int32][]int32{0: {1, 1, 2, 3}}), view(all, map[int32][]int32{0: {-1, 1, 2, 3}}), fencingCounts{polls: 1, leaderChanges: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countFencings(tc.prev, tc.cur); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	sum := fencingCounts{polls: 2, fenced: 1}.add(fencingCounts{polls: 1, isrShrinks: 2, leaderChanges: 3})
	if sum != (fencingCounts{polls: 3, fenced: 1, isrShrinks: 2, leaderChanges: 3}) || sum.total() != 6 {
		t.Errorf("add: %+v, total %d", sum, sum.total())
	}
}

// TestViewOf reads brokers, leaders and ISRs from a Metadata answer.
func TestViewOf(t *testing.T) {
	resp := kmsg.NewPtrMetadataResponse()
	for _, id := range []int32{1, 3} {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID = id
		resp.Brokers = append(resp.Brokers, b)
	}
	rt := kmsg.NewMetadataResponseTopic()
	for p := range int32(2) {
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition = p
		rp.Leader = p + 1
		rp.ISR = []int32{p + 1, 3}
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	v := viewOf(resp)
	if !slices.Equal(v.brokers, []int32{1, 3}) || v.partitions != 2 || v.leaders[1] != 2 || !slices.Equal(v.isrs[0], []int32{1, 3}) {
		t.Errorf("view: %+v", v)
	}
}

// TestCountFencedLines counts sluice's lines of a broker fenced for a
// lapsed session, not those of a controlled shutdown or of other news.
func TestCountFencedLines(t *testing.T) {
	log := strings.Join([]string{
		`time=2026-12-03T01:00:00.000Z level=INFO msg="fenced broker" broker=2 epoch=7 controlled=false partitions_changed=12`,
		`time=2026-12-03T01:00:01.000Z level=INFO msg="fenced broker" broker=3 epoch=9 controlled=true partitions_changed=4`,
		`time=2026-12-03T01:00:02.000Z level=INFO msg="unfenced broker" broker=2 epoch=8`,
		`time=2026-12-03T01:00:03.000Z level=INFO msg="ISR changes committed" partitions=3`,
		`time=2026-12-03T01:00:04.000Z level=INFO msg="fenced broker" broker=1 epoch=3 controlled=false partitions_changed=0`,
	}, "\n")
	if got := countFencedLines(strings.NewReader(log)); got != 2 {
		t.Errorf("got %d, want 2", got)
	}
}

// TestStressFlags checks issue 22's flags: defaults, -quick's values,
// the counts in the rows' labels, the registered workloads and rows (the
// cleaner, 14, after them) and what check refuses.
func TestStressFlags(t *testing.T) {
	cfg, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.stress; s.connsIdle != 10_000 || s.connsActive != 1_000 || s.groups != 5_000 || s.scale100kPartitions != 100_000 || s.hogTime.Minutes() != 5 {
		t.Errorf("defaults: %+v", s)
	}
	for _, w := range []string{"conns", "groups", "txn", "cpuhog", "scale100k", "clean", "scale"} {
		if !cfg.workloads[w] {
			t.Errorf("-workloads all lacks %s", w)
		}
	}
	if i, j := slices.Index(workloadNames, "cpuhog"), slices.Index(workloadNames, "clean"); i < 0 || i > j {
		t.Errorf("workloads in order: %v", workloadNames)
	}
	if i, j := slices.Index(workloadNames, "scale"), slices.Index(workloadNames, "scale100k"); i < 0 || j != i+1 {
		t.Errorf("workloads in order: %v", workloadNames)
	}
	var labels []string
	for _, m := range metrics {
		labels = append(labels, m.label)
	}
	if i, j := slices.IndexFunc(labels, func(l string) bool { return strings.HasPrefix(l, "13 ") }), slices.IndexFunc(labels, func(l string) bool { return strings.HasPrefix(l, "14 log cleaner") }); i < 0 || j < i {
		t.Errorf("rows in order: %q", labels)
	}
	if !slices.Contains(labels, "12 create 100000 partitions") {
		t.Errorf("labels: %q", labels)
	}

	cfg, err = parseFlags([]string{"-quick", "-groups", "7", "-workloads", "groups,clean"})
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.stress; s.groups != 7 || s.connsIdle != 1000 || s.scale100kPartitions != 600 || s.hogTime.Seconds() != 15 {
		t.Errorf("-quick: %+v", s)
	}
	if !slices.ContainsFunc(metrics, func(m metric) bool { return m.label == "10 offset commit latency p99, 7 groups at 1/s" }) {
		t.Errorf("labels after -groups 7: %v", metrics)
	}
	for _, bad := range [][]string{{"-groups", "0"}, {"-conns-active", "-1"}, {"-hog-rate", "0"}, {"-workloads", "scale1000k"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := parseFlags([]string{"-conns-idle", "0"}); err != nil {
		t.Errorf("-conns-idle 0 (active clients only): %v", err)
	}
}
