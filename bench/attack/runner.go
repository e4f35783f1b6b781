package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// attack is one row of the table: one hostile request (or a few of the
// same kind) of one of the numbered problems.
type attack struct {
	id   string // "3b": problem 3 of the issue, attack b
	name string
	// restarts is set when the attack itself restarts the broker (to see
	// what the restart loads), so the normal client's failures during
	// that restart are not the attack's.
	restarts bool
	run      func(ctx context.Context, h *harness) outcome
}

// outcome is what an attack observed.
type outcome struct {
	answer string // what the broker answered the attacker
	notes  string // what the attack measured besides
}

// row is an attack's line of the table.
type row struct {
	attack
	outcome
	sent             int64
	baseRSS, peakRSS int64
	served, total    int
	slowest          time.Duration
	probeErr         error
	crashed          string // how the broker ended, "" when it did not
	afterCrash       string // the steady topic's check after the restart
	took             time.Duration
	freshStart       string // why the broker was restarted before the case
	recovery         string // why it was restarted after the case
	fatal            error  // the broker could not be restarted: stop
}

// withinGoal is the memory goal for the row.
func (r row) withinGoal(budget int64) bool {
	return r.crashed == "" && r.peakRSS <= 2*r.sent+budget
}

// runAttack runs one attack while sampling the broker's RSS every 20 ms,
// then reads the normal client's rounds of that time, and restarts the
// broker (checking the steady topic) if it died.
func (h *harness) runAttack(ctx context.Context, a attack) row {
	r := row{attack: a}
	if !h.b.alive() {
		if err := h.restart(ctx); err != nil {
			r.fatal = err
			r.crashed = "not running before the case"
			return r
		}
	}
	// The Go heap keeps what an earlier case made it grow for a while, and
	// a case measured on top of it would reuse that memory unseen: a
	// broker well above its resting RSS is restarted (on its data) first.
	if rss := h.b.rss(); rss > h.restRSS+128<<20 {
		logf("%s: broker RSS %s (rested at %s): restarting it first", a.id, human(rss), human(h.restRSS))
		h.b.stop(30 * time.Second)
		if err := h.restart(ctx); err != nil {
			r.fatal = err
			r.crashed = "could not be restarted before the case"
			return r
		}
		h.waitServed(30 * time.Second)
		r.freshStart = fmt.Sprintf("restarted before the case (RSS was %s)", human(rss))
	}
	r.baseRSS = h.b.rss()
	h.b.resetPeak()
	h.sent.Store(0)

	var peakMu sync.Mutex
	sampled := r.baseRSS
	stop := make(chan struct{})
	sampler := make(chan struct{})
	go func() {
		defer close(sampler)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if h.b.alive() {
				rss := max(h.b.rss(), h.b.peak())
				peakMu.Lock()
				sampled = max(sampled, rss)
				peakMu.Unlock()
			}
		}
	}()

	from := time.Now()
	cctx, cancel := context.WithTimeout(ctx, h.opts.caseTimeout)
	r.outcome = a.run(cctx, h)
	cancel()
	// A broker that dies of the attack may take a moment to do so.
	time.Sleep(time.Second)
	to := time.Now()
	r.took = to.Sub(from)
	r.sent = h.sent.Load()
	if h.b.alive() {
		peakMu.Lock()
		sampled = max(sampled, h.b.peak())
		peakMu.Unlock()
	}
	close(stop)
	<-sampler
	r.peakRSS = sampled
	r.served, r.total, r.slowest, r.probeErr = h.probe.window(from, to)

	if !h.b.alive() && !h.b.stoppedByHarness() {
		r.crashed = h.b.exitReason()
		logf("%s: broker crashed: %s; restarting it", a.id, r.crashed)
		if err := h.restart(ctx); err != nil {
			r.fatal = err
			return r
		}
		h.waitServed(30 * time.Second)
		vctx, cancel := context.WithTimeout(ctx, time.Minute)
		r.afterCrash = verify(vctx, h.b.addr, h.steady.snapshot()).String()
		cancel()
		return r
	}
	// A broker that runs but no longer serves (it gave up its partitions,
	// say) would fail every later case and the final data check.
	if !h.waitServed(30 * time.Second) {
		logf("%s: the normal client is not served 30 s after the case; restarting the broker", a.id)
		r.recovery = "not serving 30 s after the case: the harness restarted it"
		h.b.stop(30 * time.Second)
		if err := h.restart(ctx); err != nil {
			r.fatal = err
			return r
		}
		h.waitServed(30 * time.Second)
	}
	return r
}

// waitServed waits until the normal client has been served once more.
func (h *harness) waitServed(timeout time.Duration) bool {
	from := time.Now()
	for time.Since(from) < timeout {
		time.Sleep(200 * time.Millisecond)
		if served, _, _, _ := h.probe.window(from, time.Now()); served > 0 {
			return true
		}
	}
	return false
}

// restart starts the broker again on its data.
func (h *harness) restart(ctx context.Context) error {
	h.b.restarts++
	if err := h.b.start(ctx); err != nil {
		return fmt.Errorf("restart: %w\n%s", err, tailFile(h.b.dir+"/broker.log", 20))
	}
	return nil
}

// attackConn is a new attacker connection whose bytes count as sent.
func (h *harness) attackConn(ctx context.Context) (*wireConn, error) {
	return dialFrom(ctx, attackerIP, h.b.addr, &h.sent)
}

// setupConn is a connection of the harness's own, not counted.
func (h *harness) setupConn(ctx context.Context) (*wireConn, error) {
	return dialFrom(ctx, setupIP, h.b.addr, nil)
}

// createTopic creates a topic with RF 1 (already existing is fine) and
// waits until it has a leader.
func (h *harness) createTopic(ctx context.Context, name string, partitions int32, configs map[string]string) error {
	w, err := h.setupConn(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	pickVersion(h.versions, req, 5)
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions = partitions
	t.ReplicationFactor = 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := w.roundTrip(req, time.Minute)
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 && code != 36 { // 36: TOPIC_ALREADY_EXISTS
		return fmt.Errorf("create topic %s: %s", name, errName(code))
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		md, err := h.metadata(ctx, w, name)
		if err == nil && len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 && len(md.Topics[0].Partitions) == int(partitions) {
			ready := true
			for _, p := range md.Topics[0].Partitions {
				ready = ready && p.Leader >= 0
			}
			if ready {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("topic %s has no leaders after 30s", name)
}

// metadata asks for the named topics (none: all topics).
func (h *harness) metadata(ctx context.Context, w *wireConn, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	pickVersion(h.versions, req, 12)
	for _, name := range topics {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, t)
	}
	if len(topics) == 0 {
		req.Topics = nil
	}
	resp, err := w.roundTrip(req, 30*time.Second)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// produceSetup writes test data with the harness's own connection.
func (h *harness) produceSetup(ctx context.Context, topic string, partition int32, batches ...[]byte) error {
	w, err := h.setupConn(ctx)
	if err != nil {
		return err
	}
	defer w.Close()
	for _, b := range batches {
		resp, err := w.roundTrip(produceRequest(topic, partition, b, -1), 30*time.Second)
		if err != nil {
			return err
		}
		if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			return fmt.Errorf("produce to %s: %s", topic, errName(code))
		}
	}
	return nil
}

// renderReport is the Markdown report: how the run was made, the table,
// and the steady producer's totals.
func renderReport(commit, capHow string, o options, rows []row, final tally, s *steadyProducer, restarts int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "## sluice under attack (issue 14)\n\n")
	fmt.Fprintf(&b, "sluice at %s, %s UTC. One node on loopback, max.connections=100, max.connections.per.ip=50, connections.max.idle.ms=%d, broker open-file limit %d. Memory cap: %s.\n\n",
		commit, time.Now().UTC().Format("2006-01-02 15:04"), o.idleMs, o.brokerNofile, capHow)
	fmt.Fprintf(&b, "Goal: peak RSS ≤ 2 × bytes sent + budget, budget = %s (includes the broker's resting RSS). Peak RSS: max of VmRSS sampled every 20 ms and VmHWM reset at the start of the case; \"rest\" is VmRSS when the case began. Normal client: Metadata + acks=all Produce + Fetch every 200 ms from its own address, 5 s timeout per round.\n\n", human(o.budget))
	b.WriteString("| # | attack | sluice's answer | sent | peak RSS (rest) | within goal | normal client served | crashed | notes |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		goal := "no"
		if r.withinGoal(o.budget) {
			goal = "yes"
		}
		client := fmt.Sprintf("yes (%d/%d rounds, slowest %s)", r.served, r.total, r.slowest.Round(time.Millisecond))
		if r.served < r.total {
			client = fmt.Sprintf("no: %d/%d rounds (%v)", r.served, r.total, r.probeErr)
			if r.restarts {
				client += "; the case restarts the broker"
			}
		}
		crashed := "no"
		if r.crashed != "" {
			crashed = "**crashed**: " + r.crashed
		}
		notes := r.notes
		if r.freshStart != "" {
			notes = strings.TrimPrefix(notes+"; "+r.freshStart, "; ")
		}
		if r.recovery != "" {
			notes = strings.TrimPrefix(notes+"; "+r.recovery, "; ")
		}
		if r.afterCrash != "" {
			notes = strings.TrimPrefix(notes+"; after restart: "+r.afterCrash, "; ")
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |\n",
			r.id, cell(r.name), cell(r.answer), human(r.sent), human(r.peakRSS), human(r.baseRSS), goal, cell(client), cell(crashed), cell(notes))
	}
	s.mu.Lock()
	failed, lastErr := s.failed, s.lastErr
	s.mu.Unlock()
	fmt.Fprintf(&b, "\nSteady producer (idempotent, acks=all, %d records/s, topic %s, 3 partitions) over the whole run: **%s**", o.steadyRate, steadyTopic, final)
	if final.unackedPresent > 0 {
		fmt.Fprintf(&b, " (%d records present that were never acknowledged: allowed)", final.unackedPresent)
	}
	if failed > 0 {
		fmt.Fprintf(&b, "; %d records failed to the producer (last: %v), not counted as acknowledged", failed, lastErr)
	}
	crashes := 0
	for _, r := range rows {
		if r.crashed != "" {
			crashes++
		}
	}
	fmt.Fprintf(&b, ".\n\nThe broker was started %d times after the first: %d after a crash, the rest by the harness (cases 2b and 2d, shedding an earlier case's heap, or a broker no longer serving).\n", restarts, crashes)
	return b.String()
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}
