package groups

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeInitializer records InitializeShareState calls and fails while fail
// is set.
type fakeInitializer struct {
	mu    sync.Mutex
	calls []string
	fail  bool
}

func (f *fakeInitializer) InitializeShareState(_ context.Context, group string, epoch int32, parts SharePartitions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprint(group, "@", epoch, " ", parts[[16]byte{1}]))
	if f.fail {
		return errors.New("share coordinator unavailable")
	}
	return nil
}

// TestShareStateInitialization: with a ShareStateInitializer, a share
// group's partitions become assignable only once their state is
// initialized; a failed initialization is asked for again; the outcome is
// in the log, so a reloaded coordinator assigns them without asking again.
func TestShareStateInitialization(t *testing.T) {
	h := newHarness(t, 0)
	init := &fakeInitializer{fail: true}
	topic := TopicInfo{Name: "t", ID: [16]byte{1}, Partitions: 4}
	h.cfg.ListTopics = func() []TopicInfo { return []TopicInfo{topic} }
	h.cfg.ShareStateInitializer = init
	h.start()
	ctx := context.Background()
	beat := func(member string, epoch int32, topics []string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = "g", member, epoch, topics
		resp := h.c.ShareHeartbeat(ctx, req, "client", "/127.0.0.1", ShareGroupSettings{})
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s@%d: code %d", member, epoch, resp.ErrorCode)
		}
		return resp
	}
	parts := func(resp *kmsg.ShareGroupHeartbeatResponse) []int32 {
		var out []int32
		if resp.Assignment != nil {
			for _, tp := range resp.Assignment.TopicPartitions {
				out = append(out, tp.Partitions...)
			}
		}
		slices.Sort(out)
		return out
	}

	resp := beat("m1", 0, []string{"t"})
	if got := parts(resp); len(got) != 0 {
		t.Fatalf("partitions %v assigned before their state is initialized", got)
	}
	h.c.InitializeShareStates(ctx) // fails: the next heartbeat asks again
	resp = beat("m1", resp.MemberEpoch, nil)
	if got := parts(resp); len(got) != 0 {
		t.Fatalf("partitions %v assigned after a failed initialization", got)
	}
	init.mu.Lock()
	init.fail = false
	init.mu.Unlock()
	h.c.InitializeShareStates(ctx) // asked again, succeeds
	resp = beat("m1", resp.MemberEpoch, nil)
	if got := parts(resp); !slices.Equal(got, []int32{0, 1, 2, 3}) {
		t.Fatalf("after the initialization: partitions %v, want all four", got)
	}
	if len(init.calls) != 2 {
		t.Fatalf("initializer calls %q, want one failed and one good", init.calls)
	}

	// A new coordinator over the same log knows the partitions are
	// initialized: a second member gets its share without a new call.
	h.start()
	h.c.InitializeShareStates(ctx)
	r2 := beat("m2", 0, []string{"t"})
	r1 := beat("m1", resp.MemberEpoch, nil)
	if len(parts(r1))+len(parts(r2)) != 4 || len(parts(r2)) != 2 {
		t.Fatalf("after the reload: m1 %v, m2 %v", parts(r1), parts(r2))
	}
	if len(init.calls) != 2 {
		t.Fatalf("initializer called again after the reload: %q", init.calls)
	}
}
