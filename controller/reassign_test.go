package controller

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPlanReassignment(t *testing.T) {
	all := func(int32) bool { return true }
	only := func(ids ...int32) liveFunc { return func(id int32) bool { return slices.Contains(ids, id) } }
	tests := []struct {
		name    string
		p       Partition
		target  []int32
		live    liveFunc
		want    Partition // Partition field unused
		changed bool
		err     error
	}{
		{
			name:   "move to a new broker starts the move",
			p:      Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3},
			target: []int32{2}, live: all, changed: true,
			want: Partition{Replicas: []int32{2, 1}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3},
		},
		{
			name:   "shrink to an in-sync replica completes at once and moves the leader",
			p:      Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 3},
			target: []int32{3}, live: all, changed: true,
			want: Partition{Replicas: []int32{3}, ISR: []int32{3}, Leader: 3, LeaderEpoch: 4},
		},
		{
			name:   "reorder applies at once without a leader change",
			p:      Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
			target: []int32{2, 1}, live: all, changed: true,
			want: Partition{Replicas: []int32{2, 1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		},
		{
			name:   "same target changes nothing",
			p:      Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2, LeaderEpoch: 3},
			target: []int32{1, 2}, live: all, changed: false,
			want: Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 2, LeaderEpoch: 3},
		},
		{
			name:   "cancel reverts to the original replicas",
			p:      Partition{Replicas: []int32{2, 3, 1}, AddingReplicas: []int32{2, 3}, RemovingReplicas: []int32{1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
			target: nil, live: all, changed: true,
			want: Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3},
		},
		{
			name:   "cancel with an adding replica leading elects an original one",
			p:      Partition{Replicas: []int32{2, 1}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 5},
			target: nil, live: all, changed: true,
			want: Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 6},
		},
		{
			name: "cancel of nothing",
			p:    Partition{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			live: all, err: kerr.NoReassignmentInProgress,
		},
		{
			name:   "a new target replaces a move in progress from the original replicas",
			p:      Partition{Replicas: []int32{2, 1}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3},
			target: []int32{3}, live: all, changed: true,
			want: Partition{Replicas: []int32{3, 1}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 3},
		},
		{
			name:   "no live target replica to lead: the move waits",
			p:      Partition{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
			target: []int32{2}, live: only(1), changed: true,
			want: Partition{Replicas: []int32{2, 1}, RemovingReplicas: []int32{1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, changed, err := planReassignment([16]byte{1}, &tc.p, tc.target, tc.live)
			if tc.err != nil || err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if changed != tc.changed {
				t.Fatalf("changed %v, want %v", changed, tc.changed)
			}
			got := Partition{Replicas: rec.Replicas, AddingReplicas: rec.AddingReplicas, RemovingReplicas: rec.RemovingReplicas,
				ISR: rec.ISR, Leader: rec.Leader, LeaderEpoch: rec.LeaderEpoch}
			w := tc.want
			if !slices.Equal(got.Replicas, w.Replicas) || !slices.Equal(got.AddingReplicas, w.AddingReplicas) ||
				!slices.Equal(got.RemovingReplicas, w.RemovingReplicas) || !slices.Equal(got.ISR, w.ISR) ||
				got.Leader != w.Leader || got.LeaderEpoch != w.LeaderEpoch {
				t.Fatalf("got %+v\nwant %+v", got, w)
			}
			if err := checkReassignmentState(rec); err != nil {
				t.Fatalf("decided state is invalid: %v", err)
			}
		})
	}
}

func TestCompletionOf(t *testing.T) {
	all := func(int32) bool { return true }
	p := &Partition{Replicas: []int32{2, 3, 1}, AddingReplicas: []int32{2, 3}, RemovingReplicas: []int32{1}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 7, PartitionEpoch: 9}
	if _, ok := completionOf([16]byte{1}, p, p.ISR, all); ok {
		t.Fatal("completed with target replica 3 out of sync")
	}
	rec, ok := completionOf([16]byte{1}, p, []int32{1, 2, 3}, all)
	if !ok {
		t.Fatal("did not complete with every target replica in sync")
	}
	if !slices.Equal(rec.Replicas, []int32{2, 3}) || !slices.Equal(rec.ISR, []int32{2, 3}) || rec.Leader != 2 ||
		rec.LeaderEpoch != 8 || rec.PartitionEpoch != 9 || rec.AddingReplicas != nil || rec.RemovingReplicas != nil {
		t.Fatalf("completion %+v", rec)
	}
}

func TestReassignmentsList(t *testing.T) {
	img := emptyImage()
	a := &Topic{Name: "a", ID: [16]byte{1}, Partitions: []*Partition{
		{Partition: 0, Replicas: []int32{1}},
		{Partition: 1, Replicas: []int32{2, 1}, AddingReplicas: []int32{2}, RemovingReplicas: []int32{1}},
	}}
	img.Topics["a"], img.TopicsByID[a.ID] = a, a
	if got := img.Reassignments(nil); len(got) != 1 || got[0].Partition != 1 {
		t.Fatalf("all: %+v", got)
	}
	if got := img.Reassignments(map[string][]int32{"a": {0, 1, 1, 9}, "nope": {0}}); len(got) != 1 || got[0].Topic != "a" {
		t.Fatalf("named: %+v", got)
	}
	if got := img.Reassignments(map[string][]int32{"a": {0}}); len(got) != 0 {
		t.Fatalf("not reassigning: %+v", got)
	}
}
