package main

// -metrics-cost: what sluice's Prometheus metrics cost the producer (issue
// 21, acceptance 3). Workload 1 (producer throughput) runs on a fresh
// three-node sluice cluster with metrics.listener unset ("off": the broker
// then builds no metric at all) and on a fresh one with it set on every
// node ("on"), with every node's /metrics scraped every -scrape-interval
// while the cluster runs, as a Prometheus server would. Rounds alternate
// the order (off then on, on then off, …) so that a drift of the shared
// machine's load or of the page cache falls on both variants alike. It
// prints each round's figures, each variant's median and spread, and the
// ratio on / off of the medians against the goal (≥ 0.97: within 3 %).
// With -sluice-cpu-profile DIR each run's nodes write their CPU profiles
// to DIR/round-N-sluice and DIR/round-N-sluice+metrics.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// costGoal is the least on / off throughput ratio issue 21 asks for.
const costGoal = 0.97

// costRun is one run of workload 1 in -metrics-cost.
type costRun struct {
	round int
	on    bool
	mibs  float64 // 0 when the run failed
	// scrapes and scrapeErrs count the scraper's fetches of the "on"
	// variant's nodes.
	scrapes, scrapeErrs int
	// cpu is the CPU time (user + system) the cluster's nodes used over
	// their whole life, sent the record bytes acknowledged (warm-up
	// included): CPU per byte moves far less with the machine's other
	// load than throughput does.
	cpu  time.Duration
	sent int64
}

// costResults are the runs of -metrics-cost and the failures.
type costResults struct {
	runs []costRun
	errs []string
}

// runMetricsCost runs -metrics-cost rounds of workload 1 on sluice with
// metrics off and on, logging progress to logw.
func runMetricsCost(ctx context.Context, cfg *config, logw io.Writer) (*costResults, error) {
	logf, root, workDir, cleanup, err := prepareRun(cfg, logw)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	bin := cfg.sluiceBin
	if bin == "" {
		bin = workDir + "/bin/sluice"
		logf("building ./cmd/sluice")
		if err := goBuild(ctx, root, bin); err != nil {
			return nil, err
		}
	}
	sec, err := newSecurity(modePlaintext, certDir(workDir, modePlaintext))
	if err != nil {
		return nil, err
	}
	// Workload 1 alone.
	one := *cfg
	one.workloads = map[string]bool{"produce": true}
	values := newValuePool(cfg.recordSize)
	out := &costResults{}
	for round := 1; round <= cfg.metricsCost && ctx.Err() == nil; round++ {
		order := []bool{false, true}
		if round%2 == 0 {
			order = []bool{true, false}
		}
		for _, on := range order {
			if ctx.Err() != nil {
				break
			}
			sys := &sluiceSystem{bin: bin, metrics: on, scrapeEvery: cfg.scrapeEvery}
			if cfg.cpuProfileDir != "" {
				// Each run's nodes profile into a directory of their own,
				// to compare where "on" spends what "off" does not.
				sys.cpuProfileDir = filepath.Join(cfg.cpuProfileDir, fmt.Sprintf("round-%d-%s", round, sys.name()))
				if err := os.MkdirAll(sys.cpuProfileDir, 0o755); err != nil {
					return out, err
				}
			}
			res := newResults()
			values.next.Store(0)
			r := &runner{cfg: &one, sys: sys, sec: sec, res: res, values: values}
			r.dir = fmt.Sprintf("%s/cost-%d-%s", workDir, round, sys.name())
			r.logf = func(format string, args ...any) {
				logf("[round %d %s] %s", round, r.name(), fmt.Sprintf(format, args...))
			}
			r.runAll(ctx)
			if !cfg.keep {
				os.RemoveAll(r.dir)
			}
			run := costRun{round: round, on: on, sent: r.ledgers.of(produceTopic).counts().uncompressed}
			run.mibs, _ = res.get("produce_mibs", r.name())
			for _, n := range sys.lastNodes {
				if n.proc != nil && n.proc.cmd.ProcessState != nil {
					run.cpu += n.proc.cmd.ProcessState.UserTime() + n.proc.cmd.ProcessState.SystemTime()
				}
			}
			for _, e := range res.errs {
				out.errs = append(out.errs, fmt.Sprintf("round %d %s", round, e))
			}
			if on && sys.scraped != nil {
				s := sys.scraped
				run.scrapes, run.scrapeErrs = s.count()
				if err := s.check(); err != nil {
					out.errs = append(out.errs, fmt.Sprintf("round %d %s: metrics: %v", round, r.name(), err))
					run.mibs = 0
				}
			}
			out.runs = append(out.runs, run)
		}
	}
	return out, ctx.Err()
}

// failed reports whether a run failed.
func (c *costResults) failed() bool { return len(c.errs) > 0 }

// figures returns the throughputs of the runs of one variant that
// completed.
func (c *costResults) figures(on bool) []float64 {
	var v []float64
	for _, r := range c.runs {
		if r.on == on && r.mibs > 0 {
			v = append(v, r.mibs)
		}
	}
	return v
}

// roundRatios returns on / off of every round where both completed.
func (c *costResults) roundRatios() []float64 {
	var v []float64
	off := map[int]float64{}
	for _, r := range c.runs {
		if !r.on && r.mibs > 0 {
			off[r.round] = r.mibs
		}
	}
	for _, r := range c.runs {
		if r.on && r.mibs > 0 && off[r.round] > 0 {
			v = append(v, r.mibs/off[r.round])
		}
	}
	return v
}

// medianOf returns the median of v, 0 when v is empty.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is "min–max (±x % of the median)" of v.
func spread(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	lo, hi, m := slices.Min(v), slices.Max(v), medianOf(v)
	return fmt.Sprintf("%s–%s (%.1f %% of the median)", formatValue(lo), formatValue(hi), 100*(hi-lo)/m)
}

// write prints the rounds, the medians and spreads, and the ratio.
func (c *costResults) write(w io.Writer, cfg *config) {
	fmt.Fprintf(w, "metrics cost: workload 1 (producer throughput, MiB/s), sluice, metrics.listener off vs on (scraped every %s), %s timed after %s warm-up, %d rounds\n\n",
		cfg.scrapeEvery, cfg.produceTime, cfg.warmup, cfg.metricsCost)
	fmt.Fprintln(w, "| round | order | off MiB/s | on MiB/s | on / off | scrapes (failed) | off CPU s/GiB | on CPU s/GiB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	byRound := map[int][2]*costRun{}
	var rounds []int
	for i := range c.runs {
		r := &c.runs[i]
		pair, seen := byRound[r.round]
		if !seen {
			rounds = append(rounds, r.round)
		}
		if r.on {
			pair[1] = r
		} else {
			pair[0] = r
		}
		byRound[r.round] = pair
	}
	cell := func(r *costRun) string {
		if r == nil || r.mibs == 0 {
			return "failed"
		}
		return formatValue(r.mibs)
	}
	for _, n := range rounds {
		pair := byRound[n]
		order := "off, on"
		if n%2 == 0 {
			order = "on, off"
		}
		ratio, scrapes := "—", "—"
		if pair[0] != nil && pair[1] != nil && pair[0].mibs > 0 && pair[1].mibs > 0 {
			ratio = fmt.Sprintf("%.3f", pair[1].mibs/pair[0].mibs)
		}
		if pair[1] != nil {
			scrapes = fmt.Sprintf("%d (%d)", pair[1].scrapes, pair[1].scrapeErrs)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", n, order, cell(pair[0]), cell(pair[1]), ratio, scrapes, cpuCell(pair[0]), cpuCell(pair[1]))
	}
	off, on, ratios := c.figures(false), c.figures(true), c.roundRatios()
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "off\tmedian %s MiB/s\tspread %s\n", formatValue(medianOf(off)), spread(off))
	fmt.Fprintf(tw, "on\tmedian %s MiB/s\tspread %s\n", formatValue(medianOf(on)), spread(on))
	fmt.Fprintf(tw, "on / off per round\tmedian %.3f\trange %s\n", medianOf(ratios), rangeText(ratios))
	offCPU, onCPU := c.cpuPerGiB(false), c.cpuPerGiB(true)
	if offCPU > 0 && onCPU > 0 {
		fmt.Fprintf(tw, "nodes' CPU per GiB sent\toff %.2f s, on %.2f s\ton / off %.3f (all rounds summed)\n", offCPU, onCPU, onCPU/offCPU)
	}
	tw.Flush()
	if m0, m1 := medianOf(off), medianOf(on); m0 > 0 && m1 > 0 {
		verdict := "met"
		if m1/m0 < costGoal {
			verdict = "NOT met"
		}
		fmt.Fprintf(w, "\non / off of the medians: %.3f (goal ≥ %.2f, within 3 %%: %s)\n", m1/m0, costGoal, verdict)
	}
	for _, e := range c.errs {
		fmt.Fprintf(w, "FAILED %s\n", strings.ReplaceAll(e, "\n", "\n    "))
	}
}

// cpuCell is a run's nodes' CPU seconds per GiB sent, or "—".
func cpuCell(r *costRun) string {
	if r == nil || r.mibs == 0 || r.sent == 0 || r.cpu == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", r.cpu.Seconds()/(float64(r.sent)/(1<<30)))
}

// cpuPerGiB is one variant's CPU seconds per GiB sent over the runs that
// completed, 0 without any.
func (c *costResults) cpuPerGiB(on bool) float64 {
	var cpu time.Duration
	var sent int64
	for _, r := range c.runs {
		if r.on == on && r.mibs > 0 && r.sent > 0 {
			cpu += r.cpu
			sent += r.sent
		}
	}
	if sent == 0 || cpu == 0 {
		return 0
	}
	return cpu.Seconds() / (float64(sent) / (1 << 30))
}

// rangeText is "min–max" of ratios, or "—".
func rangeText(v []float64) string {
	if len(v) == 0 {
		return "—"
	}
	return fmt.Sprintf("%.3f–%.3f", slices.Min(v), slices.Max(v))
}

// scraper fetches every node's /metrics every interval, as a Prometheus
// server does, until stopped: the "on" variant pays for serving them, not
// only for counting.
type scraper struct {
	cancel context.CancelFunc
	done   chan struct{}
	nodes  []*node
	client *http.Client

	mu        sync.Mutex
	scrapes   int
	errs      int
	lastErr   error
	sawBytes  bool // a scrape showed bytesin of the produce topic
	sawFamily bool // a scrape showed the request counter family
}

// startScraper starts scraping nodes' metrics listeners every interval
// (the first scrape at once).
func startScraper(nodes []*node, interval time.Duration) *scraper {
	ctx, cancel := context.WithCancel(context.Background())
	client := &http.Client{Timeout: 10 * time.Second}
	s := &scraper{cancel: cancel, done: make(chan struct{}), nodes: nodes, client: client}
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			s.scrapeAll(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// scrapeAll scrapes every running node once.
func (s *scraper) scrapeAll(ctx context.Context) {
	for _, n := range s.nodes {
		if n.metricsAddr == "" || n.proc == nil || !n.proc.alive() {
			continue
		}
		s.scrape(ctx, s.client, n.metricsAddr)
	}
}

// scrape fetches one node's /metrics and records what it saw.
func (s *scraper) scrape(ctx context.Context, client *http.Client, addr string) {
	body, err := func() ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s", addr, resp.Status)
		}
		return b, err
	}()
	if ctx.Err() != nil {
		return // stopped mid-scrape: not the broker's failure
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scrapes++
	if err != nil {
		s.errs++
		s.lastErr = err
		return
	}
	text := string(body)
	s.sawBytes = s.sawBytes || strings.Contains(text, `kafka_server_brokertopicmetrics_bytesin_total{topic="`+produceTopic+`"}`)
	s.sawFamily = s.sawFamily || strings.Contains(text, "kafka_network_requestmetrics_requests_total{")
}

// stop ends the scraping, waits for it, and scrapes every node once more
// (a run shorter than the interval has been scraped after its load too).
func (s *scraper) stop() {
	s.cancel()
	<-s.done
	s.scrapeAll(context.Background())
}

// count returns the scrapes made and how many failed.
func (s *scraper) count() (scrapes, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapes, s.errs
}

// check says whether the metrics were really served and counted: every
// scrape answered, and the produce topic's bytes showed up.
func (s *scraper) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.scrapes == 0:
		return fmt.Errorf("no scrape")
	case s.errs > 0:
		return fmt.Errorf("%d of %d scrapes failed, last: %w", s.errs, s.scrapes, s.lastErr)
	case !s.sawBytes || !s.sawFamily:
		return fmt.Errorf("no scrape showed %s's bytesin series and the request counters", produceTopic)
	}
	return nil
}
