package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The controller listener hands each connection to raft or to the
// controller channel by its first byte, passes raft's byte on, and
// closes a connection that is neither.
func TestControllerListenerSplitsByFirstByte(t *testing.T) {
	m, err := listenController("127.0.0.1:0", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	addr := m.ln.Addr().String()
	kafka := m.kafkaSide()

	// A channel connection: the byte is consumed, the rest arrives.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, err := DialController(ctx, nil, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cc.Write([]byte("frame"))
	got := accept(t, kafka)
	defer got.Close()
	if b := readN(t, got, 5); b != "frame" {
		t.Fatalf("channel side read %q, want %q", b, "frame")
	}

	// A raft connection (AppendEntries is rpc type 0): raft reads its
	// rpc type byte itself.
	rc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.Write([]byte{0, 'r', 'a', 'f', 't'})
	gotRaft := accept(t, m.raft)
	defer gotRaft.Close()
	if b := readN(t, gotRaft, 5); b != "\x00raft" {
		t.Fatalf("raft side read %q, want %q", b, "\x00raft")
	}

	// A first byte that is neither raft's nor the channel's: closed.
	xc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer xc.Close()
	xc.Write([]byte{0x99, 1, 2, 3})
	if err := readClosed(xc); err != nil {
		t.Fatalf("a connection starting with 0x99: %v", err)
	}

	// Once the channel side is closed, channel connections are closed
	// and raft keeps its side.
	kafka.Close()
	if _, err := kafka.Accept(); err == nil {
		t.Fatal("closed channel side accepted a connection")
	}
	lc, err := DialController(ctx, nil, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	if err := readClosed(lc); err != nil {
		t.Fatalf("channel connection after the channel closed: %v", err)
	}
	rc2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	rc2.Write([]byte{1})
	accept(t, m.raft).Close()
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("accept: %v", r.err)
		}
		return r.c
	case <-time.After(5 * time.Second):
		t.Fatal("nothing accepted within 5s")
		return nil
	}
}

// readClosed reports nil if the other end closed c (EOF, or a reset for
// bytes it never read).
func readClosed(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == io.EOF || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("read %v, want the connection closed", err)
}

func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}
