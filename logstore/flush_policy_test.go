package logstore

import (
	"testing"
	"time"
)

// TestFlushMessagesAdvancesRecoveryPoint: with flush.messages=5 the append
// that brings the records above the recovery point to 5 fsyncs the log and
// moves the recovery point to the log end; with the default (never) no
// append does.
func TestFlushMessagesAdvancesRecoveryPoint(t *testing.T) {
	for _, c := range []struct {
		name          string
		flushMessages int64
		want          []int64 // recovery point after each 2-record append
	}{
		{"default never flushes", 0, []int64{0, 0, 0, 0}},
		{"flush.messages=5", 5, []int64{0, 0, 6, 6}},
		{"flush.messages=1", 1, []int64{2, 4, 6, 8}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newTestEnv(t)
			cfg := DefaultConfig()
			if c.flushMessages > 0 {
				cfg.FlushMessages = c.flushMessages
			}
			l := env.openLog(cfg)
			for i, want := range c.want {
				mustAppend(t, l, simpleBatch(t, 2, env.clock.Now().UnixMilli()), 0)
				if got := l.RecoveryPoint(); got != want {
					t.Fatalf("after append %d (log end %d): recovery point %d, want %d", i+1, l.LogEndOffset(), got, want)
				}
			}
		})
	}
}

// TestFlushMessagesOnFollowerAppend: a follower's append applies
// flush.messages too, as Kafka's does.
func TestFlushMessagesOnFollowerAppend(t *testing.T) {
	env := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	l := env.openLog(cfg)
	b := simpleBatch(t, 3, env.clock.Now().UnixMilli())
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if got := l.RecoveryPoint(); got != 3 {
		t.Fatalf("recovery point %d, want 3", got)
	}
}

// TestFlushDueFollowsFlushMs: Dir.FlushDue flushes a log once flush.ms
// has passed since its last flush, and not before; a log with the default
// flush.ms is never flushed by it.
func TestFlushDueFollowsFlushMs(t *testing.T) {
	env := newTestEnv(t)
	cfg := DefaultConfig()
	cfg.FlushMs = 1000
	l := env.openLog(cfg)
	mustAppend(t, l, simpleBatch(t, 4, env.clock.Now().UnixMilli()), 0)
	env.clock.Advance(999 * time.Millisecond)
	if err := env.dir.FlushDue(env.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := l.RecoveryPoint(); got != 0 {
		t.Fatalf("999ms after open: recovery point %d, want 0", got)
	}
	env.clock.Advance(time.Millisecond)
	if err := env.dir.FlushDue(env.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if got := l.RecoveryPoint(); got != 4 {
		t.Fatalf("1000ms after open: recovery point %d, want 4", got)
	}
	// The flush restarted the clock: the next records wait a full flush.ms.
	mustAppend(t, l, simpleBatch(t, 2, env.clock.Now().UnixMilli()), 0)
	env.clock.Advance(500 * time.Millisecond)
	env.dir.FlushDue(env.clock.Now())
	if got := l.RecoveryPoint(); got != 4 {
		t.Fatalf("500ms after the flush: recovery point %d, want 4", got)
	}
	env.clock.Advance(500 * time.Millisecond)
	env.dir.FlushDue(env.clock.Now())
	if got := l.RecoveryPoint(); got != 6 {
		t.Fatalf("1000ms after the flush: recovery point %d, want 6", got)
	}

	// Back to the default: never.
	l.SetConfig(DefaultConfig())
	mustAppend(t, l, simpleBatch(t, 2, env.clock.Now().UnixMilli()), 0)
	env.clock.Advance(24 * time.Hour)
	env.dir.FlushDue(env.clock.Now())
	if got := l.RecoveryPoint(); got != 6 {
		t.Fatalf("default flush.ms: recovery point %d, want 6", got)
	}
}
