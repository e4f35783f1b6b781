package groups

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func txnCommitReq(producerID int64, member string, gen int32, partition int32, offset int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version = 3
	r.TransactionalID, r.Group = "tx", "g"
	r.ProducerID, r.ProducerEpoch = producerID, 0
	r.MemberID, r.Generation = member, gen
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = partition, offset, 2
	r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{p}}}
	return r
}

func (h *harness) txnCommit(r *kmsg.TxnOffsetCommitRequest) int16 {
	return h.c.CommitTxnOffsets(context.Background(), r).Topics[0].Partitions[0].ErrorCode
}

// stableFetched is fetched with RequireStable.
func (h *harness) stableFetched(partition int32) kmsg.OffsetFetchResponseGroupTopicPartition {
	return h.fetchOffset(partition, true)
}

// marker appends producerID's COMMIT or ABORT control batch to partition
// 0 of the log, as WriteTxnMarkers does, and tells the coordinator.
func (h *harness) marker(producerID int64, commit bool) {
	h.t.Helper()
	typ := int16(0)
	if commit {
		typ = 1
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), 0)
	raw := appendRecord(nil, kmsg.Record{Key: key, Value: value})
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: attrTransactional | attrControl,
		ProducerID: producerID, ProducerEpoch: 0, FirstSequence: -1, NumRecords: 1, Records: raw,
	}
	b.Length = int32(batchHeaderSize - 12 + len(raw))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[posCRC:], crc32.Checksum(out[posAttributes:], castagnoli))
	offset, err := h.log.Append(context.Background(), 0, 0, out)
	if err != nil {
		h.t.Fatal(err)
	}
	h.c.CompleteTxn(0, 0, producerID, commit, offset)
}

func TestTxnOffsetsCommitAndAbort(t *testing.T) {
	h := newHarness(t, 0)
	if code := h.txnCommit(txnCommitReq(7, "", -1, 1, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	if got := h.fetched(1); got.Offset != -1 || got.ErrorCode != 0 {
		t.Fatalf("pending offset visible: %+v", got)
	}
	if got := h.stableFetched(1); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require stable with a pending offset: %+v", got)
	}
	if got := h.stableFetched(2); got.ErrorCode != 0 || got.Offset != -1 {
		t.Fatalf("require stable, other partition: %+v", got)
	}
	h.marker(7, true)
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 || got.LeaderEpoch != 2 {
		t.Fatalf("after COMMIT: %+v", got)
	}

	// An aborted transaction's offsets never show, before or after a reload.
	if code := h.txnCommit(txnCommitReq(8, "", -1, 1, 20)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	h.marker(8, false)
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("after ABORT: %+v", got)
	}
	h.start()
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("after reload: %+v", got)
	}
}

func TestTxnOffsetsReplayPending(t *testing.T) {
	h := newHarness(t, 0)
	if code := h.txnCommit(txnCommitReq(7, "", -1, 1, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	h.start() // the coordinator moved before the transaction ended
	if got := h.stableFetched(1); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("replayed pending offset: %+v", got)
	}
	// The pending offsets keep the group from expiring or being deleted.
	h.clock.advance(48 * time.Hour)
	h.c.cfg.OffsetsRetention = time.Hour
	h.c.ExpireOffsets(context.Background())
	if code := h.c.Delete(context.Background(), "g"); code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a group with pending offsets: %d", code)
	}
	h.marker(7, true)
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("COMMIT after reload: %+v", got)
	}
	h.start()
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("second reload: %+v", got)
	}
}

func TestTxnOffsetsLaterRecordWins(t *testing.T) {
	h := newHarness(t, 0)
	// A plain commit written after the transaction's offset wins over it.
	if code := h.txnCommit(txnCommitReq(7, "", -1, 1, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	if code := h.commit(commitReq("", -1, 1, 20, "")); code != 0 {
		t.Fatalf("plain commit: %d", code)
	}
	h.marker(7, true)
	if got := h.fetched(1); got.Offset != 20 {
		t.Fatalf("plain commit after the txn's: %+v", got)
	}
	// A transaction's offset written after a plain commit wins over it.
	if code := h.commit(commitReq("", -1, 2, 20, "")); code != 0 {
		t.Fatalf("plain commit: %d", code)
	}
	if code := h.txnCommit(txnCommitReq(8, "", -1, 2, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	h.marker(8, true)
	if got := h.fetched(2); got.Offset != 10 {
		t.Fatalf("txn commit after the plain one: %+v", got)
	}
	h.start()
	if a, b := h.fetched(1), h.fetched(2); a.Offset != 20 || b.Offset != 10 {
		t.Fatalf("after reload: %+v %+v", a, b)
	}
}

func TestTxnOffsetsMarkerDuringLoad(t *testing.T) {
	h := newHarness(t, 0)
	if code := h.txnCommit(txnCommitReq(7, "", -1, 1, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	// The partition is led at a new epoch and not loaded yet when the
	// marker after the replay's end is acknowledged.
	h.c.SetLeadership(1, map[int32]int32{0: 1})
	end := h.log.next[0]
	h.c.CompleteTxn(0, 1, 7, true, end)
	h.c.LoadPending(context.Background())
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("marker during load: %+v", got)
	}
	// A marker for another leader epoch is ignored.
	if code := h.txnCommit(txnCommitReq(8, "", -1, 1, 30)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	h.c.CompleteTxn(0, 0, 8, true, h.log.next[0])
	if got := h.stableFetched(1); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("marker of an old epoch applied: %+v", got)
	}
}

func TestTxnOffsetCommitChecks(t *testing.T) {
	h := newHarness(t, 0)
	if code := h.txnCommit(txnCommitReq(7, "m", 3, 0, 1)); code != kerr.IllegalGeneration.Code {
		t.Fatalf("member commit to unknown group: %d", code)
	}
	a, _ := stableGroup(t, h)
	instance := "i"
	withInstance := txnCommitReq(7, a, 1, 0, 10)
	withInstance.InstanceID = &instance
	v0 := txnCommitReq(7, "", -1, 0, 10)
	v0.Version = 0
	for _, tc := range []struct {
		name string
		req  *kmsg.TxnOffsetCommitRequest
		want int16
	}{
		{"member of generation", txnCommitReq(7, a, 1, 0, 10), 0},
		{"old generation", txnCommitReq(7, a, 0, 0, 10), kerr.IllegalGeneration.Code},
		{"unknown member", txnCommitReq(7, "ghost", 1, 0, 10), kerr.UnknownMemberID.Code},
		{"unknown instance", withInstance, kerr.UnknownMemberID.Code},
		{"v0 without membership on an active group", v0, 0},
		{"unknown partition", txnCommitReq(7, a, 1, 9, 10), kerr.UnknownTopicOrPartition.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := h.txnCommit(tc.req); got != tc.want {
				t.Fatalf("error %d, want %d", got, tc.want)
			}
		})
	}
	// A stale epoch refused by the log reaches the client as
	// INVALID_PRODUCER_EPOCH.
	h.log.fail = kerr.InvalidProducerEpoch
	if got := h.txnCommit(txnCommitReq(7, a, 1, 0, 10)); got != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale epoch: %d", got)
	}
	h.log.fail = kerr.NotEnoughReplicas
	if got := h.txnCommit(txnCommitReq(7, a, 1, 0, 10)); got != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("too few replicas: %d", got)
	}
	h.log.fail = nil
}

func TestTxnOffsetsMarkerBeforeCommitAnswered(t *testing.T) {
	h := newHarness(t, 0)
	// The marker at offset 100 is acknowledged while the commit, whose
	// record lands before it, still waits for its append: the commit
	// settles at once instead of staying pending.
	h.c.CompleteTxn(0, 0, 7, true, 100)
	if code := h.txnCommit(txnCommitReq(7, "", -1, 1, 10)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("commit after its COMMIT marker: %+v", got)
	}
	h.c.CompleteTxn(0, 0, 8, false, 200)
	if code := h.txnCommit(txnCommitReq(8, "", -1, 1, 20)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	if got := h.stableFetched(1); got.ErrorCode != 0 || got.Offset != 10 {
		t.Fatalf("commit after its ABORT marker: %+v", got)
	}
	// A later transaction of the same producer, written after its last
	// marker, is pending as usual.
	h.log.next[0] = 300
	if code := h.txnCommit(txnCommitReq(8, "", -1, 2, 30)); code != 0 {
		t.Fatalf("txn commit: %d", code)
	}
	if got := h.stableFetched(2); got.ErrorCode != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("commit after the producer's last marker: %+v", got)
	}
}
