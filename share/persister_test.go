package share

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// failingPersister is a MemoryPersister whose writes fail while fail is set.
type failingPersister struct {
	*MemoryPersister
	fail atomic.Bool
}

var errWriteFailed = errors.New("write failed")

func (f *failingPersister) WriteState(ctx context.Context, key Key, st PartitionState) error {
	if f.fail.Load() {
		return errWriteFailed
	}
	return f.MemoryPersister.WriteState(ctx, key, st)
}

// Write-before-apply: an acknowledgement whose state write fails is not
// applied and reported failed; the share-partition reads the state again
// and finds what was persisted: the acquisition (its delivery count) but
// not the acknowledgement. One whose write succeeds survives the reload.
func TestPartitionWriteBeforeApply(t *testing.T) {
	ctx := context.Background()
	fp := &failingPersister{MemoryPersister: NewMemoryPersister()}
	m := NewManager(fp)
	key := Key{Group: "g", Partition: 0}
	start := func() (int64, error) { return 0, nil }
	now := time.Unix(1000, 0)
	p, err := m.Partition(ctx, key, 1, DefaultSettings, start)
	if err != nil {
		t.Fatal(err)
	}
	if runs := p.Acquire("m1", []LogBatch{{First: 0, Last: 9}}, AcquireLimit{}, now); len(runs) != 1 || runs[0].Last != 9 {
		t.Fatalf("acquired %+v", runs)
	}
	if err := p.Acknowledge("m1", []AckBatch{{First: 0, Last: 2, Types: []AckType{AckAccept}}}, false, now); err != nil {
		t.Fatal(err)
	}
	fp.fail.Store(true)
	err = p.Acknowledge("m1", []AckBatch{{First: 3, Last: 4, Types: []AckType{AckAccept}}}, false, now)
	if !errors.Is(err, ErrStateStale) || !errors.Is(err, errWriteFailed) {
		t.Fatalf("acknowledge with a failing write: %v, want ErrStateStale", err)
	}
	if s, _ := p.State(3, now); s != Acquired {
		t.Fatalf("offset 3 is %v after a failed write, want it still ACQUIRED", s)
	}
	if runs := p.Acquire("m2", []LogBatch{{First: 10, Last: 12}}, AcquireLimit{}, now); runs != nil {
		t.Fatalf("a stale share-partition acquired %+v", runs)
	}
	fp.fail.Store(false)
	p2, err := m.Partition(ctx, key, 1, DefaultSettings, start)
	if err != nil {
		t.Fatal(err)
	}
	if p2 == p {
		t.Fatal("the stale share-partition was not loaded again")
	}
	if got := p2.StartOffset(); got != 3 {
		t.Fatalf("reloaded start offset %d, want 3 (0-2 acknowledged)", got)
	}
	if s, n := p2.State(3, now); s != Available || n != 1 {
		t.Fatalf("reloaded offset 3: %v delivered %d times, want AVAILABLE after 1 delivery", s, n)
	}
}

// Dead letters (KIP-1191) are handed over only once the change that made
// them ARCHIVING is persisted: a rejection whose write fails gives none; a
// persisted rejection, and a release at share.delivery.count.limit
// deliveries, give theirs, a gap does not. They hold the start offset until
// their DLQ write ended (then ARCHIVED); a reload before that hands them
// over again (Kafka's maybeResumeDlqArchiving).
func TestPartitionDeadLettersAfterWrite(t *testing.T) {
	ctx := context.Background()
	fp := &failingPersister{MemoryPersister: NewMemoryPersister()}
	m := NewManager(fp)
	key := Key{Group: "g", Partition: 0}
	start := func() (int64, error) { return 0, nil }
	now := time.Unix(1000, 0)
	var got []DeadLetter
	var dones []func()
	settings := DefaultSettings
	settings.DeliveryCountLimit = 2
	settings.DeadLetters = func(k Key, dls []DeadLetter, done func()) {
		if k != key {
			t.Errorf("dead letters of %v, want %v", k, key)
		}
		got = append(got, dls...)
		dones = append(dones, done)
	}
	p, err := m.Partition(ctx, key, 1, settings, start)
	if err != nil {
		t.Fatal(err)
	}
	p.Acquire("m1", []LogBatch{{First: 0, Last: 3}}, AcquireLimit{}, now)
	fp.fail.Store(true)
	if err := p.Acknowledge("m1", []AckBatch{{First: 0, Last: 0, Types: []AckType{AckReject}}}, false, now); !errors.Is(err, ErrStateStale) {
		t.Fatalf("reject with a failing write: %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("dead letters %+v of a change that was not persisted", got)
	}
	fp.fail.Store(false)
	if p, err = m.Partition(ctx, key, 1, settings, start); err != nil {
		t.Fatal(err)
	}
	p.Acquire("m1", []LogBatch{{First: 0, Last: 3}}, AcquireLimit{}, now) // second delivery
	err = p.Acknowledge("m1", []AckBatch{{First: 0, Last: 3, Types: []AckType{AckReject, AckRelease, AckGap, AckAccept}}}, false, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []DeadLetter{{Offset: 0, DeliveryCount: 2, Rejected: true}, {Offset: 1, DeliveryCount: 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("dead letters %+v, want %+v", got, want)
	}
	if s, _ := p.State(0, now); s != Archiving || p.StartOffset() != 0 {
		t.Fatalf("offset 0 is %v, start offset %d, want ARCHIVING at start offset 0 until the DLQ write ended", s, p.StartOffset())
	}

	// A new leader finds them ARCHIVING and hands them over again; its
	// write ends and they are ARCHIVED: the start offset moves past them.
	got = nil
	p2, err := m.Partition(ctx, key, 2, settings, start)
	if err != nil {
		t.Fatal(err)
	}
	want = []DeadLetter{{Offset: 0, DeliveryCount: 2}, {Offset: 1, DeliveryCount: 2}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("dead letters resumed after a reload %+v, want %+v", got, want)
	}
	dones[len(dones)-1]()
	if s, _ := p2.State(1, now); s != Archived || p2.StartOffset() != 4 {
		t.Fatalf("offset 1 is %v, start offset %d after the DLQ write, want ARCHIVED and 4", s, p2.StartOffset())
	}
}
