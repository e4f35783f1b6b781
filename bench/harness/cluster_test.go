package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWaitFormedNodeExited: waitFormed gives up as soon as a node's
// process has exited, with the exit in its error, instead of polling a
// cluster that cannot form until its budget runs out.
func TestWaitFormedNodeExited(t *testing.T) {
	falseBin, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false(1) on this machine")
	}
	p, err := spawn(falseBin, nil, nil, t.TempDir(), filepath.Join(t.TempDir(), "node.log"))
	if err != nil {
		t.Fatal(err)
	}
	<-p.exited
	c := &cluster{nodes: []*node{{id: 1, addr: "127.0.0.1:1", proc: p}}}
	// The context ends long before the budget; the answer must come
	// before either.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = c.waitFormed(ctx, time.Hour)
	if ctx.Err() != nil {
		t.Fatalf("waitFormed polled until its context ended for a node that had exited: %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("waitFormed: %v, want the node's exit", err)
	}
}
