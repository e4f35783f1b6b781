package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// An env var that turns this test binary into the abandoned producer of
// TestKilledTransactionalProducerIsAborted.
const abandonedProducerEnv = "SLUICE_TEST_ABANDONED_PRODUCER"

// init turns the test binary into the abandoned producer when the env var
// names a broker: it begins a transaction, writes to it, says so and waits
// to be killed. It runs before TestMain, which would build the broker.
func init() {
	addr := os.Getenv(abandonedProducerEnv)
	if addr == "" {
		return
	}
	os.Exit(runAbandonedProducer(addr))
}

func runAbandonedProducer(addr string) int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID("abandoned"),
		kgo.TransactionTimeout(2*time.Second), kgo.DefaultProduceTopic("ledger"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "open-%d", i)}).FirstErr(); err != nil {
			fmt.Println("error:", err)
			return 1
		}
	}
	fmt.Println("in transaction")
	time.Sleep(time.Hour) // until SIGKILL
	return 0
}

// Issue 6, acceptance 4: a transactional producer is kill -9'd with its
// transaction open. read_committed consumers stop at the transaction's
// first record; once transaction.timeout.ms passes the coordinator aborts
// it, and they move past: they see the records written after it and never
// the aborted ones.
func TestKilledTransactionalProducerIsAborted(t *testing.T) {
	p := startSluice(t, t.TempDir(), freePort(t))
	p.createTopic("ledger", 1)
	p.produceTo("ledger", 0, "", "before")

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), abandonedProducerEnv+"="+p.addr)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "in transaction" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("abandoned producer: %q", line)
	}
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	killed := time.Now()

	// Written after the open transaction, visible to read_committed only
	// once the transaction is aborted.
	p.produceTo("ledger", 0, "", "after")

	cl := p.client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ledger": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed consumer read %v, waiting for [before after]", got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "before,after" {
		t.Fatalf("read_committed consumer read %v, want [before after] (the aborted records must be skipped)", got)
	}
	t.Logf("read_committed consumer moved past the abandoned transaction %s after the kill (transaction.timeout.ms 2000)", time.Since(killed).Round(time.Millisecond))

	// read_uncommitted sees all seven records, the aborted ones included
	// (the abort marker after them is not a record a client sees).
	raw := p.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"ledger": {0: kgo.NewOffset().AtStart()}}))
	var values []string
	for len(values) < 7 {
		fs := raw.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_uncommitted consumer read %v, waiting for 7 records", values)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	want := "before,open-0,open-1,open-2,open-3,open-4,after"
	if strings.Join(values, ",") != want {
		t.Fatalf("read_uncommitted read %v, want %s", values, want)
	}
}
