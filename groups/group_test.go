package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group string
		n     int32
		want  int32
	}{
		{"empty", "", 50, 0},
		{"ascii", "hello", 50, 99162322 % 50},
		// "polygenelubricants".hashCode() is Integer.MIN_VALUE, which
		// Kafka's Utils.abs maps to 0.
		{"min int", "polygenelubricants", 50, 0},
		// A negative hash: "hello world!!".hashCode() wraps below zero.
		{"negative", "Aaaaaaaaaaaaaaa", 7, javaAbsMod("Aaaaaaaaaaaaaaa", 7)},
		// Outside the BMP Java hashes the two UTF-16 surrogates.
		{"surrogates", "\U0001F600", 50, (0xD83D*31 + 0xDE00) % 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PartitionFor(tc.group, tc.n); got != tc.want {
				t.Fatalf("PartitionFor(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
			}
		})
	}
}

// javaAbsMod recomputes the hash with int64 arithmetic wrapped to 32 bits,
// independently of PartitionFor's int32 overflow.
func javaAbsMod(s string, n int64) int32 {
	var h int64
	for _, r := range s {
		h = int64(int32(h*31 + int64(r)))
	}
	if h < 0 {
		h = -h
	}
	return int32(h % n)
}

// TestJoinSyncHeartbeat walks two dynamic members through the first
// rebalance: KIP-394 ids, the leader's member list, the assignment handed
// out after the leader's SyncGroup, heartbeats.
func TestJoinSyncHeartbeat(t *testing.T) {
	h := newHarness(t, 0)
	a, b := h.newMember(), h.newMember()
	ja := h.joinAsync(joinReq(a, nil))
	pending(t, ja) // b's id is pending: the phase waits for it
	jb := h.joinAsync(joinReq(b, nil))
	ra, rb := recv(t, ja), recv(t, jb)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 || ra.Generation != 1 || rb.Generation != 1 {
		t.Fatalf("join: %+v %+v", ra, rb)
	}
	if ra.LeaderID != a || len(ra.Members) != 2 || len(rb.Members) != 0 || *ra.Protocol != "range" {
		t.Fatalf("leader %s members %d/%d protocol %s", ra.LeaderID, len(ra.Members), len(rb.Members), *ra.Protocol)
	}
	if got := h.state(); got != "CompletingRebalance" {
		t.Fatalf("state %s", got)
	}
	sb := h.syncAsync(syncReq(b, 1, nil))
	pending(t, sb)
	if code := h.heartbeat(b, 1); code != 0 {
		t.Fatalf("heartbeat while completing: %d", code)
	}
	sa := recv(t, h.syncAsync(syncReq(a, 1, map[string]string{a: "A", b: "B"})))
	if sa.ErrorCode != 0 || string(sa.MemberAssignment) != "A" {
		t.Fatalf("leader sync: %+v", sa)
	}
	if r := recv(t, sb); r.ErrorCode != 0 || string(r.MemberAssignment) != "B" {
		t.Fatalf("follower sync: %+v", r)
	}
	if got := h.state(); got != "Stable" {
		t.Fatalf("state %s", got)
	}
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		want   int16
	}{
		{"current", a, 1, 0},
		{"old generation", a, 0, kerr.IllegalGeneration.Code},
		{"unknown member", "nobody", 1, kerr.UnknownMemberID.Code},
	} {
		if got := h.heartbeat(tc.member, tc.gen); got != tc.want {
			t.Errorf("%s: heartbeat %d, want %d", tc.name, got, tc.want)
		}
	}
	// The stored assignment is what a restarted coordinator reloads.
	h.start()
	if got := h.state(); got != "Stable" {
		t.Fatalf("reloaded state %s", got)
	}
	if r := h.c.Sync(context.Background(), syncReq(b, 1, nil)); string(r.MemberAssignment) != "B" {
		t.Fatalf("reloaded assignment %q", r.MemberAssignment)
	}
}

// TestSessionTimeoutRebalances steps the clock past a member's session: it
// is removed and the survivor rejoins alone into the next generation.
func TestSessionTimeoutRebalances(t *testing.T) {
	h := newHarness(t, 0)
	a, b := stableGroup(t, h)
	h.step(6 * time.Second)
	if code := h.heartbeat(a, 1); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
	h.step(6 * time.Second) // b silent for 12s > 10s session
	if got := h.state(); got != "PreparingRebalance" {
		t.Fatalf("state %s after b expired", got)
	}
	if code := h.heartbeat(a, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during rebalance: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq(a, nil)))
	if r.Generation != 2 || len(r.Members) != 1 || r.LeaderID != a {
		t.Fatalf("rejoin: %+v", r)
	}
	if code := h.heartbeat(b, 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("expired member heartbeat: %d", code)
	}
}

// TestRebalanceTimeoutDropsSlowMember: a member that does not rejoin within
// the rebalance timeout is left out of the next generation.
func TestRebalanceTimeoutDropsSlowMember(t *testing.T) {
	h := newHarness(t, 0)
	a, b := stableGroup(t, h)
	ja := h.joinAsync(joinReq(a, nil, "range", "roundrobin")) // new protocols: rebalance
	pending(t, ja)
	for range 4 { // b keeps heartbeating but never rejoins
		h.step(4500 * time.Millisecond)
		h.heartbeat(b, 1)
	}
	pending(t, ja)
	h.step(2 * time.Second) // 20s rebalance timeout over
	r := recv(t, ja)
	if r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("join after timeout: %+v", r)
	}
	if code := h.heartbeat(b, 1); code != kerr.UnknownMemberID.Code {
		t.Fatalf("dropped member heartbeat: %d", code)
	}
}

// TestInitialRebalanceDelay: a new group waits the delay for more members,
// and each new member extends it, up to the rebalance timeout.
func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, 3*time.Second)
	a := h.newMember()
	ja := h.joinAsync(joinReq(a, nil))
	h.step(2 * time.Second)
	b := h.newMember()
	jb := h.joinAsync(joinReq(b, nil))
	h.step(1 * time.Second) // first delay over, but b arrived: extend
	pending(t, ja)
	h.step(3 * time.Second)
	ra, rb := recv(t, ja), recv(t, jb)
	if ra.Generation != 1 || rb.Generation != 1 || len(ra.Members)+len(rb.Members) != 2 {
		t.Fatalf("joins: %+v %+v", ra, rb)
	}
}

// TestStaticMemberRejoin: a static member coming back without its id gets a
// new one and the current generation, no rebalance; the old id is fenced.
func TestStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, 0)
	inst := "host-1"
	r := recv(t, h.joinAsync(joinReq("", &inst)))
	if r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("static join: %+v", r)
	}
	old := r.MemberID
	recv(t, h.syncAsync(syncReq(old, 1, map[string]string{old: "X"})))

	r2 := recv(t, h.joinAsync(joinReq("", &inst)))
	if r2.ErrorCode != 0 || r2.Generation != 1 || r2.MemberID == old || !r2.SkipAssignment || r2.LeaderID != r2.MemberID {
		t.Fatalf("static rejoin: %+v", r2)
	}
	if got := h.state(); got != "Stable" {
		t.Fatalf("state %s, want Stable (no rebalance)", got)
	}
	s := h.c.Sync(context.Background(), syncReq(r2.MemberID, 1, nil))
	if string(s.MemberAssignment) != "X" {
		t.Fatalf("assignment after rejoin %q", s.MemberAssignment)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", old, 1, &inst
	if code := h.c.Heartbeat(hb).ErrorCode; code != kerr.FencedInstanceID.Code {
		t.Fatalf("old id heartbeat %d, want FENCED_INSTANCE_ID", code)
	}
	// The replacement was persisted before it was handed out.
	h.start()
	if code := h.heartbeat(r2.MemberID, 1); code != 0 {
		t.Fatalf("new id after reload: %d", code)
	}
}

func TestJoinErrors(t *testing.T) {
	h := newHarness(t, 0)
	stableGroup(t, h)
	other := joinReq("x", nil)
	other.ProtocolType = "connect"
	short := joinReq("", nil)
	short.SessionTimeoutMillis = 10
	noGroup := joinReq("", nil)
	noGroup.Group = ""
	for _, tc := range []struct {
		name string
		req  *kmsg.JoinGroupRequest
		want int16
	}{
		{"unknown member", joinReq("ghost", nil), kerr.UnknownMemberID.Code},
		{"other protocol type", other, kerr.InconsistentGroupProtocol.Code},
		{"incompatible protocols", joinReq("", nil, "roundrobin"), kerr.InconsistentGroupProtocol.Code},
		{"session too short", short, kerr.InvalidSessionTimeout.Code},
		{"empty group id", noGroup, kerr.InvalidGroupID.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recv(t, h.joinAsync(tc.req)).ErrorCode; got != tc.want {
				t.Fatalf("error %d, want %d", got, tc.want)
			}
		})
	}
}

func TestGroupMaxSize(t *testing.T) {
	h := newHarness(t, 0)
	h.cfg.MaxGroupSize = 1
	h.start()
	h.newMember()
	if r := h.c.Join(context.Background(), joinReq("", nil), "c", "h"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("second member: %d", r.ErrorCode)
	}
}

// stableGroup makes a Stable generation 1 with members a (leader) and b.
func stableGroup(t *testing.T, h *harness) (string, string) {
	t.Helper()
	a, b := h.newMember(), h.newMember()
	ja, jb := h.joinAsync(joinReq(a, nil)), h.joinAsync(joinReq(b, nil))
	ra, rb := recv(t, ja), recv(t, jb)
	if ra.LeaderID != a {
		a, b = b, a
		ra, rb = rb, ra
	}
	_ = rb
	sb := h.syncAsync(syncReq(b, 1, nil))
	recv(t, h.syncAsync(syncReq(a, 1, map[string]string{a: "A", b: "B"})))
	recv(t, sb)
	return a, b
}
