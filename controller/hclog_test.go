package controller

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogForwardsWarningsOnly(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), hclog.Warn).Named("raft")
	l.Debug("debug noise")
	l.Info("entering follower state")
	l.Warn("heartbeat timeout reached, starting election") // routine: demoted below warn
	l.Warn("failed to contact", "server", "2")
	l.Error("snapshot failed")
	out := buf.String()
	for _, dropped := range []string{"debug noise", "entering follower state", "starting election"} {
		if strings.Contains(out, dropped) {
			t.Errorf("%q forwarded:\n%s", dropped, out)
		}
	}
	for _, kept := range []string{"level=WARN msg=\"failed to contact\" raft_logger=raft server=2", "level=ERROR msg=\"snapshot failed\""} {
		if !strings.Contains(out, kept) {
			t.Errorf("%q missing:\n%s", kept, out)
		}
	}
	if l.IsInfo() || !l.IsWarn() {
		t.Error("level predicates disagree with warn")
	}
}
