package controller

import (
	"slices"
	"sort"
)

// Replica placement follows Kafka's classic AdminUtils assignment (the one
// ZooKeeper-mode Kafka used and kafka-topics.sh documents), not KRaft's
// striped placer, because its result is predictable and well understood:
//
//   - Rack-unaware: brokers sorted by id; partition p's first replica is
//     broker (start + p) mod n; its followers follow at a distance ("shift")
//     that grows by one each time p wraps around the broker list, so the
//     followers of one broker's leaders spread over all other brokers.
//   - Rack-aware (every candidate broker has a rack): the same walk over a
//     broker list that alternates racks, skipping a broker whose rack already
//     holds a replica of the partition while some rack holds none, and a
//     broker already holding one while some broker holds none.
//
// If only some brokers have a rack, Kafka refuses to place; sluice instead
// places rack-unaware, since a half-labelled cluster should not block topic
// creation.
//
// start and shift are random for a new topic so that leaders of many small
// topics do not all land on the lowest broker id; CreatePartitions passes a
// fixed start derived from the topic's partition 0 so new partitions continue
// the existing pattern.

// placementBroker is a broker that may receive replicas.
type placementBroker struct {
	ID   int32
	Rack string
}

// placementBrokers returns the unfenced brokers of img, sorted by id.
func placementBrokers(img *Image) []placementBroker {
	var out []placementBroker
	for _, id := range img.UnfencedBrokers() {
		out = append(out, placementBroker{ID: id, Rack: img.Brokers[id].Rack})
	}
	return out
}

// placement is one placement request.
type placement struct {
	brokers           []placementBroker // sorted by id; len >= replicationFactor
	partitions        int               // how many partitions to place
	replicationFactor int
	// fixedStart, when >= 0, is used as both start index and initial
	// follower shift instead of random draws.
	fixedStart int
	// firstPartition numbers the first placed partition, so placement
	// continues an existing topic's pattern.
	firstPartition int
	// intn returns a uniform random int in [0, n); injected for tests.
	intn func(n int) int
}

// place returns one replica list per partition. The caller has checked that
// the replication factor is between 1 and the number of brokers.
func (p placement) place() [][]int32 {
	if rackAware(p.brokers) {
		return p.placeRackAware()
	}
	ids := make([]int32, len(p.brokers))
	for i, b := range p.brokers {
		ids[i] = b.ID
	}
	return p.walk(ids, func(_ int, first int32, next func(k int) int32) []int32 {
		replicas := []int32{first}
		for j := 0; j < p.replicationFactor-1; j++ {
			replicas = append(replicas, next(j))
		}
		return replicas
	}, 1)
}

// walk runs the start/shift walk shared by both strategies over ordered,
// calling pick for each partition with its first replica and a function
// returning the k-th candidate follower. shiftScale multiplies the shift
// (the number of racks when rack-aware, so followers move to other racks).
func (p placement) walk(ordered []int32, pick func(partition int, first int32, next func(k int) int32) []int32, shiftScale int) [][]int32 {
	n := len(ordered)
	start, shift := p.fixedStart, p.fixedStart
	if p.fixedStart < 0 {
		start, shift = p.intn(n), p.intn(n)
	}
	out := make([][]int32, 0, p.partitions)
	for i := 0; i < p.partitions; i++ {
		partition := p.firstPartition + i
		if partition > 0 && partition%n == 0 {
			shift++
		}
		firstIndex := (partition + start) % n
		next := func(k int) int32 {
			return ordered[followerIndex(firstIndex, shift*shiftScale, k, n)]
		}
		out = append(out, pick(partition, ordered[firstIndex], next))
	}
	return out
}

// followerIndex is the k-th follower candidate of the replica at firstIndex:
// never firstIndex itself, since the distance is between 1 and n-1.
func followerIndex(firstIndex, shift, k, n int) int {
	if n == 1 {
		return firstIndex
	}
	return (firstIndex + 1 + (shift+k)%(n-1)) % n
}

func rackAware(brokers []placementBroker) bool {
	for _, b := range brokers {
		if b.Rack == "" {
			return false
		}
	}
	return len(brokers) > 0
}

func (p placement) placeRackAware() [][]int32 {
	rackOf := map[int32]string{}
	for _, b := range p.brokers {
		rackOf[b.ID] = b.Rack
	}
	ordered := rackAlternated(p.brokers)
	numRacks := len(distinctRacks(p.brokers))
	numBrokers := len(ordered)
	return p.walk(ordered, func(_ int, first int32, next func(k int) int32) []int32 {
		replicas := []int32{first}
		racksUsed := map[string]bool{rackOf[first]: true}
		brokersUsed := map[int32]bool{first: true}
		k := 0
		for len(replicas) < p.replicationFactor {
			b := next(k)
			k++
			rack := rackOf[b]
			rackOK := !racksUsed[rack] || len(racksUsed) == numRacks
			brokerOK := !brokersUsed[b] || len(brokersUsed) == numBrokers
			if rackOK && brokerOK {
				replicas = append(replicas, b)
				racksUsed[rack] = true
				brokersUsed[b] = true
			}
		}
		return replicas
	}, numRacks)
}

// rackAlternated orders brokers by taking one from each rack in turn (racks
// sorted by name, brokers within a rack by id), so adjacent entries sit in
// different racks whenever possible.
func rackAlternated(brokers []placementBroker) []int32 {
	byRack := map[string][]int32{}
	for _, b := range brokers {
		byRack[b.Rack] = append(byRack[b.Rack], b.ID)
	}
	racks := distinctRacks(brokers)
	for _, r := range racks {
		slices.Sort(byRack[r])
	}
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i = (i + 1) % len(racks) {
		r := racks[i]
		if len(byRack[r]) > 0 {
			out = append(out, byRack[r][0])
			byRack[r] = byRack[r][1:]
		}
	}
	return out
}

func distinctRacks(brokers []placementBroker) []string {
	set := map[string]bool{}
	for _, b := range brokers {
		set[b.Rack] = true
	}
	racks := make([]string, 0, len(set))
	for r := range set {
		racks = append(racks, r)
	}
	sort.Strings(racks)
	return racks
}

// continuationStart is the fixed start index for adding partitions to a
// topic: the position of partition 0's preferred leader among the sorted
// candidate brokers (or of the first broker with a higher id, if it is gone).
func continuationStart(brokers []placementBroker, partition0 []int32) int {
	if len(partition0) == 0 {
		return 0
	}
	for i, b := range brokers {
		if b.ID >= partition0[0] {
			return i
		}
	}
	return 0
}
