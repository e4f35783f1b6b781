package txn

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func meta(state State, pid int64, epoch int16) metadata {
	return metadata{producerID: pid, lastProducerID: -1, epoch: epoch, lastEpoch: noEpoch, timeoutMs: 1000, state: state, startMs: -1}
}

func TestDecideInit(t *testing.T) {
	exhausted := int16(math.MaxInt16 - 1)
	tests := []struct {
		name      string
		m         metadata
		req       initRequest
		newID     int64
		outcome   initOutcome
		code      int16
		wantPID   int64
		wantEpoch int16
		wantState State
	}{
		{"fresh id gets epoch 0", meta(StateEmpty, 10, noEpoch), initRequest{1000, -1, -1}, -1, initWrite, 0, 10, 0, StateEmpty},
		{"re-init bumps the epoch", meta(StateCompleteCommit, 10, 3), initRequest{1000, -1, -1}, -1, initWrite, 0, 10, 4, StateEmpty},
		{"KIP-360 current epoch bumps", meta(StateCompleteAbort, 10, 3), initRequest{1000, 10, 3}, -1, initWrite, 0, 10, 4, StateEmpty},
		{"KIP-360 stale epoch is fenced", meta(StateEmpty, 10, 5), initRequest{1000, 10, 3}, -1, initFail, kerr.ProducerFenced.Code, 0, 0, 0},
		{"KIP-360 other producer id is fenced", meta(StateEmpty, 10, 5), initRequest{1000, 11, 5}, -1, initFail, kerr.ProducerFenced.Code, 0, 0, 0},
		{"ongoing is aborted with a bumped epoch", withPartitions(meta(StateOngoing, 10, 3)), initRequest{1000, -1, -1}, -1, initFenceAbort, 0, 10, 4, StatePrepareAbort},
		{"prepare commit is concurrent", meta(StatePrepareCommit, 10, 3), initRequest{1000, -1, -1}, -1, initFail, kerr.ConcurrentTransactions.Code, 0, 0, 0},
		{"exhausted epoch needs a new id", meta(StateEmpty, 10, exhausted), initRequest{1000, -1, -1}, -1, initNeedNewID, 0, 0, 0, 0},
		{"exhausted epoch rotates to the new id", meta(StateEmpty, 10, exhausted), initRequest{1000, -1, -1}, 20, initWrite, 0, 20, 0, StateEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next, outcome, code := decideInit(tt.m, tt.req, tt.newID, 100)
			if outcome != tt.outcome || code != tt.code {
				t.Fatalf("outcome %d code %d, want %d %d", outcome, code, tt.outcome, tt.code)
			}
			if outcome != initWrite && outcome != initFenceAbort {
				return
			}
			if next.producerID != tt.wantPID || next.epoch != tt.wantEpoch || next.state != tt.wantState {
				t.Fatalf("next pid %d epoch %d state %v, want %d %d %v", next.producerID, next.epoch, next.state, tt.wantPID, tt.wantEpoch, tt.wantState)
			}
		})
	}
}

func withPartitions(m metadata) metadata {
	m.partitions = []TopicPartition{{"t", 0}}
	m.startMs = 50
	return m
}

func TestInitRetryAfterLostAnswer(t *testing.T) {
	m := meta(StateEmpty, 10, 3)
	next, _, _ := decideInit(m, initRequest{1000, 10, 3}, -1, 1)
	// The producer never saw epoch 4 and asks again with epoch 3.
	again, outcome, code := decideInit(next, initRequest{1000, 10, 3}, -1, 2)
	if outcome != initWrite || code != 0 || again.epoch != 4 {
		t.Fatalf("retry: outcome %d code %d epoch %d, want epoch 4 again", outcome, code, again.epoch)
	}
	// A rotation's retry names the previous id at its exhausted epoch.
	exhausted := int16(math.MaxInt16 - 1)
	rotated, _, _ := decideInit(meta(StateEmpty, 10, exhausted), initRequest{1000, 10, exhausted}, 20, 3)
	again, outcome, code = decideInit(rotated, initRequest{1000, 10, exhausted}, -1, 4)
	if outcome != initWrite || code != 0 || again.producerID != 20 || again.epoch != 0 {
		t.Fatalf("rotation retry: outcome %d code %d pid %d epoch %d", outcome, code, again.producerID, again.epoch)
	}
}

func TestDecideAddAndEnd(t *testing.T) {
	tp := []TopicPartition{{"t", 1}, {"t", 0}}
	// Add to an empty transaction starts it.
	next, write, code := decideAdd(meta(StateEmpty, 10, 0), 10, 0, tp, 0, 77)
	if !write || code != 0 || next.state != StateOngoing || next.startMs != 77 || len(next.partitions) != 2 || next.partitions[0].Partition != 0 {
		t.Fatalf("add: %+v write %v code %d", next, write, code)
	}
	// Adding what is there writes nothing.
	if _, write, code := decideAdd(next, 10, 0, tp[:1], 0, 78); write || code != 0 {
		t.Fatalf("re-add: write %v code %d", write, code)
	}
	for _, c := range []struct {
		name string
		m    metadata
		pid  int64
		ep   int16
		code int16
	}{
		{"wrong producer id", next, 11, 0, kerr.InvalidProducerIDMapping.Code},
		{"old epoch", next, 10, 1, kerr.ProducerFenced.Code},
		{"markers in flight", meta(StatePrepareCommit, 10, 0), 10, 0, kerr.ConcurrentTransactions.Code},
	} {
		if _, _, code := decideAdd(c.m, c.pid, c.ep, tp, 0, 1); code != c.code {
			t.Errorf("add, %s: code %d, want %d", c.name, code, c.code)
		}
	}

	end := []struct {
		name       string
		m          metadata
		epoch      int16
		commit     bool
		fromClient bool
		write      bool
		code       int16
		state      State
	}{
		{"commit", next, 0, true, true, true, 0, StatePrepareCommit},
		{"abort", next, 0, false, true, true, 0, StatePrepareAbort},
		{"stale epoch", next, 1, true, true, false, kerr.ProducerFenced.Code, 0},
		{"retried commit after completion", meta(StateCompleteCommit, 10, 0), 0, true, true, false, 0, 0},
		{"abort after commit", meta(StateCompleteCommit, 10, 0), 0, false, true, false, kerr.InvalidTxnState.Code, 0},
		{"retried commit while preparing", meta(StatePrepareCommit, 10, 0), 0, true, true, false, kerr.ConcurrentTransactions.Code, 0},
		{"abort while committing", meta(StatePrepareCommit, 10, 0), 0, false, true, false, kerr.InvalidTxnState.Code, 0},
		{"nothing running", meta(StateEmpty, 10, 0), 0, true, true, false, kerr.InvalidTxnState.Code, 0},
		{"coordinator abort at a bumped epoch", next, 1, false, false, true, 0, StatePrepareAbort},
	}
	for _, c := range end {
		t.Run(c.name, func(t *testing.T) {
			got, write, code := decideEnd(c.m, 10, c.epoch, c.commit, c.fromClient, 5)
			if write != c.write || code != c.code || (write && (got.state != c.state || got.epoch != c.epoch)) {
				t.Fatalf("end: state %v epoch %d write %v code %d", got.state, got.epoch, write, code)
			}
		})
	}
	done := completed(metadata{state: StatePrepareCommit, partitions: tp, startMs: 3}, 9)
	if done.state != StateCompleteCommit || done.partitions != nil || done.updateMs != 9 {
		t.Fatalf("completed: %+v", done)
	}
}

func TestVerifyPartitions(t *testing.T) {
	m := withPartitions(meta(StateOngoing, 10, 2))
	code, each := verifyPartitions(m, 10, 2, []TopicPartition{{"t", 0}, {"t", 1}})
	if code != 0 || each[0] != 0 || each[1] != kerr.InvalidTxnState.Code {
		t.Fatalf("verify: code %d each %v", code, each)
	}
	if code, _ := verifyPartitions(m, 10, 1, nil); code != kerr.ProducerFenced.Code {
		t.Fatalf("verify with an old epoch: code %d", code)
	}
}

func TestStateNames(t *testing.T) {
	for s := StateEmpty; s <= StatePrepareEpochFence; s++ {
		if back, ok := ParseState(s.String()); !ok || back != s {
			t.Fatalf("state %d: name %q parses to %d, %v", s, s.String(), back, ok)
		}
	}
	if _, ok := ParseState("Nope"); ok {
		t.Fatal("an unknown name parsed")
	}
}
