package groups

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog is an in-memory Log: one partition's batches, committed at once.
type memLog struct {
	mu      sync.Mutex
	batches map[int32][][]byte
	next    map[int32]int64
	fail    error // returned by Append when set
}

func newMemLog() *memLog {
	return &memLog{batches: map[int32][][]byte{}, next: map[int32]int64{}}
}

func (l *memLog) Append(_ context.Context, partition, _ int32, batch []byte) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return 0, l.fail
	}
	b := append([]byte(nil), batch...)
	first := l.next[partition]
	binary.BigEndian.PutUint64(b, uint64(first))
	l.next[partition] += int64(binary.BigEndian.Uint32(b[23:])) + 1
	l.batches[partition] = append(l.batches[partition], b)
	return first, nil
}

func (l *memLog) Read(_ context.Context, partition int32, offset int64) ([]byte, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []byte
	for _, b := range l.batches[partition] {
		last := int64(binary.BigEndian.Uint64(b)) + int64(binary.BigEndian.Uint32(b[23:]))
		if last >= offset {
			out = append(out, b...)
		}
	}
	return out, l.next[partition], nil
}

// clock is a fake clock the tests step.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t     *testing.T
	c     *Coordinator
	log   *memLog
	clock *clock
	cfg   Config
}

func newHarness(t *testing.T, delay time.Duration) *harness {
	h := &harness{t: t, log: newMemLog(), clock: &clock{now: time.Unix(1_700_000_000, 0)}}
	h.cfg = Config{
		InitialRebalanceDelay: delay,
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     time.Minute,
		MaxGroupSize:          10,
		LookupTopic: func(name string, id [16]byte) (TopicInfo, bool) {
			if name == "t" || id == [16]byte{1} {
				return TopicInfo{Name: "t", ID: [16]byte{1}, Partitions: 4}, true
			}
			return TopicInfo{}, false
		},
		Now: h.clock.Now,
	}
	h.start()
	return h
}

// start (re)creates the coordinator over the harness's log and loads it.
func (h *harness) start() {
	h.c = New(h.cfg, h.log)
	h.c.SetLeadership(1, map[int32]int32{0: 0})
	h.c.LoadPending(context.Background())
}

// step advances the clock and runs the coordinator's timers.
func (h *harness) step(d time.Duration) {
	h.clock.advance(d)
	h.c.Tick(context.Background())
}

func joinReq(member string, instance *string, protocols ...string) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = "g"
	r.MemberID = member
	r.InstanceID = instance
	r.SessionTimeoutMillis = 10_000
	r.RebalanceTimeoutMillis = 20_000
	r.ProtocolType = "consumer"
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	for _, p := range protocols {
		r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(p + "-meta-" + member)})
	}
	return r
}

// joinAsync sends a JoinGroup that may block, and returns once it is
// either answered or parked in the join phase, so the test's next clock
// step sees it.
func (h *harness) joinAsync(r *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	out := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- h.c.Join(context.Background(), r, "client", "/127.0.0.1") }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case resp := <-ch:
			out <- resp
			return out
		default:
		}
		if r.MemberID != "" && h.parked(r.MemberID) {
			return ch
		}
		time.Sleep(time.Millisecond)
	}
	h.t.Fatal("join neither answered nor parked")
	return nil
}

// parked reports whether member waits in JoinGroup.
func (h *harness) parked(member string) bool {
	g, _ := h.c.group("g", false)
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.members[member]
	return m != nil && m.joinCh != nil
}

// newMember performs the KIP-394 dance and returns the member id.
func (h *harness) newMember() string {
	h.t.Helper()
	resp := h.c.Join(context.Background(), joinReq("", nil), "client", "/127.0.0.1")
	if resp.ErrorCode != kerr.MemberIDRequired.Code {
		h.t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", resp.ErrorCode)
	}
	return resp.MemberID
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no response")
	}
	var zero T
	return zero
}

func pending[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected response %+v", v)
	case <-time.After(20 * time.Millisecond):
	}
}

func syncReq(member string, gen int32, assignments map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = "g"
	r.MemberID = member
	r.Generation = gen
	for m, a := range assignments {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(a)})
	}
	return r
}

func (h *harness) syncAsync(r *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- h.c.Sync(context.Background(), r) }()
	return ch
}

func (h *harness) heartbeat(member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group, r.MemberID, r.Generation = "g", member, gen
	return h.c.Heartbeat(r).ErrorCode
}

func (h *harness) state() string {
	return h.c.Describe(5, "g").State
}
