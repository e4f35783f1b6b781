package txn

import "testing"

// The verification guard: a marker between the coordinator's answer and
// the append voids the check; an open transaction needs none.
func TestVerificationGuard(t *testing.T) {
	s := NewProducerState()
	g, needed := s.StartVerification(7, 0, false, 100)
	if !needed || !s.Verified(g) {
		t.Fatalf("a fresh check: needed %v, verified %v", needed, s.Verified(g))
	}
	// A concurrent check of the same producer and epoch shares it.
	if g2, _ := s.StartVerification(7, 0, false, 101); g2 != g {
		t.Fatalf("second check %+v, first %+v", g2, g)
	}
	// The transaction ends on the partition before the batch is appended.
	s.Apply([]Batch{marker(7, 0, false, 0, 0)})
	if s.Verified(g) {
		t.Fatal("a check a marker overtook still passes")
	}
	// A new check, then the batch opens the transaction: later batches of
	// the same epoch need no check.
	g, _ = s.StartVerification(7, 0, false, 102)
	s.Apply([]Batch{txnData(7, 0, 0, 1, 1)})
	if !s.Verified(g) {
		t.Fatal("a batch of the open transaction refused")
	}
	if _, needed := s.StartVerification(7, 0, false, 103); needed {
		t.Fatal("a check asked for while the transaction is open at the epoch")
	}
	if _, needed := s.StartVerification(7, 1, false, 103); !needed {
		t.Fatal("a new epoch needs its own check")
	}
	// Transaction version 2: the previous transaction's marker carries
	// the new transaction's epoch (its end's bump) and leaves the check;
	// a later marker voids it.
	g, _ = s.StartVerification(8, 1, true, 104)
	s.Apply([]Batch{marker(8, 1, true, 0, 2)})
	if !s.Verified(g) {
		t.Fatal("the previous transaction's marker voided a version 2 check")
	}
	s.Apply([]Batch{marker(8, 2, false, 0, 3)})
	if s.Verified(g) {
		t.Fatal("a later marker left a version 2 check")
	}
	// Checks older than producer.id.expiration.ms are dropped.
	s.RemoveExpired(10_000_000, 1000)
	if len(s.verifying) != 0 {
		t.Fatalf("expired checks kept: %v", s.verifying)
	}
}
