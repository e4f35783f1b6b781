//go:build linux

package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// form is how long faults last: the short form runs in CI, the long form
// (SLUICE_CHAOS=long) before a release or to close issue 13.
type form struct {
	long bool
	// hold is how long a scenario keeps its fault.
	hold time.Duration
	// nemesisTotal and nemesisHold are the nemesis's run time and the
	// longest time it keeps one fault.
	nemesisTotal, nemesisHold time.Duration
}

func chaosForm() form {
	if os.Getenv("SLUICE_CHAOS") == "long" {
		return form{long: true, hold: 15 * time.Second, nemesisTotal: 5 * time.Minute, nemesisHold: 8 * time.Second}
	}
	return form{hold: 4 * time.Second, nemesisTotal: 20 * time.Second, nemesisHold: 4 * time.Second}
}

const (
	// fullISRTimeout bounds how long, after the heal, every partition may
	// take to have its full ISR again.
	fullISRTimeout = 60 * time.Second
	// workingTimeout bounds how long, after the heal, every partition may
	// take to acknowledge a write again.
	workingTimeout = 30 * time.Second
	// warmup is how long the workloads run before the first fault.
	warmup = 2 * time.Second
)

// selected decides which scenarios run: SLUICE_CHAOS_SCENARIOS (a comma
// list of names, or "all") runs exactly those, known failures included; the
// long form runs every scenario; the short form runs those marked short
// and skips those known to fail on the code of the day.
func selected(s scenario, f form) (bool, string) {
	if list := os.Getenv("SLUICE_CHAOS_SCENARIOS"); list != "" {
		if list == "all" || slices.Contains(strings.Split(list, ","), s.name) {
			return true, ""
		}
		return false, "not in SLUICE_CHAOS_SCENARIOS"
	}
	if f.long {
		return true, ""
	}
	if !s.short {
		return false, "long form only (SLUICE_CHAOS=long)"
	}
	if knownFailing[s.name] != "" {
		return false, "known to fail until issue 13 is fixed (" + knownFailing[s.name] + "); force it with SLUICE_CHAOS_SCENARIOS=" + s.name
	}
	return true, ""
}

// TestChaos runs the scenarios of scenarios_test.go, each on a fresh
// three-node cluster in network namespaces. See doc.go.
func TestChaos(t *testing.T) {
	iptables := skipUnlessCapable(t)
	removeStale(t)
	f := chaosForm()
	var toRun []scenario
	for _, s := range scenarios() {
		if ok, why := selected(s, f); ok {
			toRun = append(toRun, s)
		} else {
			t.Run(s.name, func(t *testing.T) { t.Skip(why) })
		}
	}
	if len(toRun) == 0 {
		return
	}
	bin := buildBinary(t, t.TempDir())
	var summaries []string
	for _, s := range toRun {
		t.Run(s.name, func(t *testing.T) {
			line := runScenario(t, iptables, bin, f, s)
			summaries = append(summaries, line)
		})
	}
	t.Logf("chaos summary (%s form):\n%s", map[bool]string{true: "long", false: "short"}[f.long], strings.Join(summaries, "\n"))
}

// logDir returns where a scenario keeps the nodes' data and logs:
// SLUICE_CHAOS_LOGDIR/<scenario> when set (kept), else a temporary
// directory removed after the test unless it failed, so that a failure in
// CI leaves the nodes' logs to read.
func logDir(t *testing.T, name string) string {
	base := os.Getenv("SLUICE_CHAOS_LOGDIR")
	if base == "" {
		dir, err := os.MkdirTemp("", "sluice-chaos-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !t.Failed() {
				os.RemoveAll(dir)
			}
		})
		return dir
	}
	dir := filepath.Join(base, name)
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const (
	mainTopic = "chaos-acks"
	txnTopic  = "chaos-txn"
)

// runScenario runs one scenario from a fresh cluster to the check, and
// returns its summary line, which it also prints.
func runScenario(t *testing.T, iptables, bin string, f form, s scenario) string {
	dir := logDir(t, s.name)
	c := startCluster(t, iptables, bin, dir, 3, s.overrides...)
	ctrl, err := c.controller(1)
	if err != nil {
		t.Fatal(err)
	}
	env := &scenarioEnv{t: t, c: c, f: f, controller: ctrl}
	assignment := [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}
	if s.assignment != nil {
		assignment = s.assignment(env)
	}
	if err := c.createTopic(mainTopic, assignment); err != nil {
		t.Fatal(err)
	}
	if !s.noTxn {
		if err := c.createTopic(txnTopic, [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}); err != nil {
			t.Fatal(err)
		}
	}
	if env.leadersBefore, err = env.leaders(mainTopic); err != nil {
		t.Fatal(err)
	}

	tag := fmt.Sprintf("%s-%d", s.name, time.Now().UnixNano())
	prod, err := startProducer(c.addrs(), mainTopic, int32(len(assignment)), tag, clientLog(t, dir, "producer")...)
	if err != nil {
		t.Fatal(err)
	}
	var txn *txnWorkload
	topics := []string{mainTopic}
	if !s.noTxn {
		txn = startTxnWorkload(c.addrs(), txnTopic, 3, tag, clientLog(t, dir, "txn")...)
		topics = append(topics, txnTopic)
	}
	stopped := false
	stopWorkloads := func() []string {
		stopped = true
		prod.stop()
		if txn == nil {
			return nil
		}
		sentinels, err := txn.stop(tag)
		if err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
		return sentinels
	}
	defer func() {
		if !stopped {
			stopWorkloads()
		}
	}()
	if err := prod.waitWorking(time.Now().Add(-time.Minute), workingTimeout); err != nil {
		t.Fatalf("before any fault: %v", err)
	}
	time.Sleep(warmup)

	faultErr := s.run(env)
	if faultErr != nil {
		t.Errorf("%s: %v", s.name, faultErr)
	}
	if err := c.heal(); err != nil {
		t.Errorf("heal: %v", err)
	}
	healedAt := time.Now()
	t.Logf("healed at %s", healedAt.Format("15:04:05.000"))
	isrTime, err := c.waitFullISR(fullISRTimeout, topics...)
	if err != nil {
		t.Errorf("full ISRs after the heal: %v", err)
	}
	if err := prod.waitWorking(healedAt, workingTimeout); err != nil {
		t.Errorf("writes after the heal: %v", err)
	}
	if s.afterHeal != nil {
		if err := s.afterHeal(env); err != nil {
			t.Errorf("%s: %v", s.name, err)
		}
	}
	// Writes continue a little after the ISRs are full, so the check also
	// covers records written to the healed cluster.
	time.Sleep(time.Second)
	sentinels := stopWorkloads()

	o := &outcome{}
	check(t, c, o, prod, txn, sentinels)
	gap, gapPart := prod.longestGap()
	line := fmt.Sprintf("chaos: scenario=%s acked=%d lost=%d duplicated=%d misplaced=%d phantom=%d unknown=%d txn-committed=%d txn-lost=%d txn-aborted-visible=%d longest-unavailability=%v (partition %d) full-isr-after-heal=%v replicas=%s",
		s.name, o.acked, o.lost+o.txnLost, o.duplicated+o.txnDuplicated, o.misplaced, o.phantom, o.failed,
		o.txnCommitted, o.txnLost, o.txnAbortedVisible, gap.Round(10*time.Millisecond), gapPart, isrTime.Round(10*time.Millisecond),
		map[bool]string{true: "identical", false: "DIFFER"}[len(o.replicasDiffer) == 0])
	fmt.Println(line)
	t.Log(line)
	if o.lost+o.misplaced+o.duplicated+o.phantom+o.txnLost+o.txnAbortedVisible+o.txnDuplicated > 0 {
		t.Errorf("%s: the checker found:\n  %s", s.name, strings.Join(o.problems, "\n  "))
	}
	for _, d := range o.replicasDiffer {
		t.Errorf("replicas differ: %s", d)
	}
	if o.acked == 0 {
		t.Errorf("no record was acknowledged")
	}
	if s.maxUnavailable > 0 && gap > s.maxUnavailable {
		t.Errorf("%s: partition %d acknowledged nothing for %v, longer than the %v this scenario allows", s.name, gapPart, gap.Round(10*time.Millisecond), s.maxUnavailable)
	}
	if t.Failed() {
		t.Logf("node logs and data kept in %s", dir)
	}
	return line
}

// clientLog returns the option that writes a workload's franz-go log to
// dir/<name>-client.log when SLUICE_CHAOS_CLIENT_LOG is info or debug, to
// tell a client's slowness from the cluster's when a gap looks long.
func clientLog(t *testing.T, dir, name string) []kgo.Opt {
	var level kgo.LogLevel
	switch os.Getenv("SLUICE_CHAOS_CLIENT_LOG") {
	case "":
		return nil
	case "debug":
		level = kgo.LogLevelDebug
	default:
		level = kgo.LogLevelInfo
	}
	f, err := os.Create(filepath.Join(dir, name+"-client.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []kgo.Opt{kgo.WithLogger(kgo.BasicLogger(f, level, func() string {
		return time.Now().Format("15:04:05.000 ")
	}))}
}

// check reads both topics back, then stops the nodes and compares the
// replicas.
func check(t *testing.T, c *cluster, o *outcome, prod *producer, txn *txnWorkload, sentinels []string) {
	ends, err := endOffsets(c.addrs(), mainTopic)
	if err != nil {
		t.Errorf("end offsets: %v", err)
		return
	}
	got, err := readTopic(c.addrs(), mainTopic, prod.partitions, kgo.ReadUncommitted(), func(got map[int32][]readRecord) bool {
		for p, end := range ends {
			recs := got[p]
			if end > 0 && (len(recs) == 0 || recs[len(recs)-1].offset+1 < end) {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Errorf("read back: %v", err)
	}
	checkProducer(o, prod, got)

	if txn == nil {
		c.stopAll()
		compareReplicas(o, c.nodes, mainTopic, ends)
		return
	}
	if sentinels != nil {
		txnGot, err := readTopic(c.addrs(), txnTopic, txn.partitions, kgo.ReadCommitted(), func(got map[int32][]readRecord) bool {
			for p, v := range sentinels {
				if !slices.ContainsFunc(got[int32(p)], func(r readRecord) bool { return r.value == v }) {
					return false
				}
			}
			return true
		})
		if err != nil {
			t.Errorf("read_committed back: %v", err)
		}
		checkTxn(o, txn, txnGot)
	}

	txnEnds, err := endOffsets(c.addrs(), txnTopic)
	if err != nil {
		t.Errorf("end offsets: %v", err)
		return
	}
	c.stopAll()
	compareReplicas(o, c.nodes, mainTopic, ends)
	compareReplicas(o, c.nodes, txnTopic, txnEnds)
}
