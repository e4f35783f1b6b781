package broker

// The retry loop of transaction verification (txn_verify.go) with
// non-default add.partitions.to.txn.retry.backoff.ms and
// add.partitions.to.txn.retry.backoff.max.ms, read from the configuration.

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/config"
)

func TestAskWhileConcurrentUsesConfiguredBackoff(t *testing.T) {
	cfg, err := config.Load("", []string{"log.dirs=" + t.TempDir(),
		"add.partitions.to.txn.retry.backoff.ms=5", "add.partitions.to.txn.retry.backoff.max.ms=3000"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AddPartitionsToTxnRetryBackoffMs != 5 || cfg.AddPartitionsToTxnRetryBackoffMaxMs != 3000 {
		t.Fatalf("loaded backoff %d, max %d; want 5, 3000", cfg.AddPartitionsToTxnRetryBackoffMs, cfg.AddPartitionsToTxnRetryBackoffMaxMs)
	}
	backoff := time.Duration(cfg.AddPartitionsToTxnRetryBackoffMs) * time.Millisecond
	backoffMax := time.Duration(cfg.AddPartitionsToTxnRetryBackoffMaxMs) * time.Millisecond
	concurrent := []int16{kerr.ConcurrentTransactions.Code, kerr.ConcurrentTransactions.Code}

	// The coordinator answers CONCURRENT_TRANSACTIONS seven times, then
	// adds both partitions: with a 3 s window and 5 ms between calls the
	// loop asks until it gets the answer (the default 100 ms window could
	// end after five calls of 20 ms each), and sleeps at least the
	// configured backoff between calls.
	calls := 0
	var times []time.Time
	codes, err := askWhileConcurrent(context.Background(), backoff, backoffMax, func() ([]int16, error) {
		calls++
		times = append(times, time.Now())
		if calls <= 7 {
			return concurrent, nil
		}
		return []int16{0, 0}, nil
	})
	if err != nil || calls != 8 || codes[0] != 0 || codes[1] != 0 {
		t.Fatalf("after %d calls: %v %v, want 8 calls ending in [0 0]", calls, codes, err)
	}
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < backoff {
			t.Fatalf("call %d came %v after the one before, want at least the backoff %v", i+1, gap, backoff)
		}
	}

	// max.ms 0: asked once, the CONCURRENT_TRANSACTIONS answer is returned.
	calls = 0
	codes, _ = askWhileConcurrent(context.Background(), backoff, 0, func() ([]int16, error) {
		calls++
		return concurrent, nil
	})
	if calls != 1 || codes[0] != kerr.ConcurrentTransactions.Code {
		t.Fatalf("max 0: %d calls ending in %v, want 1 call answered CONCURRENT_TRANSACTIONS", calls, codes)
	}

	// Below Kafka's minimum: refused.
	if _, err := config.Load("", []string{"log.dirs=" + t.TempDir(), "add.partitions.to.txn.retry.backoff.ms=0"}); err == nil {
		t.Fatal("add.partitions.to.txn.retry.backoff.ms=0 accepted; Kafka's minimum is 1")
	}
}
