package controller

import (
	"slices"
	"testing"
)

// TestELRDecisions pins KIP-966's rules (elr.go) for one partition of
// replicas 1, 2, 3 with min ISR 2: what a fence, an unclean restart, an
// offline election and an ISR change do to leader, ISR, ELR and last known
// ELR.
func TestELRDecisions(t *testing.T) {
	replicas := []int32{1, 2, 3}
	type state struct {
		leader              int32
		isr, elr, lastKnown []int32
	}
	tests := []struct {
		name     string
		from     state
		remove   int32 // broker fenced (-1: none, an offline election)
		shutdown int32 // broker restarted uncleanly (-1: none)
		live     []int32
		unclean  bool
		elr      bool
		want     state
		changed  bool
	}{
		{name: "shrink to min ISR keeps ELR empty", from: state{1, []int32{1, 2, 3}, nil, nil}, remove: 3, shutdown: -1,
			live: []int32{1, 2}, elr: true, want: state{1, []int32{1, 2}, nil, nil}, changed: true},
		{name: "shrink below min ISR adds the leaver to ELR", from: state{1, []int32{1, 2}, nil, nil}, remove: 2, shutdown: -1,
			live: []int32{1, 3}, elr: true, want: state{1, []int32{1}, []int32{2}, nil}, changed: true},
		{name: "last ISR member fenced: ISR empties, no live ELR member", from: state{1, []int32{1}, []int32{2}, nil}, remove: 1, shutdown: -1,
			live: []int32{3}, elr: true, want: state{-1, nil, []int32{1, 2}, []int32{1}}, changed: true},
		{name: "last ISR member fenced: live ELR member leads", from: state{1, []int32{1}, []int32{2}, nil}, remove: 1, shutdown: -1,
			live: []int32{2, 3}, elr: true, want: state{2, []int32{2}, []int32{1}, nil}, changed: true},
		{name: "unclean restart leaves the ELR, the empty disk is not elected", from: state{-1, nil, []int32{1, 2}, []int32{1}}, remove: -1, shutdown: 1,
			live: []int32{3}, elr: true, want: state{-1, nil, []int32{2}, []int32{1}}, changed: true},
		{name: "offline, ELR member down: nobody else leads", from: state{-1, nil, []int32{2}, []int32{1}}, remove: -1, shutdown: -1,
			live: []int32{1, 3}, elr: true, want: state{-1, nil, []int32{2}, []int32{1}}, changed: false},
		{name: "offline, ELR member returns and leads", from: state{-1, nil, []int32{2}, []int32{1}}, remove: -1, shutdown: -1,
			live: []int32{1, 2, 3}, elr: true, want: state{2, []int32{2}, nil, nil}, changed: true},
		{name: "offline with unclean election allowed: first live replica, ELR cleared", from: state{-1, nil, []int32{2}, []int32{1}}, remove: -1, shutdown: -1,
			live: []int32{1, 3}, unclean: true, elr: true, want: state{1, []int32{1}, nil, nil}, changed: true},
		{name: "ELR empty: the last known leader returns", from: state{-1, nil, nil, []int32{1}}, remove: -1, shutdown: -1,
			live: []int32{1, 3}, elr: true, want: state{1, []int32{1}, nil, nil}, changed: true},
		{name: "without ELR the last ISR member stays", from: state{1, []int32{1}, nil, nil}, remove: 1, shutdown: -1,
			live: []int32{2, 3}, elr: false, want: state{-1, []int32{1}, nil, nil}, changed: true},
		{name: "without ELR old sets are cleared", from: state{1, []int32{1, 2}, []int32{3}, nil}, remove: 2, shutdown: -1,
			live: []int32{1, 3}, elr: false, want: state{1, []int32{1}, nil, nil}, changed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Partition{Replicas: replicas, Leader: tt.from.leader, ISR: tt.from.isr, ELR: tt.from.elr, LastKnownELR: tt.from.lastKnown}
			gone := []int32{tt.remove, tt.shutdown}
			live := func(id int32) bool { return slices.Contains(tt.live, id) && !slices.Contains(gone, id) }
			pol := electionPolicy{live: live, unclean: tt.unclean, elr: tt.elr, minISR: 2, uncleanShutdown: tt.shutdown}
			var ch partitionChange
			var ok bool
			switch {
			case tt.remove >= 0:
				ch, ok = removeReplica([16]byte{}, p, tt.remove, pol)
			case tt.shutdown >= 0:
				isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == tt.shutdown })
				ch, ok = decidePartition([16]byte{}, p, isr, pol)
			default:
				ch, ok = electOfflineChange([16]byte{}, p, pol)
			}
			if ok != tt.changed {
				t.Fatalf("changed = %v, want %v (%+v)", ok, tt.changed, ch)
			}
			if !ok {
				return
			}
			got := state{ch.Leader, nonEmpty(ch.ISR), ch.ELR, ch.LastKnownELR}
			if got.leader != tt.want.leader || !slices.Equal(got.isr, tt.want.isr) ||
				!slices.Equal(got.elr, tt.want.elr) || !slices.Equal(got.lastKnown, tt.want.lastKnown) {
				t.Fatalf("got leader %d ISR %v ELR %v last known %v, want leader %d ISR %v ELR %v last known %v",
					got.leader, got.isr, got.elr, got.lastKnown, tt.want.leader, tt.want.isr, tt.want.elr, tt.want.lastKnown)
			}
		})
	}
}

// TestAlterPartitionELR: a leader's ISR shrink below min ISR puts the
// leaver in the ELR, and the expansion back to min ISR empties it.
func TestAlterPartitionELR(t *testing.T) {
	img := &Image{Features: map[string]int16{elrFeatureName: 1}}
	p := &Partition{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1, 2}}
	ch := changeOf([16]byte{}, p, 1, []int32{1})
	alterPartitionELR(img, p, &ch, 2)
	if !slices.Equal(ch.ELR, []int32{2}) {
		t.Fatalf("shrink: ELR %v, want [2]", ch.ELR)
	}
	p2 := &Partition{Replicas: []int32{1, 2, 3}, Leader: 1, ISR: []int32{1}, ELR: []int32{2}}
	ch = changeOf([16]byte{}, p2, 1, []int32{1, 3})
	alterPartitionELR(img, p2, &ch, 2)
	if len(ch.ELR) != 0 {
		t.Fatalf("expand to min ISR: ELR %v, want empty", ch.ELR)
	}
	if err := checkChangeState(img, p2.Replicas, partitionChange{Leader: -1, ELR: []int32{1, 2}}); err != nil {
		t.Fatalf("empty ISR with ELR tracked: %v", err)
	}
	if err := checkChangeState(&Image{}, p2.Replicas, partitionChange{Leader: -1}); err == nil {
		t.Fatal("empty ISR accepted without ELR tracking")
	}
}
