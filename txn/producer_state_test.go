package txn

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

// data is a data batch of n records from producer pid at epoch, sequence
// seq, written at offset.
func data(pid int64, epoch int16, seq int32, n int32, offset int64) Batch {
	return Batch{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, BaseOffset: offset,
		LastOffsetDelta: n - 1, MaxTimestamp: 1000 + offset}
}

func txnData(pid int64, epoch int16, seq int32, n int32, offset int64) Batch {
	b := data(pid, epoch, seq, n, offset)
	b.Transactional = true
	return b
}

func marker(pid int64, epoch int16, commit bool, coordEpoch int32, offset int64) Batch {
	return Batch{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: -1, BaseOffset: offset,
		MaxTimestamp: 1000 + offset, Transactional: true, Control: true,
		Marker: &EndTxnMarker{Commit: commit, CoordinatorEpoch: coordEpoch}}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name       string
		log        []Batch // already applied
		in         Batch
		origin     Origin
		txnVersion int8
		wantErr    error
		wantDup    *Duplicate
	}{
		{name: "unknown producer at sequence 0", in: data(1, 0, 0, 1, 0)},
		{name: "unknown producer at a later sequence (KIP-360)", in: data(1, 0, 42, 1, 0)},
		{name: "next sequence", log: []Batch{data(1, 0, 0, 3, 0)}, in: data(1, 0, 3, 1, 3)},
		{name: "gap", log: []Batch{data(1, 0, 0, 3, 0)}, in: data(1, 0, 4, 1, 3), wantErr: ErrBatchOutOfOrder},
		{name: "older sequence that is not a duplicate", log: []Batch{data(1, 0, 0, 3, 0)}, in: data(1, 0, 1, 1, 3), wantErr: ErrBatchOutOfOrder},
		{name: "duplicate of the last batch", log: []Batch{data(1, 0, 0, 3, 0), data(1, 0, 3, 2, 3)},
			in: data(1, 0, 3, 2, 99), wantDup: &Duplicate{FirstOffset: 3, LastOffset: 4}},
		{name: "duplicate of an older batch", log: []Batch{data(1, 0, 0, 3, 0), data(1, 0, 3, 2, 3)},
			in: data(1, 0, 0, 3, 99), wantDup: &Duplicate{FirstOffset: 0, LastOffset: 2}},
		{name: "duplicate forgotten after five batches",
			log: []Batch{data(1, 0, 0, 1, 0), data(1, 0, 1, 1, 1), data(1, 0, 2, 1, 2), data(1, 0, 3, 1, 3), data(1, 0, 4, 1, 4), data(1, 0, 5, 1, 5)},
			in:  data(1, 0, 0, 1, 9), wantErr: ErrBatchOutOfOrder},
		{name: "replication is not checked", log: []Batch{data(1, 0, 0, 3, 0)}, in: data(1, 0, 9, 1, 3), origin: OriginReplication},
		{name: "stale epoch", log: []Batch{data(1, 2, 0, 1, 0)}, in: data(1, 1, 1, 1, 1), wantErr: ErrBatchStaleEpoch},
		{name: "new epoch at sequence 0", log: []Batch{data(1, 0, 0, 5, 0)}, in: data(1, 1, 0, 1, 5)},
		{name: "new epoch not at sequence 0", log: []Batch{data(1, 0, 0, 5, 0)}, in: data(1, 1, 5, 1, 5), wantErr: ErrBatchOutOfOrder},
		{name: "sequence wraps", log: []Batch{data(1, 0, math.MaxInt32-1, 2, 0)}, in: data(1, 0, 0, 1, 2)},
		{name: "plain batch inside a transaction", log: []Batch{txnData(1, 0, 0, 1, 0)}, in: data(1, 0, 1, 1, 1), wantErr: ErrBatchNotTransactional},
		{name: "marker from an older coordinator", log: []Batch{txnData(1, 0, 0, 1, 0), marker(1, 0, true, 5, 1)},
			in: marker(1, 0, false, 4, 2), origin: OriginCoordinator, wantErr: ErrMarkerCoordinatorFenced},
		{name: "marker at a stale epoch", log: []Batch{txnData(1, 3, 0, 1, 0)}, in: marker(1, 2, false, 0, 1), origin: OriginCoordinator, wantErr: ErrBatchStaleEpoch},
		{name: "TV2 marker must bump the epoch", log: []Batch{txnData(1, 3, 0, 1, 0)}, in: marker(1, 3, true, 0, 1), origin: OriginCoordinator, txnVersion: 2, wantErr: ErrBatchStaleEpoch},
		{name: "TV2 marker retried after the transaction ended", log: []Batch{txnData(1, 3, 0, 1, 0), marker(1, 4, true, 0, 1)},
			in: marker(1, 4, true, 0, 2), origin: OriginCoordinator, txnVersion: 2},
		{name: "TV1 marker at the same epoch", log: []Batch{txnData(1, 3, 0, 1, 0)}, in: marker(1, 3, true, 0, 1), origin: OriginCoordinator},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewProducerState()
			s.Apply(tt.log)
			dup, isDup, err := s.Validate([]Batch{tt.in}, tt.origin, tt.txnVersion)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if (tt.wantDup != nil) != isDup || (isDup && dup != *tt.wantDup) {
				t.Fatalf("duplicate = %v %+v, want %+v", isDup, dup, tt.wantDup)
			}
		})
	}
}

func TestValidateSeesEarlierBatchesOfTheSameRequest(t *testing.T) {
	s := NewProducerState()
	s.Apply([]Batch{data(1, 0, 0, 2, 0)})
	if _, _, err := s.Validate([]Batch{data(1, 0, 2, 1, 0), data(1, 0, 3, 1, 0)}, OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Validate([]Batch{data(1, 0, 2, 1, 0), data(1, 0, 4, 1, 0)}, OriginClient, 0); !errors.Is(err, ErrBatchOutOfOrder) {
		t.Fatalf("gap after an earlier batch of the request: %v", err)
	}
	// Validate changed nothing.
	if e, _ := s.Producer(1); e.LastSequence() != 1 {
		t.Fatalf("last sequence %d after Validate, want 1", e.LastSequence())
	}
}

// TestValidateOfSeveralProducers: batches of several producers in one
// call are each checked against their own producer's earlier batches,
// the first producer's (kept apart from the others', issue 22) as much as
// the others', and Validate changes none of them.
func TestValidateOfSeveralProducers(t *testing.T) {
	s := NewProducerState()
	s.Apply([]Batch{data(1, 0, 0, 2, 0), data(2, 0, 0, 3, 2), data(3, 0, 0, 1, 5)})
	ok := []Batch{data(1, 0, 2, 1, 6), data(2, 0, 3, 1, 7), data(1, 0, 3, 1, 8), data(3, 0, 1, 1, 9), data(2, 0, 4, 1, 10)}
	if _, _, err := s.Validate(ok, OriginClient, 0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]Batch{
		{data(1, 0, 2, 1, 6), data(2, 0, 3, 1, 7), data(2, 0, 5, 1, 8)},  // a gap in the second producer's
		{data(2, 0, 3, 1, 6), data(1, 0, 2, 1, 7), data(1, 0, 4, 1, 8)},  // a gap in the first's, seen second
		{data(3, 0, 1, 1, 6), data(2, 0, 3, 1, 7), data(3, 0, 3, 1, 8)},  // a gap in the first's, after another's
		{data(1, 0, 2, 1, 6), data(2, 0, 30, 1, 7), data(1, 0, 3, 1, 8)}, // the second's first batch
	} {
		if _, _, err := s.Validate(bad, OriginClient, 0); !errors.Is(err, ErrBatchOutOfOrder) {
			t.Errorf("%v: %v, want out of order", bad, err)
		}
	}
	if dup, isDup, err := s.Validate([]Batch{data(1, 0, 2, 1, 6), data(2, 0, 0, 3, 7)}, OriginClient, 0); err != nil || !isDup || dup.FirstOffset != 2 {
		t.Errorf("a retry of the second producer's batch: %+v %v %v", dup, isDup, err)
	}
	for id, last := range map[int64]int32{1: 1, 2: 2, 3: 0} {
		if e, _ := s.Producer(id); e.LastSequence() != last || len(e.Batches) != 1 {
			t.Errorf("producer %d: last sequence %d, %d batches after Validate, want %d and 1", id, e.LastSequence(), len(e.Batches), last)
		}
	}
}

func TestTransactionsAndLastStableOffset(t *testing.T) {
	s := NewProducerState()
	// Producer 1 opens a transaction at 10, producer 2 at 12.
	s.Apply([]Batch{data(3, 0, 0, 10, 0), txnData(1, 0, 0, 2, 10), txnData(2, 0, 0, 1, 12), txnData(1, 0, 2, 1, 13)})
	if got := s.LastStableOffset(14); got != 10 {
		t.Fatalf("LSO = %d, want 10 (producer 1's open transaction)", got)
	}
	if got := s.LastStableOffset(5); got != 5 {
		t.Fatalf("LSO = %d, want the high watermark 5", got)
	}
	done := s.Apply([]Batch{marker(1, 0, false, 0, 14)})
	want := []CompletedTxn{{ProducerID: 1, FirstOffset: 10, LastOffset: 14, Aborted: true, LastStableOffset: 12}}
	if !reflect.DeepEqual(done, want) {
		t.Fatalf("completed %+v, want %+v", done, want)
	}
	// The marker at 14 is not below the high watermark yet: still unstable.
	if got := s.LastStableOffset(14); got != 10 {
		t.Fatalf("LSO = %d before the marker is replicated, want 10", got)
	}
	if got := s.LastStableOffset(15); got != 12 {
		t.Fatalf("LSO = %d, want 12 (producer 2)", got)
	}
	done = s.Apply([]Batch{marker(2, 0, true, 0, 15)})
	if len(done) != 1 || done[0].Aborted || done[0].FirstOffset != 12 || done[0].LastStableOffset != 16 {
		t.Fatalf("completed %+v", done)
	}
	if got := s.LastStableOffset(16); got != 16 {
		t.Fatalf("LSO = %d, want 16", got)
	}
	// A marker without a transaction completes nothing.
	if done := s.Apply([]Batch{marker(2, 0, true, 0, 16)}); len(done) != 0 {
		t.Fatalf("empty transaction completed %+v", done)
	}
	if e, _ := s.Producer(1); e.TxnFirstOffset != -1 || e.CoordinatorEpoch != 0 {
		t.Fatalf("producer 1 after its marker: %+v", e)
	}
}

func TestMarkerWithNewEpochResetsSequences(t *testing.T) {
	s := NewProducerState()
	s.Apply([]Batch{txnData(1, 0, 0, 5, 0), marker(1, 1, false, 0, 5)})
	if _, _, err := s.Validate([]Batch{data(1, 1, 0, 1, 6)}, OriginClient, 0); err != nil {
		t.Fatalf("sequence 0 at the bumped epoch: %v", err)
	}
	if _, _, err := s.Validate([]Batch{data(1, 1, 5, 1, 6)}, OriginClient, 0); !errors.Is(err, ErrBatchOutOfOrder) {
		t.Fatalf("old sequence at the bumped epoch: %v", err)
	}
	if _, _, err := s.Validate([]Batch{data(1, 0, 5, 1, 6)}, OriginClient, 0); !errors.Is(err, ErrBatchStaleEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
}

func TestRemoveExpired(t *testing.T) {
	s := NewProducerState()
	s.Apply([]Batch{data(1, 0, 0, 1, 0), txnData(2, 0, 0, 1, 1), data(3, 0, 0, 1, 5000)})
	// Producers 1 and 2 last wrote at 1000 and 1001, producer 3 at 6000.
	if n := s.RemoveExpired(3000, 1500); n != 1 {
		t.Fatalf("expired %d producers, want 1 (producer 2 has an open transaction)", n)
	}
	if _, ok := s.Producer(1); ok {
		t.Fatal("producer 1 not expired")
	}
	if _, ok := s.Producer(2); !ok {
		t.Fatal("producer 2 with an open transaction expired")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := NewProducerState()
	s.Apply([]Batch{
		data(1, 0, 0, 3, 0), data(1, 0, 3, 2, 3),
		txnData(2, 4, 7, 1, 5),
		txnData(3, 0, 0, 1, 6), marker(3, 1, true, 9, 7),
		data(4, 0, math.MaxInt32-1, 3, 8),
	})
	raw := s.Snapshot()
	r, err := RestoreProducerState(raw, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []ProducerEntry{
		{ProducerID: 1, Epoch: 0, Batches: []BatchMeta{{FirstSeq: 3, LastSeq: 4, FirstOffset: 3, LastOffset: 4, Timestamp: 1003}}, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 1003},
		{ProducerID: 2, Epoch: 4, Batches: []BatchMeta{{FirstSeq: 7, LastSeq: 7, FirstOffset: 5, LastOffset: 5, Timestamp: 1005}}, CoordinatorEpoch: -1, TxnFirstOffset: 5, LastTimestamp: 1005},
		{ProducerID: 3, Epoch: 1, CoordinatorEpoch: 9, TxnFirstOffset: -1, LastTimestamp: 1007},
		{ProducerID: 4, Epoch: 0, Batches: []BatchMeta{{FirstSeq: math.MaxInt32 - 1, LastSeq: 0, FirstOffset: 8, LastOffset: 10, Timestamp: 1008}}, CoordinatorEpoch: -1, TxnFirstOffset: -1, LastTimestamp: 1008},
	}
	if got := r.Producers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored\n%+v\nwant\n%+v", got, want)
	}
	if got := r.LastStableOffset(100); got != 5 {
		t.Fatalf("restored LSO %d, want 5 (producer 2's open transaction)", got)
	}
	// The last batch is still recognised as a duplicate.
	if dup, ok, err := r.Validate([]Batch{data(1, 0, 3, 2, 50)}, OriginClient, 0); err != nil || !ok || dup.FirstOffset != 3 {
		t.Fatalf("duplicate after restore: %+v %v %v", dup, ok, err)
	}
	// Expiry on restore.
	if r, err := RestoreProducerState(raw, 2500, 1000); err != nil || r.Len() != 1 {
		t.Fatalf("restore with expiry kept %d producers (err %v), want only the open transaction", r.Len(), err)
	}
	raw[len(raw)-1] ^= 1
	if _, err := RestoreProducerState(raw, 0, 0); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("corrupt snapshot: %v", err)
	}
}

func TestMarkerBatchRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Commit: true, CoordinatorEpoch: 7}, {Commit: false, CoordinatorEpoch: 0}} {
		b := EncodeMarkerBatch(42, 3, m, 12345)
		got, err := DecodeMarkerBatch(b)
		if err != nil || got == nil || *got != m {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, m)
		}
	}
}
