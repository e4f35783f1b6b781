package console_test

// Issue 21's acceptance 2: the console driven in a real headless Chromium
// (Debian's chromium, through chromedp) against a three-node cluster: a
// topic created in the page, records produced by a kgo client and browsed,
// a group's lag watched as its consumer commits, an offset reset and a
// topic deletion through their confirmations, the live charts, and a
// killed broker shown red and then back up. Each page is saved as a PNG
// in $SLUICE_CONSOLE_SHOTS (a temporary directory when unset):
//
//	SLUICE_CONSOLE_SHOTS=/tmp/shots go test ./console -run TestConsoleInBrowser -count=1 -v
//
// Without a chromium on PATH the test skips, except under CI (CI set) or
// scripts/test-all.sh (SLUICE_REQUIRE_CHROMIUM=1), which installs it:
// there its absence fails the test. chromium runs with a fresh profile,
// no sandbox (CI runs as root), no GPU and no background networking.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicedev/sluice/sluicetest"
)

// chromium finds a Chromium binary, or skips (fails under CI).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" || os.Getenv("SLUICE_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium on PATH, and CI or SLUICE_REQUIRE_CHROMIUM is set: scripts/test-all.sh installs Debian's chromium")
	}
	t.Skip("no chromium on PATH (apt-get install chromium); the browser test runs in CI")
	return ""
}

// browser is one headless Chromium tab and the directory of its shots.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	n     int
}

func newBrowser(t *testing.T) *browser {
	exe := chromium(t)
	shots := os.Getenv("SLUICE_CONSOLE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), // a fresh profile
		// chromium's own temporary files (its singleton socket
		// directory) go with the test's.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // stops the chromium process and waits for it
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium %s: %v", exe, err)
	}
	return &browser{t: t, ctx: ctx, shots: shots}
}

// run runs actions within timeout; on failure it saves the page as
// failed-<step>.png and fails the test.
func (b *browser) run(step string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		sctx, scancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer scancel()
		if buf, err := chromedp.Run(sctx, chromedp.FullScreenshot(100)); err == nil {
			os.WriteFile(filepath.Join(b.shots, "failed-"+step+".png"), buf, 0o644)
		}
		body, _ := chromedp.Run(sctx, chromedp.Text(chromedp.CSS("main")))
		routes, _ := chromedp.Run(sctx, chromedp.Evaluate[int]("window.routes || 0"))
		body = fmt.Sprintf("(%d routes) %s", routes, body)
		b.t.Fatalf("browser step %q: %v\npage text: %.1500s", step, err, body)
	}
}

// shot saves the page as NN-name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(buf, []byte("\x89PNG")) {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	b.n++
	p := filepath.Join(b.shots, fmt.Sprintf("%02d-%s.png", b.n, name))
	if err := os.WriteFile(p, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s (%d bytes)", p, len(buf))
}

// text is the text of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// waitText waits until the element matching sel shows want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.trim() === %q; })()`, sel, want)
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(100*time.Millisecond))
}

// choose sets a select's value and fires its change event.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event("change")); return true; })()`, sel, value))
}

func TestConsoleInBrowser(t *testing.T) {
	b := newBrowser(t)
	c := sluicetest.StartCluster(t, 3, "metrics.listener=127.0.0.1:0")
	base := "http://" + c.Node(1).Broker.MetricsAddr() + "/"
	ctx, cancel := context.WithTimeout(context.Background(), 110*time.Second)
	defer cancel()
	adm := c.Admin()
	const wait = 30 * time.Second

	// The cluster page: three brokers up, a controller, three voters.
	b.run("cluster", wait, chromedp.Navigate(base+"#/cluster"),
		chromedp.WaitVisible(chromedp.CSS(`#broker-1[data-state="up"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#broker-2[data-state="up"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#broker-3[data-state="up"]`)),
		waitText("#brokers-up", "3 / 3"))
	t.Logf("cluster page: controller %q, brokers up %q", b.text("#controller"), b.text("#brokers-up"))
	b.shot("cluster")

	// Create a topic in the page; a Kafka client sees it.
	b.run("create topic", wait, chromedp.Navigate(base+"#/topics"),
		chromedp.WaitVisible(chromedp.CSS("#new-topic-name")),
		chromedp.SendKeys(chromedp.CSS("#new-topic-name"), "orders"),
		chromedp.SendKeys(chromedp.CSS("#new-topic-partitions"), "3"),
		chromedp.SendKeys(chromedp.CSS("#new-topic-rf"), "3"),
		chromedp.Click(chromedp.CSS("#create-topic")),
		chromedp.WaitVisible(chromedp.CSS("#created")),
		chromedp.WaitVisible(chromedp.CSS("#topic-row-orders")))
	td, err := adm.ListTopics(ctx, "orders")
	if err != nil || len(td["orders"].Partitions) != 3 || len(td["orders"].Partitions[0].Replicas) != 3 {
		t.Fatalf("the topic created in the page, as kadm sees it: %v %+v", err, td)
	}
	for p := range int32(3) {
		c.WaitForISR("orders", p, 3)
	}

	// Produce through a kgo client: 20 records to each partition.
	prod := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPartition = 20
	for p := range int32(3) {
		for i := range perPartition {
			r := &kgo.Record{Topic: "orders", Partition: p, Key: []byte(fmt.Sprintf("order-%d-%d", p, i)),
				Value:   []byte(fmt.Sprintf(`{"order":%d,"partition":%d,"item":"widget","qty":%d}`, i, p, i%5+1)),
				Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("browser-test")}, {Key: "bin", Value: []byte{0xde, 0xad, 0xbe, 0xef}}}}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	b.run("topics", wait, chromedp.Navigate(base+"#/topics"),
		waitText("#topic-row-orders td:nth-child(4)", "60"))
	b.shot("topics")
	b.run("topic", wait, chromedp.Navigate(base+"#/topic/orders"),
		chromedp.WaitVisible(chromedp.CSS("#partitions")),
		chromedp.WaitVisible(chromedp.CSS("#configs")))
	b.shot("topic-orders")

	// Browse partition 1 from offset 5, as text, then JSON, then hex.
	b.run("messages", wait, chromedp.Navigate(base+"#/messages/orders/1"),
		chromedp.WaitVisible(chromedp.CSS(`#page[data-ready="messages"]`)),
		chromedp.SetValue(chromedp.CSS("#msg-value"), "5"),
		chromedp.Click(chromedp.CSS("#load-records")),
		chromedp.WaitVisible(chromedp.CSS(`#records-table tr[data-offset="5"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#records-table tr[data-offset="19"]`)))
	if got := b.text(`#records-table tr[data-offset="5"]`); !strings.Contains(got, "order-1-5") || !strings.Contains(got, `"order":5`) || !strings.Contains(got, "browser-test") {
		t.Fatalf("record 5 of orders/1 in the page: %q", got)
	}
	if s := b.text("#records-summary"); !strings.HasPrefix(s, "15 records of orders/1 from offset 5") {
		t.Errorf("records summary: %q", s)
	}
	b.shot("messages-text")
	b.run("messages json", wait, choose("#msg-format", "json"), chromedp.WaitVisible(chromedp.CSS("#records-table pre.json")))
	b.shot("messages-json")
	b.run("messages hex", wait, choose("#msg-format", "hex"))
	if got := b.text(`#records-table tr[data-offset="5"]`); !strings.Contains(got, "de ad be ef") {
		t.Errorf("record 5 as hex does not show the bin header's bytes: %q", got)
	}
	b.shot("messages-hex")

	// A group at the start of every partition: lag 60. A consumer
	// commits 20 records, then the rest; the page shows the lag drop.
	start := kadm.Offsets{}
	for p := range int32(3) {
		start.Add(kadm.Offset{Topic: "orders", Partition: p, At: 0, LeaderEpoch: -1})
	}
	if _, err := adm.CommitOffsets(ctx, "billing", start); err != nil {
		t.Fatal(err)
	}
	b.run("group lag 60", wait, chromedp.Navigate(base+"#/group/billing"), waitText("#group-lag", "60"))
	b.shot("group-lag-60")
	cons := c.Client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit())
	var got []*kgo.Record
	for len(got) < 20 {
		fs := cons.PollRecords(ctx, 20-len(got))
		if err := ctx.Err(); err != nil {
			t.Fatalf("polled %d records: %v", len(got), err)
		}
		got = append(got, fs.Records()...)
	}
	if err := cons.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	b.run("group lag 40", wait, waitText("#group-lag", "40"), waitText("#group-state", "Stable"))
	b.shot("group-lag-40")
	for len(got) < 60 {
		fs := cons.PollRecords(ctx, 60-len(got))
		if err := ctx.Err(); err != nil {
			t.Fatalf("polled %d records: %v", len(got), err)
		}
		got = append(got, fs.Records()...)
	}
	if err := cons.CommitRecords(ctx, got...); err != nil {
		t.Fatal(err)
	}
	b.run("group lag 0", wait, waitText("#group-lag", "0"))
	b.shot("group-lag-0")
	b.run("groups", wait, chromedp.Navigate(base+"#/groups"), chromedp.WaitVisible(chromedp.CSS("#group-row-billing")))
	b.shot("groups")

	// The consumer leaves: the group is Empty and its offsets can be
	// reset, after a confirmation, to the earliest.
	cons.Close()
	b.run("reset", wait, chromedp.Navigate(base+"#/group/billing"),
		waitText("#group-state", "Empty"),
		chromedp.WaitVisible(chromedp.CSS("#reset-offsets")),
		choose("#reset-to", "earliest"),
		chromedp.Click(chromedp.CSS("#reset-offsets")),
		chromedp.WaitVisible(chromedp.CSS("#modal-confirm")))
	b.shot("group-reset-confirm")
	b.run("reset confirmed", wait, chromedp.Click(chromedp.CSS("#modal-confirm")),
		chromedp.WaitVisible(chromedp.CSS("#reset-done")),
		waitText("#group-lag", "60"))
	b.shot("group-reset-done")

	// Deleting a topic asks for its name first.
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "scratch"); err != nil {
		t.Fatal(err)
	}
	b.run("delete", wait, chromedp.Navigate(base+"#/topics"),
		chromedp.WaitVisible(chromedp.CSS(`button[data-delete="scratch"]`)),
		chromedp.Click(chromedp.CSS(`button[data-delete="scratch"]`)),
		chromedp.WaitVisible(chromedp.CSS("#modal-input")),
		chromedp.SendKeys(chromedp.CSS("#modal-input"), "scratch"))
	b.shot("topic-delete-confirm")
	b.run("delete confirmed", wait, chromedp.Click(chromedp.CSS("#modal-confirm")),
		chromedp.WaitVisible(chromedp.CSS("#deleted")))
	sluicetest.WaitFor(t, wait, func() error {
		td, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		if td.Has("scratch") {
			return fmt.Errorf("scratch still exists")
		}
		return nil
	})

	// Live charts while a producer writes about 100 records a second,
	// until node 1's own records-in counter has risen across 8 samples.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var loaded atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-loadCtx.Done():
				return
			case <-tick.C:
			}
			prod.Produce(loadCtx, &kgo.Record{Topic: "orders", Partition: int32(i % 3), Value: bytes.Repeat([]byte("x"), 512)},
				func(_ *kgo.Record, err error) {
					if err == nil {
						loaded.Add(1)
					}
				})
		}
	}()
	b.run("charts", wait, chromedp.Navigate(base+"#/charts"), chromedp.WaitVisible(chromedp.CSS("#chart-bytes")))
	n0, err := chromedp.Run(b.ctx, chromedp.Evaluate[int]("history_.length"))
	if err != nil {
		t.Fatal(err)
	}
	b.run("charts filled", wait, chromedp.Poll[chromedp.Void](fmt.Sprintf(`history_.length >= %d &&
		history_[history_.length-1].counters.messagesIn - history_[history_.length-9].counters.messagesIn > 0`, min(n0, 170)+9),
		chromedp.WithPollingInterval(200*time.Millisecond)))
	b.shot("charts")
	stopLoad()
	wg.Wait()
	prod.Flush(ctx)
	t.Logf("charts: produced %d records of 512 bytes meanwhile", loaded.Load())

	// Kill node 3: it goes red on node 1's console and partitions show
	// under-replicated; green again and all in sync once it is back.
	c.Kill(3)
	b.run("broker down", wait, chromedp.Navigate(base+"#/cluster"),
		chromedp.WaitVisible(chromedp.CSS(`#broker-3[data-state="down"]`)),
		waitText("#brokers-up", "2 / 3"),
		chromedp.Poll[chromedp.Void](`document.querySelector("#partitions-health").textContent.includes("under-replicated")`,
			chromedp.WithPollingInterval(100*time.Millisecond)))
	b.shot("cluster-broker-3-down")
	c.Restart(3)
	b.run("broker back", wait, chromedp.WaitVisible(chromedp.CSS(`#broker-3[data-state="up"]`)),
		waitText("#brokers-up", "3 / 3"),
		waitText("#partitions-health", "all in sync"))
	b.shot("cluster-broker-3-back")
}
