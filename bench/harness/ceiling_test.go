package main

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCeilingModel checks the ceilings' formula: 1 / Σ count/rate, each
// byte of a produce at RF 3 written three times and crossing loopback
// three times, once from the producer's memory and twice with sendfile
// to the followers, each byte of a consume crossing loopback once with
// sendfile.
func TestCeilingModel(t *testing.T) {
	m := &machine{loopback: 2400, sendfile: 4800, disk: 1200, memcpy: 6000}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9*want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// 3/1200 + 1/2400 + 2/4800 = 1/400 + 1/2400 + 1/2400 = 1/300 s per MiB.
	near("produce", produceCeiling.rate(m), 300)
	near("consume", consumeCeiling.rate(m), 4800)
	// Independent resources: min(1200/3, 2400/1, 4800/2).
	near("produce bound", produceCeiling.bound(m), 400)
	near("consume bound", consumeCeiling.bound(m), 4800)
	// A copy of each byte besides: + 1/6000.
	withCopy := produceCeiling
	withCopy.memcopy = 1
	near("produce with a copy", withCopy.rate(m), 1/(3.0/1200+1.0/2400+2.0/4800+1.0/6000))
	near("produce with a copy, bound", withCopy.bound(m), 400)
	if got, want := produceCeiling.formula(), "1 / (3/disk + 1/loopback + 2/sendfile)"; got != want {
		t.Errorf("produce formula %q, want %q", got, want)
	}
	if got, want := withCopy.formula(), "1 / (3/disk + 1/loopback + 2/sendfile + 1/memcpy)"; got != want {
		t.Errorf("formula with a copy %q, want %q", got, want)
	}
	// A step the model counts but nobody measured: no ceiling; one it
	// does not count does not matter.
	if got := produceCeiling.rate(&machine{loopback: 2400, sendfile: 4800}); got != 0 {
		t.Errorf("produce without a disk rate = %v, want 0", got)
	}
	near("consume without a disk rate", consumeCeiling.rate(&machine{sendfile: 4800}), 4800)
}

// TestCeilingColumn checks the table's sluice / ceiling column and the
// goal column's verdicts against Kafka and the ceiling.
func TestCeilingColumn(t *testing.T) {
	res := newResults()
	res.kafkaVersion = "4.4.0"
	res.machine = &machine{loopback: 2400, sendfile: 4800, disk: 1200, memcpy: 6000, pairs: 1, writers: 2, copiers: 2, diskMiB: 512}
	res.set("produce_mibs", "kafka", 80)
	res.set("produce_mibs", "sluice", 225) // 2.81× Kafka, 0.75 of 300
	res.set("consume_mibs", "kafka", 1000)
	res.set("consume_mibs", "sluice", 2400) // 0.5 of 4800
	res.set("scale_idle_cpu", "sluice", 20)
	if q, ok := res.ceilingRatio("produce_mibs"); !ok || math.Abs(q-0.75) > 1e-9 {
		t.Errorf("produce sluice / ceiling = %v, %v; want 0.75", q, ok)
	}
	if _, ok := res.ceilingRatio("latency_p99"); ok {
		t.Error("latency has a ceiling")
	}
	var b strings.Builder
	res.writeTable(&b, map[string]bool{"produce": true, "consume": true, "scale": true}, 300)
	out := b.String()
	chart := filepath.Join(t.TempDir(), "chart.png")
	if err := writeChart(chart, res, map[string]bool{"produce": true, "consume": true}, 300); err != nil {
		t.Errorf("chart: %v", err)
	}
	for _, want := range []string{
		"| ceiling, produce, RF 3: 1 / (3/disk + 1/loopback + 2/sendfile) (independent resources: 400) | 300 |",
		"| ceiling, consume: 1 / (1/sendfile) (independent resources: 4800) | 4800 |",
		"Kafka 4.4.0",
		"sluice / ceiling",
		"| 2.81",
		"| 0.75",
		"≥ 2 met; ceiling ≥ 0.6 met",
		"| 0.50",
		"ceiling ≥ 0.8 missed",
		"≤ 15 % core (5 per node) missed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestMachineBest checks that the ceiling measured before and after the
// systems keeps the better of each rate.
func TestMachineBest(t *testing.T) {
	a := &machine{loopback: 2000, sendfile: 1000, disk: 500, diskFsync: 100, memcpy: 6000, rounds: 1}
	b := &machine{loopback: 1500, sendfile: 1200, disk: 700, diskFsync: 90, memcpy: 5000, rounds: 1}
	got := *a.best(b)
	want := machine{loopback: 2000, sendfile: 1200, disk: 700, diskFsync: 100, memcpy: 6000, rounds: 2}
	if got != want {
		t.Errorf("best = %+v, want %+v", got, want)
	}
	if a.best(nil) != a || (*machine)(nil).best(b) != b {
		t.Error("best with nil is not the other")
	}
	var w strings.Builder
	got.write(&w)
	if !strings.Contains(w.String(), "before and after the systems, the better of each rate") {
		t.Errorf("table does not say the rates are the better of two:\n%s", w.String())
	}
}

// TestMeasureMachine runs the measurements briefly and checks that each
// gave a rate (not how large: that is the machine's business).
func TestMeasureMachine(t *testing.T) {
	m, err := measureMachine(context.Background(), t.TempDir(), 100*time.Millisecond, 8, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if m.loopback <= 0 || m.sendfile <= 0 || m.disk <= 0 || m.diskFsync <= 0 || m.memcpy <= 0 {
		t.Errorf("a rate is missing: %+v", *m)
	}
	if m.diskFsync > m.disk {
		t.Errorf("with fsync %v MiB/s, faster than without %v", m.diskFsync, m.disk)
	}
}

// TestKafkaVersionFlag checks that the baseline is Kafka 4.4.0 unless
// -kafka-version says 4.1.1, and that other releases are refused.
func TestKafkaVersionFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "4.4.0"},
		{[]string{"-kafka-version", "4.1.1"}, "4.1.1"},
	} {
		cfg, err := parseFlags(tc.args)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.kafkaVersion != tc.want {
			t.Errorf("%v: kafka version %q, want %q", tc.args, cfg.kafkaVersion, tc.want)
		}
	}
	if _, err := parseFlags([]string{"-kafka-version", "3.9.0"}); err == nil {
		t.Error("-kafka-version 3.9.0 accepted")
	}
}
