package share

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func testSettings() Settings {
	return Settings{LockDuration: 30 * time.Second, DeliveryCountLimit: 3, MaxRecordLocks: 100}
}

func batches(rs ...int64) []LogBatch {
	var out []LogBatch
	for i := 0; i+1 < len(rs); i += 2 {
		out = append(out, LogBatch{First: rs[i], Last: rs[i+1]})
	}
	return out
}

func accept(first, last int64) AckBatch {
	return AckBatch{First: first, Last: last, Types: []AckType{AckAccept}}
}

func ack(first, last int64, t AckType) AckBatch {
	return AckBatch{First: first, Last: last, Types: []AckType{t}}
}

func wantRuns(t *testing.T, got []AcquiredRun, want ...AcquiredRun) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
}

func TestAcquireAcceptAdvancesStart(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 10, testSettings())
	got := p.Acquire("m1", batches(10, 14, 15, 19), AcquireLimit{}, t0)
	wantRuns(t, got, AcquiredRun{10, 19, 1})
	if next := p.NextFetchOffset(t0); next != 20 {
		t.Fatalf("next fetch offset %d, want 20", next)
	}
	// A second member finds nothing available in the same batches.
	if got := p.Acquire("m2", batches(10, 19), AcquireLimit{}, t0); len(got) != 0 {
		t.Fatalf("m2 acquired %v of m1's records", got)
	}
	// Accepting 12-19 leaves the start offset at 10 (10 and 11 held).
	if err := p.Acknowledge("m1", []AckBatch{accept(12, 19)}, false, t0); err != nil {
		t.Fatal(err)
	}
	if s := p.StartOffset(); s != 10 {
		t.Fatalf("start %d, want 10", s)
	}
	if err := p.Acknowledge("m1", []AckBatch{{First: 10, Last: 11, Types: []AckType{AckAccept, AckReject}}}, false, t0); err != nil {
		t.Fatal(err)
	}
	if s := p.StartOffset(); s != 20 {
		t.Fatalf("start %d after the prefix was acknowledged, want 20", s)
	}
}

func TestLockExpiryRedeliversWithDeliveryCount(t *testing.T) {
	s := testSettings()
	p := NewPartition(Key{Group: "g"}, 0, s)
	wantRuns(t, p.Acquire("m1", batches(0, 4), AcquireLimit{}, t0), AcquiredRun{0, 4, 1})
	if _, ok := p.NextLockExpiry(); !ok {
		t.Fatal("no lock expiry while records are acquired")
	}
	// Before the lock runs out nothing is available; after, all of it.
	if next := p.NextFetchOffset(t0.Add(s.LockDuration - time.Millisecond)); next != 5 {
		t.Fatalf("next %d before expiry, want 5", next)
	}
	later := t0.Add(s.LockDuration)
	if next := p.NextFetchOffset(later); next != 0 {
		t.Fatalf("next %d after expiry, want 0", next)
	}
	// m1's late acknowledgement fails: its lock is gone.
	if err := p.Acknowledge("m1", []AckBatch{accept(0, 4)}, false, later); err != ErrInvalidRecordState {
		t.Fatalf("late ack: %v, want ErrInvalidRecordState", err)
	}
	wantRuns(t, p.Acquire("m2", batches(0, 4), AcquireLimit{}, later), AcquiredRun{0, 4, 2})
	if st, n := p.State(3, later); st != Acquired || n != 2 {
		t.Fatalf("offset 3: %v/%d, want ACQUIRED/2", st, n)
	}
}

func TestDeliveryLimitArchives(t *testing.T) {
	s := testSettings() // limit 3
	p := NewPartition(Key{Group: "g"}, 0, s)
	now := t0
	for i := 1; i <= 3; i++ {
		wantRuns(t, p.Acquire("m", batches(0, 1), AcquireLimit{}, now), AcquiredRun{0, 1, int16(i)})
		if i < 3 {
			if err := p.Acknowledge("m", []AckBatch{ack(0, 1, AckRelease)}, false, now); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Third delivery: its lock expires; the limit archives both.
		now = now.Add(s.LockDuration)
	}
	if st, _ := p.State(0, now); st != Archived {
		t.Fatalf("offset 0 %v after the last delivery expired, want ARCHIVED (below start)", st)
	}
	if start := p.StartOffset(); start != 2 {
		t.Fatalf("start %d, want 2: archived records are done", start)
	}
	if got := p.Acquire("m", batches(0, 1), AcquireLimit{}, now); len(got) != 0 {
		t.Fatalf("archived records acquired again: %v", got)
	}
}

func TestReleaseRejectGapRenew(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, testSettings())
	p.Acquire("m", batches(0, 9), AcquireLimit{}, t0)
	err := p.Acknowledge("m", []AckBatch{
		ack(0, 1, AckReject),
		ack(2, 2, AckGap),
		ack(3, 4, AckRelease),
		{First: 5, Last: 7, Types: []AckType{AckAccept, AckRenew, AckAccept}},
	}, true, t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.StartOffset(); s != 3 {
		t.Fatalf("start %d, want 3 (0-2 rejected or gaps)", s)
	}
	if next := p.NextFetchOffset(t0.Add(10 * time.Second)); next != 3 {
		t.Fatalf("next %d, want 3 (released)", next)
	}
	// Offset 6 was renewed at +10s: it outlives 8 and 9's lock.
	at := t0.Add(35 * time.Second)
	if st, _ := p.State(6, at); st != Acquired {
		t.Fatalf("renewed offset 6 is %v at +35s, want ACQUIRED", st)
	}
	if st, _ := p.State(8, at); st != Available {
		t.Fatalf("offset 8 is %v at +35s, want AVAILABLE", st)
	}
	// RENEW is refused when not allowed.
	p2 := NewPartition(Key{Group: "g"}, 0, testSettings())
	p2.Acquire("m", batches(0, 0), AcquireLimit{}, t0)
	if err := p2.Acknowledge("m", []AckBatch{ack(0, 0, AckRenew)}, false, t0); err != ErrInvalidAcknowledgement {
		t.Fatalf("renew without IsRenewAck: %v", err)
	}
}

func TestAcknowledgeIsAllOrNothing(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, testSettings())
	p.Acquire("a", batches(0, 4), AcquireLimit{}, t0)
	p.Acquire("b", batches(5, 9), AcquireLimit{}, t0)
	cases := []struct {
		name  string
		batch []AckBatch
		want  error
	}{
		{"other member's records", []AckBatch{accept(0, 1), accept(5, 5)}, ErrInvalidRecordState},
		{"past the acquired records", []AckBatch{accept(0, 10)}, ErrInvalidAcknowledgement},
		{"types do not match offsets", []AckBatch{{First: 0, Last: 2, Types: []AckType{1, 1}}}, ErrInvalidAcknowledgement},
		{"unknown type", []AckBatch{ack(0, 0, 9)}, ErrInvalidAcknowledgement},
		{"out of order", []AckBatch{accept(2, 3), accept(0, 1)}, ErrInvalidAcknowledgement},
		{"first after last", []AckBatch{accept(3, 2)}, ErrInvalidAcknowledgement},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := p.Acknowledge("a", c.batch, false, t0); err != c.want {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if st, _ := p.State(0, t0); st != Acquired {
				t.Fatalf("offset 0 %v after a failed acknowledgement, want ACQUIRED", st)
			}
		})
	}
}

func TestMaxRecordsAndWindow(t *testing.T) {
	s := testSettings() // 100 locks
	p := NewPartition(Key{Group: "g"}, 0, s)
	// MaxRecords 3 in batch-optimized mode finishes the batch 0-9.
	wantRuns(t, p.Acquire("m", batches(0, 9, 10, 19), AcquireLimit{MaxRecords: 3}, t0), AcquiredRun{0, 9, 1})
	// Strict (record_limit) stops at exactly 3.
	wantRuns(t, p.Acquire("m", batches(10, 19), AcquireLimit{MaxRecords: 3, Strict: true}, t0), AcquiredRun{10, 12, 1})
	// Fill the window past 100 with one large batch, which may finish.
	p.Acquire("m", batches(13, 150), AcquireLimit{}, t0)
	if end := p.EndOffset(); end != 151 {
		t.Fatalf("end %d, want 151 (the batch finished)", end)
	}
	if got := p.Acquire("m", batches(151, 160), AcquireLimit{}, t0); len(got) != 0 {
		t.Fatalf("acquired %v with a full window", got)
	}
	if p.CanAcquire(1000, t0) {
		t.Fatal("CanAcquire with a full window")
	}
	// A batch may not take the window past twice the limit.
	q := NewPartition(Key{Group: "g"}, 0, s)
	q.Acquire("m", batches(0, 100000), AcquireLimit{}, t0)
	if end := q.EndOffset(); end != 200 {
		t.Fatalf("end %d after a huge batch, want 200 (2 × max record locks)", end)
	}
}

func TestGapsBetweenBatchesAreAcquired(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, testSettings())
	// Offsets 5-7 were compacted away: acquired too, acknowledged as gaps.
	wantRuns(t, p.Acquire("m", batches(0, 4, 8, 9), AcquireLimit{}, t0), AcquiredRun{0, 9, 1})
	if err := p.Acknowledge("m", []AckBatch{accept(0, 4), ack(5, 7, AckGap), accept(8, 9)}, false, t0); err != nil {
		t.Fatal(err)
	}
	if s := p.StartOffset(); s != 10 {
		t.Fatalf("start %d, want 10", s)
	}
}

func TestAbortedBatchesAreArchived(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, testSettings())
	got := p.Acquire("m", []LogBatch{{First: 0, Last: 2, Aborted: true}, {First: 3, Last: 5}}, AcquireLimit{}, t0)
	wantRuns(t, got, AcquiredRun{3, 5, 1})
	if s := p.StartOffset(); s != 3 {
		t.Fatalf("start %d, want 3: the aborted batch is archived", s)
	}
}

func TestReleaseMemberAndMoveStart(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, testSettings())
	p.Acquire("a", batches(0, 4), AcquireLimit{}, t0)
	p.Acquire("b", batches(5, 9), AcquireLimit{}, t0)
	ch := make(chan struct{}, 1)
	p.Wait(ch)
	if n := p.ReleaseMember("a", t0); n != 5 {
		t.Fatalf("released %d, want 5", n)
	}
	select {
	case <-ch:
	default:
		t.Fatal("waiter not signalled on release")
	}
	if next := p.NextFetchOffset(t0); next != 0 {
		t.Fatalf("next %d, want 0", next)
	}
	p.MoveStartTo(7)
	if s, next := p.StartOffset(), p.NextFetchOffset(t0); s != 7 || next != 10 {
		t.Fatalf("start %d next %d after the log start moved to 7, want 7 and 10", s, next)
	}
	// b's acknowledgement of 5-9 still settles 7-9.
	if err := p.Acknowledge("b", []AckBatch{accept(5, 9)}, false, t0); err != nil {
		t.Fatal(err)
	}
	if s := p.StartOffset(); s != 10 {
		t.Fatalf("start %d, want 10", s)
	}
}

func TestConcurrentMembersDeliverEachOffsetOnce(t *testing.T) {
	p := NewPartition(Key{Group: "g"}, 0, Settings{LockDuration: time.Hour, DeliveryCountLimit: 5, MaxRecordLocks: 10000})
	const total = 5000
	var mu sync.Mutex
	seen := make(map[int64]int)
	var wg sync.WaitGroup
	for m := 0; m < 8; m++ {
		wg.Add(1)
		go func(member string) {
			defer wg.Done()
			for {
				next := p.NextFetchOffset(t0)
				if next >= total {
					return
				}
				last := min(next+9, total-1)
				runs := p.Acquire(member, batches(next, last), AcquireLimit{MaxRecords: 10}, t0)
				var acks []AckBatch
				for _, r := range runs {
					mu.Lock()
					for o := r.First; o <= r.Last; o++ {
						seen[o]++
					}
					mu.Unlock()
					acks = append(acks, accept(r.First, r.Last))
				}
				if err := p.Acknowledge(member, acks, false, t0); err != nil {
					t.Error(err)
					return
				}
			}
		}(fmt.Sprint("m", m))
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d offsets delivered, want %d", len(seen), total)
	}
	for o, n := range seen {
		if n != 1 {
			t.Fatalf("offset %d delivered %d times", o, n)
		}
	}
	if s := p.StartOffset(); s != total {
		t.Fatalf("start %d, want %d", s, total)
	}
}

func TestManagerPersistsAndReloads(t *testing.T) {
	ctx := context.Background()
	per := NewMemoryPersister()
	m := NewManager(per)
	key := Key{Group: "g", TopicID: [16]byte{1}, Partition: 0}
	calls := 0
	initial := func() (int64, error) { calls++; return 100, nil }
	p, err := m.Partition(ctx, key, 3, testSettings(), initial)
	if err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 100 || calls != 1 {
		t.Fatalf("start %d, initial offset asked %d times", p.StartOffset(), calls)
	}
	p.Acquire("m", batches(100, 109), AcquireLimit{}, t0)
	if err := p.Acknowledge("m", []AckBatch{accept(100, 101), ack(104, 104, AckReject)}, false, t0); err != nil {
		t.Fatal(err)
	}
	// A new leader epoch reloads from the persister: acquired records
	// come back AVAILABLE with their delivery counts, settled ones stay.
	q, err := m.Partition(ctx, key, 4, testSettings(), initial)
	if err != nil {
		t.Fatal(err)
	}
	if q == p || calls != 1 {
		t.Fatalf("same partition after a leader change, or initial offset asked again (%d)", calls)
	}
	if s := q.StartOffset(); s != 102 {
		t.Fatalf("reloaded start %d, want 102", s)
	}
	if st, n := q.State(103, t0); st != Available || n != 1 {
		t.Fatalf("offset 103 %v/%d, want AVAILABLE/1", st, n)
	}
	if st, _ := q.State(104, t0); st != Archived {
		t.Fatalf("offset 104 %v, want ARCHIVED", st)
	}
	wantRuns(t, q.Acquire("m2", batches(102, 109), AcquireLimit{}, t0), AcquiredRun{102, 103, 2}, AcquiredRun{105, 109, 2})
	// The old leader's writes are fenced.
	if err := per.WriteState(ctx, key, PartitionState{StartOffset: 0, LeaderEpoch: 3}); err != ErrFencedLeaderEpoch {
		t.Fatalf("write of an old leader epoch: %v", err)
	}
}
