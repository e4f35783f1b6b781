package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStartLogLoadingNotTimed restarts a node whose log dir takes longer
// to load than initial.broker.registration.timeout.ms: the node must wait
// for its logs, then join and serve what it held. (Until the timeout was
// counted from the end of log loading, a one-minute start deadline covered
// both, and a node with 100,000 partitions on a slow disk exited after 90 s
// of loading, every time it was started.)
//
// The load is held from outside: meta.properties, which the broker reads
// once the directory's logs are loaded and before it joins, is replaced by
// a named pipe, so the broker's read waits until the test writes the file's
// content into it.
func TestStartLogLoadingNotTimed(t *testing.T) {
	t.Parallel()
	const (
		registrationTimeout = time.Second
		hold                = 3 * registrationTimeout
		topic               = "held-load"
	)
	dir := filepath.Join(t.TempDir(), "data")
	port := freePort(t)
	p := startSluice(t, dir, port)
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("kept")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()
	if code := p.terminate(); code != 0 {
		t.Fatalf("clean stop exited %d; stderr:\n%s", code, p.stderr.String())
	}

	meta := filepath.Join(dir, "meta.properties")
	content, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(meta, meta+".saved"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(meta, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}

	args := []string{
		"--override", "listeners=PLAINTEXT://" + p.addr,
		"--override", "log.dirs=" + dir,
		"--override", fmt.Sprintf("initial.broker.registration.timeout.ms=%d", registrationTimeout.Milliseconds()),
	}
	p2 := spawnProc(t, p.addr, t.TempDir(), args...)
	p2.dir = dir
	select {
	case <-p2.done:
		t.Fatalf("the node exited while its log dir was still loading (%v); stderr:\n%s", p2.err, p2.stderr.String())
	case line := <-p2.readyc:
		t.Fatalf("the node said ready before its log dir was loaded: %q", line)
	case <-time.After(hold):
	}
	// Opening the pipe for writing waits for the broker's read to open
	// it, and the broker reads until the test closes it. The file is put
	// back in the pipe's place before that, for the broker's later reads
	// and writes of it.
	w, err := os.OpenFile(meta, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(meta+".saved", meta); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p2.waitReady()

	cl, err = kgo.NewClient(kgo.SeedBrokers(p2.addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel = context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	fetches := cl.PollRecords(ctx, 1)
	if err := fetches.Err0(); err != nil {
		t.Fatalf("consume after the restart: %v", err)
	}
	recs := fetches.Records()
	if len(recs) != 1 || string(recs[0].Value) != "kept" {
		t.Fatalf("consumed %d records after the restart, want the one produced before it", len(recs))
	}
	t.Logf("held the log dir's load %s with initial.broker.registration.timeout.ms=%d; the node then started and served the record",
		hold, registrationTimeout.Milliseconds())
}

// TestStartRegistrationTimeout starts one voter of a three-voter cluster
// alone: no quorum forms, so it is never registered, and it must exit once
// initial.broker.registration.timeout.ms has run out, with a message that
// names the key, not keep an operator waiting on a fixed minute with a bare
// "context deadline exceeded".
func TestStartRegistrationTimeout(t *testing.T) {
	t.Parallel()
	kafka := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var voters []string
	for id := 1; id <= 3; id++ {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", id, freePort(t)))
	}
	raftAddr := strings.SplitN(voters[0], "@", 2)[1]
	gossip := "127.0.0.1:" + strconv.Itoa(freeGossipPort(t))
	args := []string{
		"--override", "node.id=1",
		"--override", "listeners=PLAINTEXT://" + kafka + ",CONTROLLER://" + raftAddr,
		"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
		"--override", "gossip.listener=" + gossip,
		"--override", "gossip.join=" + gossip,
		"--override", "log.dirs=" + filepath.Join(t.TempDir(), "data"),
		"--override", "initial.broker.registration.timeout.ms=1000",
	}
	code, stderr := runToFailure(t, args...)
	last := lastLine(stderr)
	if !strings.Contains(last, "initial.broker.registration.timeout.ms=1000") {
		t.Fatalf("the exit message does not name initial.broker.registration.timeout.ms: %q", last)
	}
	t.Logf("exit %d: %s", code, last)
	assertNothingListening(t, kafka)
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
