package main

// Issue 22's workloads 9 to 13, the costs that grow with clients,
// groups, transactions, partitions and load beside the brokers:
//
//	conns      9: idle and active client connections (workload_conns.go)
//	groups    10: consumer groups committing offsets once a second (workload_groups.go)
//	txn       11: transactions of 10 records, and idempotent-only batches (workload_txn.go)
//	scale100k 12: workload 8 at 100,000 partitions, on a cluster of its own (workload_nodes.go)
//	cpuhog    13: a CPU hog beside the cluster: false fencings, latency, failover (workload_cpuhog.go)
//
// This file holds their flags and registers their -workloads names and
// their rows of the table: the log cleaner, numbered 9 before issue 22,
// is 14 now and keeps its name, clean.

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"time"
)

// stressConfig is what the flags of workloads 9 to 13 set.
type stressConfig struct {
	connsIdle, connsActive int           // workload 9: connections that only said ApiVersions, and producing clients
	connsTime              time.Duration // workload 9: how long the active clients produce
	groups                 int           // workload 10: consumer groups
	groupsTime             time.Duration // workload 10: how long they commit
	txnProducers           int           // workload 11: producers, each its own transactional id
	txnTime                time.Duration // workload 11: how long each variant runs
	scale100kPartitions    int           // workload 12: partitions at RF 3
	scale100kTimeout       time.Duration // workload 12: bound on each wait (creation, ISRs after the restart)
	hogTime                time.Duration // workload 13: how long the producer runs beside the hog
	hogRate                float64       // workload 13: records/s of that producer
}

// stressQuickValues are -quick's values of the flags stressConfig.register
// defines.
var stressQuickValues = map[string]string{
	"conns-idle":           "1000",
	"conns-active":         "100",
	"conns-time":           "5s",
	"groups":               "200",
	"groups-time":          "5s",
	"txn-time":             "3s",
	"scale100k-partitions": "600",
	"scale100k-timeout":    "3m",
	"hog-time":             "15s",
	"hog-rate":             "200",
}

// register defines the flags of workloads 9 to 13 on fs.
func (s *stressConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&s.connsIdle, "conns-idle", 10_000, "workload 9: idle client connections (each sends ApiVersions, then nothing), spread over the nodes")
	fs.IntVar(&s.connsActive, "conns-active", 1_000, "workload 9: clients producing one record a second each (acks=all) beside the idle connections")
	fs.DurationVar(&s.connsTime, "conns-time", 30*time.Second, "workload 9: how long the active clients produce")
	fs.IntVar(&s.groups, "groups", 5_000, "workload 10: consumer groups committing an offset once a second each")
	fs.DurationVar(&s.groupsTime, "groups-time", 30*time.Second, "workload 10: how long the groups commit")
	fs.IntVar(&s.txnProducers, "txn-producers", 4, "workload 11: producers, in both variants (transactional and idempotent-only)")
	fs.DurationVar(&s.txnTime, "txn-time", 20*time.Second, "workload 11: how long each variant runs")
	fs.IntVar(&s.scale100kPartitions, "scale100k-partitions", 100_000, "workload 12: partitions at RF 3, on a cluster of their own")
	fs.DurationVar(&s.scale100kTimeout, "scale100k-timeout", 20*time.Minute, "workload 12: how long to wait for the partitions' full ISRs after creating them, and again after the restart; the workload reports how far it got")
	fs.DurationVar(&s.hogTime, "hog-time", 5*time.Minute, "workload 13: how long the producer runs beside the CPU hog")
	fs.Float64Var(&s.hogRate, "hog-rate", 1000, "workload 13: records/s of the producer beside the CPU hog")
}

// check refuses values no workload can run with and puts the counts into
// the labels of the rows.
func (s *stressConfig) check() error {
	for name, v := range map[string]int{"conns-idle": s.connsIdle, "conns-active": s.connsActive, "groups": s.groups, "txn-producers": s.txnProducers, "scale100k-partitions": s.scale100kPartitions} {
		if v < 0 || v == 0 && name != "conns-idle" {
			return fmt.Errorf("-%s: %d is too few", name, v)
		}
	}
	if s.hogRate <= 0 {
		return fmt.Errorf("-hog-rate: %g is no rate", s.hogRate)
	}
	s.labelRows()
	return nil
}

// stressMetrics are the rows of workloads 9 to 13, in the order of the
// table; labelRows puts the counts of this run into the labels that
// carry one.
var stressMetrics = []metric{
	{"conns_rss_mib", "conns", "9 RSS with idle + active connections, largest node", "MiB", false, 0.25},
	{"conns_p99", "conns", "9 produce latency p99 among the connections", "ms", false, 0},
	{"groups_commit_p99", "groups", "10 offset commit latency p99, groups at 1/s", "ms", false, 0},
	{"groups_cpu", "groups", "10 broker CPU, groups committing, 3 nodes", "% core", false, 0},
	{"txn_tps", "txn", "11 transactions/s, 10 records each", "tx/s", true, 1.5},
	{"txn_idem_bps", "txn", "11 idempotent batches of 10 records/s", "batch/s", true, 0},
	{"txn_eos_ratio", "txn", "11 exactly-once / idempotent-only", "ratio", true, 0},
	{"scale100k_full", "scale100k", "12 partitions with full ISRs after creation", "count", true, 0},
	{"scale100k_create_s", "scale100k", "12 create partitions", "s", false, 0},
	{"scale100k_idle_cpu", "scale100k", "12 idle CPU, 3 nodes", "% core", false, 0},
	{"scale100k_rss_mib", "scale100k", "12 RSS, largest node", "MiB", false, 0},
	{"scale100k_isr_s", "scale100k", "12 restart to full ISRs", "s", false, 0},
	{"hog_fencings", "cpuhog", "13 false fencings, ISR shrinks, leader changes under a CPU hog", "count", false, 0},
	{"hog_p99", "cpuhog", "13 produce latency p99 under a CPU hog", "ms", false, 0},
	{"hog_failover_ms", "cpuhog", "13 failover under a CPU hog, median", "ms", false, 0},
}

// stressAbsoluteGoals are issue 22's goals on sluice's own figures of
// workloads 12 and 13 (absoluteGoals).
var stressAbsoluteGoals = map[string]absoluteGoal{
	"scale100k_rss_mib": {max: 1024, text: "≤ 1024 (1 GiB)"},
	"scale100k_isr_s":   {max: 30, text: "≤ 30"},
	"hog_fencings":      {max: 0, text: "= 0"},
	"hog_failover_ms":   {max: 1000, text: "≤ 1000"},
}

// labelRows writes this run's counts into the labels of workloads 9 to
// 13's rows, which the table and the chart print as they are.
func (s *stressConfig) labelRows() {
	labels := map[string]string{
		"conns_rss_mib":      fmt.Sprintf("9 RSS with %d idle + %d active connections, largest node", s.connsIdle, s.connsActive),
		"conns_p99":          fmt.Sprintf("9 produce latency p99, %d active beside %d idle connections", s.connsActive, s.connsIdle),
		"groups_commit_p99":  fmt.Sprintf("10 offset commit latency p99, %d groups at 1/s", s.groups),
		"groups_cpu":         fmt.Sprintf("10 broker CPU, %d groups committing, 3 nodes", s.groups),
		"txn_tps":            fmt.Sprintf("11 transactions/s, 10 records each, %d producers", s.txnProducers),
		"txn_idem_bps":       fmt.Sprintf("11 idempotent batches of 10 records/s, %d producers", s.txnProducers),
		"scale100k_full":     fmt.Sprintf("12 of %d partitions with full ISRs after creation", s.scale100kPartitions),
		"scale100k_create_s": fmt.Sprintf("12 create %d partitions", s.scale100kPartitions),
		"scale100k_idle_cpu": fmt.Sprintf("12 idle CPU, %d partitions, 3 nodes", s.scale100kPartitions),
		"scale100k_rss_mib":  fmt.Sprintf("12 RSS, %d partitions, largest node", s.scale100kPartitions),
		"scale100k_isr_s":    fmt.Sprintf("12 restart to full ISRs, %d partitions", s.scale100kPartitions),
	}
	for i, m := range metrics {
		if l, ok := labels[m.key]; ok {
			metrics[i].label = l
		}
	}
}

// init registers workloads 9 to 13: their rows before the cleaner's (14),
// their names before clean (conns to cpuhog run on the shared cluster
// before the cleaner and workload 8 load it) and scale100k after scale,
// their -quick values and their absolute goals.
func init() {
	at := slices.IndexFunc(metrics, func(m metric) bool { return m.workload == "clean" })
	if at < 0 {
		at = len(metrics)
	}
	metrics = slices.Insert(metrics, at, stressMetrics...)
	at = slices.Index(workloadNames, "clean")
	workloadNames = slices.Insert(workloadNames, at, "conns", "groups", "txn", "cpuhog")
	at = slices.Index(workloadNames, "scale")
	workloadNames = slices.Insert(workloadNames, at+1, "scale100k")
	maps.Copy(quickValues, stressQuickValues)
	maps.Copy(absoluteGoals, stressAbsoluteGoals)
}
