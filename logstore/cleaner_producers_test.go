package logstore

import (
	"math/rand"
	"testing"
	"time"
)

// Which producer batches a pass keeps once all their records are
// overwritten (Kafka's isBatchLastRecordOfProducer), by what
// CleanOptions.ActiveProducers answers:
//
//   - active with a last data offset: the batch ending there stays, empty;
//   - active with only markers at its epoch: its marker of that epoch
//     stays, empty, after its delete horizon;
//   - not listed (expired): nothing of it stays;
//   - no answer (nil func, or false): the last data batch of every
//     producer id in the log stays, as before producers expired.
func TestCleanKeepsLastBatchOfActiveProducers(t *testing.T) {
	const active, expired, markersOnly, expiredTxn = 11, 12, 13, 14
	build := func(t *testing.T) (*testEnv, *Log, map[int64]int64) {
		env := newTestEnv(t)
		l := env.openLog(compactConfig())
		ts := int64(1_700_000_000_000)
		rec := func(k string) testRecord { return testRecord{Timestamp: ts, Key: []byte(k), Value: []byte("old")} }
		last := map[int64]int64{}
		for i, pid := range []int64{active, expired} {
			for seq := int32(0); seq < 3; seq++ {
				off := appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: pid, Epoch: 2, BaseSequence: seq},
					[]testRecord{rec("p" + itoa(int64(i)))}))
				last[pid] = off
			}
		}
		// Two transactional producers whose committed data is overwritten;
		// markersOnly's marker is at a newer epoch than its data (a
		// transaction version 2 marker bumps it).
		for i, pid := range []int64{markersOnly, expiredTxn} {
			appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: pid, Epoch: 4, BaseSequence: 0, Transactional: true},
				[]testRecord{rec("t" + itoa(int64(i)))}))
			m := markerBatch(t, pid, controlCommit, ts)
			m[posProducerEpoch], m[posProducerEpoch+1] = 0, 5
			fixCRC(m)
			last[-pid] = appendAt(t, l, m)
		}
		for _, k := range []string{"p0", "p1", "t0", "t1"} {
			appendAt(t, l, makeProducerBatch(t, 0, txnSpec{ProducerID: -1, Epoch: -1, BaseSequence: -1},
				[]testRecord{{Timestamp: ts, Key: []byte(k), Value: []byte("new")}}))
		}
		workload(t, l, rand.New(rand.NewSource(5)), 300, 20, 5, 0, ts)
		return env, l, last
	}
	// clean runs a pass, then, past the delete horizon, two rechecks: the
	// markers go once their transactions have no data left.
	clean := func(t *testing.T, env *testEnv, l *Log, opts CleanOptions) {
		c := newTestCleaner(t, 1<<20)
		opts.DeleteRetentionMs = testDeleteRetentionMs
		st, err := c.Clean(l, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.FirstDirty, opts.Recheck = st.EndOffset, true
		for i := 0; i < 2; i++ {
			if _, err := c.Clean(l, opts); err != nil {
				t.Fatal(err)
			}
			env.clock.Advance(testDeleteRetentionMs * time.Millisecond)
		}
		if _, err := c.Clean(l, opts); err != nil {
			t.Fatal(err)
		}
	}
	// kept lists the producer batches left, by producer id (negative for
	// markers), each data batch checked empty.
	kept := func(t *testing.T, l *Log) map[int64]BatchHeader {
		out := map[int64]BatchHeader{}
		for _, h := range readAll(t, l, 0) {
			if h.ProducerID < 0 {
				continue
			}
			if h.RecordCount != 0 && h.Attributes&attrControl == 0 {
				t.Fatalf("producer %d's batch at %d kept %d records, all overwritten", h.ProducerID, h.BaseOffset, h.RecordCount)
			}
			pid := h.ProducerID
			if h.Attributes&attrControl != 0 {
				pid = -pid
			}
			if _, dup := out[pid]; dup {
				t.Fatalf("two batches of producer %d kept", h.ProducerID)
			}
			out[pid] = h
		}
		return out
	}
	type answer func(last map[int64]int64) (map[int64]ActiveProducer, bool)
	cases := []struct {
		name   string
		answer answer // nil: no CleanOptions.ActiveProducers
		want   []int64
		// emptyMarker: markersOnly's marker outlives its delete horizon,
		// emptied.
		emptyMarker bool
	}{
		{"active producers", func(last map[int64]int64) (map[int64]ActiveProducer, bool) {
			return map[int64]ActiveProducer{
				active:      {LastDataOffset: last[active], Epoch: 2},
				markersOnly: {LastDataOffset: -1, Epoch: 5},
			}, true
		}, []int64{active, -markersOnly}, true},
		{"no producer active", func(map[int64]int64) (map[int64]ActiveProducer, bool) {
			return map[int64]ActiveProducer{}, true
		}, nil, false},
		// Without an answer, the last data batch of every producer id
		// stays, and with a transaction's data batch its marker.
		{"state unknown", func(map[int64]int64) (map[int64]ActiveProducer, bool) { return nil, false },
			[]int64{active, expired, markersOnly, expiredTxn, -markersOnly, -expiredTxn}, false},
		{"no function", nil, []int64{active, expired, markersOnly, expiredTxn, -markersOnly, -expiredTxn}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, l, last := build(t)
			var opts CleanOptions
			if tc.answer != nil {
				opts.ActiveProducers = func(tp TopicPartition) (map[int64]ActiveProducer, bool) {
					if tp != testTP {
						t.Errorf("asked for %v", tp)
					}
					return tc.answer(last)
				}
			}
			clean(t, env, l, opts)
			got := kept(t, l)
			if len(got) != len(tc.want) {
				t.Fatalf("kept %v, want the batches of %v", got, tc.want)
			}
			for _, pid := range tc.want {
				h, ok := got[pid]
				if !ok {
					t.Fatalf("kept %v, want the batches of %v", got, tc.want)
				}
				if want, known := last[pid]; known && h.BaseOffset != want {
					t.Fatalf("producer %d: kept the batch at %d, want its last at %d", pid, h.BaseOffset, want)
				}
			}
			if h := got[-markersOnly]; tc.emptyMarker && h.RecordCount != 0 {
				t.Fatalf("marker of %d kept with %d records after its delete horizon", markersOnly, h.RecordCount)
			}
			checkIndexFiles(t, l)
		})
	}
}
