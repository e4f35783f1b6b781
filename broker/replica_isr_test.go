package broker

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicedev/sluice/controller"
	"github.com/sluicedev/sluice/logstore"
)

// testBatch is a valid v2 batch of n small records.
func testBatch(n int) []byte {
	var raw []byte
	for i := range n {
		var rec []byte
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		rec = binary.AppendVarint(rec, -1)       // null key
		rec = binary.AppendVarint(rec, 1)        // value length
		rec = append(rec, 'x')                   // value
		rec = binary.AppendVarint(rec, 0)        // no headers
		raw = binary.AppendVarint(raw, int64(len(rec)))
		raw = append(raw, rec...)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: 1, MaxTimestamp: 1, ProducerID: -1, ProducerEpoch: -1,
		FirstSequence: -1, NumRecords: int32(n), Records: raw,
	}
	b.Length = int32(49 + len(raw))
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// leaderPartition is a partition led by node 1 with replicas 1, 2, 3 and
// the given ISR, on a fresh log.
func leaderPartition(t *testing.T, isr []int32, now time.Time) *partition {
	t.Helper()
	dir, err := logstore.OpenDir(t.TempDir(), logstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close(nil) })
	tp := logstore.TopicPartition{Topic: "t", Partition: 0}
	log, err := dir.Open(tp, [16]byte{1}, logstore.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := newPartition(tp, [16]byte{1}, log)
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: isr, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}, 2, now)
	return p
}

func (p *partition) appendN(t *testing.T, n int) {
	t.Helper()
	if _, err := p.log.AppendAsLeader(testBatch(n), 1); err != nil {
		t.Fatal(err)
	}
	p.appendedAsLeader(1)
}

func testImage() *controller.Image {
	return &controller.Image{Brokers: map[int32]*controller.Broker{
		1: {ID: 1, Epoch: 10}, 2: {ID: 2, Epoch: 20}, 3: {ID: 3, Epoch: 30},
	}}
}

func TestISRDecisions(t *testing.T) {
	lag := time.Second
	t0 := time.Unix(1000, 0)
	img := testImage()
	tests := []struct {
		name  string
		isr   []int32
		steps func(t *testing.T, p *partition)
		at    time.Duration
		want  []int32
	}{
		{
			name: "followers fetching at the end stay",
			isr:  []int32{1, 2, 3},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(900*time.Millisecond))
				p.recordFollowerFetch(1, 3, 30, 5, t0.Add(900*time.Millisecond))
			},
			at: 1500 * time.Millisecond,
		},
		{
			name: "a silent ISR member leaves after the lag time",
			isr:  []int32{1, 2, 3},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(900*time.Millisecond))
			},
			at:   1500 * time.Millisecond,
			want: []int32{1, 2},
		},
		{
			name: "a member fetching but never reaching the end leaves",
			isr:  []int32{1, 2, 3},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(1400*time.Millisecond))
				p.recordFollowerFetch(1, 3, 30, 0, t0.Add(100*time.Millisecond))
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 3, 30, 2, t0.Add(1400*time.Millisecond))
			},
			at:   1500 * time.Millisecond,
			want: []int32{1, 2},
		},
		{
			name: "reaching the previous fetch's end counts as caught up then",
			isr:  []int32{1, 2, 3},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(1400*time.Millisecond))
				p.recordFollowerFetch(1, 3, 30, 0, t0.Add(800*time.Millisecond))
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 3, 30, 5, t0.Add(1400*time.Millisecond))
			},
			at: 1500 * time.Millisecond,
		},
		{
			name: "a caught-up follower joins",
			isr:  []int32{1, 2},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(100*time.Millisecond))
				p.recordFollowerFetch(1, 3, 30, 5, t0.Add(100*time.Millisecond))
			},
			at:   200 * time.Millisecond,
			want: []int32{1, 2, 3},
		},
		{
			name: "a follower below the high watermark does not join",
			isr:  []int32{1, 2},
			steps: func(t *testing.T, p *partition) {
				p.appendN(t, 5)
				p.recordFollowerFetch(1, 2, 20, 5, t0.Add(100*time.Millisecond))
				p.recordFollowerFetch(1, 3, 30, 4, t0.Add(100*time.Millisecond))
			},
			at: 200 * time.Millisecond,
		},
		{
			name: "a follower with a stale broker epoch does not join",
			isr:  []int32{1, 2},
			steps: func(t *testing.T, p *partition) {
				p.recordFollowerFetch(1, 3, 29, 0, t0.Add(100*time.Millisecond))
			},
			at: 200 * time.Millisecond,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := leaderPartition(t, tt.isr, t0)
			tt.steps(t, p)
			p.mu.Lock()
			got := p.proposeISRLocked(1, img, t0.Add(tt.at), lag)
			p.mu.Unlock()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("proposed ISR %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHighWatermarkFollowsISR(t *testing.T) {
	t0 := time.Unix(1000, 0)
	p := leaderPartition(t, []int32{1, 2, 3}, t0)
	p.appendN(t, 10)
	if hw := p.highWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any follower fetched, want 0", hw)
	}
	if known, _ := p.recordFollowerFetch(1, 4, 40, 10, t0); known {
		t.Fatal("a fetch from a non-replica was accepted")
	}
	p.recordFollowerFetch(1, 2, 20, 10, t0)
	p.recordFollowerFetch(1, 3, 30, 6, t0)
	if hw := p.highWatermark(); hw != 6 {
		t.Fatalf("high watermark %d, want 6 (the slowest ISR member)", hw)
	}
	if code, done := p.ackResult(1, 1, 10); done {
		t.Fatalf("acks=-1 for offset 10 done (%v) at high watermark 6", kerr.ErrorForCode(code))
	}
	// The controller drops 3 from the ISR: the high watermark jumps, and
	// an ISR of 2 still satisfies min.insync.replicas=2.
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}, 2, t0)
	if hw := p.highWatermark(); hw != 10 {
		t.Fatalf("high watermark %d after the shrink, want 10", hw)
	}
	if code, done := p.ackResult(1, 1, 10); !done || code != 0 {
		t.Fatalf("acks=-1: done %v code %v, want success", done, kerr.ErrorForCode(code))
	}
	// Below min.insync.replicas after the append.
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 3}, 2, t0)
	if code, _ := p.ackResult(1, 1, 10); code != kerr.NotEnoughReplicasAfterAppend.Code {
		t.Fatalf("acks=-1 with ISR 1: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", kerr.ErrorForCode(code))
	}
	// An older image does not undo a newer ISR.
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}, 2, t0)
	if p.enoughInsync() {
		t.Fatal("a stale image restored the ISR")
	}
	// Losing the leadership answers waiting producers.
	p.update(1, &controller.Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 4}, 2, t0)
	if code, _ := p.ackResult(1, 1, 10); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("acks=-1 after losing the leadership: %v", kerr.ErrorForCode(code))
	}
}
