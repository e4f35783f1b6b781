package txn

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memLog is a Log of in-memory partitions whose appends commit at once.
type memLog struct {
	mu    sync.Mutex
	parts map[int32][]byte
	next  map[int32]int64
}

func newMemLog() *memLog { return &memLog{parts: map[int32][]byte{}, next: map[int32]int64{}} }

func (l *memLog) Append(_ context.Context, partition, _ int32, batch []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	binary.BigEndian.PutUint64(batch, uint64(l.next[partition]))
	l.next[partition]++
	l.parts[partition] = append(l.parts[partition], batch...)
	return nil
}

func (l *memLog) Read(_ context.Context, partition int32, offset int64) ([]byte, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if offset >= l.next[partition] {
		return nil, l.next[partition], nil
	}
	return append([]byte(nil), l.parts[partition]...), l.next[partition], nil
}

// fakeMarkers records the markers written; while blocked is set it holds
// writers until released.
type fakeMarkers struct {
	mu      sync.Mutex
	written []Markers
	gate    chan struct{}
}

func (f *fakeMarkers) WriteMarkers(ctx context.Context, m Markers) error {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	f.written = append(f.written, m)
	f.mu.Unlock()
	return nil
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newTestCoordinator(t *testing.T, log Log, markers MarkerWriter, clock *testClock) *Coordinator {
	var next int64 = 1000
	var mu sync.Mutex
	c := New(Config{
		NewProducerID: func(context.Context) (int64, error) { mu.Lock(); defer mu.Unlock(); next++; return next, nil },
		Now:           clock.Now,
		IDExpiration:  time.Hour,
	}, log, markers)
	t.Cleanup(c.Close)
	c.SetLeadership(1, map[int32]int32{0: 5})
	c.LoadPending(context.Background())
	return c
}

func waitState(t *testing.T, c *Coordinator, id string, want State) Description {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := c.Describe(id)
		if d.ErrorCode == 0 && d.State == want {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: state %v (code %d), want %v", id, d.State, d.ErrorCode, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCoordinatorCommitFenceAndReload(t *testing.T) {
	ctx := context.Background()
	log, markers, clock := newMemLog(), &fakeMarkers{}, &testClock{now: time.UnixMilli(1_000_000)}
	c := newTestCoordinator(t, log, markers, clock)

	first := c.InitProducerID(ctx, "tx", 5000, -1, -1)
	if first.ErrorCode != 0 || first.Epoch != 0 {
		t.Fatalf("init: %+v", first)
	}
	parts := []TopicPartition{{"out", 0}, {"__consumer_offsets", 7}}
	if code := c.AddPartitions(ctx, "tx", first.ProducerID, first.Epoch, parts, 0); code != 0 {
		t.Fatalf("add: %d", code)
	}
	if code := c.EndTxn(ctx, "tx", first.ProducerID, first.Epoch, true, false).ErrorCode; code != 0 {
		t.Fatalf("commit: %d", code)
	}
	waitState(t, c, "tx", StateCompleteCommit)
	if len(markers.written) != 1 || !markers.written[0].Commit || len(markers.written[0].Partitions) != 2 || markers.written[0].CoordinatorEpoch != 5 {
		t.Fatalf("markers: %+v", markers.written)
	}

	// A second producer with the same id fences the first.
	second := c.InitProducerID(ctx, "tx", 5000, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.Epoch != 1 {
		t.Fatalf("second init: %+v", second)
	}
	if code := c.AddPartitions(ctx, "tx", first.ProducerID, first.Epoch, parts, 0); code != kerr.ProducerFenced.Code {
		t.Fatalf("fenced producer's add: %d", code)
	}

	// A transaction in flight when the coordinator moves is completed by
	// the next one, which reads the log.
	markers.mu.Lock()
	markers.gate = make(chan struct{})
	markers.mu.Unlock()
	if code := c.AddPartitions(ctx, "tx", second.ProducerID, second.Epoch, parts[:1], 0); code != 0 {
		t.Fatalf("add: %d", code)
	}
	if code := c.EndTxn(ctx, "tx", second.ProducerID, second.Epoch, false, false).ErrorCode; code != 0 {
		t.Fatalf("abort: %d", code)
	}
	if code := c.AddPartitions(ctx, "tx", second.ProducerID, second.Epoch, parts[:1], 0); code != kerr.ConcurrentTransactions.Code {
		t.Fatalf("add while markers are in flight: %d", code)
	}
	c.SetLeadership(1, nil)
	if d := c.Describe("tx"); d.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe after losing the partition: %d", d.ErrorCode)
	}

	next := New(Config{NewProducerID: func(context.Context) (int64, error) { return 9999, nil }, Now: clock.Now}, log, markers)
	t.Cleanup(next.Close)
	next.SetLeadership(1, map[int32]int32{0: 6})
	if d := next.Describe("tx"); d.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("describe while loading: %d", d.ErrorCode)
	}
	markers.mu.Lock()
	close(markers.gate)
	markers.gate = nil
	markers.mu.Unlock()
	next.LoadPending(ctx)
	d := waitState(t, next, "tx", StateCompleteAbort)
	if d.ProducerID != second.ProducerID || d.Epoch != second.Epoch {
		t.Fatalf("reloaded: %+v", d)
	}
	list, code := next.List(ListFilter{States: []State{StateCompleteAbort}})
	if code != 0 || len(list) != 1 || list[0].TransactionalID != "tx" {
		t.Fatalf("list: %+v %d", list, code)
	}
}

func TestCoordinatorTimeoutAndReinitAbort(t *testing.T) {
	ctx := context.Background()
	markers, clock := &fakeMarkers{}, &testClock{now: time.UnixMilli(1_000_000)}
	c := newTestCoordinator(t, newMemLog(), markers, clock)

	p := c.InitProducerID(ctx, "slow", 1000, -1, -1)
	if code := c.AddPartitions(ctx, "slow", p.ProducerID, p.Epoch, []TopicPartition{{"t", 0}}, 0); code != 0 {
		t.Fatalf("add: %d", code)
	}
	c.AbortTimedOut(ctx)
	if d := c.Describe("slow"); d.State != StateOngoing {
		t.Fatalf("aborted before its timeout: %v", d.State)
	}
	clock.Add(1500 * time.Millisecond)
	c.AbortTimedOut(ctx)
	d := waitState(t, c, "slow", StateCompleteAbort)
	if d.Epoch != p.Epoch+1 {
		t.Fatalf("timeout abort must bump the epoch to fence the producer: %d", d.Epoch)
	}
	if code := c.EndTxn(ctx, "slow", p.ProducerID, p.Epoch, true, false).ErrorCode; code != kerr.ProducerFenced.Code {
		t.Fatalf("zombie's commit: %d", code)
	}

	// Re-initializing an id with a running transaction aborts it first.
	q := c.InitProducerID(ctx, "busy", 60000, -1, -1)
	c.AddPartitions(ctx, "busy", q.ProducerID, q.Epoch, []TopicPartition{{"t", 1}}, 0)
	if r := c.InitProducerID(ctx, "busy", 60000, -1, -1); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("re-init with a running transaction: %+v", r)
	}
	waitState(t, c, "busy", StateCompleteAbort)
	r := c.InitProducerID(ctx, "busy", 60000, -1, -1)
	if r.ErrorCode != 0 || r.Epoch != q.Epoch+2 {
		t.Fatalf("re-init after the abort: %+v", r)
	}

	// Idle ids expire.
	clock.Add(2 * time.Hour)
	c.ExpireIDs(ctx)
	if d := c.Describe("busy"); d.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Fatalf("expired id: %+v", d)
	}
}
