package controller

import "testing"

// TestCountElection: a leader change to a live replica of the ISR is a
// clean election, one from outside the ISR and the eligible leader
// replicas an unclean one; a partition going offline, an ISR change
// under the same leader and an election from the ELR (KIP-966) are not
// unclean.
func TestCountElection(t *testing.T) {
	old := &Partition{Leader: 1, ISR: []int32{1, 2}, Replicas: []int32{1, 2, 3}}
	for _, tc := range []struct {
		name             string
		old, next        *Partition
		elected, unclean int
	}{
		{"clean", old, &Partition{Leader: 2, ISR: []int32{2}}, 1, 0},
		{"unclean", old, &Partition{Leader: 3, ISR: []int32{3}}, 1, 1},
		{"offline", old, &Partition{Leader: -1, ISR: []int32{1}}, 0, 0},
		{"same leader", old, &Partition{Leader: 1, ISR: []int32{1}}, 0, 0},
		{"from ELR", &Partition{Leader: -1, ISR: nil, ELR: []int32{3}}, &Partition{Leader: 3, ISR: []int32{3}}, 1, 0},
		{"back from offline", &Partition{Leader: -1, ISR: []int32{2}}, &Partition{Leader: 2, ISR: []int32{2}}, 1, 0},
	} {
		b := &imageBuilder{}
		b.countElection(tc.old, tc.next)
		if b.elections != tc.elected || b.unclean != tc.unclean {
			t.Errorf("%s: %d elections, %d unclean; want %d, %d", tc.name, b.elections, b.unclean, tc.elected, tc.unclean)
		}
	}
}
