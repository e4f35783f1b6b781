package txn

// Transaction version 2 (KIP-890 part 2): EndTxn v5's epoch bump, its
// retries, the rotation to a new producer id when the epochs run out, and
// the record fields that carry them across a coordinator change.

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestDecideEndV2(t *testing.T) {
	last := int16(math.MaxInt16 - 1)
	rotated := meta(StateCompleteCommit, 20, 0)
	rotated.lastProducerID = 10
	tests := []struct {
		name      string
		m         metadata
		pid       int64
		epoch     int16
		commit    bool
		newID     int64
		outcome   endOutcome
		code      int16
		wantState State
		wantPID   int64 // the answer's
		wantEpoch int16
	}{
		{"commit bumps the epoch", withPartitions(meta(StateOngoing, 10, 3)), 10, 3, true, -1, endWrite, 0, StatePrepareCommit, 10, 4},
		{"abort bumps the epoch", withPartitions(meta(StateOngoing, 10, 3)), 10, 3, false, -1, endWrite, 0, StatePrepareAbort, 10, 4},
		{"stale epoch is fenced", withPartitions(meta(StateOngoing, 10, 3)), 10, 2, true, -1, endFail, kerr.ProducerFenced.Code, 0, 0, 0},
		{"other producer id", withPartitions(meta(StateOngoing, 10, 3)), 11, 3, true, -1, endFail, kerr.InvalidProducerIDMapping.Code, 0, 0, 0},
		{"retried commit after completion", meta(StateCompleteCommit, 10, 4), 10, 3, true, -1, endAnswer, 0, 0, 10, 4},
		{"retried abort after completion", meta(StateCompleteAbort, 10, 4), 10, 3, false, -1, endAnswer, 0, 0, 10, 4},
		{"retried commit while markers are written", meta(StatePrepareCommit, 10, 4), 10, 3, true, -1, endFail, kerr.ConcurrentTransactions.Code, 0, 0, 0},
		{"next end while the markers are written", withV2(meta(StatePrepareCommit, 10, 4)), 10, 4, false, -1, endFail, kerr.ConcurrentTransactions.Code, 0, 0, 0},
		{"abort retried as a commit", meta(StateCompleteAbort, 10, 4), 10, 3, true, -1, endFail, kerr.InvalidTxnState.Code, 0, 0, 0},
		{"commit with nothing added", meta(StateCompleteCommit, 10, 4), 10, 4, true, -1, endFail, kerr.InvalidTxnState.Code, 0, 0, 0},
		{"abort with nothing added bumps", meta(StateCompleteCommit, 10, 4), 10, 4, false, -1, endWrite, 0, StatePrepareAbort, 10, 5},
		{"abort of a fresh producer bumps", meta(StateEmpty, 10, 0), 10, 0, false, -1, endWrite, 0, StatePrepareAbort, 10, 1},
		{"commit of a fresh producer", meta(StateEmpty, 10, 0), 10, 0, true, -1, endFail, kerr.InvalidTxnState.Code, 0, 0, 0},
		{"old epoch on empty is fenced", meta(StateEmpty, 10, 5), 10, 4, false, -1, endFail, kerr.ProducerFenced.Code, 0, 0, 0},
		{"last epoch needs a new id", withPartitions(meta(StateOngoing, 10, last)), 10, last, true, -1, endNeedNewID, 0, 0, 0, 0},
		{"last epoch moves to the new id", withPartitions(meta(StateOngoing, 10, last)), 10, last, true, 20, endWrite, 0, StatePrepareCommit, 20, 0},
		{"retry after the move to a new id", rotated, 10, last, true, -1, endAnswer, 0, 0, 20, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, outcome, code := decideEndV2(tt.m, tt.pid, tt.epoch, tt.commit, tt.newID, 100)
			if outcome != tt.outcome || code != tt.code {
				t.Fatalf("outcome %d code %d, want %d %d", outcome, code, tt.outcome, tt.code)
			}
			switch outcome {
			case endWrite:
				if next.state != tt.wantState || next.txnVersion != txnVersion2 {
					t.Fatalf("next state %v version %d, want %v 2", next.state, next.txnVersion, tt.wantState)
				}
				if next.epoch != tt.m.epoch+1 || next.producerID != tt.m.producerID {
					t.Fatalf("the markers must carry the bumped epoch of the same id: pid %d epoch %d", next.producerID, next.epoch)
				}
			case endAnswer:
				next = tt.m
			default:
				return
			}
			if pid, epoch := endAnswerOf(next); pid != tt.wantPID || epoch != tt.wantEpoch {
				t.Fatalf("answer %d/%d, want %d/%d", pid, epoch, tt.wantPID, tt.wantEpoch)
			}
			if outcome == endWrite {
				done := completed(next, 200)
				if done.producerID != tt.wantPID || done.epoch != tt.wantEpoch || done.hasNext {
					t.Fatalf("completed at %d/%d (next %v), the answer said %d/%d", done.producerID, done.epoch, done.hasNext, tt.wantPID, tt.wantEpoch)
				}
			}
		})
	}
}

func TestValueV1CarriesTransactionVersionAndNextProducerID(t *testing.T) {
	m := withPartitions(meta(StatePrepareCommit, 10, math.MaxInt16))
	m.txnVersion, m.hasNext, m.nextProducerID = 2, true, 77
	back, err := decodeValue(encodeValue(&m, valueVersionV1))
	if err != nil {
		t.Fatal(err)
	}
	if back.txnVersion != 2 || !back.hasNext || back.nextProducerID != 77 || back.epoch != math.MaxInt16 {
		t.Fatalf("decoded %+v", back)
	}
	plain := meta(StateEmpty, 10, 0)
	if back, _ := decodeValue(encodeValue(&plain, valueVersionV1)); back.txnVersion != 0 || back.hasNext {
		t.Fatalf("a transaction version 0 record decoded as %+v", back)
	}
}

func TestCoordinatorEndTxnV2(t *testing.T) {
	ctx := context.Background()
	log, markers, clock := newMemLog(), &fakeMarkers{}, &testClock{now: time.UnixMilli(1_000_000)}
	c := newTestCoordinator(t, log, markers, clock)

	p := c.InitProducerID(ctx, "v2", 5000, -1, -1)
	if p.ErrorCode != 0 {
		t.Fatalf("init: %+v", p)
	}
	parts := []TopicPartition{{"out", 0}}
	if code := c.AddPartitions(ctx, "v2", p.ProducerID, p.Epoch, parts, 2); code != 0 {
		t.Fatalf("implicit add: %d", code)
	}
	r := c.EndTxn(ctx, "v2", p.ProducerID, p.Epoch, true, true)
	if r.ErrorCode != 0 || r.ProducerID != p.ProducerID || r.Epoch != p.Epoch+1 {
		t.Fatalf("commit v5: %+v", r)
	}
	waitState(t, c, "v2", StateCompleteCommit)
	markers.mu.Lock()
	m := markers.written[len(markers.written)-1]
	markers.mu.Unlock()
	if m.ProducerEpoch != p.Epoch+1 || m.TransactionVersion != 2 || !m.Commit {
		t.Fatalf("markers %+v: want the bumped epoch and transaction version 2", m)
	}
	// The retry of the commit (the answer was lost) is answered as done.
	if again := c.EndTxn(ctx, "v2", p.ProducerID, p.Epoch, true, true); again != r {
		t.Fatalf("retried commit: %+v, want %+v", again, r)
	}
	// The old epoch can no longer add partitions.
	if code := c.AddPartitions(ctx, "v2", p.ProducerID, p.Epoch, parts, 2); code != kerr.ProducerFenced.Code {
		t.Fatalf("add at the old epoch: %d", code)
	}
	// The next transaction runs at the new epoch; a coordinator that
	// takes over reads the bump and the version from the log.
	if code := c.AddPartitions(ctx, "v2", r.ProducerID, r.Epoch, parts, 2); code != 0 {
		t.Fatalf("add at the new epoch: %d", code)
	}
	c.SetLeadership(1, nil)
	next := New(Config{NewProducerID: func(context.Context) (int64, error) { return 9999, nil }, Now: clock.Now}, log, markers)
	t.Cleanup(next.Close)
	next.SetLeadership(1, map[int32]int32{0: 6})
	next.LoadPending(ctx)
	r2 := next.EndTxn(ctx, "v2", r.ProducerID, r.Epoch, false, true)
	if r2.ErrorCode != 0 || r2.Epoch != r.Epoch+1 {
		t.Fatalf("abort v5 on the new coordinator: %+v", r2)
	}
	d := waitState(t, next, "v2", StateCompleteAbort)
	if d.Epoch != r2.Epoch {
		t.Fatalf("described epoch %d, answered %d", d.Epoch, r2.Epoch)
	}
	// An abort with nothing added still bumps the epoch.
	r3 := next.EndTxn(ctx, "v2", r2.ProducerID, r2.Epoch, false, true)
	if r3.ErrorCode != 0 || r3.Epoch != r2.Epoch+1 {
		t.Fatalf("empty abort v5: %+v", r3)
	}
	waitState(t, next, "v2", StateCompleteAbort)
}

func withV2(m metadata) metadata {
	m.txnVersion = txnVersion2
	return m
}
