package share

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"
)

// memStateLog is a StateLog of one process: each partition a list of
// batches, offsets assigned on append, a log start moved by Prune.
type memStateLog struct {
	mu    sync.Mutex
	parts map[int32]*memPart
}

type memPart struct {
	start   int64
	batches [][]byte // batches[i] holds offset i
}

func (l *memStateLog) part(p int32) *memPart {
	if l.parts == nil {
		l.parts = map[int32]*memPart{}
	}
	if l.parts[p] == nil {
		l.parts[p] = &memPart{}
	}
	return l.parts[p]
}

func (l *memStateLog) Append(_ context.Context, partition, _ int32, batch []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mp := l.part(partition)
	off := int64(len(mp.batches))
	b := append([]byte(nil), batch...)
	binary.BigEndian.PutUint64(b, uint64(off))
	mp.batches = append(mp.batches, b)
	return off, nil
}

func (l *memStateLog) Read(_ context.Context, partition int32, offset int64) ([]byte, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mp := l.part(partition)
	var out []byte
	for o := max(offset, mp.start); o < int64(len(mp.batches)); o++ {
		out = append(out, mp.batches[o]...)
	}
	return out, int64(len(mp.batches)), nil
}

func (l *memStateLog) Prune(_ context.Context, partition, _ int32, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	mp := l.part(partition)
	mp.start = max(mp.start, min(offset, int64(len(mp.batches))))
	return nil
}

// The share coordinator's answers and fencing, a load from the records
// (snapshots and updates), and the maintenance that snapshots cold
// share-partitions and prunes what no load needs any more.
func TestCoordinatorFencingLoadAndPrune(t *testing.T) {
	ctx := context.Background()
	log := &memStateLog{}
	now := time.Unix(10000, 0)
	clock := func() time.Time { return now }
	c := NewCoordinator(CoordinatorConfig{SnapshotEvery: 3, Now: clock}, log)
	k1 := Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	k2 := Key{Group: "g", TopicID: [16]byte{1}, Partition: 1}
	if err := c.InitializeState(ctx, k1, 1, -1); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("before leading: %v, want ErrNotCoordinator", err)
	}
	c.SetLeadership(1, map[int32]int32{0: 5})
	if _, err := c.ReadSummary(ctx, k1); !errors.Is(err, ErrCoordinatorLoadInProgress) {
		t.Fatalf("before the load: %v, want ErrCoordinatorLoadInProgress", err)
	}
	c.LoadPending(ctx)
	if _, err := c.ReadState(ctx, k1, 1); !errors.Is(err, ErrStateNotFound) {
		t.Fatalf("read of nothing: %v, want ErrStateNotFound", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.InitializeState(ctx, k1, 1, -1))
	if err := c.InitializeState(ctx, k1, 1, 0); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("initialize at the same state epoch: %v, want ErrFencedStateEpoch", err)
	}
	st, err := c.ReadState(ctx, k1, 3)
	must(err)
	if st.StartOffset != -1 || st.StateEpoch != 1 {
		t.Fatalf("read after initialize: %+v", st)
	}
	for i := range 5 {
		must(c.WriteState(ctx, k1, PartitionState{StartOffset: int64(i), StateEpoch: 1, LeaderEpoch: 3,
			Batches: []StateBatch{{First: int64(i), Last: int64(i) + 4, State: Acquired, DeliveryCount: 1}}}))
	}
	if err := c.WriteState(ctx, k1, PartitionState{StartOffset: 9, StateEpoch: 1, LeaderEpoch: 2}); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("write of an older leader: %v, want ErrFencedLeaderEpoch", err)
	}
	if err := c.WriteState(ctx, k1, PartitionState{StartOffset: 9, StateEpoch: 0, LeaderEpoch: 3}); !errors.Is(err, ErrFencedStateEpoch) {
		t.Fatalf("write of an older state epoch: %v, want ErrFencedStateEpoch", err)
	}
	want1 := PartitionState{StartOffset: 4, StateEpoch: 1, LeaderEpoch: 3,
		Batches: []StateBatch{{First: 4, Last: 8, State: Acquired, DeliveryCount: 1}}}
	must(c.InitializeState(ctx, k2, 1, 7))

	// Ten minutes on, k2 is written again; k1 is cold.
	now = now.Add(10 * time.Minute)
	want2 := PartitionState{StartOffset: 7, StateEpoch: 1, LeaderEpoch: 4,
		Batches: []StateBatch{{First: 7, Last: 7, State: Acknowledged, DeliveryCount: 2}}}
	must(c.WriteState(ctx, k2, want2))
	before := len(log.parts[0].batches)
	c.Maintain(ctx, 5*time.Minute)
	if got := len(log.parts[0].batches); got != before+1 {
		t.Fatalf("maintenance appended %d records, want one snapshot of the cold key", got-before)
	}
	if log.parts[0].start == 0 {
		t.Fatal("nothing pruned")
	}

	// A new coordinator (the next leader) loads what is left.
	c2 := NewCoordinator(CoordinatorConfig{SnapshotEvery: 3, Now: clock}, log)
	c2.SetLeadership(1, map[int32]int32{0: 6})
	c2.LoadPending(ctx)
	for k, want := range map[Key]PartitionState{k1: want1, k2: want2} {
		got, err := c2.ReadState(ctx, k, -1)
		must(err)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v after the prune and a load: %+v, want %+v", k, got, want)
		}
	}
	// A read by a newer leader fences the older one.
	_, err = c2.ReadState(ctx, k1, 7)
	must(err)
	if err := c2.WriteState(ctx, k1, want1); !errors.Is(err, ErrFencedLeaderEpoch) {
		t.Fatalf("write of the leader before the read: %v, want ErrFencedLeaderEpoch", err)
	}
	sum, err := c2.ReadSummary(ctx, k2)
	must(err)
	if sum.StartOffset != 7 || sum.DeliveryComplete != 1 {
		t.Fatalf("summary %+v", sum)
	}
	must(c2.DeleteState(ctx, k2))
	if _, err := c2.ReadSummary(ctx, k2); !errors.Is(err, ErrStateNotFound) {
		t.Fatalf("after delete: %v, want ErrStateNotFound", err)
	}
	c2.SetLeadership(1, nil)
	if _, err := c2.ReadSummary(ctx, k1); !errors.Is(err, ErrNotCoordinator) {
		t.Fatalf("after losing the partition: %v, want ErrNotCoordinator", err)
	}
}
