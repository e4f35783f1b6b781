package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sluicedev/sluice/controller"
)

// TestISRProposalOutcomes is issue 13's first anomaly at the level of one
// partition: leader 1, ISR [1 2], follower 3 catches up and the leader
// proposes [1 2 3]. The controller commits it but the answer is lost. If
// the leader then fell back to [1 2], it would acknowledge acks=-1 writes
// that 3 does not have, and 3 — in the committed ISR — could be elected
// and lose them. The leader must keep counting 3 in the high watermark
// until it knows the outcome, and fall back only on an answer that proves
// the change was not applied.
func TestISRProposalOutcomes(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lost := transportError(context.DeadlineExceeded)
	tests := []struct {
		name string
		err  error
		// metadata, when set, is the partition as the image shows it
		// after the answer.
		metadata *controller.Partition
		want     alterOutcome
		// wantHW is the high watermark once follower 2 has fetched
		// offset 15 and follower 3 is still at 10.
		wantHW  int64
		wantISR []int32
	}{
		{name: "lost answer keeps 3 in the high watermark", err: lost, want: alterRetry, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "raft leadership lost keeps 3", err: fmt.Errorf("%w: %w: leadership lost", kerr.NotController, controller.ErrOutcomeUnknown), want: alterRetry, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "request timed out keeps 3", err: kerr.RequestTimedOut, want: alterRetry, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "not controller keeps 3", err: kerr.NotController, want: alterRetry, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "stale partition epoch keeps 3 until metadata", err: kerr.InvalidUpdateVersion, want: alterWaitMetadata, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "fenced leader epoch keeps 3 until metadata", err: kerr.FencedLeaderEpoch, want: alterWaitMetadata, wantHW: 10, wantISR: []int32{1, 2}},
		{name: "operation not attempted falls back", err: kerr.OperationNotAttempted, want: alterSettled, wantHW: 15, wantISR: []int32{1, 2}},
		{name: "ineligible replica falls back", err: kerr.IneligibleReplica, want: alterSettled, wantHW: 15, wantISR: []int32{1, 2}},
		{
			name: "committed answer", want: alterSettled, wantHW: 10, wantISR: []int32{1, 2, 3},
		},
		{
			name: "lost answer, then metadata shows it committed", err: lost,
			metadata: &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2},
			want:     alterRetry, wantHW: 10, wantISR: []int32{1, 2, 3},
		},
		{
			name: "lost answer, then metadata shows another change won", err: lost,
			metadata: &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2},
			want:     alterRetry, wantHW: 15, wantISR: []int32{1, 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := leaderPartition(t, []int32{1, 2}, t0)
			p.appendN(t, 10)
			p.recordFollowerFetch(1, 2, 20, 10, t0)
			_, expand := p.recordFollowerFetch(1, 3, 30, 10, t0)
			if !expand {
				t.Fatal("caught-up follower 3 does not qualify to join the ISR")
			}
			p.mu.Lock()
			next := p.proposeISRLocked(1, testImage(), t0, time.Second)
			if !slices.Equal(next, []int32{1, 2, 3}) {
				p.mu.Unlock()
				t.Fatalf("proposed %v, want [1 2 3]", next)
			}
			seq := p.beginAlterLocked(next)
			p.mu.Unlock()

			var answer controller.Partition
			if tt.err == nil {
				answer = controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}
			}
			if got := p.alterDone(1, seq, 1, answer, tt.err); got != tt.want {
				t.Fatalf("outcome %d, want %d", got, tt.want)
			}
			if tt.metadata != nil {
				p.update(1, tt.metadata, 2, t0)
				// An answer to the settled proposal, arriving
				// late, changes nothing.
				if got := p.alterDone(1, seq, 1, controller.Partition{}, kerr.OperationNotAttempted); got != alterSettled {
					t.Fatalf("late answer: outcome %d, want settled", got)
				}
			}

			// 3 is cut off again; 1 and 2 take five more records.
			p.appendN(t, 5)
			p.recordFollowerFetch(1, 2, 20, 15, t0.Add(100*time.Millisecond))
			if hw := p.highWatermark(); hw != tt.wantHW {
				t.Fatalf("high watermark %d, want %d", hw, tt.wantHW)
			}
			code, done := p.ackResult(1, 1, 15)
			if acked := done && code == 0; acked != (tt.wantHW == 15) {
				t.Fatalf("acks=-1 of offset 14: done %v code %v, want acknowledged %v", done, kerr.ErrorForCode(code), tt.wantHW == 15)
			}
			p.mu.Lock()
			isr := slices.Clone(p.isr)
			inFlight := p.isrInFlight
			p.mu.Unlock()
			if !slices.Equal(isr, tt.wantISR) {
				t.Fatalf("committed ISR %v, want %v", isr, tt.wantISR)
			}
			if wantPending := tt.want != alterSettled && tt.metadata == nil; inFlight != wantPending {
				t.Fatalf("proposal in flight %v, want %v", inFlight, wantPending)
			}
		})
	}
}

// TestFollowerTruncationIsLogged: a follower that truncates records says
// so, with where, how much and on whose word.
func TestFollowerTruncationIsLogged(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := leaderPartition(t, []int32{1, 2, 3}, t0)
	p.appendN(t, 4) // batches end at 4 and 10: truncation keeps whole batches
	p.appendN(t, 6)
	// Node 1 becomes a follower of 2 at leader epoch 2, whose log ends
	// epoch 1 at offset 4.
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2}, 2, t0)
	var out bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&out, nil))
	if err := p.truncateByEpoch(logger, 2, 2, 1, 4); err != nil {
		t.Fatal(err)
	}
	if end := p.log.LogEndOffset(); end != 4 {
		t.Fatalf("log end offset %d after truncation, want 4", end)
	}
	var line struct {
		Msg            string `json:"msg"`
		FromOffset     int64  `json:"from_offset"`
		OldEndOffset   int64  `json:"old_end_offset"`
		OffsetsRemoved int64  `json:"offsets_removed"`
		BytesRemoved   int64  `json:"bytes_removed"`
		Leader         int32  `json:"leader"`
		LeaderEpoch    int32  `json:"leader_epoch"`
		DivergingEpoch int32  `json:"diverging_epoch"`
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("no truncation logged (%v): %q", err, out.String())
	}
	if line.FromOffset != 4 || line.OldEndOffset != 10 || line.OffsetsRemoved != 6 || line.BytesRemoved <= 0 ||
		line.Leader != 2 || line.LeaderEpoch != 2 || line.DivergingEpoch != 1 {
		t.Fatalf("truncation logged as %+v", line)
	}
	// Nothing removed, nothing logged.
	out.Reset()
	if err := p.truncateByEpoch(logger, 2, 2, 1, 4); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("a truncation that removed nothing was logged: %s", out.String())
	}
}
