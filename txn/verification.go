package txn

// Transaction verification on the partition side (KIP-890 part 1, Kafka's
// VerificationStateEntry / VerificationGuard). Before a leader appends a
// producer's transactional batch it asks the transaction coordinator
// whether the partition is in the producer's transaction (or, for
// transaction version 2, to add it). Between the question and the append
// the transaction may end and its marker reach the partition; the batch
// would then open a transaction nobody will ever end (a hanging
// transaction). The guard closes that window: StartVerification records a
// pending check for the producer, a marker or a transactional batch of the
// producer clears it, and Verified (under the same lock as the append)
// accepts the batch only if its check is still the pending one or the
// producer's transaction is already open at its epoch.

// VerificationGuard names one pending check with the coordinator; the
// zero value is "none needed".
type VerificationGuard struct {
	ProducerID int64
	Epoch      int16
	token      uint64
}

// verification is a pending check of one producer.
type verification struct {
	token   uint64
	epoch   int16
	startMs int64
	// bumps: the check is a transaction version 2 add, whose transaction
	// runs at an epoch of its own; the previous transaction's marker
	// carries that same epoch (the bump of its end) and must not void it.
	bumps bool
}

// ongoingAt reports whether producerID's transaction is open on the
// partition at epoch.
func (s *ProducerState) ongoingAt(producerID int64, epoch int16) bool {
	e := s.producers[producerID]
	return e != nil && e.TxnFirstOffset >= 0 && e.Epoch == epoch
}

// StartVerification is called before asking the coordinator about a
// transactional batch of producerID at epoch. needed is false when the
// producer's transaction is already open here at that epoch (Kafka's
// SENTINEL): no question is asked. Concurrent checks of the same producer
// and epoch share one guard.
//
// bumps says the producer runs transaction version 2 (KIP-890 part 2),
// where every transaction has an epoch of its own and only a marker of a
// later epoch ends it; with version 0 the same epoch runs transaction
// after transaction, and any marker at or above it voids the check.
func (s *ProducerState) StartVerification(producerID int64, epoch int16, bumps bool, nowMs int64) (guard VerificationGuard, needed bool) {
	if s.ongoingAt(producerID, epoch) {
		return VerificationGuard{}, false
	}
	if s.verifying == nil {
		s.verifying = make(map[int64]verification)
	}
	v, ok := s.verifying[producerID]
	if !ok || v.epoch != epoch || v.bumps != bumps {
		s.nextToken++
		v = verification{token: s.nextToken, epoch: epoch, startMs: nowMs, bumps: bumps}
		s.verifying[producerID] = v
	}
	return VerificationGuard{ProducerID: producerID, Epoch: epoch, token: v.token}, true
}

// Verified reports whether a batch checked with guard may be appended now:
// its check is still pending (no marker of the producer came meanwhile) or
// the producer's transaction is open at the guard's epoch.
func (s *ProducerState) Verified(guard VerificationGuard) bool {
	if guard.token == 0 || s.ongoingAt(guard.ProducerID, guard.Epoch) {
		return true
	}
	v, ok := s.verifying[guard.ProducerID]
	return ok && v.token == guard.token && v.epoch == guard.Epoch
}

// clearVerification forgets producerID's pending check: a batch opened
// its transaction.
func (s *ProducerState) clearVerification(producerID int64) {
	delete(s.verifying, producerID)
}

// markerVoidsVerification forgets producerID's pending check when a marker
// at epoch ends the transaction it was for: any marker at or above a
// version 0 check's epoch (the same epoch may start another transaction
// the coordinator does not know this partition in), only a later one for
// a version 2 check (a marker at its epoch ended the previous
// transaction).
func (s *ProducerState) markerVoidsVerification(producerID int64, epoch int16) {
	v, ok := s.verifying[producerID]
	if !ok {
		return
	}
	if epoch > v.epoch || (epoch == v.epoch && !v.bumps) {
		delete(s.verifying, producerID)
	}
}

// removeExpiredVerifications drops checks older than expirationMs, as
// Kafka bounds its verification entries by producer.id.expiration.ms.
func (s *ProducerState) removeExpiredVerifications(nowMs, expirationMs int64) {
	for id, v := range s.verifying {
		if nowMs-v.startMs >= expirationMs {
			delete(s.verifying, id)
		}
	}
}
