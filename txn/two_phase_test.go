package txn

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Two-phase commit transactions (KIP-939) as Kafka 4.4's coordinator has
// them: refused without transaction.two.phase.commit.enable, KeepPreparedTxn
// UNSUPPORTED_VERSION, and with the key a transaction no timeout aborts,
// also on the coordinator that loads it after a failover.
func TestCoordinatorTwoPhaseCommit(t *testing.T) {
	ctx := context.Background()
	log, markers, clock := newMemLog(), &fakeMarkers{}, &testClock{now: time.UnixMilli(1_000_000)}
	off := newTestCoordinator(t, log, markers, clock)
	twoPC := InitOptions{Enable2PC: true}
	if r := off.InitProducerIDWith(ctx, "2pc", 1000, -1, -1, twoPC); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || r.ProducerID != -1 {
		t.Fatalf("Enable2Pc with the key false: %+v", r)
	}
	off.Close()

	var next int64 = 5000
	var mu sync.Mutex
	newCoord := func(epoch int32) *Coordinator {
		c := New(Config{
			NewProducerID:  func(context.Context) (int64, error) { mu.Lock(); defer mu.Unlock(); next++; return next, nil },
			Now:            clock.Now,
			IDExpiration:   time.Hour,
			TwoPhaseCommit: true,
		}, log, markers)
		t.Cleanup(c.Close)
		c.SetLeadership(1, map[int32]int32{0: epoch})
		c.LoadPending(ctx)
		return c
	}
	c := newCoord(5)
	if r := c.InitProducerIDWith(ctx, "2pc", 1000, -1, -1, InitOptions{Enable2PC: true, KeepPreparedTxn: true}); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("KeepPreparedTxn: %+v", r)
	}
	// The requested timeout is not checked (above transaction.max.timeout.ms
	// here) and not kept.
	p := c.InitProducerIDWith(ctx, "2pc", 0, -1, -1, twoPC)
	if p.ErrorCode != 0 {
		t.Fatalf("Enable2Pc with the key true: %+v", p)
	}
	if code := c.AddPartitions(ctx, "2pc", p.ProducerID, p.Epoch, []TopicPartition{{"t", 0}}, 0); code != 0 {
		t.Fatalf("add: %d", code)
	}
	if d := c.Describe("2pc"); d.TimeoutMs != TwoPhaseTimeoutMs {
		t.Fatalf("timeout %d, want %d", d.TimeoutMs, TwoPhaseTimeoutMs)
	}
	clock.Add(30 * 24 * time.Hour) // past even a 2147483647 ms timeout
	c.AbortTimedOut(ctx)
	if d := c.Describe("2pc"); d.State != StateOngoing {
		t.Fatalf("two-phase commit transaction aborted by the timeout: %v", d.State)
	}

	// The coordinator that takes the partition over reads the timeout
	// from __transaction_state and leaves the transaction alone too.
	c.SetLeadership(1, nil)
	c2 := newCoord(6)
	c2.AbortTimedOut(ctx)
	d := c2.Describe("2pc")
	if d.State != StateOngoing || d.TimeoutMs != TwoPhaseTimeoutMs || d.ProducerID != p.ProducerID || d.Epoch != p.Epoch {
		t.Fatalf("after the failover: %+v", d)
	}
	if code := c2.EndTxn(ctx, "2pc", p.ProducerID, p.Epoch, true, false).ErrorCode; code != 0 {
		t.Fatalf("commit after the failover: %d", code)
	}
	waitState(t, c2, "2pc", StateCompleteCommit)

	// A producer of the same id without Enable2Pc is an ordinary one
	// again, whose transactions time out.
	q := c2.InitProducerID(ctx, "2pc", 1000, -1, -1)
	if q.ErrorCode != 0 {
		t.Fatalf("init without 2PC: %+v", q)
	}
	c2.AddPartitions(ctx, "2pc", q.ProducerID, q.Epoch, []TopicPartition{{"t", 0}}, 0)
	clock.Add(2 * time.Second)
	c2.AbortTimedOut(ctx)
	waitState(t, c2, "2pc", StateCompleteAbort)
}
