package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// metric is one row of the table: a figure a workload measures on each
// system, and the ratio sluice / Kafka that the goal bounds: issue 22's
// goal where it sets one for the row, issue 8's otherwise (issue 22 also
// sets goals against the machine's ceiling, ceilingGoals, and absolute
// ones, absoluteGoals).
type metric struct {
	key      string
	workload string // the -workloads name that measures it
	label    string // %d, if present, is the scale workload's partition count
	unit     string
	// higherBetter says which way the goal points: at least goal when
	// true, at most goal otherwise.
	higherBetter bool
	goal         float64 // 0: no goal for this row
}

// metrics are the rows, in the order (issue 8's workloads 1 to 8;
// issue 22's 9 to 13, which stress.go registers before the cleaner's
// rows; 14 is issue 17's acceptance 5, the log cleaner, numbered 9 before
// issue 22). MiB are 2^20 bytes of record values (record and batch
// overheads not counted), except in row 14's throughput: bytes of the
// segments the cleaner read.
var metrics = []metric{
	{"produce_mibs", "produce", "1 producer throughput", "MiB/s", true, 2},
	{"latency_p50", "latency", "2 produce latency p50", "ms", false, 0},
	{"latency_p99", "latency", "2 produce latency p99", "ms", false, 0.5},
	{"latency_p999", "latency", "2 produce latency p99.9", "ms", false, 0.5},
	{"consume_mibs", "consume", "3 consumer throughput", "MiB/s", true, 0},
	{"e2e_p50", "e2e", "4 end-to-end latency p50", "ms", false, 0},
	{"e2e_p99", "e2e", "4 end-to-end latency p99", "ms", false, 1.0},
	{"failover_ms", "failover", "5 failover, median", "ms", false, 0.3},
	{"coldstart_ms", "coldstart", "6 cold start, median", "ms", false, 0.1},
	{"rss_idle_mib", "memory", "7 idle RSS, largest node", "MiB", false, 0.1},
	{"rss_peak_mib", "memory", "7 peak RSS under 1, largest node", "MiB", false, 0.25},
	{"scale_create_s", "scale", "8 create %d partitions", "s", false, 1.0},
	{"scale_idle_cpu", "scale", "8 idle CPU, %d partitions, 3 nodes", "% core", false, 0}, // absoluteGoals
	{"scale_isr_s", "scale", "8 restart to full ISRs", "s", false, 1.0},
	{"clean_mibs", "clean", "14 log cleaner throughput", "MiB/s", true, 0},
	{"clean_rss_mib", "clean", "14 peak RSS while cleaning", "MiB", false, 0},
}

// ceilingGoals are issue 22's goals against the machine's ceiling
// (ceiling.go): sluice / ceiling at least this, by metric key.
var ceilingGoals = map[string]float64{
	"produce_mibs": 0.6, // producer throughput ≥ 0.6× the ceiling
	"consume_mibs": 0.8, // consumer throughput ≥ 0.8× the ceiling's read path
}

// absoluteGoal is a bound on sluice's own figure, not a ratio.
type absoluteGoal struct {
	max  float64 // sluice's figure at most this
	text string  // as the issue says it
}

// absoluteGoals are issue 22's goals on sluice's figures, by metric key.
// The idle CPU row is the three nodes' sum: 5 % of a core per node, the
// issue's goal at 10,000 partitions (workload 8's count; its 30 s
// restart goal is for 100,000, workload 12's, in stress.go).
var absoluteGoals = map[string]absoluteGoal{
	"scale_idle_cpu": {max: 15, text: "≤ 15 % core (5 per node)"},
}

// workloadNames are the values -workloads accepts, in the order they run.
var workloadNames = []string{"memory", "produce", "latency", "consume", "e2e", "failover", "clean", "scale", "coldstart"}

// results collects the figures of one harness run. It is safe for
// concurrent use.
type results struct {
	mu     sync.Mutex
	values map[string]map[string]float64 // metric key → system → value
	errs   []string                      // workloads that failed, with why
	notes  []string                      // details worth keeping with the table
	bytes  []bytesRow                    // the bytes-on-disk check of each produce workload
	clean  []cleanRow                    // workload 14's details, per system
	modes  []string                      // the -security modes that ran
	// kafkaVersion is the Kafka release that ran (-kafka-version).
	kafkaVersion string
	// machine is the machine's ceiling measured before the systems, or
	// nil (ceiling.go).
	machine *machine
}

func newResults() *results {
	return &results{values: map[string]map[string]float64{}}
}

// set records a figure.
func (r *results) set(key, system string, v float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.values[key] == nil {
		r.values[key] = map[string]float64{}
	}
	r.values[key][system] = v
}

// get returns a figure and whether it was measured.
func (r *results) get(key, system string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.values[key][system]
	return v, ok
}

// fail records that a workload failed on a system.
func (r *results) fail(system, workload string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf("%s %s: %v", system, workload, err))
}

// addBytes records a row of the bytes-on-disk table.
func (r *results) addBytes(row bytesRow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes = append(r.bytes, row)
}

// failed reports whether a workload failed.
func (r *results) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

// note records a line printed under the table.
func (r *results) note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notes = append(r.notes, fmt.Sprintf(format, args...))
}

// rowLabel is m's label with the scale workload's partition count.
func rowLabel(m metric, scalePartitions int) string {
	if strings.Contains(m.label, "%d") {
		return fmt.Sprintf(m.label, scalePartitions)
	}
	return m.label
}

// ratio returns sluice / Kafka for m, and whether both were measured.
func (r *results) ratio(key string) (float64, bool) {
	k, ok1 := r.get(key, "kafka")
	s, ok2 := r.get(key, "sluice")
	if !ok1 || !ok2 || k == 0 {
		return 0, false
	}
	return s / k, true
}

// ceilingRatio returns sluice / the machine's ceiling for m, and whether
// m has a ceiling that was measured and sluice's figure.
func (r *results) ceilingRatio(key string) (float64, bool) {
	cm, ok := ceilingModels[key]
	if !ok || r.machine == nil {
		return 0, false
	}
	c := cm.rate(r.machine)
	s, ok := r.get(key, "sluice")
	if !ok || c == 0 {
		return 0, false
	}
	return s / c, true
}

// goalCell is the goal column of m's row: each goal the row has, with
// met or missed once its figure is in.
func (r *results) goalCell(m metric) string {
	verdict := func(goal string, met, measured bool) string {
		switch {
		case !measured:
			return goal
		case met:
			return goal + " met"
		default:
			return goal + " missed"
		}
	}
	var goals []string
	if g := m.goalText(); g != "" {
		q, ok := r.ratio(m.key)
		goals = append(goals, verdict(g, m.met(q), ok))
	}
	if g, ok := ceilingGoals[m.key]; ok {
		q, ok := r.ceilingRatio(m.key)
		goals = append(goals, verdict(fmt.Sprintf("ceiling ≥ %g", g), q >= g, ok))
	}
	if g, ok := absoluteGoals[m.key]; ok {
		v, ok := r.get(m.key, "sluice")
		goals = append(goals, verdict(g.text, v <= g.max, ok))
	}
	return strings.Join(goals, "; ")
}

// kafkaLabel is the Kafka column's heading: the release that ran.
func (r *results) kafkaLabel() string {
	if r.kafkaVersion == "" {
		return "Kafka"
	}
	return "Kafka " + r.kafkaVersion
}

// met reports whether ratio meets m's goal.
func (m metric) met(ratio float64) bool {
	if m.higherBetter {
		return ratio >= m.goal
	}
	return ratio <= m.goal
}

// goalText is the goal as the issue writes it, e.g. "≥ 1.5".
func (m metric) goalText() string {
	if m.goal == 0 {
		return ""
	}
	if m.higherBetter {
		return fmt.Sprintf("≥ %g", m.goal)
	}
	return fmt.Sprintf("≤ %g", m.goal)
}

// writeTable prints the machine's ceiling when it was measured, then the
// table (Markdown) — workload, Kafka, sluice, sluice / Kafka, sluice /
// ceiling, goal — for the rows whose workload ran, then the bytes-on-disk
// table, the notes and the failures.
func (r *results) writeTable(w io.Writer, ran map[string]bool, scalePartitions int) {
	if r.machine != nil {
		r.machine.write(w)
	}
	// A Markdown table, so that it can be pasted into a note as it is.
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "| workload\t| unit\t| %s\t| sluice\t| sluice / Kafka\t| sluice / ceiling\t| goal\t|\n", r.kafkaLabel())
	fmt.Fprintln(tw, "|---\t|---\t|--:\t|--:\t|--:\t|--:\t|---\t|")
	for _, m := range metrics {
		if !ran[m.workload] {
			continue
		}
		cell := func(sys string) string {
			if v, ok := r.get(m.key, sys); ok {
				return formatValue(v)
			}
			return "—"
		}
		ratio, ceiling := "—", "—"
		if q, ok := r.ratio(m.key); ok {
			ratio = fmt.Sprintf("%.2f", q)
		}
		if q, ok := r.ceilingRatio(m.key); ok {
			ceiling = fmt.Sprintf("%.2f", q)
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t|\n", rowLabel(m, scalePartitions), m.unit, cell("kafka"), cell("sluice"), ratio, ceiling, r.goalCell(m))
	}
	tw.Flush()
	r.writeSecurityTable(w, ran, scalePartitions)
	r.writeBytesTable(w)
	r.writeCleanTable(w)
	fmt.Fprintln(w)
	for _, n := range r.notes {
		fmt.Fprintln(w, "note:", n)
	}
	for _, e := range r.errs {
		fmt.Fprintln(w, "FAILED:", e)
	}
}

// formatValue prints v with three significant digits or as an integer.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// writeSecurityTable prints, when a secured mode ran, each figure of the
// workloads that ran over PLAINTEXT and over SASL_SSL for both systems,
// the cost of SASL_SSL as the ratio SASL_SSL / PLAINTEXT for each (above
// 1 is more of the unit), and sluice / Kafka over SASL_SSL. Cold start
// runs in plaintext only and has no row.
func (r *results) writeSecurityTable(w io.Writer, ran map[string]bool, scalePartitions int) {
	if !slices.Contains(r.modes, modeSASLSSL) {
		return
	}
	secured := func(system string) string { return system + " " + modeSASLSSL }
	cell := func(key, column string) string {
		if v, ok := r.get(key, column); ok {
			return formatValue(v)
		}
		return "—"
	}
	quot := func(key, num, den string) string {
		n, ok1 := r.get(key, num)
		d, ok2 := r.get(key, den)
		if !ok1 || !ok2 || d == 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", n/d)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| workload\t| unit\t| Kafka PLAINTEXT\t| Kafka SASL_SSL\t| Kafka SASL_SSL / PLAINTEXT\t| sluice PLAINTEXT\t| sluice SASL_SSL\t| sluice SASL_SSL / PLAINTEXT\t| sluice / Kafka, SASL_SSL\t|")
	fmt.Fprintln(tw, "|---\t|---\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|--:\t|")
	for _, m := range metrics {
		if !ran[m.workload] || m.workload == "coldstart" {
			continue
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t|\n", rowLabel(m, scalePartitions), m.unit,
			cell(m.key, "kafka"), cell(m.key, secured("kafka")), quot(m.key, secured("kafka"), "kafka"),
			cell(m.key, "sluice"), cell(m.key, secured("sluice")), quot(m.key, secured("sluice"), "sluice"),
			quot(m.key, secured("sluice"), secured("kafka")))
	}
	tw.Flush()
}
