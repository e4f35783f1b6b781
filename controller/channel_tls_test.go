package controller

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicedev/sluice/sluicetest/certs"
)

// listenerTLSOf is the controller listener's TLS for a node holding id
// from set: client certificates required against set's CA.
func listenerTLSOf(set *certs.Set, id *certs.Identity) *ListenerTLS {
	return &ListenerTLS{
		Server: func() *tls.Config {
			return &tls.Config{Certificates: []tls.Certificate{id.TLSCertificate()}, ClientCAs: set.Pool(),
				ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
		},
		Client: func(addr string) (*tls.Config, error) {
			host, _, _ := net.SplitHostPort(addr)
			return &tls.Config{Certificates: []tls.Certificate{id.TLSCertificate()}, RootCAs: set.Pool(),
				ServerName: host, MinVersion: tls.VersionTLS12}, nil
		},
	}
}

// A secured controller listener takes raft only over TLS with a
// certificate of the cluster's CA: plaintext raft and raft from another
// CA are closed and counted; a channel connection is handed on with its
// handshake still to do (the channel's server runs it).
func TestSecuredControllerListener(t *testing.T) {
	set := certs.New(t)
	other := certs.New(t)
	m, err := listenController("127.0.0.1:0", hclog.NewNullLogger(), listenerTLSOf(set, set.Server))
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	addr := m.ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Raft with the cluster's certificate: raft reads its own stream
	// inside TLS.
	var d net.Dialer
	dial := raftTLSDial(d.DialContext, listenerTLSOf(set, set.Client))
	rc, err := dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	rc.Write([]byte{0, 'r', 'a', 'f', 't'})
	got := accept(t, m.raft)
	defer got.Close()
	if _, ok := got.(*tls.Conn); !ok {
		t.Fatalf("raft side got a %T, want a TLS connection", got)
	}
	if b := readN(t, got, 5); b != "\x00raft" {
		t.Fatalf("raft side read %q", b)
	}

	// Plaintext raft: closed.
	pc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Write([]byte{1, 2, 3})
	if err := readClosed(pc); err != nil {
		t.Fatalf("plaintext raft: %v", err)
	}

	// Raft with a certificate of another CA: the handshake fails on
	// both sides, nothing reaches raft.
	if c, err := raftTLSDial(d.DialContext, listenerTLSOf(set, other.Client))(ctx, "tcp", addr); err == nil {
		// TLS 1.3: the client learns of the refusal at its first read.
		c.Write([]byte{0})
		if err := readRefused(c); err != nil {
			t.Fatalf("raft from another CA: %v", err)
		}
		c.Close()
	}
	// Raft without a certificate at all.
	noCert := &ListenerTLS{Client: func(addr string) (*tls.Config, error) {
		return &tls.Config{RootCAs: set.Pool(), ServerName: "127.0.0.1"}, nil
	}}
	if c, err := raftTLSDial(d.DialContext, noCert)(ctx, "tcp", addr); err == nil {
		c.Write([]byte{0})
		if err := readRefused(c); err != nil {
			t.Fatalf("raft without a certificate: %v", err)
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.refused.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("refused %d raft connections, want 3", m.refused.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// The channel: ChannelByte, then TLS run by whoever accepts.
	kafka := m.kafkaSide()
	srvDone := make(chan error, 1)
	go func() {
		c, err := kafka.Accept()
		if err != nil {
			srvDone <- err
			return
		}
		defer c.Close()
		tc := tls.Server(c, listenerTLSOf(set, set.Server).Server())
		if err := tc.Handshake(); err != nil {
			srvDone <- err
			return
		}
		_, err = tc.Write([]byte("ok"))
		srvDone <- err
	}()
	cfg, _ := listenerTLSOf(set, set.Client).Client(addr)
	cc, err := DialControllerTLS(ctx, nil, "tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if b := readN(t, cc, 2); b != "ok" {
		t.Fatalf("channel read %q", b)
	}
	if err := <-srvDone; err != nil {
		t.Fatal(err)
	}
}

// readRefused reports nil if the server ended c: closed it, or sent a TLS
// alert (certificate required, bad certificate).
func readRefused(c net.Conn) error {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); err == nil || (ok && ne.Timeout()) {
		return fmt.Errorf("read %v, want the connection refused", err)
	}
	return nil
}
