package controller

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func brokersOf(ids []int32, racks ...string) []placementBroker {
	out := make([]placementBroker, len(ids))
	for i, id := range ids {
		out[i].ID = id
		if i < len(racks) {
			out[i].Rack = racks[i]
		}
	}
	return out
}

func TestPlacementMatchesKafka(t *testing.T) {
	tests := []struct {
		name string
		p    placement
		want [][]int32
	}{
		{
			// Kafka's AdminUtils doc example: 5 brokers, 10 partitions,
			// replication factor 3, start index 0, shift 0.
			name: "rack unaware",
			p:    placement{brokers: brokersOf([]int32{0, 1, 2, 3, 4}), partitions: 10, replicationFactor: 3},
			want: [][]int32{
				{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
				{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
			},
		},
		{
			// Kafka's rack-aware doc example: racks alternate to 0,3,1,5,4,2.
			name: "rack aware",
			p: placement{
				brokers:    brokersOf([]int32{0, 1, 2, 3, 4, 5}, "rack1", "rack3", "rack3", "rack2", "rack2", "rack1"),
				partitions: 6, replicationFactor: 3,
			},
			want: [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}},
		},
		{
			name: "single broker",
			p:    placement{brokers: brokersOf([]int32{7}), partitions: 3, replicationFactor: 1},
			want: [][]int32{{7}, {7}, {7}},
		},
		{
			name: "continue from partition 3",
			p:    placement{brokers: brokersOf([]int32{0, 1, 2}), partitions: 2, replicationFactor: 2, firstPartition: 3},
			// partition 3 wraps, so the shift grows to 1.
			want: [][]int32{{0, 2}, {1, 0}},
		},
		{
			name: "some racks missing falls back to rack unaware",
			p:    placement{brokers: brokersOf([]int32{1, 2}, "r1"), partitions: 2, replicationFactor: 2},
			want: [][]int32{{1, 2}, {2, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.p.intn = func(int) int { return 0 }
			if tt.p.fixedStart == 0 {
				tt.p.fixedStart = -1 // draw from intn, which says 0
			}
			got := tt.p.place()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPlacementProperties checks random placements: distinct replicas per
// partition, leaders spread evenly, and racks spread when rack-aware.
func TestPlacementProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 1 + rng.IntN(7)
		ids := make([]int32, n)
		racks := make([]string, n)
		for i := range ids {
			ids[i] = int32(i * 10)
			racks[i] = []string{"a", "b", "c"}[i%3]
		}
		rf := 1 + rng.IntN(n)
		partitions := 1 + rng.IntN(30)
		for _, rackAware := range []bool{false, true} {
			brokers := brokersOf(ids)
			if rackAware {
				brokers = brokersOf(ids, racks...)
			}
			got := placement{brokers: brokers, partitions: partitions, replicationFactor: rf, fixedStart: -1, intn: rng.IntN}.place()
			leaders := map[int32]int{}
			for p, r := range got {
				if len(r) != rf {
					t.Fatalf("partition %d has %d replicas, want %d", p, len(r), rf)
				}
				sorted := slices.Clone(r)
				slices.Sort(sorted)
				if len(slices.Compact(sorted)) != rf {
					t.Fatalf("partition %d replicas %v repeat a broker", p, r)
				}
				leaders[r[0]]++
				if rackAware {
					used := map[string]bool{}
					for _, b := range r {
						used[racks[b/10]] = true
					}
					if want := min(rf, min(n, 3)); len(used) != want {
						t.Fatalf("partition %d replicas %v span %d racks, want %d", p, r, len(used), want)
					}
				}
			}
			lo, hi := partitions, 0
			for _, id := range ids {
				lo, hi = min(lo, leaders[id]), max(hi, leaders[id])
			}
			if hi-lo > 1 {
				t.Fatalf("leaders unbalanced over %d brokers, %d partitions: %v", n, partitions, leaders)
			}
		}
	}
}

func TestContinuationStart(t *testing.T) {
	brokers := brokersOf([]int32{1, 3, 5})
	for _, tt := range []struct {
		partition0 []int32
		want       int
	}{
		{[]int32{3, 5}, 1},
		{[]int32{4}, 2}, // broker 4 gone: next higher id
		{[]int32{9}, 0},
		{nil, 0},
	} {
		if got := continuationStart(brokers, tt.partition0); got != tt.want {
			t.Errorf("continuationStart(%v) = %d, want %d", tt.partition0, got, tt.want)
		}
	}
}
